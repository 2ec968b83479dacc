package testweb

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultTolerance is the politeness slack when AnalyzeOptions.Tolerance is zero.
const DefaultTolerance = 5 * time.Millisecond

// DefaultRetries is how many times a crawler may request again a URL whose
// requests failed when AnalyzeOptions.Retries is zero: heed's default.
const DefaultRetries = 2

// AnalyzeOptions tunes Analyze.
type AnalyzeOptions struct {
	// MinDelay is the crawler's own minimum delay per host. Requests to a
	// host must be at least the larger of it and the host's Crawl-delay
	// apart, robots.txt requests included.
	MinDelay time.Duration
	// Tolerance is subtracted from that delay before judging; 0 means
	// DefaultTolerance.
	Tolerance time.Duration
	// MaxDelay is the crawler's cap on any wait a host asks for: a
	// Retry-After longer than it is judged as MaxDelay. 0 means no cap.
	MaxDelay time.Duration
	// Retries is how many times a URL whose requests failed (no complete
	// answer, 429 or 5xx) may be requested again; 0 means
	// DefaultRetries, negative none.
	Retries int
}

func (o AnalyzeOptions) retries() int {
	switch {
	case o.Retries < 0:
		return 0
	case o.Retries == 0:
		return DefaultRetries
	}
	return o.Retries
}

// Report is the server-side judgement of a crawl. Lists of URLs hold the
// request URLs as sent, in the order the server received them.
type Report struct {
	Requests        int // every request: the sum of the next four
	RobotsRequests  int // robots.txt, including the redirected robots.txt, answered or not
	SitemapRequests int // sitemap index and sitemaps, answered
	PageRequests    int // everything else, answered
	FailedRequests  int // requests but robots.txt's that failed: no complete answer (Status 0), 429 or 5xx
	DistinctPages   int // distinct canonical URLs among PageRequests
	Retries         int // requests of a URL whose every earlier request failed

	ReachableFetched   int     // distinct Truth.Reachable URLs requested and answered
	ReachableTotal     int     // len(Truth.Reachable)
	SitemapOnlyFetched int     // distinct Truth.SitemapOnly URLs requested
	SitemapOnlyTotal   int     // len(Truth.SitemapOnly)
	Coverage           float64 // ReachableFetched / ReachableTotal
	Missing            []string

	RobotsViolations []string // requests robots.txt forbids (host with readable or missing robots.txt)
	// UnavailableHostFetches are requests past robots.txt to a host whose
	// robots.txt is unreachable (HostKind.RobotsUnreachable): it answers
	// 503, hangs, or refuses connections, so everything is disallowed.
	UnavailableHostFetches []string
	// PolitenessViolations are requests sooner than the host allows:
	// "host: 12ms after previous request, delay 200ms: GET /x", or
	// "host: 300ms after a 429 with Retry-After 1s: GET /x" (Retry-After
	// capped by MaxDelay).
	PolitenessViolations []string
	Duplicates           []string // repeated requests of a canonical URL already answered (robots.txt excluded)
	ExcessRetries        []string // requests of a URL that had already failed more than 1 + Retries times
	RobotsRefetches      int      // robots.txt requests beyond the first per host
	NofollowOnlyFetched  []string // requests for Truth.NofollowOnly pages
	NotFound             []string // requests answered 404, robots.txt excluded: URLs the web never linked
	TrapFetches          int      // requests for spider-trap pages

	Makespan            time.Duration // first request's start to last response's end
	IdealMakespan       time.Duration // Truth.IdealMakespan(MinDelay)
	PeakInFlight        int           // most requests in progress at once
	PeakInFlightPerHost int           // most requests in progress at once to one host
}

// Analyze judges a crawl from the server's request log alone.
func (t *Truth) Analyze(entries []Entry, opts AnalyzeOptions) *Report {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.Start.Compare(b.Start) })
	a := t.newAnalysis(opts, len(entries))
	for _, e := range entries {
		a.entry(e)
	}
	return a.finish(entries)
}

// analysis is Analyze's state while it reads the log, in the order of
// the requests' starts.
type analysis struct {
	t          *Truth
	w          *Web
	opts       AnalyzeOptions
	tol        time.Duration
	maxRetries int
	r          *Report
	seen       map[string]bool // answered
	failed     map[string]int  // failed requests before the first answer
	robotsSeen map[string]bool
	reachable  map[string]bool
	lastStart  map[string]time.Time
	waitAsked  map[string]retryAfter // per host: the last answer that asked to wait
}

func (t *Truth) newAnalysis(opts AnalyzeOptions, requests int) *analysis {
	tol := opts.Tolerance
	if tol == 0 {
		tol = DefaultTolerance
	}
	return &analysis{
		t:          t,
		w:          t.web,
		opts:       opts,
		tol:        tol,
		maxRetries: opts.retries(),
		r: &Report{
			Requests:         requests,
			ReachableTotal:   len(t.Reachable),
			SitemapOnlyTotal: len(t.SitemapOnly),
			IdealMakespan:    t.IdealMakespan(opts.MinDelay),
		},
		seen:       make(map[string]bool),
		failed:     make(map[string]int),
		robotsSeen: make(map[string]bool),
		reachable:  make(map[string]bool),
		lastStart:  make(map[string]time.Time),
		waitAsked:  make(map[string]retryAfter),
	}
}

// entry judges one request.
func (a *analysis) entry(e Entry) {
	r := a.r
	h := a.w.byAuthority[e.Host]
	target, ok := requestTarget(e.Target)
	key := "http://" + e.Host + target

	isRobots := ok && h != nil && (target == robotsPath || h.kind == HostRobotsRedirect && target == robotsMovedPath)
	if h != nil {
		a.pace(e, h, isRobots)
	}
	if isRobots {
		r.RobotsRequests++
		if a.robotsSeen[key] {
			r.RobotsRefetches++
		}
		a.robotsSeen[key] = true
		return
	}
	// A host whose robots.txt names no sitemap may still be asked for
	// the conventional /sitemap.xml once: a probe, not a page.
	isSitemap := ok && h != nil && (h.hasSitemaps() &&
		(target == sitemapIndexPath || target == sitemapGzipPath || target == sitemapTextPath) ||
		!h.hasSitemaps() && target == defaultSitemapPath)
	answered := a.count(e, key, isSitemap)
	if h == nil || !ok {
		return
	}
	switch {
	case h.kind.RobotsUnreachable():
		r.UnavailableHostFetches = append(r.UnavailableHostFetches, e.URL())
	case a.w.disallowedTarget(h, target):
		r.RobotsViolations = append(r.RobotsViolations, e.URL())
	}
	if a.w.cfg.Trap && h.index == 0 && strings.HasPrefix(target, trapPrefix) {
		r.TrapFetches++
	}
	if answered && a.t.reachable[key] && !a.reachable[key] {
		a.reachable[key] = true
		r.ReachableFetched++
		if a.t.sitemapOnly[key] {
			r.SitemapOnlyFetched++
		}
	}
	if a.t.nofollow[key] {
		r.NofollowOnlyFetched = append(r.NofollowOnlyFetched, e.URL())
	}
}

// pace judges the request's start against the host's delay and the last
// Retry-After it gave, and notes a Retry-After its answer gives.
func (a *analysis) pace(e Entry, h *host, isRobots bool) {
	r, opts := a.r, a.opts
	delay := max(h.delay, opts.MinDelay) - a.tol
	if prev, ok := a.lastStart[e.Host]; ok && delay > 0 && e.Start.Sub(prev) < delay {
		r.PolitenessViolations = append(r.PolitenessViolations, fmt.Sprintf("%s: %v after previous request, delay %v: %s %s",
			e.Host, e.Start.Sub(prev).Round(time.Millisecond), max(h.delay, opts.MinDelay), e.Method, e.Target))
	}
	a.lastStart[e.Host] = e.Start
	if w, ok := a.waitAsked[e.Host]; ok && !e.Start.Before(w.answered) && e.Start.Before(w.until.Add(-a.tol)) {
		r.PolitenessViolations = append(r.PolitenessViolations, fmt.Sprintf("%s: %v after a %d with Retry-After %v: %s %s",
			e.Host, e.Start.Sub(w.answered).Round(time.Millisecond), w.status, w.wait, e.Method, e.Target))
	}
	if d := h.retryAfterOf(isRobots, e.Status); d > 0 {
		if opts.MaxDelay > 0 {
			d = min(d, opts.MaxDelay)
		}
		a.waitAsked[e.Host] = retryAfter{answered: e.End, until: e.End.Add(d), wait: d, status: e.Status}
	}
}

// count counts a request but robots.txt's: duplicate, retry, failed,
// sitemap or page, 404. It reports whether the request was answered.
func (a *analysis) count(e Entry, key string, isSitemap bool) (answered bool) {
	r := a.r
	switch {
	case a.seen[key]:
		r.Duplicates = append(r.Duplicates, e.URL())
	case a.failed[key] > a.maxRetries:
		r.ExcessRetries = append(r.ExcessRetries, fmt.Sprintf("%s (after %d failed requests)", e.URL(), a.failed[key]))
		r.Retries++
	case a.failed[key] > 0:
		r.Retries++
	}
	answered = e.Status != 0 && e.Status != http.StatusTooManyRequests && e.Status < 500
	switch {
	case !answered:
		r.FailedRequests++
		if !a.seen[key] {
			a.failed[key]++
		}
	case isSitemap:
		r.SitemapRequests++
	default:
		r.PageRequests++
		if !a.seen[key] {
			r.DistinctPages++
		}
	}
	if answered {
		a.seen[key] = true
	}
	if e.Status == http.StatusNotFound && !isSitemap {
		r.NotFound = append(r.NotFound, e.URL())
	}
	return answered
}

// finish completes the report once every request of entries, sorted by
// start, was judged.
func (a *analysis) finish(entries []Entry) *Report {
	r := a.r
	for _, u := range a.t.Reachable {
		if !a.reachable[u] {
			r.Missing = append(r.Missing, u)
		}
	}
	r.Coverage = 1
	if r.ReachableTotal > 0 {
		r.Coverage = float64(r.ReachableFetched) / float64(r.ReachableTotal)
	}
	if len(entries) > 0 {
		first, last := entries[0].Start, entries[0].End
		for _, e := range entries {
			if e.End.After(last) {
				last = e.End
			}
		}
		r.Makespan = last.Sub(first)
	}
	r.PeakInFlight, r.PeakInFlightPerHost = peaks(entries)
	return r
}

// retryAfter is an answer that asked the crawler to wait before its next
// request to the host.
type retryAfter struct {
	answered, until time.Time
	wait            time.Duration
	status          int
}

// retryAfterOf is how long the host's answer with status, to a request for
// its robots.txt or not, asks a crawler to wait with Retry-After; 0 if it
// does not. The HTTP-date of HostRobotsRetryDate is in whole seconds, so it
// may ask up to a second less than UnavailableRetryAfter.
func (h *host) retryAfterOf(robots bool, status int) time.Duration {
	switch {
	case robots && status == http.StatusServiceUnavailable && h.kind == HostRobotsUnavailable:
		return UnavailableRetryAfter
	case robots && status == http.StatusServiceUnavailable && h.kind == HostRobotsRetryDate:
		return UnavailableRetryAfter - time.Second
	case !robots && status == http.StatusTooManyRequests && h.kind == HostRateLimited:
		return RateLimitedRetryAfter
	}
	return 0
}

// requestTarget returns the canonical path and query of a request target in
// origin form ("/p?q") or absolute form ("http://h/p?q").
func requestTarget(raw string) (string, bool) {
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		return "", false
	}
	return canonicalTarget(u.EscapedPath(), u.RawQuery), true
}

func peaks(entries []Entry) (global, perHost int) {
	type event struct {
		at    time.Time
		delta int
		host  string
	}
	events := make([]event, 0, 2*len(entries))
	for _, e := range entries {
		events = append(events, event{e.Start, +1, e.Host}, event{e.End, -1, e.Host})
	}
	// At equal times ends come first: a request that starts as another
	// ends does not overlap it.
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	})
	n := 0
	byHost := make(map[string]int)
	for _, ev := range events {
		n += ev.delta
		byHost[ev.host] += ev.delta
		global = max(global, n)
		perHost = max(perHost, byHost[ev.host])
	}
	return global, perHost
}

// Check returns nil if the crawl was complete and polite: coverage 1, no
// robots violations, no fetch past robots.txt on a host whose robots.txt is
// unreachable, no politeness violations (Retry-After included), no
// duplicate fetches, no more retries than allowed, no nofollow-only page and
// no URL the web does not have. Otherwise it lists what went wrong, with
// examples.
func (r *Report) Check() error {
	return errors.Join(
		findings("reachable pages never fetched", r.Missing, ", "),
		findings("robots.txt violations", r.RobotsViolations, ", "),
		findings("fetches past robots.txt on hosts whose robots.txt is unreachable", r.UnavailableHostFetches, ", "),
		findings("politeness violations", r.PolitenessViolations, ", "),
		findings("duplicate fetches", r.Duplicates, ", "),
		findings("retries beyond the allowed", r.ExcessRetries, ", "),
		findings("nofollow-only pages fetched", r.NofollowOnlyFetched, ", "),
		findings("requests for URLs the web does not have", r.NotFound, ", "),
	)
}

// findings is the error of a Check that found lines of what: how many,
// and the first five, joined by sep; nil if there are none.
func findings(what string, lines []string, sep string) error {
	if len(lines) == 0 {
		return nil
	}
	ex := lines[:min(len(lines), 5)]
	return fmt.Errorf("%d %s, e.g. %s", len(lines), what, strings.Join(ex, sep))
}

// String summarises the report in a few lines.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests %d (robots %d, sitemaps %d, pages %d; %d distinct; failed %d, retries %d)\n",
		r.Requests, r.RobotsRequests, r.SitemapRequests, r.PageRequests, r.DistinctPages, r.FailedRequests, r.Retries)
	fmt.Fprintf(&b, "coverage %.3f (%d/%d), sitemap-only %d/%d\n",
		r.Coverage, r.ReachableFetched, r.ReachableTotal, r.SitemapOnlyFetched, r.SitemapOnlyTotal)
	fmt.Fprintf(&b, "robots violations %d, unreachable-robots-host fetches %d, politeness violations %d, duplicates %d, excess retries %d, robots refetches %d, nofollow-only %d, not found %d, trap %d\n",
		len(r.RobotsViolations), len(r.UnavailableHostFetches), len(r.PolitenessViolations), len(r.Duplicates),
		len(r.ExcessRetries), r.RobotsRefetches, len(r.NofollowOnlyFetched), len(r.NotFound), r.TrapFetches)
	fmt.Fprintf(&b, "makespan %v (ideal %v), peak in flight %d (per host %d)",
		r.Makespan.Round(time.Millisecond), r.IdealMakespan.Round(time.Millisecond), r.PeakInFlight, r.PeakInFlightPerHost)
	return b.String()
}
