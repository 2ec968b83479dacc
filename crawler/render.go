package crawler

// Rendering: pages built by script, rendered by a browser whose every
// request goes through the same robots gate, pacing and fetcher as the
// crawl's own.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/hostid"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots/gate"
)

// Renderer renders a fetched page in a browser, every request the page
// makes answered by pol; *render.Renderer is one.
type Renderer interface {
	Render(ctx context.Context, doc *fetch.Page, pol render.Policy) (*render.Result, error)
}

// RenderMode says which pages WithRenderer renders.
type RenderMode uint8

const (
	// RenderAlways renders every 2xx HTML page.
	RenderAlways RenderMode = iota + 1
	// RenderAuto renders only the pages where rendering is predicted to
	// find links the static HTML lacks, as render.Adaptive decides page by
	// page, checking a share of the pages it skips.
	RenderAuto
)

// WithRenderer renders the crawl's 2xx HTML pages with r (a
// *render.Renderer), always or where it matters (mode): handlers,
// extractors and the frontier then get the DOM as the browser built it.
// Every request the browser makes passes the robots.txt of its own host
// through the crawl's gate, waits for its host's turn as a page of that
// host would (Crawl-delay, back-off and -per-host included) and is made
// by the crawl's fetcher (address guard, User-Agent, WARC). A crawl
// without it starts no browser. The caller closes r.
func WithRenderer(r Renderer, mode RenderMode) Option {
	return func(c *config) error {
		if r == nil {
			return invalid("WithRenderer", "nil renderer")
		}
		if mode != RenderAlways && mode != RenderAuto {
			return invalid("WithRenderer", "unknown mode %d", mode)
		}
		c.renderer, c.renderMode = r, mode
		return nil
	}
}

// renderPage renders p, fetched under j, when the mode says so. It returns
// the page to extract from — the rendered one, or p when not rendered or
// when the render failed (counted and reported) — and the render's result.
func (r *crawl) renderPage(ctx context.Context, j *lease, p *fetch.Page) (*fetch.Page, *render.Result) {
	if r.cfg.renderer == nil || p.Status < 200 || p.Status > 299 || !p.IsHTML() {
		return p, nil
	}
	choice, static := render.Render, render.Measures{}
	if r.cfg.renderMode == RenderAuto {
		static = render.Measure(p)
		choice = r.adaptive.Choose(j.Key, p.URL, static)
		if choice == render.Skip {
			r.stats.update(func(s *Stats) { s.RenderSkipped++ })
			return p, nil
		}
	}
	sub := r.rendering.open(r, j)
	res, err := r.cfg.renderer.Render(ctx, p, sub)
	r.rendering.close(sub)
	if err != nil {
		r.stats.update(func(s *Stats) { s.RenderFailed++ })
		if ctx.Err() == nil {
			r.failed(ctx, j.URL, FailedRender, fmt.Errorf("rendering: %w", err))
		}
		return p, nil
	}
	missed := false
	if r.cfg.renderMode == RenderAuto {
		missed = r.adaptive.Observe(j.Key, p.URL, choice, static, render.Measure(res.Page)) && choice == render.Check
	}
	r.stats.update(func(s *Stats) {
		s.Rendered++
		s.RenderTime += res.Duration
		s.Subrequests += int64(res.Requests)
		s.SubrequestsCached += int64(res.Cached)
		s.SubrequestsRefused += int64(res.Refused + res.Blocked)
		if choice == render.Check {
			s.RenderChecked++
		}
		if missed {
			s.RenderMissed++
		}
	})
	return res.Page, res
}

// subrequests is the Policy of one page's render: it makes the browser's
// requests as the crawl makes its own, under the page's lease for its own
// host; for any other, under the lease of a page of that key being
// rendered, or else under a lease of their key.
type subrequests struct {
	r      *crawl
	j      *lease
	mu     sync.Mutex // the page's lease: one request under it at a time
	closed bool       // the render is over: its lease is no more to lend
}

// renderLeases are the leases held by the pages being rendered, by key.
//
// A render holds its page's lease until it ends, seconds later. A
// subrequest of another page for that key, waiting for a lease of it,
// would wait for the whole render — and two pages each loading a resource
// from the other's host would wait for each other until their requests
// timed out, refused. Lent, the lease serves such subrequests as it
// serves the page's own: one at a time, each after the host has rested.
type renderLeases struct {
	mu sync.Mutex
	by map[string][]*subrequests
}

// open registers the render of the page leased by j.
func (rl *renderLeases) open(r *crawl, j *lease) *subrequests {
	s := &subrequests{r: r, j: j}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.by == nil {
		rl.by = make(map[string][]*subrequests)
	}
	rl.by[j.Key] = append(rl.by[j.Key], s)
	return s
}

// close withdraws s's lease, once the subrequest it serves, if any, is done.
func (rl *renderLeases) close(s *subrequests) {
	rl.mu.Lock()
	ss := slices.DeleteFunc(rl.by[s.j.Key], func(o *subrequests) bool { return o == s })
	if len(ss) == 0 {
		delete(rl.by, s.j.Key)
	} else {
		rl.by[s.j.Key] = ss
	}
	rl.mu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// lender returns a render holding a lease of key, or nil.
func (rl *renderLeases) lender(key string) *subrequests {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if ss := rl.by[key]; len(ss) > 0 {
		return ss[0]
	}
	return nil
}

// Fetch implements render.Policy.
func (s *subrequests) Fetch(ctx context.Context, req render.Request) (*fetch.Page, error) {
	r := s.r
	u := req.URL
	v, err := r.subrequestRobots(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("%w: robots.txt of %s: %w", render.ErrRefused, u.Host, err)
	}
	if !v.Allowed {
		r.log.Debug("crawler: subrequest disallowed by robots.txt", "url", u.String(), "page", req.Page.String())
		return nil, fmt.Errorf("%w: %s disallowed by robots.txt", render.ErrRefused, u)
	}
	key := r.politenessKey(u)
	if key == s.j.Key {
		p, _, err := s.underPageLease(ctx, req)
		return p, err
	}
	if o := r.rendering.lender(key); o != nil {
		if p, lent, err := o.underPageLease(ctx, req); lent {
			return p, err
		}
	}
	l, err := r.fr.NextKey(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("%w: waiting for %s: %w", render.ErrRefused, key, err)
	}
	k := &keyLease{l: l, h: l.Pace}
	if e := v.Entry; e != nil {
		r.policy.SetCrawlDelay(key, &k.h, e.CrawlDelay, e.HasCrawlDelay)
	}
	start := r.now()
	p, err := r.fetcher.Fetch(ctx, subrequest(req))
	k.observe(r, key, pageAnswer(p, r.now().Sub(start), err))
	r.keyDone(ctx, key, k)
	return refusedIfForbidden(p, err)
}

// subrequestRobots asks the gate about u for a subrequest, waiting for the
// answer as long as ctx lasts. A robots.txt that must be fetched is
// fetched on the crawl's background context, under leases of its key,
// so that one that hangs is not asked again and again by every page that
// loads from its host: the first fetch ends as a static fetch would
// (unreachable, a complete disallow), and is cached.
func (r *crawl) subrequestRobots(ctx context.Context, u *url.URL) (gate.Verdict, error) {
	type verdict struct {
		v   gate.Verdict
		err error
	}
	ch := make(chan verdict, 1)
	r.background.Go(func() {
		held := &keyLeases{r: r}
		v, err := r.gate.CheckWith(r.bg, u, held)
		held.done(r.bg, r.politenessKey(u), v.Entry)
		if v.Fetched {
			r.robotsFetched(r.bg, u, v.Entry)
		}
		ch <- verdict{v, err}
	})
	select {
	case got := <-ch:
		return got.v, got.err
	case <-ctx.Done():
		return gate.Verdict{}, ctx.Err()
	}
}

// keyLeases paces the robots.txt requests of a subrequest — and their
// redirect hops — with leases of their keys, held until the gate has read
// the answer, so that each key rests by the Crawl-delay its robots.txt
// turns out to set.
type keyLeases struct {
	r      *crawl
	mu     sync.Mutex
	leases map[string]*keyLease
}

// keyLease is a lease of a key held for a subrequest.
type keyLease struct {
	l        *frontier.Lease
	h        ratelimit.HostState
	answered time.Time     // the last answer under it; zero before any
	rest     time.Duration // how long the key rests from answered
}

func (k *keyLease) observe(r *crawl, key string, a ratelimit.Answer) time.Time {
	k.answered = r.now()
	k.rest = r.policy.Observe(key, &k.h, k.answered, a)
	return k.answered.Add(k.rest)
}

// keyDone ends k, its key resting from its last answer.
func (r *crawl) keyDone(ctx context.Context, key string, k *keyLease) {
	rest := time.Duration(0)
	if !k.answered.IsZero() {
		rest = k.answered.Add(r.policy.Rest(k.h, k.answered)).Sub(r.now())
	}
	if err := r.fr.Done(context.WithoutCancel(ctx), k.l, frontier.Outcome{Pace: k.h, Rest: rest}); err != nil && errors.Is(err, frontier.ErrStore) {
		r.fail(fmt.Errorf("crawler: releasing %s: %w", key, err))
	}
}

// Acquire implements gate.Pacer.
func (ks *keyLeases) Acquire(ctx context.Context, key string) (gate.Release, error) {
	r := ks.r
	ks.mu.Lock()
	k := ks.leases[key]
	ks.mu.Unlock()
	if k == nil {
		l, err := r.fr.NextKey(ctx, key)
		if err != nil {
			return nil, err
		}
		k = &keyLease{l: l, h: l.Pace}
		ks.mu.Lock()
		if ks.leases == nil {
			ks.leases = make(map[string]*keyLease)
		}
		ks.leases[key] = k
		ks.mu.Unlock()
	} else if err := r.sleep(ctx, k.answered.Add(k.rest).Sub(r.now())); err != nil {
		return nil, err
	}
	return func(status int, header http.Header, rtt time.Duration, err error) time.Time {
		return k.observe(r, key, answer(status, header, rtt, err))
	}, nil
}

// done ends the leases held; the one of key, whose robots.txt e is, rests
// by its Crawl-delay.
func (ks *keyLeases) done(ctx context.Context, key string, e *gate.Entry) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	for k, l := range ks.leases {
		if k == key && e != nil {
			ks.r.policy.SetCrawlDelay(k, &l.h, e.CrawlDelay, e.HasCrawlDelay)
		}
		ks.r.keyDone(ctx, k, l)
	}
	ks.leases = nil
}

// underPageLease makes req under the lease of s's page, after the host
// has rested from the previous request, as the next page would. It
// reports false, having done nothing, once s's render is over.
func (s *subrequests) underPageLease(ctx context.Context, req render.Request) (p *fetch.Page, lent bool, err error) {
	r, j := s.r, s.j
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, nil
	}
	if err := r.sleep(ctx, r.restFromNow(j)); err != nil {
		return nil, true, fmt.Errorf("%w: %w", render.ErrRefused, err)
	}
	start := r.now()
	p, err = r.fetcher.Fetch(ctx, subrequest(req))
	r.observe(j, pageAnswer(p, r.now().Sub(start), err))
	p, err = refusedIfForbidden(p, err)
	return p, true, err
}

// subrequest is the fetch of a browser's request.
func subrequest(req render.Request) fetch.Request {
	fr := fetch.Request{URL: req.URL.String(), Header: req.Header}
	if req.Page != nil {
		fr.Referrer = req.Page.String()
	}
	return fr
}

// pageAnswer is answer for a fetch's outcome.
func pageAnswer(p *fetch.Page, rtt time.Duration, err error) ratelimit.Answer {
	if p == nil {
		return answer(0, nil, rtt, err)
	}
	return answer(p.Status, p.Header, rtt, err)
}

// refusedIfForbidden marks a fetch the address guard refused as refused.
func refusedIfForbidden(p *fetch.Page, err error) (*fetch.Page, error) {
	if errors.Is(err, fetch.ErrForbiddenAddress) {
		return nil, fmt.Errorf("%w: %w", render.ErrRefused, err)
	}
	return p, err
}

// politenessKey is the key u's requests are paced under: the frontier's
// and the robots gate's one identity of a host.
func (r *crawl) politenessKey(u *url.URL) string {
	if r.cfg.keyMode != ratelimit.KeyHost {
		return r.keys.Key(u)
	}
	return hostid.Key(u)
}
