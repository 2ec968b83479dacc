package crawler

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
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
	// Change says what the fetch found against the copy the crawl held
	// (WithRevisit; empty without it). An unchanged page answered 304 Not
	// Modified has no body: handlers must cope with an empty Body.
	Change ChangeKind
	// Previous is what the crawl held of the page before this fetch: when
	// it was fetched and last changed, its validators and digest; nil for
	// a page's first fetch and without WithRevisit. Handlers must not
	// modify it.
	Previous *frontier.Visit
	// Held is what the crawl holds of the page after this fetch, as it
	// will be revisited: the validators, content digest and size of the
	// version held — for a 304, the version held before, with the
	// validators the 304 may have updated. Nil without WithRevisit, and
	// when Change is gone or moved or empty. Handlers must not modify it.
	Held *frontier.Visit
	// Render is what rendering the page did (WithRenderer): its time and
	// subrequests; its Page is the page's Body as the browser built it,
	// which is also this Page's Body. Nil when the page was not rendered.
	Render *render.Result

	run  *crawl
	item *frontier.Item
}

// Link is a URL found on a page by an extractor.
type Link = fetch.Link

// Errors Run and Enqueue return.
var (
	// ErrRunning: Run was called while the Crawler was already running.
	ErrRunning = errors.New("crawler: already running")
	// ErrNotRunning: Enqueue or Host was called outside Run.
	ErrNotRunning = errors.New("crawler: not running")
	// ErrNoDueCounts: Frontier was called on a crawl whose Store is no
	// DueCounter.
	ErrNoDueCounts = errors.New("crawler: the Store does not count its items by due time")
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
// Make one with New; the zero Crawler is ready to use too, and crawls as
// New() would, with the defaults. Hooks (OnPage, OnHTML, OnError,
// OnDisallowed, Filter) may be registered at any time: one registered
// during Run takes effect for the URLs handled from then on. A Crawler
// runs one crawl at a time.
type Crawler struct {
	configured sync.Once // cfg is set: by New, or with the defaults on a zero Crawler's first use
	cfg        config

	mu    sync.Mutex // serialises registrations, and guards feed and last
	hooks atomic.Pointer[hooks]
	feed  <-chan Seed // RunFeed's, while it runs

	running atomic.Bool
	cur     atomic.Pointer[crawl]
	last    *stats
	pause   pauser
}

// hooks are the handlers and filters registered on a Crawler. A
// registration replaces them with a copy that has one more, so that a
// running crawl reads a consistent set without a lock, and a hook
// registered during Run takes effect for the URLs handled after it.
type hooks struct {
	onPage       []func(context.Context, *Page)
	onError      []func(context.Context, *url.URL, error)
	onDisallowed []func(context.Context, *url.URL, DisallowReason)
	onHTML       []htmlHandler
	onScraped    []func(context.Context, *Page)
	filters      []func(u *url.URL, from *url.URL, depth int) bool
	onRequest    []func(context.Context, *Request)
	onRobots     []func(context.Context, string, *gate.Entry)
}

// register adds a hook: add appends it to a copy of the current hooks.
func (c *Crawler) register(add func(h *hooks)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var h hooks
	if cur := c.hooks.Load(); cur != nil {
		h = *cur
	}
	// Clipped, so that add's append copies instead of writing into an
	// array a running crawl may be reading.
	h.onPage, h.onError, h.onDisallowed = slices.Clip(h.onPage), slices.Clip(h.onError), slices.Clip(h.onDisallowed)
	h.onHTML, h.onScraped, h.filters = slices.Clip(h.onHTML), slices.Clip(h.onScraped), slices.Clip(h.filters)
	h.onRequest, h.onRobots = slices.Clip(h.onRequest), slices.Clip(h.onRobots)
	add(&h)
	c.hooks.Store(&h)
}

// registered returns the hooks registered so far.
func (c *Crawler) registered() *hooks {
	if h := c.hooks.Load(); h != nil {
		return h
	}
	return &hooks{}
}

// New returns a Crawler configured by opts, or an error wrapping
// ErrInvalidOption, an *OptionError naming the first bad option.
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
	if err := cfg.check(); err != nil {
		return nil, err
	}
	c := new(Crawler)
	c.configured.Do(func() { c.cfg = cfg })
	return c, nil
}

// settings returns c's configuration: New's, or for a zero Crawler the
// defaults, set on its first use.
func (c *Crawler) settings() *config {
	c.configured.Do(func() { c.cfg = defaultConfig().completed() })
	return &c.cfg
}

// Agent returns the product token robots.txt is read for.
func (c *Crawler) Agent() string { return c.settings().agent }

// UserAgent returns the User-Agent header the crawler sends.
func (c *Crawler) UserAgent() string { return c.settings().userAgent }

// OnPage registers f to be called for every response received for a page
// (any status, redirects included). Handlers run on the worker that fetched
// the page: handlers of different pages run concurrently, the handlers of
// one page run one after the other in registration order, and Run returns
// only after every handler has returned. A panicking handler is recovered,
// counted under Stats.Errors[FailedHandlerPanic] and reported to OnError; the
// crawl goes on.
func (c *Crawler) OnPage(f func(ctx context.Context, p *Page)) {
	c.register(func(h *hooks) { h.onPage = append(h.onPage, f) })
}

// OnError registers f to be called when fetching or handling u fails, and
// when u is dropped unfetched for a reason the caller would not otherwise
// hear of (a seed refused, a host at an address the crawl may not reach, a
// redirect target that cannot be scoped). err is always an *Error: a
// failure has a Kind, the ErrorKind Stats.Errors counts it under — each
// count there is one call, whatever the kind — and a dropped URL a Skipped,
// the SkipReason Stats.SkippedLinks counts it under. u is a *url.URL like every
// hook's; a seed that is not a URL at all comes whole in u.Opaque, so
// u.String() gives it back. Same concurrency guarantees as OnPage.
func (c *Crawler) OnError(f func(ctx context.Context, u *url.URL, err error)) {
	c.register(func(h *hooks) { h.onError = append(h.onError, f) })
}

// OnDisallowed registers f to be called for every URL robots.txt kept the
// crawler from fetching. Same concurrency guarantees as OnPage.
func (c *Crawler) OnDisallowed(f func(ctx context.Context, u *url.URL, reason DisallowReason)) {
	c.register(func(h *hooks) { h.onDisallowed = append(h.onDisallowed, f) })
}

// Filter registers f to decide which discovered URLs are scheduled: a link u
// found at the given depth on the page (or sitemap) from is followed only if
// every filter returns true. Seeds and redirect targets are not filtered.
// Filters run concurrently and must be safe for it.
func (c *Crawler) Filter(f func(u *url.URL, from *url.URL, depth int) bool) {
	c.register(func(h *hooks) { h.filters = append(h.filters, f) })
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
	// Crawl-delay, back-off, adaptive) and any Retry-After pause.
	Pace ratelimit.HostStatus
	// Queued is how many of the host's URLs are queued, leased ones
	// aside, when the Store can say (frontier.KeyCounter); -1 otherwise.
	Queued int
}

// Host reports what the running crawl knows about the host of rawURL,
// without fetching anything: its robots.txt as cached in this process, and
// its pace as the frontier's Store holds it, read within ctx (the Store
// may be remote: Redis). It returns ErrNotRunning outside Run.
func (c *Crawler) Host(ctx context.Context, rawURL string) (HostInfo, error) {
	r := c.cur.Load()
	if r == nil {
		return HostInfo{}, ErrNotRunning
	}
	key, u, err := r.keyOf(rawURL)
	if err != nil {
		return HostInfo{}, err
	}
	info := HostInfo{Key: key}
	info.Robots, _ = r.gate.Cached(u)
	h, err := r.fr.Host(ctx, info.Key)
	if err != nil {
		return HostInfo{}, err
	}
	info.Pace = r.policy.Status(info.Key, h, r.now())
	info.Queued = -1
	if kc, ok := r.fr.Store().(frontier.KeyCounter); ok {
		if n, err := kc.QueuedFor(ctx, key); err == nil {
			info.Queued = n
		}
	}
	return info, nil
}

// A DueCounter is a Store that can say how its queued items fall due, and
// which has been due longest (frontier.DueCounts): what Frontier asks.
// frontier.MemoryStore, pebblestore and redisstore are DueCounters, each
// documenting what its answer costs and where it is approximate.
type DueCounter interface {
	DueCounts(ctx context.Context, now time.Time, edges []time.Duration) (frontier.DueCounts, error)
}

// Frontier returns how the running crawl's queued URLs fall due, bucketed
// by edges from now (see frontier.DueCounts), asked of its Store within
// ctx. It returns ErrNotRunning outside Run, ErrNoDueCounts if the Store
// cannot say.
func (c *Crawler) Frontier(ctx context.Context, edges []time.Duration) (frontier.DueCounts, error) {
	r := c.cur.Load()
	if r == nil {
		return frontier.DueCounts{}, ErrNotRunning
	}
	dc, ok := r.fr.Store().(DueCounter)
	if !ok {
		return frontier.DueCounts{}, ErrNoDueCounts
	}
	d, err := dc.DueCounts(ctx, r.now(), edges)
	if err != nil {
		return d, fmt.Errorf("%w: %w", frontier.ErrStore, err)
	}
	return d, nil
}

// Stats returns the crawl's counters: live during Run, final after it
// (zero before the first Run). The counters are this process's; during Run
// the figures of the queue (Queued, InFlight and the Hosts ones) are asked
// of the frontier's Store, which may be remote (Redis), within ctx: if it
// cannot answer, Stats returns the counters with those figures zero, and
// the Store's error. After Run they are as they were when it ended (zero
// if the Store could not say within a second), and Stats asks the Store
// nothing.
func (c *Crawler) Stats(ctx context.Context) (Stats, error) {
	if r := c.cur.Load(); r != nil {
		return r.stats.snapshot(ctx, r.now())
	}
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last == nil {
		last = newStats(time.Time{})
	}
	return last.snapshot(ctx, time.Time{})
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
