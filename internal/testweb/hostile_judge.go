package testweb

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// HostileAnalyzeOptions tunes Hostile.Analyze.
type HostileAnalyzeOptions struct {
	// MinDelay is the crawler's own minimum delay per host; Tolerance is
	// subtracted from every delay before judging (0 means
	// DefaultTolerance).
	MinDelay  time.Duration
	Tolerance time.Duration
	// MaxRedirects is the crawler's redirect bound; 0 means 10.
	MaxRedirects int
	// MaxTries bounds how often a target of a host with
	// HostileHost.Retries may be requested; 0 means 3 (a try and two
	// retries).
	MaxTries int
	// PerHost is the crawler's per-host concurrency; 0 means 1.
	PerHost int
	// Scenarios are the scenarios whose seeds the crawl started from:
	// only their hosts' Required targets are expected. Nil means all.
	Scenarios []Scenario
	// NormalTruth judges the requests to the normal web; nil means
	// Normal.Truth with the default options (every home page a seed,
	// every host in scope, sitemaps read).
	NormalTruth *Truth
}

func (o HostileAnalyzeOptions) maxRedirects() int {
	if o.MaxRedirects > 0 {
		return o.MaxRedirects
	}
	return 10
}

func (o HostileAnalyzeOptions) maxTries() int {
	if o.MaxTries > 0 {
		return o.MaxTries
	}
	return 3
}

// HostileReport is the server-side judgement of a crawl of a hostile web.
// Lists hold one line per finding, in the order the server saw them.
type HostileReport struct {
	// Normal judges the requests to the normal web's hosts (nil without
	// one); its Check is part of this report's.
	Normal *Report
	// Requests counts the requests to each hostile host.
	Requests map[string]int
	// Forbidden are requests a polite, safe crawler never sends, with why.
	Forbidden []string
	// Missing are Required targets of the seeded scenarios never requested.
	Missing []string
	// OverBudget are hosts sent more requests than their Budget.
	OverBudget []string
	// Duplicates are targets (robots.txt aside) requested more than once,
	// or more than MaxTries times on hosts that may time out.
	Duplicates []string
	// PolitenessViolations are requests to a hostile host closer to the
	// previous one than the larger of MinDelay and the Crawl-delay its
	// robots.txt (once requested) asks for.
	PolitenessViolations []string
	// RetryAfterViolations are requests to a host sooner after a 429 with
	// Retry-After than it asked for.
	RetryAfterViolations []string
	// ConcurrencyViolations are requests to a hostile host that started
	// while PerHost others were in progress.
	ConcurrencyViolations []string
	// ForeignDials are the addresses outside the web the crawler tried to
	// dial (Hostile.ForeignDials): private, unspecified or unknown.
	ForeignDials []string
}

// Analyze judges a crawl of the hostile web from the server's log (and the
// dials it refused): requests to normal hosts by the normal web's Truth,
// requests to hostile hosts by their ground truth.
func (hw *Hostile) Analyze(entries []Entry, opts HostileAnalyzeOptions) (*HostileReport, error) {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.Start.Compare(b.Start) })

	r := &HostileReport{Requests: map[string]int{}, ForeignDials: hw.ForeignDials()}
	var normal []Entry
	byHost := map[string][]Entry{}
	for _, e := range entries {
		if hw.byAuthority[e.Host] == nil {
			normal = append(normal, e)
			continue
		}
		byHost[e.Host] = append(byHost[e.Host], e)
	}
	if hw.Normal != nil {
		truth := opts.NormalTruth
		if truth == nil {
			var err error
			if truth, err = hw.Normal.Truth(TruthOptions{}); err != nil {
				return nil, err
			}
		}
		r.Normal = truth.Analyze(normal, AnalyzeOptions{MinDelay: opts.MinDelay, Tolerance: opts.Tolerance})
	} else {
		for _, e := range normal {
			r.Forbidden = append(r.Forbidden, fmt.Sprintf("%s %s: not a host of this web", e.Method, e.URL()))
		}
	}
	for _, h := range hw.hosts {
		r.judgeHost(h, byHost[h.Authority], opts)
	}
	return r, nil
}

// judgeHost judges the requests es to the hostile host h, in the order
// of their starts.
func (r *HostileReport) judgeHost(h *hostileHost, es []Entry, opts HostileAnalyzeOptions) {
	r.Requests[h.Authority] = len(es)
	if h.Budget > 0 && len(es) > h.Budget {
		r.OverBudget = append(r.OverBudget, fmt.Sprintf("%s: %d requests, budget %d", h.Authority, len(es), h.Budget))
	}
	requested := map[string]bool{}
	count := map[string]int{}
	pace := hostilePace{h: h, opts: opts, tol: opts.Tolerance, perHost: max(opts.PerHost, 1)}
	if pace.tol == 0 {
		pace.tol = DefaultTolerance
	}
	for i, e := range es {
		target, ok := requestTarget(e.Target)
		if !ok {
			target = e.Target
		}
		if why := h.forbidden(target, opts); why != "" {
			r.Forbidden = append(r.Forbidden, fmt.Sprintf("%s %s: %s", e.Method, e.URL(), why))
		}
		requested[target] = true
		count[target]++
		if target != robotsPath {
			limit := 1
			if h.Retries {
				limit = opts.maxTries()
			}
			if count[target] == limit+1 {
				r.Duplicates = append(r.Duplicates, fmt.Sprintf("%s requested more than %d times", e.URL(), limit))
			}
		}
		if i > 0 {
			pace.judge(r, e)
		}
		pace.sent(e, target)
	}
	if opts.Scenarios == nil || slices.Contains(opts.Scenarios, h.Scenario) {
		for _, t := range h.Required {
			if !requested[t] {
				r.Missing = append(r.Missing, hostURL(h.Authority, t))
			}
		}
	}
}

// hostilePace follows one hostile host's requests to judge their pace:
// delay, Crawl-delay once robots.txt was asked for, Retry-After, and
// requests in progress at once.
type hostilePace struct {
	h          *hostileHost
	opts       HostileAnalyzeOptions
	tol        time.Duration
	perHost    int
	robotsAt   time.Time // start of the host's first robots.txt request
	prev       Entry
	pauseUntil time.Time
	active     []time.Time // ends of earlier requests, pruned to those in progress
}

// judge judges the start of e, a request after the host's first.
func (p *hostilePace) judge(r *HostileReport, e Entry) {
	h, tol := p.h, p.tol
	delay := p.opts.MinDelay
	if h.CrawlDelay > 0 && !p.robotsAt.IsZero() && !p.prev.Start.Before(p.robotsAt) {
		delay = max(delay, h.CrawlDelay)
	}
	if gap := e.Start.Sub(p.prev.Start); delay-tol > 0 && gap < delay-tol {
		r.PolitenessViolations = append(r.PolitenessViolations, fmt.Sprintf("%s: %v after previous request, delay %v: %s %s",
			h.Authority, gap.Round(time.Millisecond), delay, e.Method, e.Target))
	}
	if e.Start.Before(p.pauseUntil.Add(-tol)) {
		r.RetryAfterViolations = append(r.RetryAfterViolations, fmt.Sprintf("%s: %s %s %v before the Retry-After of a 429 ran out",
			h.Authority, e.Method, e.Target, p.pauseUntil.Sub(e.Start).Round(time.Millisecond)))
	}
	kept := p.active[:0]
	for _, end := range p.active {
		if end.After(e.Start.Add(tol)) {
			kept = append(kept, end)
		}
	}
	p.active = kept
	if inFlight := len(p.active); inFlight >= p.perHost {
		r.ConcurrencyViolations = append(r.ConcurrencyViolations, fmt.Sprintf("%s: %s %s started while %d requests were in progress (per-host limit %d)",
			h.Authority, e.Method, e.Target, inFlight, p.perHost))
	}
}

// sent takes note of e, a request for target, for the requests after it.
func (p *hostilePace) sent(e Entry, target string) {
	if target == robotsPath && p.robotsAt.IsZero() {
		p.robotsAt = e.Start
	}
	if e.Status == http.StatusTooManyRequests && p.h.retryAfter > 0 {
		p.pauseUntil = e.End.Add(p.h.retryAfter)
	}
	p.active = append(p.active, e.End)
	p.prev = e
}

// Check returns nil if the crawl was safe, polite and complete, and
// otherwise says in one error what went wrong, with examples.
func (r *HostileReport) Check() error {
	errs := []error{
		findings("dials outside the web", r.ForeignDials, "; "),
		findings("forbidden requests", r.Forbidden, "; "),
		findings("required targets never requested", r.Missing, "; "),
		findings("hosts over budget", r.OverBudget, "; "),
		findings("duplicate requests", r.Duplicates, "; "),
		findings("politeness violations", r.PolitenessViolations, "; "),
		findings("Retry-After violations", r.RetryAfterViolations, "; "),
		findings("per-host concurrency violations", r.ConcurrencyViolations, "; "),
	}
	if r.Normal != nil {
		if err := r.Normal.Check(); err != nil {
			errs = append(errs, fmt.Errorf("normal web: %w", err))
		}
	}
	return errors.Join(errs...)
}

// String summarises the report in a few lines.
func (r *HostileReport) String() string {
	var b strings.Builder
	hosts := make([]string, 0, len(r.Requests))
	for h, n := range r.Requests {
		if n > 0 {
			hosts = append(hosts, fmt.Sprintf("%s %d", h, n))
		}
	}
	slices.Sort(hosts)
	fmt.Fprintf(&b, "hostile requests: %s\n", strings.Join(hosts, ", "))
	fmt.Fprintf(&b, "foreign dials %d, forbidden %d, missing %d, over budget %d, duplicates %d, politeness %d, retry-after %d, concurrency %d",
		len(r.ForeignDials), len(r.Forbidden), len(r.Missing), len(r.OverBudget), len(r.Duplicates),
		len(r.PolitenessViolations), len(r.RetryAfterViolations), len(r.ConcurrencyViolations))
	if r.Normal != nil {
		b.WriteString("\nnormal web: ")
		b.WriteString(r.Normal.String())
	}
	return b.String()
}
