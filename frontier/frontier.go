package frontier

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
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
	// ErrSitemapLimit: the item's key has had Config.MaxSitemapsPerHost
	// sitemaps scheduled, or (for a page listed by a sitemap)
	// Config.MaxSitemapURLsPerHost pages from sitemaps.
	ErrSitemapLimit = errors.New("frontier: per-host sitemap budget spent")
	// ErrPathological: the URL's path looks like a crawler trap: too many
	// segments, or a run of segments repeated (/a/a/a/…, /x/y/x/y/x/y/…).
	ErrPathological = errors.New("frontier: pathological path")
	// ErrGivenUp: the item's key was given up (GiveUp). Add does not
	// refuse with it — a given-up key's new URLs are queued to be
	// reported — but a crawler reports the URLs it hands out so.
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
	// SeenOnly asks Add to record the URL as seen and to queue nothing: its
	// caller will not fetch it (robots.txt disallows it), and learns from
	// the answer whether the URL is new (nil) or was seen before (ErrSeen),
	// so that it reports the URL once however often it is found. It counts
	// against no limit and is refused only as a duplicate.
	SeenOnly bool
	// Refused is, for an item the Store queued only to be reported, why
	// (see ErrReported): Claim hands it out like any item of its key, to
	// be reported and done, never fetched (Lease.Closed). The Store sets
	// it; the Frontier clears it on the items it adds. Zero for an item
	// to fetch.
	Refused Refusal
	// Meta is the caller's metadata for the URL, key–value pairs given
	// with a seed or a link; it travels with the item through the Store,
	// so it survives a resumed crawl. Nil when there is none.
	Meta map[string]string

	// What the item has been through. It travels with the item through the
	// Store (Requeue puts it back with its history), so it survives as long
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

	// Revisiting: when the item may be handed out, and what its last
	// fetch found.

	// Due is the earliest time the item may be handed out. Add stamps it
	// with the Frontier's clock when it is zero, so that new URLs and
	// revisits share one order: each key's items are handed out by Due,
	// then in the order they were queued. A revisit's Due is the caller's
	// (Outcome.Revisit).
	Due time.Time
	// Visit is what the URL's last fetch found, for its next one; nil
	// until the URL is first fetched. The caller sets it on the
	// Outcome.Revisit that queues the URL again.
	Visit *Visit
}

// Child returns an Item for a link found on it: rawURL at one more depth,
// with it as referrer. rawURL must be absolute (see CanonicalRef).
func (it *Item) Child(rawURL string) Item {
	return Item{URL: rawURL, Depth: it.Depth + 1, Referrer: it.URL}
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
// store, real clock, host[:port] keys, seed hosts only, no limits, one item
// in flight per host.
type Config struct {
	// Store holds the crawl's state; nil means a new MemoryStore.
	Store Store
	// Clock is the time source; nil means real time.
	Clock ratelimit.Clock
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
	// limited to 524,287 regardless.)
	MaxDepth int
	// Limits are the page and sitemap limits the Store enforces (see
	// Limits). They count scheduled items, not successful fetches: an item
	// later disallowed by robots.txt or failing still counts.
	Limits Limits
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
	// Claim holds the scheduling settings passed to the Store: items of one
	// key in flight at once (PerHost, default 1), runs of a ready key
	// (Affinity), and the liveness timeout of a process of a Store shared
	// by several (Lease, default DefaultLease).
	Claim ClaimOptions
	// Poll is how often a waiting Next asks the Store again when nothing
	// in this process has changed: for a Store shared by several processes,
	// whose items and leases change elsewhere. Zero means never.
	Poll time.Duration
}

// Defaults of the pathological-path check (Config.MaxPathSegments and
// Config.MaxSegmentRepeats), and of the liveness timeout of a process in
// a shared Store (ClaimOptions.Lease).
const (
	DefaultMaxPathSegments   = 32
	DefaultMaxSegmentRepeats = 2
	DefaultLease             = 15 * time.Second
)

// Frontier schedules URLs for fetching: it canonicalises them, checks them
// against the crawl's scope and limits, and has its Store deduplicate and
// queue them; it hands out leases of items whose key may be fetched now,
// earliest-ready key first, waiting when none is. All methods are safe for
// concurrent use.
type Frontier struct {
	store      Store
	clock      ratelimit.Clock
	keyFunc    func(*url.URL) string
	canon      Canonicalizer
	scope      Scope
	inScope    func(*url.URL) bool
	maxDepth   int
	limits     Limits
	maxSegs    int
	maxRepeats int
	opt        ClaimOptions
	poll       time.Duration
	limitHit   atomic.Bool

	saveMu     sync.Mutex // orders the writes of the scope to the Store
	mu         sync.Mutex
	scopeNames map[string]struct{}
	scopeRead  time.Time // when a shared Store's scope was last read
	closed     bool
	waiters    int           // Next and NextKey calls under way
	keyWaiters int           // NextKey calls under way
	wake       chan struct{} // closed to wake them all
	nudge      chan struct{} // a token wakes one Next waiting (buffered: 1)
	timer      <-chan time.Time
	timerAt    time.Time
	pollTimer  <-chan time.Time

	waitHook func() // tests: called each time a Next call is about to block
}

// New returns a Frontier configured by cfg.
func New(cfg Config) *Frontier {
	f := &Frontier{
		store:      cfg.Store,
		clock:      cfg.Clock,
		keyFunc:    cfg.Key,
		canon:      cfg.Canonicalizer,
		scope:      cfg.Scope,
		inScope:    cfg.InScope,
		maxDepth:   cfg.MaxDepth,
		limits:     cfg.Limits,
		maxSegs:    cfg.MaxPathSegments,
		maxRepeats: cfg.MaxSegmentRepeats,
		opt:        cfg.Claim,
		poll:       cfg.Poll,
		scopeNames: make(map[string]struct{}),
		wake:       make(chan struct{}),
		nudge:      make(chan struct{}, 1),
	}
	if f.store == nil {
		f.store = new(MemoryStore)
	}
	if f.clock == nil {
		f.clock = ratelimit.SystemClock{}
	}
	f.opt.PerHost = max(f.opt.PerHost, 1)
	if f.opt.Lease <= 0 {
		f.opt.Lease = DefaultLease
	}
	if f.maxSegs == 0 {
		f.maxSegs = DefaultMaxPathSegments
	}
	if f.maxRepeats == 0 {
		f.maxRepeats = DefaultMaxSegmentRepeats
	}
	return f
}

// Store returns the Frontier's Store.
func (f *Frontier) Store() Store { return f.store }

// Counts returns the Store's counters now.
func (f *Frontier) Counts(ctx context.Context) (Counts, error) {
	c, err := f.store.Counts(ctx, f.clock.Now())
	if err != nil {
		return Counts{}, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return c, nil
}

// Host returns the pacing state the Store keeps for key.
func (f *Frontier) Host(ctx context.Context, key string) (ratelimit.HostState, error) {
	h, err := f.store.Host(ctx, key)
	if err != nil {
		return ratelimit.HostState{}, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return h, nil
}

// LimitReached reports whether the Store has refused a page for
// Limits.MaxPages: no page can be added any more, so sitemaps still queued
// can only list pages that would be refused.
func (f *Frontier) LimitReached() bool {
	return f.limitHit.Load()
}
