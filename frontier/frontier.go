package frontier

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedcrawl/heed/internal/hostid"
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
	// (Affinity), and how long a lease lasts in a Store shared by several
	// processes (Lease, default DefaultLease).
	Claim ClaimOptions
	// Poll is how often a waiting Next asks the Store again when nothing
	// in this process has changed: for a Store shared by several processes,
	// whose items and leases change elsewhere. Zero means never.
	Poll time.Duration
}

// Defaults of the pathological-path check (Config.MaxPathSegments and
// Config.MaxSegmentRepeats), and of a lease's duration.
const (
	DefaultMaxPathSegments   = 32
	DefaultMaxSegmentRepeats = 2
	DefaultLease             = 5 * time.Minute
)

// scopeMeta is the Store metadata under which the Frontier keeps its scope
// names, so that a crawl resumed from a Store keeps its seeds' scope.
const scopeMeta = "frontier/scope"

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

// Resume loads the scope a Store kept from an earlier run (the seeds'
// hosts or domains and the hosts they redirected to), so that a crawl
// resumed from it follows the same links. A Store without one is fine.
func (f *Frontier) Resume(ctx context.Context) error {
	names, err := f.storedScope(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		f.scopeNames[name] = struct{}{}
	}
	f.scopeRead = f.clock.Now()
	return nil
}

// A ScopeStore is a Store shared by several processes that keeps the
// crawl's scope as a set each process adds to: the seed hosts (or domains)
// of every process, and the hosts their seeds redirected to. A process that
// finds a link to a host outside its own view of the scope asks the Store
// again (at most once per Config.Poll) before refusing it.
type ScopeStore interface {
	AddScope(ctx context.Context, names []string) error
	Scope(ctx context.Context) ([]string, error)
}

// storedScope returns the scope names the Store keeps.
func (f *Frontier) storedScope(ctx context.Context) ([]string, error) {
	if ss, ok := f.store.(ScopeStore); ok {
		names, err := ss.Scope(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		return names, nil
	}
	v, err := f.store.Meta(ctx, scopeMeta)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	var names []string
	for name := range strings.SplitSeq(string(v), "\n") {
		if name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// refreshScope reads a shared Store's scope again, if it was not read
// within the poll interval, and reports whether it did.
func (f *Frontier) refreshScope(ctx context.Context) bool {
	if _, ok := f.store.(ScopeStore); !ok || f.poll <= 0 {
		return false
	}
	f.mu.Lock()
	due := f.clock.Now().Sub(f.scopeRead) >= f.poll
	if due {
		f.scopeRead = f.clock.Now()
	}
	f.mu.Unlock()
	return due && f.Resume(ctx) == nil
}

// AddSeed schedules rawURL at depth 0 and adds its host (or registrable
// domain, with ScopeSeedDomains) to the crawl's scope. Seeds bypass the
// scope check and MaxDepth but not deduplication or page limits; the scope
// grows even if the seed itself is rejected as a duplicate.
func (f *Frontier) AddSeed(ctx context.Context, rawURL string) error {
	errs, err := f.AddSeeds(ctx, []string{rawURL})
	if err != nil {
		return err
	}
	return errs[0]
}

// AddSeeds adds seeds as AddSeed does, with one Store call for all of them.
// errs[i] says why seeds[i] was not scheduled (nil if it was); err is a
// Store failure, wrapping ErrStore, in which case nothing was scheduled.
func (f *Frontier) AddSeeds(ctx context.Context, seeds []string) (errs []error, err error) {
	items := make([]Item, len(seeds))
	for i, s := range seeds {
		items[i] = Item{URL: s}
	}
	return f.add(ctx, items, true)
}

// AddSeedItems is AddSeeds for seeds given as items, with their Meta: each
// is scheduled at depth 0, whatever its Depth says.
func (f *Frontier) AddSeedItems(ctx context.Context, seeds []Item) (errs []error, err error) {
	items := make([]Item, len(seeds))
	for i, s := range seeds {
		items[i] = Item{URL: s.URL, Meta: s.Meta}
	}
	return f.add(ctx, items, true)
}

// Add schedules it. it.URL may be any absolute URL; Add canonicalises it
// and sets it.Key. Depth, Referrer, Kind, Priority, Lastmod and the item's
// history are kept as given. Checks run in this order, the first failing
// one giving the error: depth, canonical form (ErrRelative, ErrScheme,
// ErrHost, ErrPort, ErrTooLong), pathological path, scope, then in the
// Store: given-up host, page and sitemap limits, duplicates (ErrSeen). A
// nil error means the item is queued and will be handed out by Next once.
// A Store failure wraps ErrStore. ctx is checked before any work is done.
func (f *Frontier) Add(ctx context.Context, it Item) error {
	errs, err := f.add(ctx, []Item{it}, false)
	if err != nil {
		return err
	}
	return errs[0]
}

// AddAll adds items as Add does, with one Store call for all of them (a
// page's links): errs[i] says why items[i] was refused; err is a Store
// failure, wrapping ErrStore, in which case none was scheduled.
func (f *Frontier) AddAll(ctx context.Context, items []Item) (errs []error, err error) {
	return f.add(ctx, slices.Clone(items), false)
}

// add checks items (modified in place), widens the scope by the seeds, and
// hands the rest to the Store in one batch.
func (f *Frontier) add(ctx context.Context, items []Item, seed bool) ([]error, error) {
	errs, batch, at, err := f.prepare(ctx, items, seed)
	if err != nil || len(batch) == 0 {
		return errs, err
	}
	refused, err := f.store.Add(ctx, batch, f.limits)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	f.added(errs, at, refused)
	return errs, nil
}

// prepare checks items (modified in place) and widens the scope by the
// seeds. It returns each item's error so far, and the batch for the Store:
// the items that passed, batch[j] being items[at[j]].
func (f *Frontier) prepare(ctx context.Context, items []Item, seed bool) (errs []error, batch []Item, at []int, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	errs = make([]error, len(items))
	names := make([]string, len(items)) // what the scope set holds for each
	for i := range items {
		errs[i], names[i] = f.check(&items[i], seed)
	}
	if !seed && f.poll > 0 && f.unknownScope(items, errs, names) {
		f.refreshScope(ctx) // another process may have widened it
	}
	f.mu.Lock()
	var added []string
	for i := range items {
		if errs[i] != nil || names[i] == "" {
			continue
		}
		if _, ok := f.scopeNames[names[i]]; ok {
			continue
		}
		if !seed {
			errs[i] = ErrScope
			continue
		}
		name := strings.Clone(names[i])
		f.scopeNames[name] = struct{}{}
		added = append(added, name)
	}
	f.mu.Unlock()
	if len(added) > 0 {
		if err := f.saveScope(ctx, added); err != nil {
			return nil, nil, nil, err
		}
	}
	batch = make([]Item, 0, len(items))
	at = make([]int, 0, len(items))
	for i := range items {
		if errs[i] == nil {
			batch = append(batch, items[i])
			at = append(at, i)
		}
	}
	return errs, batch, at, nil
}

// added takes the Store's answers for a batch prepare made into errs, and
// wakes the waiters if anything was queued.
func (f *Frontier) added(errs []error, at []int, refused []error) {
	queued := false
	for j, i := range at {
		errs[i] = refused[j]
		switch {
		case refused[j] == nil:
			queued = true
		case errors.Is(refused[j], ErrLimit):
			f.limitHit.Store(true)
		}
	}
	if queued {
		f.nudgeOne()
	}
}

// check runs the checks that need no Store on it, canonicalising its URL
// and setting its key, and returns what the scope set must hold for it
// ("" when the scope does not depend on it).
func (f *Frontier) check(it *Item, seed bool) (err error, name string) {
	if it.Depth < 0 || it.Depth > maxStoredDepth || !seed && f.maxDepth > 0 && it.Depth > f.maxDepth {
		return ErrDepth, ""
	}
	canon, sp, err := f.canon.canonical(it.URL)
	if err != nil {
		return err, ""
	}
	if pathological(canon[sp.end:], f.maxSegs, f.maxRepeats) {
		return ErrPathological, ""
	}
	var u *url.URL
	if f.keyFunc != nil || f.inScope != nil {
		if u, err = url.Parse(canon); err != nil {
			return fmt.Errorf("frontier: canonical URL does not parse: %w", err), ""
		}
	}
	key := canon[sp.start:sp.end]
	if f.keyFunc != nil {
		if key = f.keyFunc(u); key == "" {
			return fmt.Errorf("%w: empty politeness key for %q", ErrHost, canon), ""
		}
	}
	switch {
	case f.inScope != nil:
		if !seed && !f.inScope(u) {
			return ErrScope, ""
		}
	case f.scope == ScopeAny:
	case f.scope == ScopeSeedDomains:
		name = registrableDomain(canon[sp.start:sp.nameEnd])
	default: // ScopeSeedHosts, and values this version does not know
		name = canon[sp.start:sp.nameEnd]
	}
	it.URL, it.Key = canon, key
	return nil, name
}

// saveScope stores the scope names, so that Resume finds them.
func (f *Frontier) saveScope(ctx context.Context, added []string) error {
	if ss, ok := f.store.(ScopeStore); ok {
		if err := ss.AddScope(ctx, added); err != nil {
			return fmt.Errorf("%w: %w", ErrStore, err)
		}
		return nil
	}
	// One write at a time, each of a snapshot taken under saveMu: a write
	// of an older snapshot can then never land after a newer one.
	f.saveMu.Lock()
	defer f.saveMu.Unlock()
	f.mu.Lock()
	names := slices.Sorted(maps.Keys(f.scopeNames))
	f.mu.Unlock()
	if err := f.store.SetMeta(ctx, scopeMeta, []byte(strings.Join(names, "\n"))); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}

// registrableDomain returns the eTLD+1 of a canonical host name, or the
// name itself for IP literals and names without one (localhost, co.uk).
// hostid decides, so that ScopeSeedDomains and ratelimit.KeyDomain agree.
func registrableDomain(name string) string {
	return hostid.RegistrableDomain(name)
}

// Next returns a lease of an item whose key may be fetched now, blocking
// until one is ready. The key is busy until the lease is passed to Done or
// Requeue (with PerHost > 1, until PerHost leases of it are out). Keys are
// served earliest-ready first, round-robin among keys ready at once, and a
// key's items in FIFO order.
//
// Next returns ErrExhausted when no item is queued and none is leased (a
// leased item may still add links, so until its lease ends Next waits). It
// returns ErrClosed after Close, ctx.Err() if ctx is done, even when an
// item is ready, and a Store failure wrapped in ErrStore.
func (f *Frontier) Next(ctx context.Context) (*Lease, error) {
	f.watch(1)
	defer f.watch(-1)
	alone := false // woken alone: must wake the others on finding work
	for {
		wake, err := f.wakeChan(ctx)
		if err != nil {
			return nil, err
		}
		now := f.clock.Now()
		c, err := f.store.Claim(ctx, now, f.opt)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		if c.Lease != nil {
			if alone {
				f.nudgeOne() // there may be more work: the next one asks
			}
			return c.Lease, nil
		}
		if c.Idle {
			// The others may be waiting for a poll only this call would
			// have re-armed (the work ended in another process): they
			// must ask too, and end.
			f.broadcast()
			return nil, ErrExhausted
		}
		if err := f.wait(ctx, wake, c.Next, true); err == errAlone {
			alone = true
		} else if err != nil {
			return nil, err
		}
	}
}

// NextKey returns a lease of key itself, blocking until the key may be
// fetched and has a free slot: for a request that is not an item's (a
// robots.txt redirect hop to another host), paced with the key's pages.
// End it with Done.
func (f *Frontier) NextKey(ctx context.Context, key string) (*Lease, error) {
	f.watch(1)
	defer f.watch(-1)
	f.mu.Lock()
	f.keyWaiters++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.keyWaiters--
		f.mu.Unlock()
	}()
	for {
		wake, err := f.wakeChan(ctx)
		if err != nil {
			return nil, err
		}
		l, next, err := f.store.ClaimKey(ctx, key, f.clock.Now(), f.opt)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		if l != nil {
			return l, nil
		}
		if err := f.wait(ctx, wake, next, false); err != nil {
			return nil, err
		}
	}
}

// watch counts a Next or NextKey call in (d = 1) or out (d = -1) of those
// broadcast must wake. A call counts from before it first takes the wake
// channel until it returns, so that a change made between its question to
// the Store and its wait closes the channel it holds.
func (f *Frontier) watch(d int) {
	f.mu.Lock()
	f.waiters += d
	f.mu.Unlock()
}

// wakeChan returns the channel the next change closes, taken before the
// Store is asked so that no change is missed, or why Next must return.
func (f *Frontier) wakeChan(ctx context.Context) (chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	return f.wake, nil
}

// errAlone is wait's answer when a wake-up meant for every waiter reached
// this one alone: the time asked for came, or the poll interval passed. A
// waiter that then finds work wakes the others, so that a key ready again
// costs the Store one question, not one per waiting worker (and, on a
// shared Store, not one per worker of every process).
var errAlone = errors.New("frontier: woken alone")

// wait blocks until wake closes, the time at comes (zero: no time), the
// poll interval passes or ctx ends. Waiters for any key (shared) share one
// timer, armed for the earliest time asked, one poll timer and the nudge
// channel: each tick or nudge wakes one of them (errAlone). Others (a key lease) have timers of their
// own, since a wake-up they took would be lost to the rest.
func (f *Frontier) wait(ctx context.Context, wake chan struct{}, at time.Time, shared bool) error {
	var timer, poll <-chan time.Time
	f.mu.Lock()
	switch {
	case at.IsZero():
	case !shared:
		timer = f.clock.After(at.Sub(f.clock.Now()))
	default:
		if f.timer == nil || at.Before(f.timerAt) {
			f.timer = f.clock.After(at.Sub(f.clock.Now()))
			f.timerAt = at
		}
		timer = f.timer
	}
	switch {
	case f.poll <= 0:
	case !shared:
		poll = f.clock.After(f.poll)
	default:
		if f.pollTimer == nil {
			f.pollTimer = f.clock.After(f.poll)
		}
		poll = f.pollTimer
	}
	hook := f.waitHook
	f.mu.Unlock()
	var nudge chan struct{}
	if shared {
		nudge = f.nudge
	}
	woken := func(got <-chan time.Time, isPoll bool) error {
		if !shared {
			return nil
		}
		f.mu.Lock()
		if isPoll && f.pollTimer == got {
			f.pollTimer = nil
		} else if !isPoll && f.timer == got {
			f.timer = nil
		}
		f.mu.Unlock()
		return errAlone
	}
	select { // what is ready at once, without blocking
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
		return nil
	case <-nudge:
		return errAlone
	case <-poll:
		return woken(poll, true)
	case <-timer:
		return woken(timer, false)
	default:
	}
	if hook != nil {
		hook()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
		return nil
	case <-nudge:
		return errAlone
	case <-poll:
		return woken(poll, true)
	case <-timer:
		return woken(timer, false)
	}
}

// nudgeOne wakes one Next waiting (or the next to wait): something changed
// that may have made work ready. If it finds work, it wakes the next one
// in turn, so that a change costs the Store one question per item it made
// ready, plus one — not one per waiting worker.
func (f *Frontier) nudgeOne() {
	select {
	case f.nudge <- struct{}{}:
	default: // a token is waiting already
	}
}

// ended wakes whoever a lease that ended may concern: one Next, or every
// waiter while a NextKey, which waits for its key's slot, is among them.
func (f *Frontier) ended() {
	f.mu.Lock()
	keys := f.keyWaiters > 0
	f.mu.Unlock()
	if keys {
		f.broadcast()
	} else {
		f.nudgeOne()
	}
}

func (f *Frontier) broadcast() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiters == 0 {
		return
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// Done ends l: its item is done, whether the fetch succeeded, failed or was
// disallowed. The key takes o.Host and rests o.Rest (see Outcome). Each
// lease Next returns must be passed to exactly one of Done or Requeue; a
// lease the Store no longer holds gets ErrLeaseLost.
func (f *Frontier) Done(ctx context.Context, l *Lease, o Outcome) error {
	return f.end(ctx, l, o, false)
}

// Requeue ends l without finishing its item: it goes back to the front of its
// key's queue, with what it has been through (Retries, Redirects, …), and
// the key takes o.Host and rests o.Rest. Use it when the worker's slot went
// to fetching robots.txt, robots.txt is temporarily unavailable, or the
// item is to be tried again. A deferred item is neither a duplicate nor
// counted again against limits. An item of a key closed meanwhile (given
// up, or its robots.txt unreachable) is handed out again at once, to be
// reported (Lease.Closed).
func (f *Frontier) Requeue(ctx context.Context, l *Lease, o Outcome) error {
	return f.end(ctx, l, o, true)
}

// DoneAdding is Done for a fetched page whose links are items: they are
// added as AddAll adds them, then l ends as Done ends it — in one Store
// operation when the Store is an DoneAdder (one round trip to a shared
// Store, one batch on disk). errs is AddAll's answer for the items, nil if
// the Store failed; err is Done's, or the Store's failure (ErrStore).
func (f *Frontier) DoneAdding(ctx context.Context, l *Lease, o Outcome, items []Item) (errs []error, err error) {
	aa, ok := f.store.(DoneAdder)
	if !ok || len(items) == 0 || l == nil {
		if len(items) > 0 {
			if errs, err = f.AddAll(ctx, items); err != nil {
				return nil, err
			}
		}
		return errs, f.Done(ctx, l, o)
	}
	errs, batch, at, err := f.prepare(ctx, slices.Clone(items), false)
	if err != nil {
		return nil, err
	}
	o.Rest = max(o.Rest, 0)
	refused, err := aa.DoneAdding(ctx, l, f.clock.Now(), o, batch, f.limits)
	f.ended()
	if refused == nil && err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	f.added(errs, at, refused)
	switch {
	case err == nil, errors.Is(err, ErrLeaseLost), errors.Is(err, ErrGivenUp):
		return errs, err
	}
	return errs, fmt.Errorf("%w: %w", ErrStore, err)
}

func (f *Frontier) end(ctx context.Context, l *Lease, o Outcome, requeue bool) error {
	if l == nil {
		return ErrLeaseLost
	}
	o.Rest = max(o.Rest, 0)
	var err error
	if requeue {
		err = f.store.Requeue(ctx, l, f.clock.Now(), o)
	} else {
		err = f.store.Done(ctx, l, f.clock.Now(), o)
	}
	f.ended()
	switch {
	case err == nil, errors.Is(err, ErrLeaseLost), errors.Is(err, ErrGivenUp):
		return err
	}
	return fmt.Errorf("%w: %w", ErrStore, err)
}

// Close makes blocked and future Next and NextKey calls return ErrClosed:
// no more work is handed out. Add, Done and Requeue keep working, so that
// leases still held can end — and the links of pages they fetched are kept
// in the Store, for a crawl that resumes from it. Close does not close the
// Store.
func (f *Frontier) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	close(f.wake)
	f.wake = make(chan struct{})
}

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

// AddScope widens the crawl's scope by rawURL's host (or registrable
// domain, with ScopeSeedDomains) as AddSeed does, without scheduling
// anything: for a seed's redirect target, which should be crawled like the
// seed it stands for (http://example.com → https://www.example.com/).
func (f *Frontier) AddScope(ctx context.Context, rawURL string) error {
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
	_, ok := f.scopeNames[name]
	if !ok {
		f.scopeNames[strings.Clone(name)] = struct{}{}
	}
	f.mu.Unlock()
	if ok {
		return nil
	}
	return f.saveScope(ctx, []string{name})
}

// unknownScope reports whether an item that passed its checks has a scope
// name the Frontier does not know.
func (f *Frontier) unknownScope(items []Item, errs []error, names []string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range items {
		if errs[i] == nil && names[i] != "" {
			if _, ok := f.scopeNames[names[i]]; !ok {
				return true
			}
		}
	}
	return false
}

// LimitReached reports whether the Store has refused a page for
// Limits.MaxPages: no page can be added any more, so sitemaps still queued
// can only list pages that would be refused.
func (f *Frontier) LimitReached() bool {
	return f.limitHit.Load()
}

// GiveUp stops crawling key: Add refuses its URLs from now on with
// ErrGivenUp, and Next hands out its queued items at once, whatever the
// key's pace, with Lease.GivenUp set: the caller reports each and ends its
// lease with Done, so that each is reported once, even across a crash of a
// Store that persists. A crawler gives a host up when it keeps failing, so
// that one dead server cannot hold a crawl open.
func (f *Frontier) GiveUp(ctx context.Context, key string) error {
	err := f.store.GiveUp(ctx, key)
	f.broadcast()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
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
