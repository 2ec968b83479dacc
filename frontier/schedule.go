package frontier

import (
	"math"
	"strings"
	"time"

	"github.com/heedcrawl/heed/frontier/revisit"
	"github.com/heedcrawl/heed/ratelimit"
)

// Schedule is the scheduling index of a Store that runs in one process: per
// key, how many items are queued and leased, its pacing state — a
// ratelimit.Bucket and the ratelimit.HostState the pacing policy reads — and
// its counters, and a heap of the keys that have queued items and a free
// lease slot, ordered by when they may be claimed — when their buckets
// have their tokens again (mirrored in HostState.NextAllowed), or their
// first items are due, whichever is later — and, among equal times, by how
// long they have waited. MemoryStore uses it beside its queues; a Store on disk
// uses it as the in-memory index of what it persists (Restore rebuilds it
// on open, Record says what to persist after each change). The queues themselves are
// the Store's: Schedule only counts, and learns when each key's first item
// is due from Head.
//
// # Due times
//
// A key is claimable only once its first item is due. The Store says when
// that is with Head, whenever it may have changed: after queuing an item
// ahead of the others (a revisit due earlier than the key's first item),
// after a claim took the first item (Claim takes what Head said with the
// item: the next is due at once unless the Store says otherwise), after a
// Requeue or a Done that queued an item. Head's zero time means due at once: a Store reports it for an
// item it expects due, one queued in order at its admission (Add stamps
// new URLs with their admission time), and ClaimDue asks it about such an
// item before leasing it: one not due after all makes the key wait for it.
// Keys with items due at once keep their place by NextAllowed alone, so a
// crawl without revisits is scheduled exactly as before Due existed.
//
// A key's token is taken when a request may have started or ended: at each
// claim when PerHost is above one (the key then rests its Delay, so that
// its requests start at least that far apart), and at the end of each
// lease (it rests the Outcome's Rest from then: with one lease per key, a
// delay counted from the answer). Neither ever shortens a rest under way.
//
// A key that is closed — given up, or its robots.txt unreachable until
// ratelimit.HostState.ClosedUntil — is ready at once whatever its bucket says: its
// items are handed out to be reported, not fetched (Lease.Closed), so that a
// broken host never holds a crawl. Its bucket is left as it was, for the
// next request once it opens again.
//
// Keys are forgotten once nothing is queued or leased for them and their
// NextAllowed has passed, unless a per-key limit is in force or the key was
// given up: memory follows the keys with work. After Restore, no key is
// forgotten until the first Queue says whether per-key limits are in force,
// since only the restored counters enforce them.
//
// A Schedule is not safe for concurrent use; its Store serialises calls.
// The zero value is ready to use.
type Schedule struct {
	keys  map[string]*keyState
	ready readyHeap
	seq   uint64
	opt   ClaimOptions // of the last claim: what Add and End schedule by

	queued, leased, busy, scheduled int
	keep                            bool      // per-key counters must outlive the queues
	restored                        bool      // Restore ran and no Queue has said whether to keep
	idle                            []idleKey // keys that went idle, oldest first: eviction candidates
	idleHead                        int
}

// keyState is the scheduling state of one key.
type keyState struct {
	key                              string
	pace                             *pace // nil while zero: most queued keys were never fetched
	queued, leased                   int32
	index                            int32 // in ready, or -1
	streak                           int32 // claims in a row through Affinity
	scheduled, sitemaps, sitemapURLs int32
	givenUp                          bool
	idleAt                           int64 // NextAllowed when it went idle; 0 if not idle
}

// pace is a key's pacing state: its bucket, and what the pacing policy
// reads and the Stores keep. HostState.NextAllowed is the bucket's ready
// time as of its last change.
type pace struct {
	ratelimit.HostState
	bucket ratelimit.Bucket
	// due is when the key's first item is due, as Head last said;
	// math.MinInt64 for at once. It lives here, with what a paced key
	// keeps, because keys whose first item waits are (almost always) keys
	// already fetched: keyState stays in its size class (64 bytes)
	// without it, and pace in its own (160) with it.
	due int64 // revisiting is the key's revisit state (Lease.Revisiting), nil while
	// zero: only a crawl that revisits sets it.
	revisiting *revisit.Host
}

type idleKey struct {
	k  *keyState
	at int64
}

// KeyRecord is what a Store that persists keeps of one key besides its
// queue: its pacing state and counters.
type KeyRecord struct {
	Host                             ratelimit.HostState
	Revisiting                       revisit.Host
	Scheduled, Sitemaps, SitemapURLs int
	GivenUp                          bool
}

// evictScan bounds the idle keys examined per call.
const evictScan = 8

// fullRecheck is how far ahead ClaimKey points when every lease slot of a
// key is taken: the slot frees at a time no one knows yet.
const fullRecheck = 100 * time.Millisecond

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

func (s *Schedule) perHost() int32 {
	return int32(max(s.opt.PerHost, 1))
}

func (s *Schedule) key(key string) *keyState {
	if s.keys == nil {
		s.keys = make(map[string]*keyState)
	}
	k := s.keys[key]
	if k == nil {
		k = &keyState{key: strings.Clone(key), index: -1}
		s.keys[k.key] = k
	}
	return k
}

// Admit reports whether lim lets it be scheduled: nil, or ErrLimit,
// ErrHostLimit or ErrSitemapLimit. It changes nothing. An item of a key
// given up is admitted whatever lim, and counts against none (see Queue):
// it is queued to be handed out at once and reported, as the key's items
// queued when it was given up are, so that every URL of the key has one
// report, whenever it was found.
func (s *Schedule) Admit(it *Item, lim Limits) error {
	k := s.keys[it.Key]
	if k != nil && k.givenUp {
		return nil
	}
	if it.Kind == KindSitemap {
		if k != nil && lim.MaxSitemapsPerHost > 0 && int(k.sitemaps) >= lim.MaxSitemapsPerHost {
			return ErrSitemapLimit
		}
		return nil
	}
	if lim.MaxPages > 0 && s.scheduled >= lim.MaxPages {
		return ErrLimit
	}
	if k != nil && lim.MaxPagesPerHost > 0 && int(k.scheduled) >= lim.MaxPagesPerHost {
		return ErrHostLimit
	}
	if it.FromSitemap && k != nil && lim.MaxSitemapURLsPerHost > 0 && int(k.sitemapURLs) >= lim.MaxSitemapURLsPerHost {
		return ErrSitemapLimit
	}
	return nil
}

// Queue counts a new item of it.Key, admitted by Admit, as queued and
// (unless the key was given up) scheduled, and puts the key on the heap if
// it can be claimed.
func (s *Schedule) Queue(it *Item, lim Limits) {
	if lim.MaxPagesPerHost > 0 || lim.MaxSitemapsPerHost > 0 || lim.MaxSitemapURLsPerHost > 0 {
		s.keep = true
	}
	s.restored = false
	k := s.key(it.Key)
	k.idleAt = 0
	switch {
	case k.givenUp || it.Refused != NotRefused:
		// Never to be fetched: not counted against Limits.
	case it.Kind == KindSitemap:
		k.sitemaps++
	case it.FromSitemap:
		k.sitemapURLs++
		fallthrough
	default:
		k.scheduled++
		s.scheduled++
	}
	k.queued++
	s.queued++
	s.schedule(k)
}

// schedule puts k on the heap if it has queued items and a free slot, or
// moves it to its NextAllowed if it is there.
func (s *Schedule) schedule(k *keyState) {
	if k.queued == 0 || k.leased >= s.perHost() {
		if k.index >= 0 {
			s.ready.remove(int(k.index))
		}
		return
	}
	at, seq := max(nanos(k.ready()), k.due()), s.seq+1
	if k.closed() {
		// To be drained: ahead of every key waiting to be fetched, those
		// never fetched (at MinInt64 too) included.
		at, seq = math.MinInt64, 0
	}
	if k.index >= 0 {
		if e := &s.ready[k.index]; e.at != at || seq == 0 && e.seq != 0 {
			e.at = at
			if seq == 0 {
				e.seq = 0
			}
			s.ready.fix(int(k.index))
		}
		return
	}
	s.seq = max(s.seq, seq)
	s.ready.push(heapEntry{at: at, seq: seq, k: k})
}

// Claim picks the key to lease an item of at now, as Store.Claim describes,
// and counts the lease: the Store then takes the first item of the key's
// queue. When none can be claimed, ok is false and next is the earliest
// time a key on the heap may be claimed (zero if the heap is empty). It
// trusts Head: a Store that reports first items due at once without
// knowing uses ClaimDue.
func (s *Schedule) Claim(now time.Time, opt ClaimOptions) (key string, host ratelimit.HostState, next time.Time, ok bool) {
	return s.ClaimDue(now, opt, nil)
}

// ClaimDue is Claim for a Store that reports first items due at once
// (Head's zero time) that may not be: before leasing such a key, it asks
// due when the key's first item is due, and a key whose item is not due at
// now waits for it, as if Head had said so. Keys that are closed are not
// asked: their items are handed out whatever their Due.
func (s *Schedule) ClaimDue(now time.Time, opt ClaimOptions, due func(key string) time.Time) (key string, host ratelimit.HostState, next time.Time, ok bool) {
	s.opt = opt
	s.sweep(now)
	for len(s.ready) > 0 {
		top := s.ready[0]
		if top.at > nanos(now) {
			return "", ratelimit.HostState{}, time.Unix(0, top.at), false
		}
		k := top.k
		if h := k.hs(); !k.givenUp && !h.ClosedUntil.IsZero() && !h.ClosedUntil.After(now) {
			// Open again: its robots.txt may be asked for once it has
			// rested.
			k.mut().ClosedUntil = time.Time{}
			s.schedule(k)
			continue
		}
		if due != nil && !k.closed() && k.due() == math.MinInt64 {
			if d := due(k.key); d.After(now) {
				k.mutPace().due = d.UnixNano()
				s.schedule(k)
				continue
			}
		}
		k.queued--
		s.queued--
		if k.pace != nil {
			// The first item is taken: the Store reports the next one
			// with Head unless it is due at once.
			k.pace.due = math.MinInt64
		}
		s.lease(k, now)
		s.schedule(k)
		return k.key, *k.hs(), time.Time{}, true
	}
	return "", ratelimit.HostState{}, time.Time{}, false
}

// closed reports whether k's items are handed out to be reported, not
// fetched.
func (k *keyState) closed() bool {
	return k.givenUp || !k.hs().ClosedUntil.IsZero()
}

// lease counts a lease of k at now. With one lease per key the lease itself
// keeps requests apart and End takes the token; with more, the claim takes
// it, so that the next lease starts no sooner than a Delay after this one.
func (s *Schedule) lease(k *keyState, now time.Time) {
	k.leased++
	s.leased++
	if k.leased == 1 {
		s.busy++
	}
	if s.perHost() == 1 || k.closed() {
		return // no request is made under a closed key's lease
	}
	k.take(now, k.hs().Delay)
}

// ready is when k's bucket has its token again, as it said when it last
// changed: the key's place in the heap.
func (k *keyState) ready() time.Time { return k.hs().NextAllowed }

// take takes k's token at now, so that it rests d from now (see
// ratelimit.Bucket.Take), and mirrors the bucket's ready time in
// NextAllowed.
func (k *keyState) take(now time.Time, d time.Duration) {
	if d <= 0 {
		return // nothing to take: no bucket for a key never paced
	}
	p := k.mutPace()
	p.NextAllowed = p.bucket.Take(now, d)
}

// ClaimKey leases key itself if it can be claimed at now, as
// Store.ClaimKey describes; otherwise next says when to ask again.
func (s *Schedule) ClaimKey(key string, now time.Time, opt ClaimOptions) (host ratelimit.HostState, next time.Time, ok bool) {
	s.opt = opt
	k := s.key(key)
	switch {
	case k.leased >= s.perHost():
		return ratelimit.HostState{}, now.Add(max(k.hs().Delay, fullRecheck)), false
	case k.ready().After(now):
		return ratelimit.HostState{}, k.ready(), false
	}
	k.idleAt = 0
	s.lease(k, now)
	s.schedule(k)
	return *k.hs(), time.Time{}, true
}

// End ends a lease of key at now with outcome o; requeue says its item went
// back to the queue (Requeue) rather than being done (Done). A Done whose
// o.Revisit is not nil queued its item again: it counts as queued, not as
// scheduled again. A key that is ready again at once, its first item due,
// is claimed next, ahead of keys that have waited, up to
// ClaimOptions.Affinity times in a row. The Store calls Head first if the
// lease's end changed the key's first item.
func (s *Schedule) End(key string, now time.Time, o Outcome, requeue bool) {
	k := s.keys[key]
	if k == nil || k.leased == 0 {
		return // the Store checks leases; nothing to undo here
	}
	k.leased--
	s.leased--
	if k.leased == 0 {
		s.busy--
	}
	ready := k.hs().NextAllowed
	h := k.mut()
	*h = o.Pace
	h.NextAllowed = ready // the bucket's, whatever the lease carried
	if o.Revisiting != nil {
		rv := *o.Revisiting
		k.mutPace().revisiting = &rv
	}
	k.take(now, o.Rest)
	next := h.NextAllowed
	if requeue || o.Revisit != nil {
		k.queued++
		s.queued++
	}
	if !requeue && s.opt.Affinity > 0 && k.queued > 0 && k.index < 0 && k.leased == 0 {
		if k.streak < int32(s.opt.Affinity) && !next.After(now) && k.due() <= nanos(now) {
			// Ready again at once: to the front, ahead of keys that have
			// waited, for the rest of its run.
			k.streak++
			s.ready.push(heapEntry{at: math.MinInt64, k: k})
			return
		}
	}
	k.streak = 0 // the run is over, however it ended
	s.schedule(k)
	s.maybeIdle(k)
}

// maybeIdle notes k as an eviction candidate once it has nothing queued or
// leased.
func (s *Schedule) maybeIdle(k *keyState) {
	if k.queued > 0 || k.leased > 0 || k.idleAt != 0 {
		return
	}
	k.idleAt = max(nanos(k.hs().NextAllowed), 1)
	s.idle = append(s.idle, idleKey{k, k.idleAt})
}

// sweep forgets a few idle keys whose NextAllowed has passed: they would be
// ready at once anyway, so forgetting them loses no politeness.
func (s *Schedule) sweep(now time.Time) {
	if s.restored {
		return // the restored counters may be all that enforces a limit
	}
	n := nanos(now)
	for range evictScan {
		if s.idleHead == len(s.idle) {
			s.idle, s.idleHead = s.idle[:0], 0
			return
		}
		e := s.idle[s.idleHead]
		if e.at > n {
			return
		}
		s.idle[s.idleHead] = idleKey{}
		s.idleHead++
		k := e.k
		if k.idleAt != e.at || k.queued > 0 || k.leased > 0 {
			continue // busy again since
		}
		k.idleAt = 0
		if !s.keep && !k.givenUp && s.keys[k.key] == k {
			delete(s.keys, k.key)
		}
	}
	if s.idleHead > len(s.idle)/2 && s.idleHead > 64 {
		s.idle = append(s.idle[:0], s.idle[s.idleHead:]...)
		s.idleHead = 0
	}
}

// Head tells the Schedule when key's first queued item is due: the zero
// time for at once (or for an empty queue). A Store calls it whenever that
// may have changed (see Due times above); a key the Schedule does not know
// is ignored, since Queue makes it known.
func (s *Schedule) Head(key string, due time.Time) {
	k := s.keys[key]
	if k == nil {
		return
	}
	d := nanos(due)
	if d == k.due() {
		return
	}
	k.mutPace().due = d
	s.schedule(k)
}

// GiveUp marks key given up: its items, those queued and those Admit
// takes from now on, are handed out at once, to be reported.
func (s *Schedule) GiveUp(key string) {
	k := s.key(key)
	k.givenUp = true
	k.idleAt = 0
	s.schedule(k)
}

// GivenUp reports whether key was given up.
func (s *Schedule) GivenUp(key string) bool {
	k := s.keys[key]
	return k != nil && k.givenUp
}

// Lost forgets the items the Schedule counts as queued for key when the
// Store finds its queue empty: a Store's bug, which must not spin Claim.
func (s *Schedule) Lost(key string) {
	if k := s.keys[key]; k != nil {
		s.queued -= int(k.queued)
		k.queued = 0
		if k.pace != nil {
			k.pace.due = math.MinInt64
		}
		s.schedule(k)
		s.maybeIdle(k)
	}
}

// Host returns key's pacing state.
func (s *Schedule) Host(key string) ratelimit.HostState {
	if k := s.keys[key]; k != nil {
		return *k.hs()
	}
	return ratelimit.HostState{}
}

// Queued returns how many items key has queued, leased ones aside: the
// count the Schedule keeps of every key it knows (a key it forgot has
// none), what a KeyCounter answers.
func (s *Schedule) Queued(key string) int {
	if k := s.keys[key]; k != nil {
		return int(k.queued)
	}
	return 0
}

// Revisiting returns key's revisit state (Lease.Revisiting).
func (s *Schedule) Revisiting(key string) revisit.Host {
	if k := s.keys[key]; k != nil && k.pace != nil && k.pace.revisiting != nil {
		return *k.pace.revisiting
	}
	return revisit.Host{}
}

// Record returns what a persisting Store keeps of key.
func (s *Schedule) Record(key string) KeyRecord {
	k := s.keys[key]
	if k == nil {
		return KeyRecord{}
	}
	return KeyRecord{Host: *k.hs(), Revisiting: s.Revisiting(key), Scheduled: int(k.scheduled), Sitemaps: int(k.sitemaps), SitemapURLs: int(k.sitemapURLs), GivenUp: k.givenUp}
}

// Restore adds key as a Store that persists found it on opening at now,
// with queued items in its queue. Its bucket is rebuilt empty, its token
// due at the NextAllowed stored — a restart grants no burst — but since a
// request to it may have been under way when the process stopped, no
// sooner than a full Delay from now; ratelimit.HostState.Interrupted says
// so to the pacing policy, which may know a longer delay than the one
// stored.
func (s *Schedule) Restore(key string, rec KeyRecord, queued int, now time.Time) {
	k := s.key(key)
	p := k.mutPace()
	p.bucket = ratelimit.Bucket{}
	h := &p.HostState
	*h = rec.Host
	if h.NextAllowed.Before(now) {
		h.NextAllowed = now
	}
	k.take(now, max(rec.Host.NextAllowed.Sub(now), rec.Host.Delay))
	h.Interrupted = now
	if rec.Revisiting != (revisit.Host{}) {
		rv := rec.Revisiting
		p.revisiting = &rv
	}
	k.scheduled, k.sitemaps, k.sitemapURLs = int32(rec.Scheduled), int32(rec.Sitemaps), int32(rec.SitemapURLs)
	k.givenUp = rec.GivenUp
	s.scheduled += rec.Scheduled
	k.queued = int32(queued)
	s.queued += queued
	s.restored = true
	s.schedule(k)
	s.maybeIdle(k)
}

// Idle reports whether nothing is queued or leased.
func (s *Schedule) Idle() bool { return s.queued == 0 && s.leased == 0 }

// Counts returns the Schedule's counters at now.
func (s *Schedule) Counts(now time.Time) Counts {
	c := Counts{Queued: s.queued, Leased: s.leased, Busy: s.busy, Scheduled: s.scheduled}
	n := nanos(now)
	for _, e := range s.ready {
		if e.at <= n {
			c.Ready++
		} else {
			c.Resting++
		}
	}
	for _, k := range s.keys {
		if k.queued > 0 || k.leased > 0 {
			c.Hosts++
		}
	}
	return c
}

// zeroHost is the pacing state of a key never fetched.
var zeroHost ratelimit.HostState

// hs returns k's pacing state, not to be modified.
func (k *keyState) hs() *ratelimit.HostState {
	if k.pace == nil {
		return &zeroHost
	}
	return &k.pace.HostState
}

// mut returns k's pacing state to modify, allocating it the first time:
// a key with queued items but no fetch yet costs no pace.
func (k *keyState) mut() *ratelimit.HostState {
	return &k.mutPace().HostState
}

// mutPace returns k's pace, allocating it the first time.
func (k *keyState) mutPace() *pace {
	if k.pace == nil {
		k.pace = &pace{due: math.MinInt64}
	}
	return k.pace
}

// due returns when k's first item is due, in Unix nanoseconds
// (math.MinInt64: at once).
func (k *keyState) due() int64 {
	if k.pace == nil {
		return math.MinInt64
	}
	return k.pace.due
}
