package crawler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots/gate"
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
	// Meta is the metadata given with the page's URL (a Seed's, or
	// Follow's and Enqueue's meta); nil when there is none. Handlers must
	// not modify it.
	Meta map[string]string

	run  *run
	item *frontier.Item
}

// Link is a URL found on a page by an extractor.
type Link = fetch.Link

// Errors Run and Enqueue return.
var (
	// ErrRunning: Run was called while the Crawler was already running.
	ErrRunning = errors.New("crawler: already running")
	// ErrNotRunning: Enqueue was called outside Run.
	ErrNotRunning = errors.New("crawler: not running")
	// ErrNoSeeds: Run got no seed that could be scheduled, and its Store
	// holds no work to resume.
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
	onError      []func(context.Context, *url.URL, error)
	onDisallowed []func(context.Context, *url.URL, DisallowReason)
	onHTML       []htmlHandler
	filters      []func(u *url.URL, from *url.URL, depth int) bool
	feed         <-chan Seed // RunFeed's, while it runs

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
	if cfg.recorder != nil && (cfg.client != nil || cfg.transport != nil) {
		return nil, invalid("WithWARC records through the crawler's own transport: it cannot be combined with WithHTTPClient or WithTransport")
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

// OnError registers f to be called when fetching or handling u fails; err
// is an *Error, whose Kind is the key Stats.Errors counts it under (see
// ErrorKind). u is a *url.URL like every hook's; a seed that is not a URL
// at all comes whole in u.Opaque, so u.String() gives it back. Same
// concurrency guarantees as OnPage.
func (c *Crawler) OnError(f func(ctx context.Context, u *url.URL, err error)) {
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
// is the page it was found on: rawURL may then be relative, and is resolved
// against the page's base URL (see Page.Follow); it gets one more depth than
// from and from's URL as referrer. Without from, rawURL must be absolute
// and is scheduled like a seed but without widening the scope. meta, if not
// nil, travels with the URL to its Page.Meta. The URL goes through
// canonicalisation, dedup, scope, filters and robots like any other.
func (c *Crawler) Enqueue(ctx context.Context, rawURL string, from *Page, meta map[string]string) error {
	r := c.cur.Load()
	if r == nil {
		return ErrNotRunning
	}
	if from != nil && from.Page != nil && from.run == r {
		return from.Follow(ctx, rawURL, meta)
	}
	it := frontier.Item{URL: rawURL, Meta: meta}
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

// Seed is a URL to start a crawl from, with metadata that travels with it
// to its Page.Meta.
type Seed struct {
	URL  string
	Meta map[string]string
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
	Robots *gate.Entry
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
	info := HostInfo{Key: r.keys.Key(u)}
	info.Robots, _ = r.gate.Cached(u)
	h, err := r.fr.Host(context.Background(), info.Key)
	if err != nil {
		return HostInfo{}, err
	}
	info.Pace = r.policy.Status(info.Key, h, r.now())
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
// none is left. If the frontier's Store fails, the crawl stops as on
// cancellation and Run returns that error (wrapping frontier.ErrStore): no
// URL is silently lost. Run starts no goroutine that outlives it.
func (c *Crawler) Run(ctx context.Context, seeds ...string) error {
	s := make([]Seed, len(seeds))
	for i, u := range seeds {
		s[i].URL = u
	}
	return c.RunSeeds(ctx, s...)
}

// RunSeeds is Run with seeds that carry metadata.
func (c *Crawler) RunSeeds(ctx context.Context, seeds ...Seed) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer c.running.Store(false)
	if err := ctx.Err(); err != nil {
		return err
	}

	urls := make([]string, len(seeds))
	for i, s := range seeds {
		urls[i] = s.URL
	}
	store := c.cfg.store
	if store == nil {
		store = new(frontier.MemoryStore)
	}
	addrs, err := c.crawlAddresses(ctx, store, urls)
	if err != nil {
		return err
	}
	r, err := c.newRun(store, addrs)
	if err != nil {
		return err
	}
	r.stop = ctx
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

	if err := r.addSeeds(ctx, seeds); err != nil {
		return err
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

	c.mu.Lock()
	feed := c.feed
	c.mu.Unlock()
	var following sync.WaitGroup
	followCtx, stopFollowing := context.WithCancel(ctx)
	defer func() {
		stopFollowing()
		following.Wait()
	}()
	if feed != nil {
		r.feed = &seedFeed{open: true, moved: make(chan struct{})}
		following.Go(func() { r.follow(followCtx, feed) })
	}

	r.pool = workerPool{max: int32(c.cfg.workers), run: func() { r.work(work) }}
	r.pool.start(min(c.cfg.workers, initialWorkers))
	r.pool.wg.Wait()
	close(stopWatch)
	watch.Wait()
	if r.failure != nil {
		return r.failure
	}
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
	policy  *ratelimit.Policy
	keys    *ratelimit.Keys
	gate    *gate.Gate
	fetcher *fetch.Fetcher
	client  *http.Client
	reg     *fetch.Registry
	stats   *stats
	pool    workerPool

	onPage       []func(context.Context, *Page)
	onError      []func(context.Context, *url.URL, error)
	onDisallowed []func(context.Context, *url.URL, DisallowReason)
	onHTML       []htmlHandler
	filters      []func(u *url.URL, from *url.URL, depth int) bool
	feed         *seedFeed // nil unless RunFeed

	// stop is Run's context: once it ends no wait for a host (robots gate,
	// limiter) may turn into a new request, while fetches already under
	// way finish on their own context within the grace period.
	stop context.Context

	failOnce sync.Once
	failure  error // the first error that ended the crawl (a Store failing)

	commitMu sync.Mutex // with WithCheckpoint: handlers and the ack that carries their checkpoint
}

// addSeeds resumes what the Store holds of an earlier run and schedules the
// seeds. It fails with ErrNoSeeds when there is nothing to crawl: no seed
// could be scheduled, none was a URL crawled before, and the Store holds
// no work.
func (r *run) addSeeds(ctx context.Context, seeds []Seed) error {
	if err := r.fr.Resume(ctx); err != nil {
		return err
	}
	items := make([]frontier.Item, len(seeds))
	for i, s := range seeds {
		items[i] = frontier.Item{URL: s.URL, Meta: s.Meta}
	}
	errs, err := r.fr.AddSeedItems(ctx, items)
	if err != nil {
		return err
	}
	accepted, seen := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			accepted++
		case errors.Is(err, frontier.ErrSeen):
			seen++
			r.stats.skipped("seen")
		default:
			r.stats.skipped(skipReason(err))
			r.reportError(ctx, seeds[i].URL, &Error{Kind: skipReason(err), Err: fmt.Errorf("seed skipped: %w", err)})
		}
	}
	if accepted > 0 || seen > 0 {
		return nil
	}
	st, err := r.fr.Stats(ctx)
	if err != nil {
		return err
	}
	if st.Queued+st.Leased == 0 {
		return ErrNoSeeds
	}
	return nil // resuming the Store's work
}

func (r *run) now() time.Time {
	if r.clock != nil {
		return r.clock.Now()
	}
	return time.Now()
}

func (c *Crawler) newRun(store frontier.Store, addrs *fetch.AddressPolicy) (*run, error) {
	cfg := &c.cfg
	c.mu.Lock()
	r := &run{
		c: c, cfg: cfg, log: cfg.logger, clock: cfg.clock,
		onPage:       append([]func(context.Context, *Page){}, c.onPage...),
		onError:      append([]func(context.Context, *url.URL, error){}, c.onError...),
		onDisallowed: append([]func(context.Context, *url.URL, DisallowReason){}, c.onDisallowed...),
		onHTML:       append([]htmlHandler{}, c.onHTML...),
		filters:      append([]func(*url.URL, *url.URL, int) bool{}, c.filters...),
	}
	c.mu.Unlock()

	minDelay := cfg.minDelay
	if minDelay == 0 {
		minDelay = ratelimit.NoMinDelay
	}
	pol, err := ratelimit.NewPolicy(ratelimit.Config{
		MinDelay:       minDelay,
		MaxDelay:       cfg.maxDelay,
		MaxRetryAfter:  cfg.maxDelay, // a Retry-After is a delay a site asks for, capped like Crawl-delay
		Concurrency:    cfg.perHost,
		AdaptiveFactor: cfg.adaptive,
		Logger:         cfg.logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	r.policy = pol
	keys, err := ratelimit.NewKeys(cfg.keyMode, nil, 0, nil, cfg.logger)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	r.keys = keys

	r.fetcher = crawlFetcher(cfg, addrs)
	// robots.txt and pages share one client and so one connection pool.
	r.client = cfg.client
	if r.client == nil {
		if r.fetcher.Transport == nil {
			tr := r.fetcher.CrawlTransport()
			// Hosts are fetched in runs (frontier Affinity), so few
			// idle connections are worth keeping; a finished host's is
			// the least recently used and goes first. Without a cap a
			// crawl of many hosts keeps one open per host it ever
			// visited (2,000 on bench workload c: 40 MB). The cap must
			// stay well above the connections in use, though: when the
			// pool overflows, net/http may close a connection just
			// handed back with a bodiless answer (a redirect) under the
			// request still reading it, which then fails with "too many
			// idle connections" although the server answered — and is
			// fetched again (bench workload c: a few duplicate fetches
			// per run at workers/2).
			tr.MaxIdleConns = max(maxIdleConns, 2*cfg.workers)
			r.fetcher.Transport = tr
		}
		r.client = &http.Client{Transport: r.fetcher.Transport}
	}

	r.reg = fetch.NewRegistry()
	r.reg.MaxLinks = cfg.maxLinks
	if cfg.maxLinks == 0 {
		r.reg.MaxLinks = -1 // WithMaxLinks(0): no cap
	}
	for mt, es := range cfg.extractors {
		r.reg.Set(mt, es...)
	}
	for _, reg := range cfg.extraExtract {
		r.reg.Register(reg.mediaType, reg.e)
	}

	fcfg := frontier.Config{
		Store:         store,
		Canonicalizer: cfg.canonicalizer,
		Scope:         cfg.scope,
		InScope:       cfg.scopeFunc,
		MaxDepth:      cfg.maxDepth,
		Limits: frontier.Limits{
			MaxPages:        cfg.maxPages,
			MaxPagesPerHost: cfg.maxPagesHost,
		},
		MaxPathSegments:   cfg.maxPathSegs,
		MaxSegmentRepeats: cfg.maxSegRepeats,
		Claim:             frontier.ClaimOptions{PerHost: cfg.perHost, Affinity: hostRun, Lease: cfg.lease},
	}
	if p, ok := fcfg.Store.(interface{ PollInterval() time.Duration }); ok {
		fcfg.Poll = p.PollInterval() // a store shared with other processes
	}
	if cfg.sitemaps {
		fcfg.Limits.MaxSitemapsPerHost, fcfg.Limits.MaxSitemapURLsPerHost = cfg.maxSitemaps, cfg.maxSitemapURLs
	}
	if cfg.clock != nil {
		fcfg.Clock = cfg.clock
	}
	if cfg.keyMode != ratelimit.KeyHost {
		fcfg.Key = keys.Key
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

func (r *run) newGate(key func(*url.URL) string) (*gate.Gate, error) {
	// The gate paces robots.txt under the same key as the frontier uses
	// for the host's pages, with the frontier's leases.
	var keeper gate.EntryKeeper
	switch st := r.fr.Store().(type) {
	case *frontier.MemoryStore:
	case gate.EntryKeeper: // a Store with a place of its own for them
		keeper = st
	default:
		// A Store that outlives the process keeps robots.txt too: a
		// resumed crawl, or another process of a distributed one, reads
		// it back instead of asking the site again within its 24 hours.
		keeper = storeKeeper{st}
	}
	return newRobotsGate(r.cfg, r.fetcher, leasePacer{r: r}, key, keeper)
}

// storeKeeper keeps the gate's robots.txt entries in the crawl's Store, as
// metadata under "robots/" and the authority.
type storeKeeper struct{ store frontier.Store }

func (k storeKeeper) LoadEntry(ctx context.Context, authority string) ([]byte, error) {
	return k.store.Meta(ctx, "robots/"+authority)
}

func (k storeKeeper) SaveEntry(ctx context.Context, authority string, data []byte) error {
	return k.store.SetMeta(ctx, "robots/"+authority, data)
}

// maxIdleConns is the least number of idle keep-alive connections the
// default transport keeps across all hosts.
const maxIdleConns = 256

// hostRun is how many pages of a host that may be fetched again at once are
// fetched in a row, over one warm connection, before other ready hosts get
// their turn (frontier.Config.Affinity).
const hostRun = 64

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
