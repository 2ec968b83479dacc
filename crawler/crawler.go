package crawler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots"
)

// Version is heed's version, sent in the default User-Agent.
const Version = "0.1"

// Page is a fetched page as handlers see it: the response with its bounded
// body, a goquery document built on first use (Page.Document), and the links
// the extractors found and the crawler scheduled or refused.
type Page struct {
	*fetch.Page
	// Links are the followable links found on the page: empty for
	// redirects, non-2xx responses and pages whose directives say nofollow.
	Links []Link
}

// Link is a URL found on a page by an extractor.
type Link = fetch.Link

// Errors Run and Enqueue return.
var (
	// ErrRunning: Run was called while the Crawler was already running.
	ErrRunning = errors.New("crawler: already running")
	// ErrNotRunning: Enqueue was called outside Run.
	ErrNotRunning = errors.New("crawler: not running")
	// ErrNoSeeds: Run got no seed that could be scheduled.
	ErrNoSeeds = errors.New("crawler: no valid seed")
)

// DisallowReason says why a URL was not fetched for robots.txt reasons.
type DisallowReason string

// Reasons passed to OnDisallowed handlers.
const (
	// DisallowedByRules: the site's robots.txt rules forbid the URL.
	DisallowedByRules DisallowReason = "rules"
	// DisallowedUnavailable: the site's robots.txt could not be fetched
	// (5xx, 429, network error), which means complete disallow (RFC 9309
	// §2.3.1.4), and did not come back within WithRobotsWait.
	DisallowedUnavailable DisallowReason = "robots-unavailable"
)

// Crawler crawls the web from seed URLs, politely: every URL passes the
// robots.txt of its authority, every host is paced by its own token bucket,
// and the frontier hands workers only hosts that may be fetched now.
//
// Configure it with options and hooks before Run; hooks registered during
// Run are ignored until the next Run. A Crawler runs one crawl at a time.
type Crawler struct {
	cfg config

	mu           sync.Mutex
	onPage       []func(context.Context, *Page)
	onError      []func(context.Context, string, error)
	onDisallowed []func(context.Context, *url.URL, DisallowReason)
	filters      []func(u *url.URL, from *url.URL, depth int) bool

	running atomic.Bool
	cur     atomic.Pointer[run]
	last    *stats
}

// New returns a Crawler configured by opts, or an error wrapping
// ErrInvalidOption naming the first bad option.
func New(opts ...Option) (*Crawler, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.maxDelay < cfg.minDelay {
		return nil, invalid("max delay %v is below the minimum delay %v", cfg.maxDelay, cfg.minDelay)
	}
	if cfg.userAgent == "" {
		cfg.userAgent = fmt.Sprintf("%s/%s (+https://github.com/heedcrawl/heed)", cfg.agent, Version)
		if cfg.agent != DefaultAgent {
			cfg.userAgent = fmt.Sprintf("%s (heed/%s; +https://github.com/heedcrawl/heed)", cfg.agent, Version)
		}
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	return &Crawler{cfg: cfg}, nil
}

// Agent returns the product token robots.txt is read for.
func (c *Crawler) Agent() string { return c.cfg.agent }

// UserAgent returns the User-Agent header the crawler sends.
func (c *Crawler) UserAgent() string { return c.cfg.userAgent }

// OnPage registers f to be called for every response received for a page
// (any status, redirects included). Handlers run on the worker that fetched
// the page: handlers of different pages run concurrently, the handlers of
// one page run one after the other in registration order, and Run returns
// only after every handler has returned. A panicking handler is recovered,
// counted under Stats.Errors["handler-panic"] and reported to OnError; the
// crawl goes on.
func (c *Crawler) OnPage(f func(ctx context.Context, p *Page)) {
	c.mu.Lock()
	c.onPage = append(c.onPage, f)
	c.mu.Unlock()
}

// OnError registers f to be called when fetching or handling url fails.
// Same concurrency guarantees as OnPage.
func (c *Crawler) OnError(f func(ctx context.Context, url string, err error)) {
	c.mu.Lock()
	c.onError = append(c.onError, f)
	c.mu.Unlock()
}

// OnDisallowed registers f to be called for every URL robots.txt kept the
// crawler from fetching. Same concurrency guarantees as OnPage.
func (c *Crawler) OnDisallowed(f func(ctx context.Context, u *url.URL, reason DisallowReason)) {
	c.mu.Lock()
	c.onDisallowed = append(c.onDisallowed, f)
	c.mu.Unlock()
}

// Filter registers f to decide which discovered URLs are scheduled: a link u
// found at the given depth on the page (or sitemap) from is followed only if
// every filter returns true. Seeds and redirect targets are not filtered.
// Filters run concurrently and must be safe for it.
func (c *Crawler) Filter(f func(u *url.URL, from *url.URL, depth int) bool) {
	c.mu.Lock()
	c.filters = append(c.filters, f)
	c.mu.Unlock()
}

// Enqueue schedules rawURL from inside a running crawl, for instance from an
// OnPage handler that found a URL the extractors did not. from, if non-nil,
// is the page it was found on: the URL gets one more depth than from and
// from's URL as referrer; otherwise it is scheduled like a seed but without
// widening the scope. The URL goes through canonicalisation, dedup, scope,
// filters and robots like any other.
func (c *Crawler) Enqueue(ctx context.Context, rawURL string, from *Page) error {
	r := c.cur.Load()
	if r == nil {
		return ErrNotRunning
	}
	it := frontier.Item{URL: rawURL}
	var fromURL *url.URL
	if from != nil && from.Page != nil {
		it.Depth = from.Depth + 1
		if from.URL != nil {
			it.Referrer = from.URL.String()
			fromURL = from.URL
		}
	}
	return r.add(ctx, it, fromURL, true)
}

// HostInfo is what a running crawl knows about one host: how it reads its
// robots.txt and how fast it may fetch from it.
type HostInfo struct {
	// Key is the politeness key the host is paced under (see
	// WithPolitenessKey).
	Key string
	// Robots is the host's robots.txt entry (outcome, rules for our agent,
	// Crawl-delay, sitemaps, when it was fetched and expires), or nil if
	// it has not been fetched or has left the cache.
	Robots *robots.Entry
	// Pace is the host's effective delay and why (minimum delay,
	// Crawl-delay, back-off, adaptive), any Retry-After pause, and its
	// requests in flight.
	Pace ratelimit.HostStatus
}

// Host reports what the running crawl knows about the host of rawURL,
// without fetching anything. It returns ErrNotRunning outside Run.
func (c *Crawler) Host(rawURL string) (HostInfo, error) {
	r := c.cur.Load()
	if r == nil {
		return HostInfo{}, ErrNotRunning
	}
	canon, err := r.cfg.canonicalizer.Canonical(rawURL)
	if err != nil {
		return HostInfo{}, err
	}
	u, err := url.Parse(canon)
	if err != nil {
		return HostInfo{}, err
	}
	info := HostInfo{Key: u.Host}
	if r.cfg.keyMode != ratelimit.KeyHost {
		info.Key = r.lim.Key(u)
	}
	info.Robots, _ = r.gate.Cached(u)
	info.Pace = r.lim.Status(info.Key)
	return info, nil
}

// Stats returns the crawl's counters: live during Run, final after it.
func (c *Crawler) Stats() Stats {
	if r := c.cur.Load(); r != nil {
		return r.stats.snapshot(r.now())
	}
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last == nil {
		return newStats(time.Time{}).snapshot(time.Time{})
	}
	return last.snapshot(time.Time{})
}

// Run crawls from seeds until no reachable URL is left, a page limit is
// reached, or ctx is cancelled. On cancellation it stops handing out work,
// lets fetches in flight finish within the grace period, and returns
// ctx's error; Stats then gives the summary. Seeds that are not absolute
// http(s) URLs are reported to OnError and skipped; ErrNoSeeds is returned if
// none is left. Run starts no goroutine that outlives it.
func (c *Crawler) Run(ctx context.Context, seeds ...string) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer c.running.Store(false)
	if err := ctx.Err(); err != nil {
		return err
	}

	r, err := c.newRun()
	if err != nil {
		return err
	}
	c.cur.Store(r)
	defer func() {
		r.stats.mu.Lock()
		r.stats.ended = r.now()
		r.stats.mu.Unlock()
		c.mu.Lock()
		c.last = r.stats
		c.mu.Unlock()
		c.cur.Store(nil)
	}()
	defer r.fetcher.CloseIdleConnections()

	accepted := 0
	for _, s := range seeds {
		if err := r.fr.AddSeed(ctx, s); err != nil {
			if errors.Is(err, frontier.ErrSeen) {
				r.stats.skipped("seen")
				continue
			}
			r.stats.skipped(skipReason(err))
			r.reportError(ctx, s, fmt.Errorf("seed skipped: %w", err))
			continue
		}
		accepted++
	}
	if accepted == 0 {
		return ErrNoSeeds
	}

	// Workers run on work, whose cancellation trails ctx's by the grace
	// period, so fetches in flight at cancellation may finish.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopWatch := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-ctx.Done():
		case <-stopWatch:
			return
		}
		r.fr.Close()
		t := time.NewTimer(c.cfg.grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelWork()
		case <-stopWatch:
		}
	})

	r.pool = workerPool{max: int32(c.cfg.workers), run: func() { r.work(work, ctx.Done()) }}
	r.pool.start(min(c.cfg.workers, initialWorkers))
	r.pool.wg.Wait()
	close(stopWatch)
	watch.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// run is the state of one Run.
type run struct {
	c       *Crawler
	cfg     *config
	log     *slog.Logger
	clock   Clock
	fr      *frontier.Frontier
	lim     *ratelimit.HostLimiter
	gate    *robots.Gate
	fetcher *fetch.Fetcher
	client  *http.Client
	reg     *fetch.Registry
	stats   *stats
	pool    workerPool

	onPage       []func(context.Context, *Page)
	onError      []func(context.Context, string, error)
	onDisallowed []func(context.Context, *url.URL, DisallowReason)
	filters      []func(u *url.URL, from *url.URL, depth int) bool

	// attempts counts, per canonical URL handed back for another try, the
	// tries so far: page retries after failures, robots checks of hosts
	// whose robots.txt is unavailable, and redirect hops leading to it.
	mu          sync.Mutex
	attempts    map[string]attempt
	authorities map[string]authority
}

// authority is what a run remembers of each authority whose robots.txt it
// fetched: small, since the gate's cache is bounded and this map is not.
type authority struct {
	counted  time.Time // CheckedAt of the robots.txt entry last counted in Stats
	sitemaps bool      // its sitemaps were scheduled
}

type attempt struct {
	retries      uint8
	chain        []string  // redirect hops that led here
	blockedSince time.Time // first refusal for an unreachable robots.txt
}

func (r *run) now() time.Time {
	if r.clock != nil {
		return r.clock.Now()
	}
	return time.Now()
}

func (c *Crawler) newRun() (*run, error) {
	cfg := &c.cfg
	c.mu.Lock()
	r := &run{
		c: c, cfg: cfg, log: cfg.logger, clock: cfg.clock,
		onPage:       append([]func(context.Context, *Page){}, c.onPage...),
		onError:      append([]func(context.Context, string, error){}, c.onError...),
		onDisallowed: append([]func(context.Context, *url.URL, DisallowReason){}, c.onDisallowed...),
		filters:      append([]func(*url.URL, *url.URL, int) bool{}, c.filters...),
		attempts:     map[string]attempt{},
		authorities:  map[string]authority{},
	}
	c.mu.Unlock()

	minDelay := cfg.minDelay
	if minDelay == 0 {
		minDelay = ratelimit.NoMinDelay
	}
	var limClock ratelimit.Clock
	if cfg.clock != nil {
		limClock = cfg.clock
	}
	lim, err := ratelimit.New(ratelimit.Config{
		MinDelay:       minDelay,
		MaxDelay:       cfg.maxDelay,
		Concurrency:    cfg.perHost,
		AdaptiveFactor: cfg.adaptive,
		Key:            cfg.keyMode,
		Clock:          limClock,
		Logger:         cfg.logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	r.lim = lim

	r.fetcher = &fetch.Fetcher{
		UserAgent:      cfg.userAgent,
		Client:         cfg.client,
		Transport:      cfg.transport,
		ConnectTimeout: cfg.connectTimeout,
		HeaderTimeout:  cfg.headerTimeout,
		Timeout:        cfg.timeout,
		MaxBodySize:    cfg.bodyLimit,
		MaxRedirects:   cfg.maxRedirects,
		Directives: fetch.DirectivePolicy{
			Agents:       []string{cfg.agent},
			IgnoreMeta:   !cfg.respectNofollw,
			IgnoreHeader: !cfg.respectNofollw,
			IgnoreRel:    !cfg.respectNofollw,
		},
	}
	if cfg.agent == DefaultAgent {
		r.fetcher.Directives.Agents = nil // "heed" and "heedbot"
	}
	// robots.txt and pages share one client and so one connection pool.
	r.client = cfg.client
	if r.client == nil {
		if r.fetcher.Transport == nil {
			tr := r.fetcher.CrawlTransport()
			// Hosts are fetched in runs (frontier Affinity), so few
			// idle connections are worth keeping; a finished host's is
			// the least recently used and goes first. Without a cap a
			// crawl of many hosts keeps one open per host it ever
			// visited (2,000 on bench workload c: 40 MB). Hosts paced
			// a second apart may reconnect when more than this many
			// wait at once, which costs little at that pace.
			tr.MaxIdleConns = max(maxIdleConns, cfg.workers/2)
			r.fetcher.Transport = tr
		}
		r.client = &http.Client{Transport: r.fetcher.Transport}
	}

	r.reg = fetch.NewRegistry()
	for mt, es := range cfg.extractors {
		r.reg.Set(mt, es...)
	}
	for _, reg := range cfg.extraExtract {
		r.reg.Register(reg.mediaType, reg.e)
	}

	fcfg := frontier.Config{
		Pacer:           lim,
		Canonicalizer:   cfg.canonicalizer,
		Scope:           cfg.scope,
		InScope:         cfg.scopeFunc,
		MaxDepth:        cfg.maxDepth,
		MaxPages:        cfg.maxPages,
		MaxPagesPerHost: cfg.maxPagesHost,
		PerHost:         cfg.perHost,
		Affinity:        hostRun,
	}
	if cfg.clock != nil {
		fcfg.Clock = cfg.clock
	}
	if cfg.keyMode != ratelimit.KeyHost {
		fcfg.Key = lim.Key
	}
	r.fr = frontier.New(fcfg)

	gate, err := r.newGate(fcfg.Key)
	if err != nil {
		return nil, err
	}
	r.gate = gate
	r.stats = newStats(r.now())
	r.stats.frontier = r.fr
	return r, nil
}

func (r *run) newGate(key func(*url.URL) string) (*robots.Gate, error) {
	cfg := r.cfg
	gc := robots.GateConfig{
		Client:    r.client,
		Agent:     cfg.agent,
		UserAgent: cfg.userAgent,
		Pacer:     robotsPacer{r.lim},
		CacheSize: cfg.robotsCache,
		Timeout:   cfg.timeout,
		Logger:    cfg.logger,
	}
	if cfg.clock != nil {
		gc.Clock = cfg.clock
	}
	if cfg.robotsWait > 0 {
		// Retry an unreachable robots.txt often enough that the wait can
		// pay off.
		gc.RetryMin = min(max(cfg.robotsWait/4, time.Second), robots.DefaultGateRetryMin)
	}
	// The gate paces robots.txt under the same key as the frontier and the
	// limiter use for the host's pages.
	gc.Key = key
	if key == nil {
		gc.Key = func(u *url.URL) string { return u.Host }
	}
	g, err := robots.NewGate(gc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return g, nil
}

// robotsPacer paces the gate's robots.txt fetches with the host limiter and
// reports their answers to it, except failures. An unreachable robots.txt
// disallows the host's every page and the gate retries it on its own
// back-off; pausing the host's pages as well would only keep URLs that will
// be refused waiting in the queue, holding a crawl open.
type robotsPacer struct{ lim *ratelimit.HostLimiter }

func (p robotsPacer) Wait(ctx context.Context, key string) error { return p.lim.Wait(ctx, key) }
func (p robotsPacer) Done(key string)                            { p.lim.Done(key) }

func (p robotsPacer) Observe(key string, status int, header http.Header, rtt time.Duration, err error) {
	if err != nil || status == http.StatusTooManyRequests || status >= 500 {
		return
	}
	p.lim.Observe(key, status, header, rtt, err)
}

// maxIdleConns is the least number of idle keep-alive connections the
// default transport keeps across all hosts.
const maxIdleConns = 256

// hostRun is how many pages of a host that may be fetched again at once are
// fetched in a row, over one warm connection, before other ready hosts get
// their turn (frontier.Config.Affinity).
const hostRun = 64

// work is one worker's loop: take a ready item, process it, repeat until
// the frontier is exhausted or closed, or stop closes. Run closes the
// frontier when its context ends, but from another goroutine: checking stop
// here keeps a worker that finishes a page just after cancellation from
// taking one more.
func (r *run) work(ctx context.Context, stop <-chan struct{}) {
	for !closed(stop) {
		r.pool.idle.Add(1)
		it, err := r.fr.Next(ctx)
		if r.pool.idle.Add(-1) == 0 && err == nil {
			r.pool.grow() // no worker is left waiting for the next item
		}
		if err != nil {
			if !errors.Is(err, frontier.ErrExhausted) && !errors.Is(err, frontier.ErrClosed) && ctx.Err() == nil {
				r.log.Error("crawler: frontier failed", "err", err)
			}
			return
		}
		if closed(stop) {
			r.deferItem(it, r.now()) // not started: leave it queued
			return
		}
		r.process(ctx, it)
	}
}

// initialWorkers is how many workers a crawl starts with; more are started,
// up to WithWorkers, whenever every worker is busy.
const initialWorkers = 8

// workerPool starts workers as work demands them, up to max. Idle workers
// cost memory and garbage-collector time (their stacks are scanned every
// cycle), and a crawl limited by per-host pacing or by CPU needs far fewer
// than one limited by slow servers, so the pool grows only while every
// worker is busy: it settles at about one idle worker.
type workerPool struct {
	max   int32
	run   func()
	total atomic.Int32
	idle  atomic.Int32 // workers waiting in Frontier.Next
	wg    sync.WaitGroup
}

func (p *workerPool) start(n int) {
	for range n {
		p.grow()
	}
}

// grow starts one more worker unless max are running. A running worker
// calls it, so the WaitGroup's count is above zero while Run waits.
func (p *workerPool) grow() {
	for {
		n := p.total.Load()
		if n >= p.max {
			return
		}
		if p.total.CompareAndSwap(n, n+1) {
			p.wg.Go(p.run)
			return
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// release hands it back to the frontier; failures there are bugs, logged.
func (r *run) release(it *frontier.Item) {
	if err := r.fr.Done(it); err != nil {
		r.log.Error("crawler: releasing item", "url", it.URL, "err", err)
	}
}

func (r *run) deferItem(it *frontier.Item, until time.Time) {
	if err := r.fr.Defer(it, until); err != nil {
		r.log.Error("crawler: deferring item", "url", it.URL, "err", err)
	}
}

// process takes one item through the robots gate, the limiter, the fetcher
// and the extractors.
func (r *run) process(ctx context.Context, it *frontier.Item) {
	u, err := url.Parse(it.URL)
	if err != nil { // the frontier hands out only canonical URLs
		r.stats.errorKind("other")
		r.reportError(ctx, it.URL, fmt.Errorf("canonical URL does not parse: %w", err))
		r.release(it)
		return
	}
	if !r.robotsAllow(ctx, it, u) {
		return
	}
	if err := r.lim.Wait(ctx, it.Key); err != nil {
		// Only cancellation ends a wait; give the item back so it is not
		// counted as done.
		r.deferItem(it, r.now())
		return
	}
	if it.Kind == frontier.KindSitemap {
		r.fetchSitemap(ctx, it, u)
	} else {
		r.fetchPage(ctx, it, u)
	}
}

// robotsAllow consults the gate. It returns true when the item may be
// fetched now; otherwise it has released or deferred the item itself.
func (r *run) robotsAllow(ctx context.Context, it *frontier.Item, u *url.URL) bool {
	v, err := r.gate.Check(ctx, u)
	if err != nil {
		if ctx.Err() != nil {
			r.deferItem(it, r.now())
			return false
		}
		r.stats.errorKind("other")
		r.reportError(ctx, it.URL, fmt.Errorf("robots gate: %w", err))
		r.release(it)
		return false
	}
	e := v.Entry
	if e != nil && e.HasCrawlDelay {
		r.lim.SetCrawlDelay(it.Key, e.CrawlDelay)
	}
	if v.Fetched {
		r.robotsFetched(ctx, u, e)
		if v.Allowed {
			// This worker's slot went to robots.txt; unless the host
			// may be fetched again at once, the page waits its turn.
			if at := r.lim.ReadyAt(it.Key); at.After(r.now()) {
				r.deferItem(it, at)
				return false
			}
			return true
		}
	}
	if v.Allowed {
		r.forgetBlocked(it.URL)
		return true
	}
	if !v.RetryAt.IsZero() {
		// robots.txt is unreachable: complete disallow for now. Wait for
		// the gate's retry if the user allows that much patience.
		now := r.now()
		first := r.blockedSince(it.URL, now)
		if r.cfg.robotsWait > 0 && !v.RetryAt.After(first.Add(r.cfg.robotsWait)) {
			r.deferItem(it, v.RetryAt)
			return false
		}
		r.forget(it.URL)
		r.stats.errorKind("robots-unavailable")
		r.disallowed(ctx, it, u, DisallowedUnavailable)
		return false
	}
	r.forget(it.URL)
	r.disallowed(ctx, it, u, DisallowedByRules)
	return false
}

// blockedSince returns when url was first refused for an unreachable
// robots.txt, recording now if it was not before.
func (r *run) blockedSince(url string, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.attempts[url]
	if a.blockedSince.IsZero() {
		a.blockedSince = now
		r.attempts[url] = a
	}
	return a.blockedSince
}

func (r *run) forgetBlocked(url string) {
	r.mu.Lock()
	if a, ok := r.attempts[url]; ok && !a.blockedSince.IsZero() {
		a.blockedSince = time.Time{}
		r.attempts[url] = a
	}
	r.mu.Unlock()
}

func (r *run) disallowed(ctx context.Context, it *frontier.Item, u *url.URL, why DisallowReason) {
	r.stats.update(func(s *Stats) { s.Disallowed++ })
	r.log.Debug("crawler: disallowed by robots.txt", "url", it.URL, "reason", string(why))
	for _, f := range r.onDisallowed {
		r.safely(ctx, it.URL, func() { f(ctx, u, why) })
	}
	r.release(it)
}

// robotsFetched records a robots.txt fetch and schedules the sitemaps it
// names.
func (r *run) robotsFetched(ctx context.Context, u *url.URL, e *robots.Entry) {
	if e == nil {
		return
	}
	// Every caller that waited for one fetch gets the same entry: count it
	// once.
	r.mu.Lock()
	a := r.authorities[e.Authority]
	counted := a.counted.Equal(e.CheckedAt)
	a.counted = e.CheckedAt
	scheduleSitemaps := !a.sitemaps && r.cfg.sitemaps && e.Outcome != robots.OutcomeUnreachable
	if scheduleSitemaps {
		a.sitemaps = true
	}
	r.authorities[e.Authority] = a
	r.mu.Unlock()
	if counted {
		return
	}
	r.stats.update(func(s *Stats) {
		s.RobotsOutcomes[e.Outcome.String()]++
		if e.HasCrawlDelay && e.CrawlDelay > 0 {
			s.CrawlDelayHosts++
			s.MaxCrawlDelay = max(s.MaxCrawlDelay, min(e.CrawlDelay, r.cfg.maxDelay))
		}
	})
	r.log.Debug("crawler: robots.txt", "authority", e.Authority, "outcome", e.Outcome.String(), "status", e.Status)
	if !scheduleSitemaps {
		return
	}
	base := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}
	robotsURL := base.JoinPath("robots.txt").String()
	named := e.Sitemaps
	for _, sm := range fetch.SitemapURLs(base, named, true) {
		it := frontier.Item{URL: sm, Kind: frontier.KindSitemap}
		if len(named) > 0 {
			it.Referrer = robotsURL // cross-submission: the robots.txt named it
		}
		if err := r.fr.Add(ctx, it); err != nil {
			r.stats.skipped(skipReason(err))
		}
	}
}

// bump applies f to url's attempt record and returns what f returns.
func (r *run) bump(url string, f func(a *attempt) int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.attempts[url]
	n := f(&a)
	r.attempts[url] = a
	return n
}

func (r *run) attemptOf(url string) attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[url]
}

func (r *run) forget(url string) {
	r.mu.Lock()
	delete(r.attempts, url)
	r.mu.Unlock()
}

// retryable reports whether a failed fetch is worth another try.
func retryable(status int, err error) bool {
	if err != nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, fetch.ErrInvalidURL) && !errors.Is(err, fetch.ErrContentEncoding)
	}
	return status == http.StatusTooManyRequests || status >= 500
}

// maybeRetry defers it for another try after its host's back-off when the
// failure is retryable and tries remain. It reports whether it did.
func (r *run) maybeRetry(it *frontier.Item, status int, err error) bool {
	if !retryable(status, err) {
		return false
	}
	n := r.bump(it.URL, func(a *attempt) int { a.retries++; return int(a.retries) })
	if n > r.cfg.pageRetries {
		return false
	}
	r.stats.update(func(s *Stats) { s.Retries++ })
	r.deferItem(it, r.lim.ReadyAt(it.Key))
	return true
}

func (r *run) fetchPage(ctx context.Context, it *frontier.Item, u *url.URL) {
	a := r.attemptOf(it.URL)
	req := fetch.Request{URL: it.URL, Depth: it.Depth, Referrer: it.Referrer, RedirectChain: a.chain}
	start := r.now()
	p, err := r.fetcher.Fetch(ctx, req)
	status := 0
	var header http.Header
	if p != nil {
		status, header = p.Status, p.Header
	}
	r.lim.Observe(it.Key, status, header, r.now().Sub(start), err)
	r.lim.Done(it.Key)
	if err != nil {
		if ctx.Err() != nil {
			r.deferItem(it, r.now())
			return
		}
		if r.maybeRetry(it, 0, err) {
			return
		}
		r.forget(it.URL)
		r.stats.errorKind(errorKindOf(err))
		r.reportError(ctx, it.URL, err)
		r.release(it)
		return
	}
	if r.maybeRetry(it, status, nil) {
		return
	}
	r.forget(it.URL)
	r.stats.page(p.Status, p.TransferSize)

	page := &Page{Page: p}
	if p.Redirect != nil {
		r.followRedirect(ctx, it, p)
	} else if p.Status >= 200 && p.Status < 300 {
		page.Links = r.extract(ctx, it, p)
	}
	for _, f := range r.onPage {
		r.safely(ctx, it.URL, func() { f(ctx, page) })
	}
	r.release(it)
}

// followRedirect schedules a redirect's target as a new URL, so it passes
// canonicalisation, dedup, scope and robots.txt like any other.
func (r *run) followRedirect(ctx context.Context, it *frontier.Item, p *fetch.Page) {
	next, err := p.RedirectRequest(r.cfg.maxRedirects)
	if err != nil {
		r.stats.errorKind("redirect")
		r.reportError(ctx, it.URL, err)
		return
	}
	target := frontier.Item{URL: next.URL, Depth: it.Depth, Referrer: it.Referrer, Kind: it.Kind}
	if it.Kind == frontier.KindSitemap {
		target.Referrer = it.Referrer // keep cross-submission through the hop
	}
	canon, err := r.cfg.canonicalizer.Canonical(next.URL)
	if err != nil {
		r.stats.skipped("invalid")
		r.reportError(ctx, it.URL, fmt.Errorf("redirect target: %w", err))
		return
	}
	r.mu.Lock()
	r.attempts[canon] = attempt{chain: next.RedirectChain}
	r.mu.Unlock()
	if err := r.add(ctx, target, p.URL, false); err != nil {
		r.forget(canon)
	}
}

// extract runs the extractors on p and schedules the followable links it
// returns.
func (r *run) extract(ctx context.Context, it *frontier.Item, p *fetch.Page) []Link {
	d := p.Directives()
	if d.Noindex {
		r.stats.update(func(s *Stats) { s.Noindex++ })
	}
	if d.Nofollow && r.cfg.respectNofollw {
		r.stats.update(func(s *Stats) { s.Nofollow++ })
		return nil
	}
	links, err := r.reg.Extract(ctx, p)
	if err != nil {
		r.stats.errorKind("extract")
		r.reportError(ctx, it.URL, fmt.Errorf("extracting links: %w", err))
	}
	kept := links[:0]
	for _, l := range links {
		if l.Nofollow {
			continue
		}
		if !strings.Contains(l.URL, "://") {
			// A custom extractor may return a link as written on the
			// page; resolve it as a browser would.
			ref, err := url.Parse(l.URL)
			if err != nil {
				r.stats.skipped("invalid")
				continue
			}
			l.URL = p.URL.ResolveReference(ref).String()
		}
		kept = append(kept, l)
		r.add(ctx, it.Child(l.URL), p.URL, true)
	}
	return kept
}

// add runs the filters and schedules it, counting a refusal.
func (r *run) add(ctx context.Context, it frontier.Item, from *url.URL, filter bool) error {
	if filter && len(r.filters) > 0 {
		u, err := url.Parse(it.URL)
		if err != nil {
			r.stats.skipped("invalid")
			return fmt.Errorf("%w: %w", frontier.ErrRelative, err)
		}
		for _, f := range r.filters {
			ok := false // a filter that panics keeps the link out
			r.safely(ctx, it.URL, func() { ok = f(u, from, it.Depth) })
			if !ok {
				r.stats.skipped("filter")
				return nil
			}
		}
	}
	if err := r.fr.Add(ctx, it); err != nil {
		r.stats.skipped(skipReason(err))
		return err
	}
	return nil
}

func (r *run) fetchSitemap(ctx context.Context, it *frontier.Item, u *url.URL) {
	start := r.now()
	p, body, err := r.fetcher.Stream(ctx, fetch.Request{URL: it.URL, Depth: it.Depth, Referrer: it.Referrer, MaxBodySize: fetch.MaxSitemapBytes})
	defer func() {
		r.release(it)
	}()
	if err != nil {
		r.lim.Observe(it.Key, 0, nil, r.now().Sub(start), err)
		r.lim.Done(it.Key)
		r.stats.errorKind(errorKindOf(err))
		r.reportError(ctx, it.URL, fmt.Errorf("sitemap: %w", err))
		return
	}
	if body != nil {
		defer body.Close()
	}
	r.lim.Observe(it.Key, p.Status, p.Header, r.now().Sub(start), nil)
	r.lim.Done(it.Key)
	if p.Redirect != nil {
		r.followRedirect(ctx, it, p)
		return
	}
	if p.Status < 200 || p.Status > 299 || body == nil {
		r.log.Info("crawler: sitemap skipped", "url", it.URL, "status", p.Status)
		return
	}
	opts := fetch.SitemapOptions{}
	if it.Referrer != "" {
		opts.RobotsURL = it.Referrer
	}
	var urls int64
	st, err := fetch.ParseSitemap(body, u, opts, func(e fetch.SitemapEntry) bool {
		if e.Sitemap {
			if it.Depth < fetch.DefaultSitemapDepth {
				r.add(ctx, frontier.Item{URL: e.Loc, Kind: frontier.KindSitemap, Depth: it.Depth + 1, Referrer: it.Referrer}, u, false)
			} else {
				r.stats.skipped("sitemap-depth")
			}
			return true
		}
		urls++
		page := frontier.Item{URL: e.Loc, Referrer: it.URL, Lastmod: e.Lastmod, Priority: float32(e.Priority)}
		r.add(ctx, page, u, true)
		return ctx.Err() == nil
	})
	io.Copy(io.Discard, io.LimitReader(body, 64<<10)) // let the connection be reused
	r.stats.update(func(s *Stats) {
		s.Sitemaps++
		s.SitemapURLs += urls
	})
	if err != nil {
		r.stats.errorKind("sitemap")
		r.log.Info("crawler: sitemap read in part", "url", it.URL, "urls", st.URLs, "err", err)
	}
}

// safely runs f, turning a panic into a counted, reported error.
func (r *run) safely(ctx context.Context, url string, f func()) {
	defer func() {
		if v := recover(); v != nil {
			r.stats.errorKind("handler-panic")
			err := fmt.Errorf("crawler: handler panicked: %v\n%s", v, debug.Stack())
			r.log.Error("crawler: handler panicked", "url", url, "panic", fmt.Sprint(v))
			for _, h := range r.onError {
				func() {
					defer func() { recover() }() // an OnError that panics too is not called again
					h(ctx, url, err)
				}()
			}
		}
	}()
	f()
}

func (r *run) reportError(ctx context.Context, url string, err error) {
	r.log.Debug("crawler: error", "url", url, "err", err)
	for _, h := range r.onError {
		r.safely(ctx, url, func() { h(ctx, url, err) })
	}
}
