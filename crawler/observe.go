package crawler

// The requests a crawl makes, reported as they start and end, for callers
// that watch a crawl host by host (a live page, a politeness audit).

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots/gate"
)

// Request is one HTTP request the crawl makes to a host — for a page, a
// sitemap or a robots.txt — as OnRequest handlers see it: once as it
// starts (Answered zero) and once as it ends.
type Request struct {
	// Key is the politeness key the request is paced under.
	Key string
	// URL is the URL requested; empty for a robots.txt request, which
	// OnRobots reports with its URL once the gate has read it.
	URL string
	// Robots reports a robots.txt request.
	Robots bool
	// Started is when the request started; Answered when it ended, zero
	// in the report of its start.
	Started  time.Time
	Answered time.Time
	// Status is the response's HTTP status, 0 if none came.
	Status int
	// Failure classifies how it ended (fetch.Classify): FailureNone for a
	// success, FailureThrottled for 429 and 503, and so on.
	Failure ratelimit.Failure
	// Err is the request's error, nil if a response came.
	Err error
	// RetryAfter is the response's Retry-After header, as sent.
	RetryAfter string
	// Size is the body's size as transferred, when known.
	Size int64
	// Due is, for a revisit (WithRevisit), when the page was due to be
	// fetched again; zero for a URL's first fetch. Answered − Due is how
	// long the revisit waited for its host's politeness budget.
	Due time.Time
	// Pace is the host's pacing after the answer, as the policy decided
	// it: effective delay and why, back-off, Retry-After pause. Zero in
	// the report of a start.
	Pace ratelimit.HostStatus
}

// OnRequest registers f to be called when a request to a host starts and
// when it ends, on the worker making it: f must be quick and must not keep
// req. It is how a caller watches what the crawl does to each host (the
// load it imposes, the 429s and back-offs) without a table of its own in
// the crawl.
func (c *Crawler) OnRequest(f func(ctx context.Context, req *Request)) {
	c.register(func(h *hooks) { h.onRequest = append(h.onRequest, f) })
}

// OnRobots registers f to be called for every robots.txt fetch the crawl
// makes, with the politeness key of its host and the gate's new entry
// (outcome, status, Crawl-delay, rules, when fetched and when due again).
// f must not modify e.
func (c *Crawler) OnRobots(f func(ctx context.Context, key string, e *gate.Entry)) {
	c.register(func(h *hooks) { h.onRobots = append(h.onRobots, f) })
}

// underway is a request being made, as its start was reported: when it
// started, and the Request the OnRequest handlers heard then, which the
// report of its end reuses — one Request a request, written once, not a
// copy for each report.
type underway struct {
	started time.Time
	req     *Request // nil when no OnRequest handler is registered
}

// requestStarting reports to OnRequest that a request to key for rawURL
// (empty for robots.txt) starts now.
func (r *crawl) requestStarting(ctx context.Context, key, rawURL string, robots bool) underway {
	u := underway{started: r.now()}
	hs := r.hooks().onRequest
	if len(hs) == 0 {
		return u
	}
	u.req, _ = r.requests.Get().(*Request)
	if u.req == nil {
		u.req = new(Request)
	}
	// Every field written: the Request may come back from the pool with
	// an earlier request's answer in it.
	*u.req = Request{Key: key, URL: rawURL, Robots: robots, Started: u.started}
	r.report(ctx, hs, u.req)
	return u
}

// report runs the OnRequest handlers hs for req.
func (r *crawl) report(ctx context.Context, hs []func(context.Context, *Request), req *Request) {
	for _, f := range hs {
		r.safely(ctx, req.URL, func() { f(ctx, req) })
	}
}

// requestAnswered reports to OnRequest the end of the request u at
// answered, with status (0 if none), size and err, answered a, after
// which the host's pacing state is h; then recycles u's Request, which
// keeps what it last held until its next start overwrites it (the
// pool's own are dropped at the collector's next cycles).
func (r *crawl) requestAnswered(ctx context.Context, u underway, answered time.Time, status int, size int64, err error, a ratelimit.Answer, h ratelimit.HostState) {
	p := u.req
	if p == nil {
		return
	}
	p.Answered, p.Status, p.Size, p.Err, p.Failure = answered, status, size, err, a.Failure
	if a.Header != nil {
		p.RetryAfter = a.Header.Get("Retry-After")
	}
	p.Pace = r.policy.Status(p.Key, h, answered)
	r.report(ctx, r.hooks().onRequest, p)
	r.requests.Put(p)
}

// pageAnswered reports the end of the request u for j's item, which got
// status (0 if none), header and size, or err: answered when j's pacing
// took note of it.
func (r *crawl) pageAnswered(ctx context.Context, j *lease, u underway, a ratelimit.Answer, status int, size int64, err error) {
	if u.req != nil && j.Visit != nil {
		u.req.Due = j.Due
	}
	r.requestAnswered(ctx, u, j.answered, status, size, err, a, j.Pace)
}

// robotsAnswered reports the end of a robots.txt request u, answered at
// answered.
func (r *crawl) robotsAnswered(ctx context.Context, u underway, answered time.Time, status int, header http.Header, rtt time.Duration, err error, h ratelimit.HostState) {
	if u.req == nil {
		return
	}
	r.requestAnswered(ctx, u, answered, status, 0, err, answer(status, header, rtt, err), h)
}

// reportRobots runs the OnRobots handlers for e, fetched for u.
func (r *crawl) reportRobots(ctx context.Context, u *url.URL, e *gate.Entry) {
	hs := r.hooks().onRobots
	if len(hs) == 0 {
		return
	}
	key := r.keys.Key(u)
	for _, f := range hs {
		r.safely(ctx, e.URL, func() { f(ctx, key, e) })
	}
}

// Key returns the politeness key the running crawl paces rawURL's host
// under — the Key of its Requests and HostInfo — without asking the
// Store. It returns ErrNotRunning outside Run.
func (c *Crawler) Key(rawURL string) (string, error) {
	r := c.cur.Load()
	if r == nil {
		return "", ErrNotRunning
	}
	key, _, err := r.keyOf(rawURL)
	return key, err
}

// keyOf returns the politeness key of rawURL and its canonical form.
func (r *crawl) keyOf(rawURL string) (string, *url.URL, error) {
	canon, err := r.cfg.canonicalizer.Canonical(rawURL)
	if err != nil {
		return "", nil, err
	}
	u, err := url.Parse(canon)
	if err != nil {
		return "", nil, err
	}
	return r.keys.Key(u), u, nil
}
