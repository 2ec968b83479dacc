package frontier

import (
	"context"
	"errors"
	"time"

	"github.com/heedcrawl/heed/frontier/revisit"
	"github.com/heedcrawl/heed/ratelimit"
)

// An DoneAdder is a Store that can add the links of a fetched page and end
// its lease in one operation: one round trip to a shared Store, one batch
// on disk. Frontier.DoneAdding uses it when the Store has it, and calls Add
// then Done when not.
type DoneAdder interface {
	// DoneAdding adds batch as Add does, then acks l as Done does. refused is
	// Add's answer, nil when the Store failed before adding (err says
	// why); with refused not nil, err is the Done's error alone
	// (ErrLeaseLost, or a failure after the items were
	// added).
	DoneAdding(ctx context.Context, l *Lease, now time.Time, o Outcome, batch []Item, lim Limits) (refused []error, err error)
}

// A QueueEditor is a Store that can change the items it holds queued: a
// crawl that revisits hands the <lastmod> of a sitemap read again to the
// pages it lists with it (Frontier.EditQueued). MemoryStore, pebblestore
// and redisstore are QueueEditors.
type QueueEditor interface {
	// EditQueued calls edit with each item queued under key that holds a
	// Visit — a page fetched before, queued to be revisited — leased
	// items aside, in no set order. An item for which edit returns true is
	// stored as edit left it, all its fields as Add keeps them, and takes
	// its place among key's items by its Due (among items of an equal Due,
	// MemoryStore and redisstore put one whose Due moved last, pebblestore
	// by when it was first queued); edit must leave its URL and Key as
	// they were, or the call fails with ErrEdit and stores none of its
	// edits. n is how many items were stored.
	//
	// A Store in one process edits in one atomic step. A Store shared by
	// several (redisstore) reads key's items, calls edit, then writes each
	// edited item only if it is still queued as read: an item claimed or
	// changed in between stays as the other call left it, and is not
	// counted in n.
	EditQueued(ctx context.Context, key string, edit func(*Item) bool) (n int, err error)
}

// A KeyCounter is a Store that can tell, cheaply, how many items one key
// holds queued, leased ones aside: a live view of a crawl asks it for the
// hosts it shows (crawler.HostInfo.Queued). MemoryStore, pebblestore and
// redisstore are KeyCounters.
type KeyCounter interface {
	// QueuedFor returns how many items key has queued.
	QueuedFor(ctx context.Context, key string) (int, error)
}

// A ReportWriter is a Store that must hear when the report of an item
// added SeenOnly is written: a Store shared by several processes
// (redisstore) keeps each new one pending until then, and queues those
// of a process that died first to be reported by another (RefusedSeenOnly).
type ReportWriter interface {
	// ReportsWritten tells the Store that the reports of items, each
	// added SeenOnly and taken as new, are written. It does not wait for
	// the Store: the Store may pass it on with its next operation.
	ReportsWritten(items []Item)
}

// Store keeps a crawl's state: everything a crawl must not forget when its
// process stops. It holds the seen-set, one queue per politeness key
// (ordered by Item.Due, then FIFO: see Claim),
// the leases of items handed out, each key's pacing state (when it may next
// be fetched, and what the pacing policy needs to decide how long it rests)
// and counters. MemoryStore keeps it in memory; package pebblestore on disk,
// so a crawl resumes after any stop; package redisstore in Redis, shared by
// every process of a distributed crawl.
//
// The Frontier calls a Store without holding its own lock, from many
// goroutines at once: a Store must be safe for concurrent use, and each call
// is atomic — it is applied whole or, when it returns an error, not at all.
// A Store's errors end the crawl (they wrap into ErrStore); a store on disk
// or on the network must leave its state resumable when it fails.
//
// Time is the caller's clock (now), except that a Store shared by several
// machines may use one clock of its own for every decision (redisstore uses
// Redis's); Outcome.Rest is therefore a duration, counted by the Store from
// the moment it records the outcome.
type Store interface {
	// Add schedules the items of batch, which are canonical and carry
	// their keys, in order: an item whose URL was seen before is refused
	// with ErrSeen, and one that lim forbids with ErrLimit, ErrHostLimit
	// or ErrSitemapLimit; every other item's URL is marked seen and the
	// item is queued under its key (by its Due, after the items of its
	// key due no later) and counted, in one step, so that no URL is ever
	// marked seen without being queued. An item of a key given up
	// (GiveUp) is queued so too, whatever lim, and not counted against it:
	// Claim hands it out at once, to be reported — but for an item
	// marked SeenOnly, whose URL is marked seen and nothing queued or
	// counted, refused only with ErrSeen. An item that MaxPages or
	// MaxPagesPerHost refuses is, unless its URL was seen (ErrSeen), marked
	// seen and queued to be reported, with Item.Refused set and not
	// counted against lim, and refused with an error that is ErrReported
	// and the limit's: so each URL refused by a limit is reported exactly
	// once, on its own lease, whatever the order in which it is found.
	// An item comes back
	// from Claim with every field as it was added (Key, Due and Visit
	// included), but for the roundings a Store documents.
	// refused[i] is nil or the reason batch[i] was refused. A non-nil err
	// means the Store failed and nothing of batch was applied.
	Add(ctx context.Context, batch []Item, lim Limits) (refused []error, err error)

	// Claim leases the next item to fetch at now: the first item of the
	// key that has waited longest among those with queued items, fewer
	// than opt.PerHost leases, a NextAllowed not after now and a first
	// item due (Item.Due not after now) — or, ahead
	// of those, of a key that is closed (given up, or ratelimit.HostState.ClosedUntil
	// after now; one whose ClosedUntil has passed is open again and waits
	// for its NextAllowed), whose items are handed out to be reported. With
	// PerHost above one, the key's NextAllowed moves to now plus its
	// ratelimit.HostState.Delay, so that requests start at least that far apart
	// (with one, the lease keeps them apart and Done sets the rest). When no
	// key is ready, Claim returns a Claim with a nil Lease and Next set to
	// the earliest time a key could be claimed — the least, over keys with
	// a free slot, of the later of its NextAllowed and its first item's
	// Due — (zero if none), or Idle if no item is queued or leased
	// anywhere: the crawl is over. Items waiting for their Due are queued:
	// a Store holding only revisits due later is not Idle.
	//
	// A key's items are handed out in the order of their Due and, among
	// equal Dues, in the order they were queued (Add, a Done's Revisit):
	// new URLs, stamped with their admission time, and revisits share one
	// order, so that neither starves the other. A closed key's items are
	// all handed out at once, whatever their Due.
	Claim(ctx context.Context, now time.Time, opt ClaimOptions) (Claim, error)

	// ClaimKey leases key itself, with no item, when it could be claimed
	// at now: for a request that is not an item's — a robots.txt redirect
	// hop to another host — but must be paced with the key's pages. A nil
	// Lease means not now; next says when to ask again.
	ClaimKey(ctx context.Context, key string, now time.Time, opt ClaimOptions) (l *Lease, next time.Time, err error)

	// Done ends l: its item is done. The key takes o.Pace and rests o.Rest
	// from now (NextAllowed is at least now+o.Rest). o.Checkpoint, if not
	// nil, is stored in the same atomic step (see Checkpoint), and so is
	// o.Revisit, if not nil: the item is queued again, as the Revisit says
	// (its Due and Visit), its URL still seen and not counted again
	// against Limits. A lease that expired or was superseded is refused
	// with ErrLeaseLost, a Revisit that is not l's item with ErrRevisit;
	// either way nothing of the Done is applied.
	Done(ctx context.Context, l *Lease, now time.Time, o Outcome) error

	// Requeue ends l without finishing its item: the item goes back to the
	// front of its key's queue — to its place by Due, which it had taken
	// when claimed — with what it has been through (Retries, Redirects,
	// ..., Visit and Due), and the key takes o.Pace and rests o.Rest, as
	// for Done. o.Revisit is ignored. Requeuing a lease of ClaimKey is
	// Done.
	Requeue(ctx context.Context, l *Lease, now time.Time, o Outcome) error

	// GiveUp marks key given up, durably: Claim hands out its queued
	// items at once, whatever its NextAllowed, with Lease.GivenUp set —
	// those queued now and those Add queues from now on, new URLs found
	// after — to be reported and done like any item, so that each URL of
	// the key is reported exactly once even across a crash, whenever it
	// was found. Its leases end as usual.
	GiveUp(ctx context.Context, key string) error

	// Host returns key's pacing state (the zero ratelimit.HostState for a key the
	// Store does not know).
	Host(ctx context.Context, key string) (ratelimit.HostState, error)

	// Counts returns the Store's counters at now.
	Counts(ctx context.Context, now time.Time) (Counts, error)

	// Meta returns the value stored under name by SetMeta, or nil.
	Meta(ctx context.Context, name string) ([]byte, error)
	// SetMeta stores value under name (a crawl's settings, its seed
	// scope), durably for stores that persist.
	SetMeta(ctx context.Context, name string, value []byte) error
	// Checkpoint returns the Outcome.Checkpoint of the last Done the Store
	// has made durable, or nil.
	Checkpoint(ctx context.Context) ([]byte, error)

	// Close releases the Store's resources; stores that persist make what
	// they hold durable first.
	Close() error
}

// Errors of a Store. Add's refusals (ErrSeen, ErrLimit, …) are declared with
// the Frontier's.
var (
	// ErrStore wraps an error returned by the Store.
	ErrStore = errors.New("frontier: store")
	// ErrEdit: an edit of QueueEditor.EditQueued changed an item's URL or
	// Key, or left it with a field the Store cannot hold; none of the
	// call's edits is stored. It is the caller's error, not the Store's.
	ErrEdit = errors.New("frontier: edit refused")
	// ErrLeaseLost: Done or Requeue got a lease the Store no longer holds —
	// it expired and its item was handed to someone else, or it was
	// already ended.
	ErrLeaseLost = errors.New("frontier: lease lost")
)

// Limits are the admission limits a Store enforces in Add, atomically with
// its counters. Zero means no limit.
type Limits struct {
	// MaxPages caps the page items (not sitemaps) ever scheduled.
	MaxPages int
	// MaxPagesPerHost caps the page items scheduled per key.
	MaxPagesPerHost int
	// MaxSitemapsPerHost caps the sitemap items scheduled per key, and
	// MaxSitemapURLsPerHost the page items with FromSitemap.
	MaxSitemapsPerHost    int
	MaxSitemapURLsPerHost int
}

// ClaimOptions are the scheduling settings of a crawl, passed with every
// claim.
type ClaimOptions struct {
	// PerHost is how many leases one key may have at once; 0 means 1.
	PerHost int
	// Lease is, for a Store shared by several processes
	// (frontier/redisstore), the liveness timeout of this process: a
	// lease lasts while the process keeps a heartbeat in the Store, and
	// once its last heartbeat is older than Lease (it died, or was paused
	// or cut off) every lease it held may be taken back at once. Zero
	// means DefaultLease. Stores whose leases die with their process
	// (MemoryStore, pebblestore) ignore it.
	Lease time.Duration
	// Affinity lets a key that is ready again as soon as its lease ends be
	// claimed next, ahead of keys that have waited, up to Affinity times
	// in a row: a host crawled without delay is then fetched a run at a
	// time over one warm connection. Zero means strict round-robin. It
	// never hands a key out before its NextAllowed. frontier/redisstore
	// leases a run of up to 16 items at once, of a key with a delay too,
	// handing each out once the key rested (see its documentation).
	Affinity int
}

// Claim is the answer of Store.Claim.
type Claim struct {
	// Lease is the item handed out, or nil.
	Lease *Lease
	// Next is, when Lease is nil, the earliest time a key could be
	// claimed; zero if no key has queued items and a free slot.
	Next time.Time
	// Idle reports that nothing is queued and nothing leased: the crawl
	// is over.
	Idle bool
}

// Lease is an item handed out by Store.Claim (or a key by ClaimKey, with
// only Item.Key set), together with its key's pacing state when claimed.
// It is the worker's until passed to Done or Requeue.
type Lease struct {
	Item
	// Pace is the key's pacing state when the lease was granted. The
	// worker updates it (the pacing policy, package ratelimit) and hands it
	// back in the Outcome.
	Pace ratelimit.HostState
	// Token fences the lease: a Store refuses Done and Requeue with a token
	// it did not grant last for the item, so a worker that lost its lease
	// cannot finish someone else's.
	Token uint64
	// Expires is when the Store may take the lease back and hand the item
	// to another worker, as far as this process can tell (for a lease that
	// lasts while its process beats, a bound from its last acknowledged
	// heartbeat); zero if it never does. A worker must not start a
	// request on a lease past its expiry.
	Expires time.Time
	// GivenUp reports that the key was given up (Store.GiveUp): the item
	// is handed out to be reported, never fetched.
	GivenUp bool
	// Revisiting is the key's revisit state (package frontier/revisit) as
	// the last Done or Requeue that set it left it: the zero revisit.Host
	// for a key never revisited. It lives in the Store beside the key's
	// pacing state, so that a resumed crawl, or every process of a shared
	// one, schedules the key's revisits from one state.
	Revisiting revisit.Host
}

// Closed reports whether l is handed out to be reported rather than
// fetched: its key was given up, its item was refused (Item.Refused), or it is closed by an unreachable
// robots.txt until Pace.ClosedUntil. Such a lease may come before the key's
// NextAllowed, so no request may be made under it.
func (l *Lease) Closed(now time.Time) bool {
	return l.GivenUp || l.Refused != NotRefused || l.Pace.ClosedUntil.After(now)
}

// Outcome is what a worker reports when it ends a lease.
type Outcome struct {
	// Pace is the key's new pacing state.
	Pace ratelimit.HostState
	// Rest is how long the key rests, from the moment the Store records
	// the outcome, before it may be claimed again.
	Rest time.Duration
	// Checkpoint, if not nil, is stored with the outcome in one atomic
	// step: a caller's output offset, say, so that its output and the
	// crawl's progress never disagree after a crash.
	Checkpoint []byte
	// Revisit, if not nil, queues the lease's item again on Done, in the
	// same atomic step: the same URL and Key, with the Due and Visit the
	// caller set (the Frontier stamps a zero Due with its clock). The URL
	// stays seen — Add refuses it with ErrSeen — and is not counted again
	// against Limits. Nil: the item is done for good. Requeue ignores it.
	Revisit *Item
	// Revisiting, if not nil, is the key's new revisit state (see
	// Lease.Revisiting), stored in the same atomic step, by Done and
	// Requeue alike; nil leaves the key's as it is. With several leases
	// of a key out at once the last one ended wins: each started from the
	// state as claimed, and the state is made of averages that one lost
	// update barely moves.
	Revisiting *revisit.Host
}

// Counts are a Store's counters.
type Counts struct {
	// Queued is the number of items waiting, revisits due later
	// included; Leased the number handed out.
	Queued, Leased int
	// Hosts is the number of keys with queued or leased items; Busy those
	// with a lease; Ready those with queued items that could be claimed
	// now; Resting those with queued items waiting for their NextAllowed
	// or their first item's Due.
	Hosts, Busy, Ready, Resting int
	// Scheduled is the number of page items ever scheduled, the count
	// Limits.MaxPages bounds.
	Scheduled int
}
