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

// newRequest returns a zero Request from r.requests.
func (r *crawl) newRequest() *Request {
	if req, ok := r.requests.Get().(*Request); ok {
		return req
	}
	return new(Request)
}

// requestStarting reports to OnRequest that a request to key for rawURL
// (empty for robots.txt) starts now, and returns now.
func (r *crawl) requestStarting(ctx context.Context, key, rawURL string, robots bool) time.Time {
	now := r.now()
	hs := r.hooks().onRequest
	if len(hs) == 0 {
		return now
	}
	req := r.newRequest()
	*req = Request{Key: key, URL: rawURL, Robots: robots, Started: now}
	r.report(ctx, hs, req)
	return now
}

// report runs the OnRequest handlers hs for req, then recycles req.
func (r *crawl) report(ctx context.Context, hs []func(context.Context, *Request), req *Request) {
	for _, f := range hs {
		r.safely(ctx, req.URL, func() { f(ctx, req) })
	}
	*req = Request{}
	r.requests.Put(req)
}

// requestAnswered reports to OnRequest the end of the request req, answered
// a (with status and size), after which the host's pacing state is h.
func (r *crawl) requestAnswered(ctx context.Context, req Request, a ratelimit.Answer, h ratelimit.HostState) {
	hs := r.hooks().onRequest
	if len(hs) == 0 {
		return
	}
	p := r.newRequest()
	*p = req
	p.Answered = r.now()
	p.Failure = a.Failure
	if a.Header != nil {
		p.RetryAfter = a.Header.Get("Retry-After")
	}
	p.Pace = r.policy.Status(p.Key, h, p.Answered)
	r.report(ctx, hs, p)
}

// pageAnswered reports the end of a request for j's item, which started at
// start and got status (0 if none), header and size, or err.
func (r *crawl) pageAnswered(ctx context.Context, j *lease, start time.Time, a ratelimit.Answer, status int, size int64, err error) {
	req := Request{Key: j.Key, URL: j.URL, Started: start, Status: status, Err: err, Size: size}
	if j.Visit != nil {
		req.Due = j.Due
	}
	r.requestAnswered(ctx, req, a, j.Pace)
}

// robotsAnswered reports the end of a robots.txt request to key.
func (r *crawl) robotsAnswered(ctx context.Context, key string, start time.Time, status int, header http.Header, rtt time.Duration, err error, h ratelimit.HostState) {
	if len(r.hooks().onRequest) == 0 {
		return
	}
	r.requestAnswered(ctx, Request{Key: key, Robots: true, Started: start, Status: status, Err: err}, answer(status, header, rtt, err), h)
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
