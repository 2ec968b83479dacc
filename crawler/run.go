package crawler

// One Run of a Crawler: the wiring of its stages, and its lifetime.

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
	"github.com/heedcrawl/heed/fetch/render"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots/gate"
)

// RunSeeds is Run with seeds that carry metadata.
func (c *Crawler) RunSeeds(ctx context.Context, seeds ...Seed) error {
	cfg := c.settings()
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer c.running.Store(false)
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := c.startRun(ctx, seeds)
	if err != nil {
		return err
	}
	defer c.endRun(ctx, r)
	defer r.stopBG()
	defer r.fetcher.CloseIdleConnections()
	if err := r.addSeeds(ctx, seeds); err != nil {
		return err
	}

	// Workers run on work, whose cancellation trails ctx's by the grace
	// period, so fetches in flight at cancellation may finish.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	unwatch := r.watchStop(ctx, cancelWork)
	defer r.followFeed(ctx)()

	r.pool = workerPool{max: int32(cfg.workers), run: func() { r.work(work) }}
	r.pool.start(min(cfg.workers, initialWorkers))
	r.pool.wg.Wait()
	r.stopBG()
	r.background.Wait()
	unwatch()
	if r.failure != nil {
		return r.failure
	}
	return ctx.Err()
}

// finalCountsTimeout bounds the Store's answer to the queue's figures when
// a run ends: a Store out of reach must not hold Run's return.
const finalCountsTimeout = time.Second

// startRun makes the run of a crawl from seeds, with its Store (a
// MemoryStore unless WithStore) and the addresses it may reach, and makes
// it the one Stats and Host read.
func (c *Crawler) startRun(ctx context.Context, seeds []Seed) (*crawl, error) {
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
		return nil, err
	}
	r, err := c.newRun(store, addrs)
	if err != nil {
		return nil, err
	}
	r.stop = ctx
	c.cur.Store(r)
	return r, nil
}

// endRun keeps r's stats as the last run's, for Stats after Run, with the
// queue's figures as the Store gives them at the end. Asking it may take
// as long as finalCountsTimeout, even when ctx is cancelled: the caller
// wants the summary of a crawl it stopped too.
func (c *Crawler) endRun(ctx context.Context, r *crawl) {
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalCountsTimeout)
	defer cancel()
	r.stats.end(final, r.now())
	c.mu.Lock()
	c.last = r.stats
	c.mu.Unlock()
	c.cur.Store(nil)
}

// watchStop closes the frontier once ctx ends, and cancels the workers'
// context a grace period later. The returned function ends the watch.
func (r *crawl) watchStop(ctx context.Context, cancelWork context.CancelFunc) (unwatch func()) {
	stopWatch := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-ctx.Done():
		case <-stopWatch:
			return
		}
		r.fr.Close()
		t := time.NewTimer(r.cfg.grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelWork()
		case <-stopWatch:
		}
	})
	return func() {
		close(stopWatch)
		watch.Wait()
	}
}

// followFeed follows the crawler's seed feed (RunFeed), if it has one,
// until the returned function is called.
func (r *crawl) followFeed(ctx context.Context) (stop func()) {
	r.c.mu.Lock()
	feed := r.c.feed
	r.c.mu.Unlock()
	var following sync.WaitGroup
	followCtx, stopFollowing := context.WithCancel(ctx)
	if feed != nil {
		r.feed = &seedFeed{open: true, moved: make(chan struct{})}
		following.Go(func() { r.scheduleFeed(followCtx, feed) })
	}
	return func() {
		stopFollowing()
		following.Wait()
	}
}

// crawl is the state of one Run.
type crawl struct {
	c        *Crawler
	cfg      *config
	log      *slog.Logger
	clock    ratelimit.Clock
	fr       *frontier.Frontier
	policy   *ratelimit.Policy
	keys     *ratelimit.Keys
	gate     *gate.Gate
	fetcher  *fetch.Fetcher
	client   *http.Client
	reg      *fetch.Registry
	stats    *stats
	pool     workerPool
	revisit  *revisits        // nil without WithRevisit
	adaptive *render.Adaptive // with WithRenderer's RenderAuto: which pages are rendered
	// rendering holds the leases of the pages being rendered, lent to the
	// other pages' subrequests for their keys.
	rendering renderLeases
	// bg is the context of the work a page's render leaves behind (a
	// third party's robots.txt still being fetched when the render
	// ended), cancelled once the workers are done; background waits for it.
	bg         context.Context
	stopBG     context.CancelFunc
	background sync.WaitGroup

	feed *seedFeed // nil unless RunFeed

	// reports makes each URL's report once, however many workers hold it
	// at once and however often it comes back after a lease the Store took
	// back (lease.go, done).
	reports reportOnce
	// requests recycles the Requests handed to OnRequest handlers, which
	// may not keep them: one a request, its start's report written once
	// and its answer's added, so that watching a crawl (crawler/live)
	// costs it no garbage and no copies. A crawl's own, so that no state
	// outlives a Run.
	requests sync.Pool

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
func (r *crawl) addSeeds(ctx context.Context, seeds []Seed) error {
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
		case err == nil, errors.Is(err, frontier.ErrReported):
			// A seed a page limit refused is reported on its own lease.
			accepted++
		case errors.Is(err, frontier.ErrSeen):
			seen++
			r.stats.skipped(SkippedSeen)
		default:
			r.reportSkip(ctx, seeds[i].URL, skipReason(err), fmt.Errorf("seed skipped: %w", err))
		}
	}
	if accepted > 0 || seen > 0 {
		return nil
	}
	st, err := r.fr.Counts(ctx)
	if err != nil {
		return err
	}
	if st.Queued+st.Leased == 0 {
		return ErrNoSeeds
	}
	return nil // resuming the Store's work
}

// hooks returns the handlers and filters registered so far, those
// registered during the run included.
func (r *crawl) hooks() *hooks { return r.c.registered() }

func (r *crawl) now() time.Time {
	if r.clock != nil {
		return r.clock.Now()
	}
	return time.Now()
}

// newRun wires the stages of one Run: the pacing policy and keys, the
// fetcher and its client, the extractors, the frontier over store, the
// robots gate and the stats.
func (c *Crawler) newRun(store frontier.Store, addrs *fetch.AddressPolicy) (*crawl, error) {
	cfg := &c.cfg
	r := &crawl{c: c, cfg: cfg, log: cfg.logger, clock: cfg.clock, revisit: newRevisits(cfg.revisit)}
	r.bg, r.stopBG = context.WithCancel(context.Background())
	var err error
	if r.policy, r.keys, err = newPacing(cfg); err != nil {
		return nil, err
	}
	r.fetcher = crawlFetcher(cfg, addrs)
	r.client = r.sharedClient()
	r.reg = newRegistry(cfg)
	fcfg := frontierConfig(cfg, store, r.keys)
	r.fr = frontier.New(fcfg)
	if r.gate, err = r.newGate(fcfg.Key); err != nil {
		return nil, err
	}
	r.stats = newStats(r.now())
	r.stats.frontier = r.fr
	if cfg.renderMode == RenderAuto {
		r.adaptive = new(render.Adaptive)
	}
	return r, nil
}

// newPacing returns the pacing policy and the politeness keys of a crawl
// configured by cfg.
func newPacing(cfg *config) (*ratelimit.Policy, *ratelimit.Keys, error) {
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
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	keys, err := ratelimit.NewKeys(cfg.keyMode, nil, 0, nil, cfg.logger)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return pol, keys, nil
}

// sharedClient returns the client robots.txt and pages share, and so one
// connection pool: the caller's, or one over the fetcher's transport.
func (r *crawl) sharedClient() *http.Client {
	if r.cfg.client != nil {
		return r.cfg.client
	}
	if r.fetcher.Transport == nil {
		tr := r.fetcher.CrawlTransport()
		// Hosts are fetched in runs (frontier Affinity), so few idle
		// connections are worth keeping; a finished host's is the least
		// recently used and goes first. Without a cap a crawl of many
		// hosts keeps one open per host it ever visited (2,000 on bench
		// workload c: 40 MB). The cap must stay well above the
		// connections in use, though: when the pool overflows, net/http
		// may close a connection just handed back with a bodiless answer
		// (a redirect) under the request still reading it, which then
		// fails with "too many idle connections" although the server
		// answered — and is fetched again (bench workload c: a few
		// duplicate fetches per run at workers/2).
		tr.MaxIdleConns = max(maxIdleConns, 2*r.cfg.workers)
		r.fetcher.Transport = tr
	}
	return &http.Client{Transport: r.fetcher.Transport}
}

// newRegistry returns the link extractors of a crawl configured by cfg.
func newRegistry(cfg *config) *fetch.Registry {
	reg := fetch.NewRegistry()
	reg.MaxLinks = cfg.maxLinks // NoLimit is fetch's no bound too: any negative
	for mt, es := range cfg.replacedExtractors {
		reg.Set(mt, es...)
	}
	for _, e := range cfg.addedExtractors {
		reg.Register(e.mediaType, e.e)
	}
	return reg
}

// frontierConfig returns the frontier's configuration for a crawl
// configured by cfg over store, keyed by keys.
func frontierConfig(cfg *config, store frontier.Store, keys *ratelimit.Keys) frontier.Config {
	fcfg := frontier.Config{
		Store:         store,
		Canonicalizer: cfg.canonicalizer,
		Scope:         cfg.scope,
		InScope:       cfg.scopeFunc,
		MaxDepth:      frontierLimit(cfg.maxDepth),
		Limits: frontier.Limits{
			MaxPages:        frontierLimit(cfg.maxPages),
			MaxPagesPerHost: frontierLimit(cfg.maxPagesHost),
		},
		// NoLimit is the frontier's "check off" here: any negative.
		MaxPathSegments:   cfg.maxPathSegs,
		MaxSegmentRepeats: cfg.maxSegRepeats,
		Claim:             frontier.ClaimOptions{PerHost: cfg.perHost, Affinity: hostRun, Lease: cfg.lease},
	}
	if p, ok := store.(interface{ PollInterval() time.Duration }); ok {
		fcfg.Poll = p.PollInterval() // a store shared with other processes
	}
	if cfg.sitemaps {
		fcfg.Limits.MaxSitemapsPerHost = frontierLimit(cfg.maxSitemaps)
		fcfg.Limits.MaxSitemapURLsPerHost = frontierLimit(cfg.maxSitemapURLs)
	}
	if cfg.clock != nil {
		fcfg.Clock = cfg.clock
	}
	if cfg.keyMode != ratelimit.KeyHost {
		fcfg.Key = keys.Key
	}
	return fcfg
}

// frontierLimit spells a limit as the frontier's Config and Limits take
// it: there, zero is no limit.
func frontierLimit(n int) int {
	if n == NoLimit {
		return 0
	}
	return n
}

func (r *crawl) newGate(key func(*url.URL) string) (*gate.Gate, error) {
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
