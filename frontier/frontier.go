package frontier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/internal/hostid"
)

// Reasons Add rejects an item, and the Frontier's other sentinel errors.
// Add returns the bare sentinel for the common rejections (ErrSeen,
// ErrScope, ErrDepth, ErrLimit, ErrHostLimit) so counting them costs no
// allocation.
var (
	// ErrSeen: the canonical URL was scheduled before in this crawl.
	ErrSeen = errors.New("frontier: already seen")
	// ErrScope: the URL is outside the crawl's scope.
	ErrScope = errors.New("frontier: out of scope")
	// ErrDepth: the item is deeper than Config.MaxDepth (or negative).
	ErrDepth = errors.New("frontier: too deep")
	// ErrLimit: Config.MaxPages items have been scheduled.
	ErrLimit = errors.New("frontier: page limit reached")
	// ErrHostLimit: Config.MaxPagesPerHost items have been scheduled for
	// the item's politeness key.
	ErrHostLimit = errors.New("frontier: per-host page limit reached")
	// ErrExhausted: Next found every queue empty and no item in flight, so
	// no more work can appear. The crawl is over.
	ErrExhausted = errors.New("frontier: exhausted")
	// ErrClosed: the Frontier was closed.
	ErrClosed = errors.New("frontier: closed")
	// ErrNotInFlight: Done or Defer got an item that Next did not hand out,
	// or that was already released.
	ErrNotInFlight = errors.New("frontier: item not in flight")
	// ErrSitemapLimit: the item's key has had Config.MaxSitemapsPerHost
	// sitemaps scheduled, or (for a page listed by a sitemap)
	// Config.MaxSitemapURLsPerHost pages from sitemaps.
	ErrSitemapLimit = errors.New("frontier: per-host sitemap budget spent")
	// ErrPathological: the URL's path looks like a crawler trap: too many
	// segments, or a run of segments repeated (/a/a/a/…, /x/y/x/y/x/y/…).
	ErrPathological = errors.New("frontier: pathological path")
	// ErrGivenUp: the item's key was given up (GiveUp) and takes no more
	// items.
	ErrGivenUp = errors.New("frontier: host given up")
)

// Kind says what an Item is fetched for.
type Kind uint8

const (
	// KindPage is a page to fetch, extract links from and follow.
	KindPage Kind = iota
	// KindSitemap is a sitemap or sitemap index.
	KindSitemap
)

// String returns "page" or "sitemap".
func (k Kind) String() string {
	switch k {
	case KindPage:
		return "page"
	case KindSitemap:
		return "sitemap"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Item is a URL scheduled for fetching.
type Item struct {
	// URL is the canonical URL. Add accepts any absolute URL here and
	// canonicalises it.
	URL string
	// Key is the politeness key the item is queued and paced under (by
	// default the URL's host[:port]). Add sets it.
	Key string
	// Referrer is the URL of the page the link was found on; empty for
	// seeds.
	Referrer string
	// Depth is the number of links followed from a seed (seeds are 0).
	Depth int
	// Kind says what the URL is fetched for.
	Kind Kind
	// Priority is a sitemap's <priority> for the URL, zero when absent.
	Priority float32
	// Lastmod is a sitemap's <lastmod> for the URL, zero when absent. The
	// memory store keeps it to the second, in UTC.
	Lastmod time.Time
	// FromSitemap marks a page item listed by a sitemap; it counts against
	// Config.MaxSitemapURLsPerHost.
	FromSitemap bool

	// What the item has been through. It travels with the item through the
	// Store (Defer puts it back with its history), so it survives as long
	// as the item does.

	// Retries is the number of failed tries so far.
	Retries int
	// Redirects lists the URLs of the redirect hops that led to this URL,
	// oldest first; empty unless the item is a redirect target.
	Redirects []string
	// SitemapDepth is, for a KindSitemap item, how many sitemap indexes lie
	// between it and the root sitemap. It bounds nesting without using up
	// Depth, which counts links followed.
	SitemapDepth int
	// BlockedSince is when the item was first refused because its
	// robots.txt could not be fetched; zero otherwise.
	BlockedSince time.Time

	host *host // set while the item is handed out by Next
}

// Child returns an Item for a link found on it: rawURL at one more depth,
// with it as referrer. rawURL must be absolute (see CanonicalRef).
func (it *Item) Child(rawURL string) Item {
	return Item{URL: rawURL, Depth: it.Depth + 1, Referrer: it.URL}
}

// Pacer tells the Frontier when a politeness key may next be fetched: the
// combined verdict of robots Crawl-delay, the rate limiter and back-off.
// ratelimit.HostLimiter satisfies it. ReadyAt is called with the
// Frontier's lock held, so it must be quick and must not call the Frontier.
type Pacer interface {
	// ReadyAt returns the earliest time a request to key may start; a time
	// not after now means at once.
	ReadyAt(key string) time.Time
}

// Clock is the time source the Frontier waits on; nil means real time.
// internal/fakeclock satisfies it.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// Scope selects the URLs Add accepts, relative to the seeds.
type Scope uint8

const (
	// ScopeSeedHosts accepts URLs whose host name equals a seed's (any
	// scheme or port). It is the default.
	ScopeSeedHosts Scope = iota
	// ScopeSeedDomains accepts URLs whose registrable domain (eTLD+1 by the
	// public suffix list) equals a seed's, so a seed on www.example.com
	// admits blog.example.com. IP addresses and names with no registrable
	// part match exactly.
	ScopeSeedDomains
	// ScopeAny accepts every http and https URL.
	ScopeAny
)

// Config configures a Frontier. The zero value is a usable default: memory
// store, real clock, no pacing, host[:port] keys, seed hosts only, no limits,
// one item in flight per host.
type Config struct {
	// Store holds the seen-set and the queues; nil means a new MemoryStore.
	Store Store
	// Clock is the time source; nil means real time.
	Clock Clock
	// Pacer tells when a key may next be fetched; nil means always.
	Pacer Pacer
	// Key returns the politeness key for a canonical URL; nil means the
	// URL's host[:port] (u.Host; default ports are already dropped). Items
	// with the same key share a queue and a pace. It is called without the
	// Frontier's lock held, possibly concurrently.
	Key func(u *url.URL) string
	// Canonicalizer sets the canonicalisation options Add applies.
	Canonicalizer Canonicalizer
	// Scope selects the URLs Add accepts; seeds define it.
	Scope Scope
	// InScope, if non-nil, decides scope instead of Scope: Add accepts a
	// non-seed URL exactly when InScope returns true. It is called without
	// the Frontier's lock held, possibly concurrently.
	InScope func(u *url.URL) bool
	// MaxDepth rejects items deeper than this; 0 means no limit. (Depth is
	// limited to 1,048,575 regardless.)
	MaxDepth int
	// MaxPages caps the number of page items scheduled (accepted by Add or
	// AddSeed) over the crawl; 0 means no limit. It counts scheduled items,
	// not successful fetches: an item later disallowed by robots.txt or
	// failing still counts. Sitemap items do not count.
	MaxPages int
	// MaxPagesPerHost caps the number of page items scheduled per
	// politeness key, counted like MaxPages; 0 means no limit. Setting it
	// makes the Frontier remember every key it saw.
	MaxPagesPerHost int
	// MaxSitemapsPerHost caps the sitemap items scheduled per politeness
	// key, and MaxSitemapURLsPerHost the page items from sitemaps
	// (Item.FromSitemap); 0 means no limit. A site that generates sitemap
	// indexes without end is then read only so far. Like MaxPagesPerHost,
	// setting either makes the Frontier remember every key it saw.
	MaxSitemapsPerHost    int
	MaxSitemapURLsPerHost int
	// MaxPathSegments rejects URLs whose path has more segments than this
	// with ErrPathological; MaxSegmentRepeats rejects paths in which one
	// segment, or one run of segments, occurs more than this many times in
	// a row (/a/a/a/…, /x/y/x/y/x/y/…), the shape of relative-link loops
	// and of session ids echoed into paths (Heritrix's pathological-path
	// rule). Zero means DefaultMaxPathSegments and DefaultMaxSegmentRepeats;
	// a negative value turns the check off. A calendar-like trap
	// (/cal/2025/01, /cal/2025/02, …) has no repeats: Config.MaxDepth and
	// the page limits stop it.
	MaxPathSegments   int
	MaxSegmentRepeats int
	// PerHost is the number of items of one key that may be in flight at
	// once; 0 means 1.
	PerHost int
	// Affinity lets a key that is ready again as soon as its item is Done
	// go back to the front of the ready-heap, ahead of keys that have
	// waited, up to Affinity items in a row; then it takes its turn at the
	// back. Hosts crawled without delay are then fetched a run at a time
	// over one warm connection instead of round-robin over all of them,
	// which keeps a connection per host open. Zero means strict
	// round-robin. It never hands a key out before the Pacer allows.
	Affinity int
}

// Frontier schedules URLs for fetching: it canonicalises and deduplicates
// them, keeps one FIFO queue per politeness key, and hands out items whose
// key may be fetched now, earliest-ready key first. All methods are safe
// for concurrent use.
type Frontier struct {
	store      Store
	clock      Clock
	pacer      Pacer
	keyFunc    func(*url.URL) string
	canon      Canonicalizer
	scope      Scope
	inScope    func(*url.URL) bool
	maxDepth   int
	maxPages   int
	maxPerHost int
	maxSitemap int
	maxSmURLs  int
	maxSegs    int
	maxRepeats int
	keepHosts  bool // per-host counts must outlive a key's queue
	affinity   int32
	perHost    int

	epoch time.Time // heap times are nanoseconds since, monotonic if the clock is

	mu         sync.Mutex
	hosts      map[string]*host
	ready      readyHeap
	seq        uint64
	queued     int
	inflight   int
	busy       int // keys with inflight > 0
	scheduled  int
	scopeNames map[string]struct{}
	closed     bool
	waiters    int           // Next calls blocked
	wake       chan struct{} // closed to wake them
	timer      <-chan time.Time
	timerAt    int64

	waitHook func() // tests: called each time a Next call is about to block
}

// host is the scheduling state of one politeness key, 48 bytes. A Defer
// time needs no field: it only matters while the key waits on the heap,
// and the heap entry holds it.
type host struct {
	key         string
	scheduled   int32 // page items ever scheduled, for MaxPagesPerHost
	queued      int32
	inflight    int32
	index       int32 // in the ready-heap, or -1
	streak      int32 // items handed out in a row through Config.Affinity
	sitemaps    int32 // sitemap items ever scheduled, for MaxSitemapsPerHost
	sitemapURLs int32 // page items from sitemaps, for MaxSitemapURLsPerHost
	givenUp     bool
}

// Defaults of the pathological-path check (Config.MaxPathSegments and
// Config.MaxSegmentRepeats).
const (
	DefaultMaxPathSegments   = 32
	DefaultMaxSegmentRepeats = 2
)

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// New returns a Frontier configured by cfg.
func New(cfg Config) *Frontier {
	f := &Frontier{
		store:      cfg.Store,
		clock:      cfg.Clock,
		pacer:      cfg.Pacer,
		keyFunc:    cfg.Key,
		canon:      cfg.Canonicalizer,
		scope:      cfg.Scope,
		inScope:    cfg.InScope,
		maxDepth:   cfg.MaxDepth,
		maxPages:   cfg.MaxPages,
		maxPerHost: cfg.MaxPagesPerHost,
		maxSitemap: cfg.MaxSitemapsPerHost,
		maxSmURLs:  cfg.MaxSitemapURLsPerHost,
		maxSegs:    cfg.MaxPathSegments,
		maxRepeats: cfg.MaxSegmentRepeats,
		perHost:    cfg.PerHost,
		affinity:   int32(min(max(cfg.Affinity, 0), math.MaxInt32)),
		hosts:      make(map[string]*host),
		scopeNames: make(map[string]struct{}),
		wake:       make(chan struct{}),
	}
	if f.store == nil {
		f.store = new(MemoryStore)
	}
	if f.clock == nil {
		f.clock = realClock{}
	}
	if f.perHost <= 0 {
		f.perHost = 1
	}
	if f.maxSegs == 0 {
		f.maxSegs = DefaultMaxPathSegments
	}
	if f.maxRepeats == 0 {
		f.maxRepeats = DefaultMaxSegmentRepeats
	}
	f.keepHosts = f.maxPerHost > 0 || f.maxSitemap > 0 || f.maxSmURLs > 0
	f.epoch = f.clock.Now()
	return f
}

// nanos converts t to heap time. Sub uses the monotonic readings when
// both times have them, so wall-clock steps do not reorder hosts; times
// beyond ±292 years saturate, and the zero time means "long ago".
func (f *Frontier) nanos(t time.Time) int64 {
	return int64(t.Sub(f.epoch))
}

// AddSeed schedules rawURL at depth 0 and adds its host (or registrable
// domain, with ScopeSeedDomains) to the crawl's scope. Seeds bypass the
// scope check and MaxDepth but not deduplication or page limits; the scope
// grows even if the seed itself is rejected as a duplicate.
func (f *Frontier) AddSeed(ctx context.Context, rawURL string) error {
	return f.add(ctx, Item{URL: rawURL}, true)
}

// Add schedules it. it.URL may be any absolute URL; Add canonicalises it
// and sets it.Key. Depth, Referrer, Kind, Priority and Lastmod are kept as
// given. Checks run in this order, the first failing one giving the error:
// depth, canonical form (ErrRelative, ErrScheme, ErrHost, ErrPort,
// ErrTooLong), scope, page limits, duplicates (ErrSeen). A nil error
// means the item is queued and will be handed out by Next exactly once.
// ctx is checked before any work is done.
func (f *Frontier) Add(ctx context.Context, it Item) error {
	return f.add(ctx, it, false)
}

func (f *Frontier) add(ctx context.Context, it Item, seed bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if it.Depth < 0 || it.Depth > maxStoredDepth || !seed && f.maxDepth > 0 && it.Depth > f.maxDepth {
		return ErrDepth
	}
	canon, sp, err := f.canon.canonical(it.URL)
	if err != nil {
		return err
	}
	if pathological(canon[sp.end:], f.maxSegs, f.maxRepeats) {
		return ErrPathological
	}
	var u *url.URL
	if f.keyFunc != nil || f.inScope != nil {
		if u, err = url.Parse(canon); err != nil {
			return fmt.Errorf("frontier: canonical URL does not parse: %w", err)
		}
	}
	key := canon[sp.start:sp.end]
	if f.keyFunc != nil {
		if key = f.keyFunc(u); key == "" {
			return fmt.Errorf("%w: empty politeness key for %q", ErrHost, canon)
		}
	}
	var name string // what the scope set holds for this URL
	switch {
	case f.inScope != nil:
		if !seed && !f.inScope(u) {
			return ErrScope
		}
	case f.scope == ScopeAny:
	case f.scope == ScopeSeedDomains:
		name = registrableDomain(canon[sp.start:sp.nameEnd])
	default: // ScopeSeedHosts, and values this version does not know
		name = canon[sp.start:sp.nameEnd]
	}
	it.URL = canon
	it.host = nil

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if f.inScope == nil && f.scope != ScopeAny {
		if _, ok := f.scopeNames[name]; !ok {
			if !seed {
				return ErrScope
			}
			f.scopeNames[strings.Clone(name)] = struct{}{}
		}
	}
	h := f.hosts[key]
	if h != nil && h.givenUp {
		return ErrGivenUp
	}
	counted := it.Kind != KindSitemap
	if counted {
		if f.maxPages > 0 && f.scheduled >= f.maxPages {
			return ErrLimit
		}
		if h != nil && f.maxPerHost > 0 && int(h.scheduled) >= f.maxPerHost {
			return ErrHostLimit
		}
		if it.FromSitemap && h != nil && f.maxSmURLs > 0 && int(h.sitemapURLs) >= f.maxSmURLs {
			return ErrSitemapLimit
		}
	} else if h != nil && f.maxSitemap > 0 && int(h.sitemaps) >= f.maxSitemap {
		return ErrSitemapLimit
	}
	isNew, err := f.store.MarkSeen(canon)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	if !isNew {
		return ErrSeen
	}
	if h == nil {
		h = &host{key: strings.Clone(key), index: -1}
		f.hosts[h.key] = h
	}
	it.Key = h.key
	if err := f.store.Push(it); err != nil {
		f.evictIdle(h)
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	h.queued++
	f.queued++
	switch {
	case !counted:
		h.sitemaps++
	case it.FromSitemap:
		h.sitemapURLs++
		fallthrough
	default:
		h.scheduled++
		f.scheduled++
	}
	if h.index < 0 && int(h.inflight) < f.perHost {
		f.schedule(h, math.MinInt64)
	}
	return nil
}

// registrableDomain returns the eTLD+1 of a canonical host name, or the
// name itself for IP literals and names without one (localhost, co.uk).
// hostid decides, so that ScopeSeedDomains and ratelimit.KeyDomain agree.
func registrableDomain(name string) string {
	return hostid.RegistrableDomain(name)
}

// Next returns an item whose key may be fetched now, blocking until one is
// ready. The item's key is busy until the item is passed to Done or Defer
// (with PerHost > 1, until PerHost items of it are out). Keys are served
// earliest-ready first, round-robin among keys ready at once, and a key's
// items in FIFO order.
//
// Next returns ErrExhausted when no item is queued and none is in flight
// (in-flight items may still add links, so until they are released Next
// waits). It returns ErrClosed after Close, and ctx.Err() if ctx is done,
// even when an item is ready.
func (f *Frontier) Next(ctx context.Context) (*Item, error) {
	f.mu.Lock()
	for {
		if err := ctx.Err(); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		if f.closed {
			f.mu.Unlock()
			return nil, ErrClosed
		}
		it, err := f.nextLocked()
		if it != nil || err != nil {
			f.mu.Unlock()
			return it, err
		}
		if len(f.ready) == 0 && f.inflight == 0 {
			f.mu.Unlock()
			return nil, ErrExhausted
		}

		// One timer, shared by all waiters, is armed for the earliest
		// deadline; whoever receives it wakes the others, and any change
		// that could make an item available earlier than that deadline
		// (see schedule, release, Close) closes wake.
		var timer <-chan time.Time
		if len(f.ready) > 0 {
			at := f.ready[0].at
			if f.timer == nil || at < f.timerAt {
				f.timer = f.clock.After(time.Duration(at - f.nanos(f.clock.Now())))
				f.timerAt = at
			}
			timer = f.timer
		}
		wake := f.wake
		f.waiters++
		hook := f.waitHook
		f.mu.Unlock()
		if hook != nil {
			hook()
		}

		select {
		case <-ctx.Done():
			f.mu.Lock()
			f.waiters--
			f.mu.Unlock()
			return nil, ctx.Err()
		case <-wake:
			f.mu.Lock()
			f.waiters--
		case <-timer:
			f.mu.Lock()
			f.waiters--
			if f.timer == timer {
				f.timer = nil
			}
			f.broadcast()
		}
	}
}

// nextLocked hands out the first item of the earliest-ready key if that key
// is ready now. It returns nil, nil if none is.
func (f *Frontier) nextLocked() (*Item, error) {
	now := f.nanos(f.clock.Now())
	for len(f.ready) > 0 {
		top := &f.ready[0]
		if top.at > now {
			return nil, nil
		}
		h := top.h
		// The pacer may have pushed the key back since it was scheduled
		// (a 429, a Retry-After): ask again before handing it out.
		if f.pacer != nil {
			// A pacer answers "now" for a ready key by reading its own
			// clock, after ours: compare against a fresh reading, or a
			// ready key would look a few nanoseconds early forever.
			if r := f.nanos(f.pacer.ReadyAt(h.key)); r > now {
				if now = f.nanos(f.clock.Now()); r > now {
					top.at = r
					f.ready.fix(0)
					continue
				}
			}
		}
		it, ok, err := f.store.Pop(h.key)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		if !ok {
			// The store lost the queue; forget it rather than spin.
			f.queued -= int(h.queued)
			h.queued = 0
			f.ready.remove(0)
			f.evictIdle(h)
			continue
		}
		h.queued--
		f.queued--
		h.inflight++
		if h.inflight == 1 {
			f.busy++
		}
		f.inflight++
		if h.queued == 0 || int(h.inflight) >= f.perHost {
			f.ready.remove(0)
		} else {
			f.seq++
			top.at, top.seq = f.readyAt(h), f.seq
			f.ready.fix(0)
		}
		it.Key = h.key
		it.host = h
		return &it, nil
	}
	return nil, nil
}

// readyAt is when h may next be fetched by the pacer, in heap time.
func (f *Frontier) readyAt(h *host) int64 {
	if f.pacer == nil {
		return math.MinInt64
	}
	return f.nanos(f.pacer.ReadyAt(h.key))
}

// schedule puts h, which has queued items and a free slot, on the
// ready-heap, not before notBefore (heap time), waking blocked Next calls
// if it is now the earliest.
func (f *Frontier) schedule(h *host, notBefore int64) {
	f.seq++
	f.ready.push(heapEntry{at: max(f.readyAt(h), notBefore), seq: f.seq, h: h})
	if h.index == 0 {
		f.broadcast()
	}
}

func (f *Frontier) broadcast() {
	if f.waiters == 0 {
		return
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// evictIdle forgets h once it has nothing queued or in flight, so memory
// follows active hosts; with MaxPagesPerHost its count must be kept.
func (f *Frontier) evictIdle(h *host) {
	if !f.keepHosts && !h.givenUp && h.queued == 0 && h.inflight == 0 && h.index < 0 {
		delete(f.hosts, h.key)
	}
}

// lease checks that it was handed out by this Frontier and not yet
// released, and releases the lease.
func (f *Frontier) lease(it *Item) (*host, error) {
	if it == nil || it.host == nil || it.host.inflight == 0 || f.hosts[it.host.key] != it.host {
		return nil, ErrNotInFlight
	}
	h := it.host
	it.host = nil
	return h, nil
}

// release frees one in-flight slot of h; if h has queued items it goes
// back on the heap, not before notBefore (heap time).
func (f *Frontier) release(h *host, notBefore int64) {
	h.inflight--
	if h.inflight == 0 {
		f.busy--
	}
	f.inflight--
	switch {
	case h.queued > 0 && h.index < 0:
		f.schedule(h, notBefore)
	case h.queued == 0 && h.inflight == 0:
		f.evictIdle(h)
	}
	if f.inflight == 0 && len(f.ready) == 0 {
		f.broadcast() // exhausted: blocked Next calls return ErrExhausted
	}
}

// Done reports that the worker has finished with it, whether the fetch
// succeeded, failed or was disallowed: its key's slot is free again and
// the key is rescheduled at the time the Pacer says. Each item Next returns
// must be passed to exactly one of Done or Defer, as the pointer Next
// returned; anything else gets ErrNotInFlight.
func (f *Frontier) Done(it *Item) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, err := f.lease(it)
	if err != nil {
		return err
	}
	if f.affinity > 0 && h.queued > 0 && h.index < 0 && h.inflight == 1 {
		if h.streak < f.affinity && f.readyAt(h) <= f.nanos(f.clock.Now()) {
			// Ready again at once: back to the front, ahead of keys
			// that have waited, for the rest of its run.
			h.streak++
			h.inflight--
			if h.inflight == 0 {
				f.busy--
			}
			f.inflight--
			f.ready.push(heapEntry{at: math.MinInt64, h: h})
			f.broadcast()
			return nil
		}
		h.streak = 0
	}
	f.release(h, math.MinInt64)
	return nil
}

// Defer gives it back unfetched: it goes to the front of its key's queue,
// the key's slot is freed, and the key is not handed out again before until
// (nor before the Pacer allows). Use it when the worker's slot went to
// fetching robots.txt, or robots.txt is temporarily unavailable. A
// deferred item is neither a duplicate nor counted again against limits,
// and keeps what it has been through (Retries, Redirects, …). An item of a
// key given up is released instead, and Defer returns ErrGivenUp.
func (f *Frontier) Defer(it *Item, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, err := f.lease(it)
	if err != nil {
		return err
	}
	if h.givenUp {
		f.release(h, math.MinInt64)
		return ErrGivenUp
	}
	back := *it
	back.Key = h.key
	back.host = nil
	if err := f.store.PushFront(back); err != nil {
		f.release(h, math.MinInt64)
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	h.queued++
	f.queued++
	notBefore := f.nanos(until)
	if h.index >= 0 && f.ready[h.index].at < notBefore {
		// PerHost > 1: the key is still on the heap with a free slot.
		f.ready[h.index].at = notBefore
		f.ready.fix(int(h.index))
	}
	f.release(h, notBefore)
	return nil
}

// Close makes blocked and future Next calls return ErrClosed and Add
// return ErrClosed. Done and Defer keep working so in-flight items can be
// released. Close does not close the Store.
func (f *Frontier) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.broadcast()
}

// Stats is a snapshot of a Frontier's counters.
type Stats struct {
	// Queued is the number of items waiting in queues.
	Queued int
	// InFlight is the number of items handed out and not yet released.
	InFlight int
	// Busy is the number of keys with at least one item in flight.
	Busy int
	// Hosts is the number of politeness keys with queued or in-flight
	// items (all keys ever seen when MaxPagesPerHost is set).
	Hosts int
	// Scheduled is the number of page items accepted so far, the count
	// MaxPages limits.
	Scheduled int
}

// Stats returns the Frontier's current counters.
func (f *Frontier) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Stats{Queued: f.queued, InFlight: f.inflight, Hosts: len(f.hosts), Busy: f.busy, Scheduled: f.scheduled}
}

// AddScope widens the crawl's scope by rawURL's host (or registrable
// domain, with ScopeSeedDomains) as AddSeed does, without scheduling
// anything: for a seed's redirect target, which should be crawled like the
// seed it stands for (http://example.com → https://www.example.com/).
func (f *Frontier) AddScope(rawURL string) error {
	if f.inScope != nil || f.scope == ScopeAny {
		return nil
	}
	canon, sp, err := f.canon.canonical(rawURL)
	if err != nil {
		return err
	}
	name := canon[sp.start:sp.nameEnd]
	if f.scope == ScopeSeedDomains {
		name = registrableDomain(name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.scopeNames[name]; !ok {
		f.scopeNames[strings.Clone(name)] = struct{}{}
	}
	return nil
}

// LimitReached reports whether Config.MaxPages page items have been
// scheduled: no page can be added any more, so sitemaps still queued can
// only list pages that would be refused.
func (f *Frontier) LimitReached() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxPages > 0 && f.scheduled >= f.maxPages
}

// GiveUp stops crawling key: its queued items are removed and passed to
// drop (with the Frontier's lock released, in queue order), and Add refuses
// its URLs from now on with ErrGivenUp. Items of key in flight are released
// as usual. A crawler gives a host up when it keeps failing, so that one
// dead server cannot hold a crawl open.
func (f *Frontier) GiveUp(key string, drop func(Item)) error {
	f.mu.Lock()
	h := f.hosts[key]
	if h == nil {
		h = &host{key: strings.Clone(key), index: -1}
		f.hosts[h.key] = h
	}
	h.givenUp = true
	var dropped []Item
	var err error
	for h.queued > 0 {
		it, ok, perr := f.store.Pop(h.key)
		if perr != nil {
			err = fmt.Errorf("%w: %w", ErrStore, perr)
			break
		}
		if !ok {
			f.queued -= int(h.queued)
			h.queued = 0
			break
		}
		h.queued--
		f.queued--
		dropped = append(dropped, it)
	}
	if h.queued == 0 && h.index >= 0 {
		f.ready.remove(int(h.index))
	}
	if f.inflight == 0 && len(f.ready) == 0 {
		f.broadcast()
	}
	f.mu.Unlock()
	if drop != nil {
		for _, it := range dropped {
			drop(it)
		}
	}
	return err
}

// pathological reports whether path (a canonical URL's path and query)
// has more than maxSegs segments or a run of one to maxSegs/… segments
// repeated more than maxRepeats times in a row. Negative limits turn
// their check off.
func pathological(path string, maxSegs, maxRepeats int) bool {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if maxSegs < 0 && maxRepeats < 0 || len(path) < 2 {
		return false
	}
	segs := strings.Split(strings.TrimSuffix(path[1:], "/"), "/")
	if maxSegs >= 0 && len(segs) > maxSegs {
		return true
	}
	if maxRepeats < 0 {
		return false
	}
	// A run of n segments starting at i repeated r times in a row: compare
	// each segment with the one n places before it.
	for n := 1; n*(maxRepeats+1) <= len(segs); n++ {
		same := 0 // segments equal to the one n before, in a row
		for i := n; i < len(segs); i++ {
			if segs[i] == segs[i-n] {
				same++
				if same >= n*maxRepeats {
					return true
				}
			} else {
				same = 0
			}
		}
	}
	return false
}
