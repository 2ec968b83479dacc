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

// AnalyzeOptions tunes Analyze.
type AnalyzeOptions struct {
	// MinDelay is the crawler's own minimum delay per host. Requests to a
	// host must be at least the larger of it and the host's Crawl-delay
	// apart, robots.txt requests included.
	MinDelay time.Duration
	// Tolerance is subtracted from that delay before judging; 0 means
	// DefaultTolerance.
	Tolerance time.Duration
}

// Report is the server-side judgement of a crawl. Lists of URLs hold the
// request URLs as sent, in the order the server received them.
type Report struct {
	Requests        int // every request
	RobotsRequests  int // robots.txt, including the redirected robots.txt
	SitemapRequests int // sitemap index and sitemaps
	PageRequests    int // everything else
	DistinctPages   int // distinct canonical URLs among PageRequests

	ReachableFetched   int     // distinct Truth.Reachable URLs requested
	ReachableTotal     int     // len(Truth.Reachable)
	SitemapOnlyFetched int     // distinct Truth.SitemapOnly URLs requested
	SitemapOnlyTotal   int     // len(Truth.SitemapOnly)
	Coverage           float64 // ReachableFetched / ReachableTotal
	Missing            []string

	RobotsViolations       []string // requests robots.txt forbids (host with readable or missing robots.txt)
	UnavailableHostFetches []string // requests past robots.txt to the host whose robots.txt answers 503
	PolitenessViolations   []string // "host: 12ms after previous request, delay 200ms: GET /x"
	Duplicates             []string // repeated requests of an already requested canonical URL (robots.txt excluded)
	RobotsRefetches        int      // robots.txt requests beyond the first per host
	NofollowOnlyFetched    []string // requests for Truth.NofollowOnly pages
	NotFound               []string // requests answered 404, robots.txt excluded: URLs the web never linked
	TrapFetches            int      // requests for spider-trap pages

	Makespan            time.Duration // first request's start to last response's end
	IdealMakespan       time.Duration // Truth.IdealMakespan(MinDelay)
	PeakInFlight        int           // most requests in progress at once
	PeakInFlightPerHost int           // most requests in progress at once to one host
}

// Analyze judges a crawl from the server's request log alone.
func (t *Truth) Analyze(entries []Entry, opts AnalyzeOptions) *Report {
	w := t.web
	tol := opts.Tolerance
	if tol == 0 {
		tol = DefaultTolerance
	}
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.Start.Compare(b.Start) })

	r := &Report{
		Requests:         len(entries),
		ReachableTotal:   len(t.Reachable),
		SitemapOnlyTotal: len(t.SitemapOnly),
		IdealMakespan:    t.IdealMakespan(opts.MinDelay),
	}
	seen := make(map[string]bool)
	robotsSeen := make(map[string]bool)
	reachable := make(map[string]bool)
	lastStart := make(map[string]time.Time)
	var first, last time.Time
	for i, e := range entries {
		if i == 0 || e.Start.Before(first) {
			first = e.Start
		}
		if e.End.After(last) {
			last = e.End
		}
		h := w.byAuthority[e.Host]
		target, ok := requestTarget(e.Target)
		key := "http://" + e.Host + target

		if h != nil {
			delay := max(h.delay, opts.MinDelay) - tol
			if prev, ok := lastStart[e.Host]; ok && delay > 0 && e.Start.Sub(prev) < delay {
				r.PolitenessViolations = append(r.PolitenessViolations, fmt.Sprintf("%s: %v after previous request, delay %v: %s %s",
					e.Host, e.Start.Sub(prev).Round(time.Millisecond), max(h.delay, opts.MinDelay), e.Method, e.Target))
			}
			lastStart[e.Host] = e.Start
		}

		if ok && h != nil && (target == robotsPath || h.kind == HostRobotsRedirect && target == robotsMovedPath) {
			r.RobotsRequests++
			if robotsSeen[key] {
				r.RobotsRefetches++
			}
			robotsSeen[key] = true
			continue
		}
		// A host whose robots.txt names no sitemap may still be asked for
		// the conventional /sitemap.xml once: a probe, not a page.
		isSitemap := ok && h != nil && (h.hasSitemaps() &&
			(target == sitemapIndexPath || target == sitemapGzipPath || target == sitemapTextPath) ||
			!h.hasSitemaps() && target == defaultSitemapPath)
		if isSitemap {
			r.SitemapRequests++
		} else {
			r.PageRequests++
		}
		if seen[key] {
			r.Duplicates = append(r.Duplicates, e.URL())
		} else if !isSitemap {
			r.DistinctPages++
		}
		seen[key] = true
		if e.Status == http.StatusNotFound && !isSitemap {
			r.NotFound = append(r.NotFound, e.URL())
		}
		if h == nil || !ok {
			continue
		}
		switch {
		case h.kind == HostRobotsUnavailable:
			r.UnavailableHostFetches = append(r.UnavailableHostFetches, e.URL())
		case w.disallowedTarget(h, target):
			r.RobotsViolations = append(r.RobotsViolations, e.URL())
		}
		if w.cfg.Trap && h.index == 0 && strings.HasPrefix(target, trapPrefix) {
			r.TrapFetches++
		}
		if t.reachable[key] && !reachable[key] {
			reachable[key] = true
			r.ReachableFetched++
			if t.sitemapOnly[key] {
				r.SitemapOnlyFetched++
			}
		}
		if t.nofollow[key] {
			r.NofollowOnlyFetched = append(r.NofollowOnlyFetched, e.URL())
		}
	}
	for _, u := range t.Reachable {
		if !reachable[u] {
			r.Missing = append(r.Missing, u)
		}
	}
	r.Coverage = 1
	if r.ReachableTotal > 0 {
		r.Coverage = float64(r.ReachableFetched) / float64(r.ReachableTotal)
	}
	if len(entries) > 0 {
		r.Makespan = last.Sub(first)
	}
	r.PeakInFlight, r.PeakInFlightPerHost = peaks(entries)
	return r
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
// robots violations, no fetch on the 503 host past robots.txt, no
// politeness violations, no duplicate fetches, no nofollow-only page and no
// URL the web does not have. Otherwise it lists what went wrong, with
// examples.
func (r *Report) Check() error {
	var errs []error
	add := func(what string, urls []string) {
		if len(urls) == 0 {
			return
		}
		ex := urls[:min(len(urls), 5)]
		errs = append(errs, fmt.Errorf("%d %s, e.g. %s", len(urls), what, strings.Join(ex, ", ")))
	}
	add("reachable pages never fetched", r.Missing)
	add("robots.txt violations", r.RobotsViolations)
	add("fetches on the host whose robots.txt answers 503", r.UnavailableHostFetches)
	add("politeness violations", r.PolitenessViolations)
	add("duplicate fetches", r.Duplicates)
	add("nofollow-only pages fetched", r.NofollowOnlyFetched)
	add("requests for URLs the web does not have", r.NotFound)
	return errors.Join(errs...)
}

// String summarises the report in a few lines.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests %d (robots %d, sitemaps %d, pages %d; %d distinct)\n",
		r.Requests, r.RobotsRequests, r.SitemapRequests, r.PageRequests, r.DistinctPages)
	fmt.Fprintf(&b, "coverage %.3f (%d/%d), sitemap-only %d/%d\n",
		r.Coverage, r.ReachableFetched, r.ReachableTotal, r.SitemapOnlyFetched, r.SitemapOnlyTotal)
	fmt.Fprintf(&b, "robots violations %d, 503-host fetches %d, politeness violations %d, duplicates %d, robots refetches %d, nofollow-only %d, not found %d, trap %d\n",
		len(r.RobotsViolations), len(r.UnavailableHostFetches), len(r.PolitenessViolations), len(r.Duplicates),
		r.RobotsRefetches, len(r.NofollowOnlyFetched), len(r.NotFound), r.TrapFetches)
	fmt.Fprintf(&b, "makespan %v (ideal %v), peak in flight %d (per host %d)",
		r.Makespan.Round(time.Millisecond), r.IdealMakespan.Round(time.Millisecond), r.PeakInFlight, r.PeakInFlightPerHost)
	return b.String()
}
