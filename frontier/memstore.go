package frontier

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
)

// maxStoredDepth is the largest Item.Depth MemoryStore can hold (19
// bits); the Frontier rejects deeper items with ErrDepth.
const maxStoredDepth = 1<<depthBits - 1

// MemoryStore is a Store in memory: the default, for crawls that need not
// survive their process. The zero value is ready to use; set ExactSeen
// before first use.
//
// Memory: a queued item costs a 48-byte record plus ring-buffer slack
// (capacity grows by 1.25×) on top of its URL string; the
// referrer string is shared with the parent item's URL. To fit, the record
// keeps Lastmod to the second (dates before 1970 or after 2106 are
// dropped) and Priority to 0.001 within [0, 1], and holds depths up to
// 524,287 and two kinds; Due and the rest are exact (times within
// 1678–2262). What an item has been through (Retries,
// Redirects, SitemapDepth) is kept exactly, in a side record
// allocated only for the few items that have any of it. A seen URL costs one 8-byte hash in an
// open-addressing table (10–20 bytes with its slack); the string is not
// kept once the item is popped. A host with queued items costs about 100 bytes more,
// and once it has been paced 240 more: its ratelimit.HostState (144) in a
// record of 160 and its token bucket (80).
// BenchmarkMemoryPerURL measures the totals.
//
// Revisits: each key's new URLs wait in its ring, in the order they came
// (their Dues, stamped on admission, in the same order), and its revisits
// — and any item that cannot join the ring in order: a Due earlier than
// the ring's last, or a Visit — in a heap of 136-byte entries by Due, then
// arrival (the record, the Visit packed into 80 bytes with LastModified to
// the second, LastmodRead to the millisecond and Status and Gone within
// 0–65,535, and the order of arrival); the key's first item is the earlier of the two heads, so new
// URLs and revisits share one order, and a crawl without revisits never
// makes a heap. A known URL queued as a revisit costs about 180 bytes
// beyond its URL string with a 20-byte ETag, at 1,000 URLs a host; a host
// with revisits about 450 bytes (BenchmarkMemoryPerRevisit).
//
// The seen-set holds 64-bit hashes (hash/maphash, with a seed chosen per
// store) rather than strings. Two distinct URLs collide with probability
// 2⁻⁶⁴ ≈ 5.4e-20 per pair, so a crawl of n URLs wrongly skips one with
// probability about n²/2⁶⁵: ≈ 3e-8 for a million URLs, ≈ 3e-4 for a
// billion. Set ExactSeen to store the strings instead, at the price of
// keeping every URL string for the life of the store.
//
// Leases live as long as the store: Claim's lease duration is ignored, and
// a MemoryStore is safe for concurrent use.
type MemoryStore struct {
	// ExactSeen makes the seen-set store URL strings instead of hashes:
	// no false duplicates, more memory.
	ExactSeen bool

	mu         sync.Mutex
	init       bool
	seed       maphash.Seed
	hashes     *hashSet
	exact      map[string]struct{}
	queues     map[string]*ring
	later      map[string]*later // keys with items out of their ring's order: revisits
	sched      Schedule
	leases     map[uint64]leaseRecord
	token      uint64
	meta       map[string][]byte
	checkpoint []byte

	// dueFunc is firstDue, bound once; the queues it found last, for
	// Claim to take the item from.
	dueFunc   func(string) time.Time
	peekKey   string
	peekRing  *ring
	peekLater *later
}

// leaseRecord is what the store remembers of a lease: its key, and its
// item while it is out, and whether it came from the key's later heap. Its
// Visit, if any, is behind a pointer: a map's values over 128 bytes are
// allocated one by one, and most leases have none.
type leaseRecord struct {
	key   string
	item  bool
	later bool
	rec   record
	visit *visitRecord
}

func (s *MemoryStore) lazyInit() {
	if s.init {
		return
	}
	s.init = true
	s.seed = maphash.MakeSeed()
	s.token = maphash.String(s.seed, "lease tokens") // each store's tokens start elsewhere, so another store's lease is refused
	s.queues = make(map[string]*ring)
	s.later = make(map[string]*later)
	s.dueFunc = s.firstDue
	s.leases = make(map[uint64]leaseRecord)
	s.meta = make(map[string][]byte)
	if s.ExactSeen {
		s.exact = make(map[string]struct{})
	} else {
		s.hashes = new(hashSet)
	}
}

// markSeen marks url seen and reports whether it was before.
func (s *MemoryStore) markSeen(url string) bool {
	if s.exact != nil {
		if _, ok := s.exact[url]; ok {
			return true
		}
		s.exact[url] = struct{}{}
		return false
	}
	return !s.hashes.add(maphash.String(s.seed, url))
}

// Add implements Store.
func (s *MemoryStore) Add(ctx context.Context, batch []Item, lim Limits) ([]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	recs := make([]record, len(batch))
	var visits []visitRecord // nil unless an item has a Visit
	for i := range batch {
		r, err := toRecord(&batch[i])
		if err != nil {
			return nil, err
		}
		recs[i] = r
		if batch[i].Visit != nil {
			if visits == nil {
				visits = make([]visitRecord, len(batch))
			}
			if visits[i], err = toVisitRecord(batch[i].Visit); err != nil {
				return nil, err
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	refused := make([]error, len(batch))
	for i := range batch {
		it := &batch[i]
		if it.SeenOnly {
			if s.markSeen(it.URL) {
				refused[i] = ErrSeen
			}
			continue
		}
		if err := s.sched.Admit(it, lim); err != nil {
			refused[i] = s.refuse(it, err, recs[i])
			continue
		}
		if s.markSeen(it.URL) {
			refused[i] = ErrSeen
			continue
		}
		var v visitRecord
		if visits != nil {
			v = visits[i]
		}
		q, l := s.push(it.Key, recs[i], v)
		s.sched.Queue(it, lim)
		if l != nil {
			s.reportFirst(it.Key, q, l)
		}
	}
	return refused, nil
}

// refuse answers for it, refused with err by a limit: a page item new to
// the seen-set is marked seen and queued, as r, to be reported (see
// Store.Add). s.mu must be held.
func (s *MemoryStore) refuse(it *Item, err error, r record) error {
	why := ToReport(it, err)
	if why == NotRefused {
		return err
	}
	if s.markSeen(it.URL) {
		return ErrSeen
	}
	h := history{refused: why}
	if r.history != nil {
		h = *r.history
		h.refused = why
	}
	r.history = &h
	rep := *it
	rep.Refused = why
	q, l := s.push(it.Key, r, visitRecord{})
	s.sched.Queue(&rep, Limits{})
	if l != nil {
		s.reportFirst(it.Key, q, l)
	}
	return why.Reported()
}

// push queues r, with v, under key: at the back of its ring if it is a new
// URL (no Visit) due no earlier than the ring's last item — so that a
// crawl without revisits uses rings alone, in the order it always had —
// and in its later heap otherwise. It returns the key's ring and its
// later heap, nil when it has none.
func (s *MemoryStore) push(key string, r record, v visitRecord) (*ring, *later) {
	q := s.queues[key]
	var l *later
	if len(s.later) > 0 {
		l = s.later[key]
	}
	if !v.ok && (q == nil || q.n == 0 || r.due >= q.back().due) {
		if q == nil {
			q = new(ring)
			s.queues[key] = q
		}
		q.pushBack(r)
		if l != nil {
			l.pushed++
		}
		return q, l
	}
	if l == nil {
		l = newLater(q)
		s.later[key] = l
	}
	l.push(laterEntry{rec: r, visit: v})
	return q, l
}

// reportFirst tells the Schedule when key's first item is due: its later
// heap's first entry's Due if that comes first, else at once (the ring's
// items were due when queued; ClaimDue asks firstDue to make sure).
func (s *MemoryStore) reportFirst(key string, q *ring, l *later) {
	if l != nil && l.first(q) {
		s.sched.Head(key, fromNanos(l.heap[0].rec.due))
		return
	}
	s.sched.Head(key, time.Time{})
}

// firstDue returns when key's first item is due, for Schedule.ClaimDue,
// and keeps the queues it found for Claim.
func (s *MemoryStore) firstDue(key string) time.Time {
	q := s.queues[key]
	var l *later
	if len(s.later) > 0 {
		l = s.later[key]
	}
	s.peekKey, s.peekRing, s.peekLater = key, q, l
	switch {
	case l != nil && l.first(q):
		return fromNanos(l.heap[0].rec.due)
	case q != nil && q.n > 0:
		return fromNanos(q.front().due)
	}
	return time.Time{}
}

// Claim implements Store.
func (s *MemoryStore) Claim(ctx context.Context, now time.Time, opt ClaimOptions) (Claim, error) {
	if err := ctx.Err(); err != nil {
		return Claim{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	for {
		s.peekKey = ""
		key, host, next, ok := s.sched.ClaimDue(now, opt, s.dueFunc)
		if !ok {
			return Claim{Next: next, Idle: s.sched.Idle()}, nil
		}
		q, l := s.peekRing, s.peekLater
		if s.peekKey != key {
			q, l = s.queues[key], nil
			if len(s.later) > 0 {
				l = s.later[key]
			}
		}
		s.peekRing, s.peekLater = nil, nil
		lr, ok := s.pop(key, q, l)
		if !ok {
			s.sched.End(key, now, Outcome{Pace: host}, false)
			s.sched.Lost(key)
			continue
		}
		s.token++
		s.leases[s.token] = lr
		it := lr.rec.item(key)
		if lr.visit != nil {
			it.Visit = lr.visit.visit()
		}
		return Claim{Lease: &Lease{Item: it, Pace: host, Token: s.token, GivenUp: s.sched.GivenUp(key), Revisiting: s.sched.Revisiting(key)}}, nil
	}
}

// pop takes key's first item from its ring q or later heap l (either may
// be nil), and tells the Schedule when the next is due; ok is false when
// both are empty.
func (s *MemoryStore) pop(key string, q *ring, l *later) (lr leaseRecord, ok bool) {
	switch {
	case l != nil && l.first(q):
		e := l.pop()
		lr = leaseRecord{key: key, item: true, later: true, rec: e.rec}
		if e.visit.ok {
			lr.visit = &e.visit
		}
	case q != nil && q.n > 0:
		lr = leaseRecord{key: key, item: true, rec: q.popFront()}
	default:
		return leaseRecord{}, false
	}
	if q != nil && q.n == 0 {
		delete(s.queues, key) // memory follows the hosts with queued work
	}
	if l != nil {
		if len(l.heap) == 0 {
			delete(s.later, key)
		}
		s.reportFirst(key, q, l) // ClaimDue took the report with the item
	}
	return lr, true
}

// ClaimKey implements Store.
func (s *MemoryStore) ClaimKey(ctx context.Context, key string, now time.Time, opt ClaimOptions) (*Lease, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	host, next, ok := s.sched.ClaimKey(key, now, opt)
	if !ok {
		return nil, next, nil
	}
	s.token++
	s.leases[s.token] = leaseRecord{key: key}
	return &Lease{Item: Item{Key: key}, Pace: host, Token: s.token, Revisiting: s.sched.Revisiting(key)}, time.Time{}, nil
}

// end ends lease l, requeueing its item at the front when requeue, and
// queuing o.Revisit when not.
func (s *MemoryStore) end(ctx context.Context, l *Lease, now time.Time, o Outcome, requeue bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	lr, ok := s.leases[l.Token]
	if !ok || lr.key != l.Key {
		return ErrLeaseLost
	}
	var (
		rv     record
		rvisit visitRecord
	)
	if !requeue && o.Revisit != nil {
		rv2, v, err := revisitRecord(&lr, o.Revisit)
		if err != nil {
			return err
		}
		rv, rvisit = rv2, v
	}
	delete(s.leases, l.Token)
	requeue = requeue && lr.item
	switch {
	case requeue:
		s.requeue(l, lr)
	case o.Revisit != nil:
		q, lt := s.push(l.Key, rv, rvisit)
		s.reportFirst(l.Key, q, lt)
	}
	s.sched.End(l.Key, now, o, requeue)
	if o.Checkpoint != nil {
		s.checkpoint = slices.Clone(o.Checkpoint)
	}
	return nil
}

// revisitRecord checks that it is the item of the lease lr and returns its
// records.
func revisitRecord(lr *leaseRecord, it *Item) (record, visitRecord, error) {
	if !lr.item || it.URL != lr.rec.urlString() || it.Key != lr.key {
		return record{}, visitRecord{}, fmt.Errorf("%w: %s under %q, leased %s under %q", ErrRevisit, it.URL, it.Key, lr.rec.urlString(), lr.key)
	}
	r, err := toRecord(it)
	if err != nil {
		return record{}, visitRecord{}, err
	}
	v, err := toVisitRecord(it.Visit)
	if err != nil {
		return record{}, visitRecord{}, err
	}
	return r, v, nil
}

// requeue puts the item of lease l back first among its key's items of
// its Due, with what it has been through since (or as it was leased, if
// that cannot be held).
func (s *MemoryStore) requeue(l *Lease, lr leaseRecord) {
	r, err := toRecord(&l.Item)
	v, verr := toVisitRecord(l.Item.Visit)
	if err != nil || verr != nil {
		r, v = lr.rec, visitRecord{}
		if lr.visit != nil {
			v = *lr.visit
		}
	}
	q := s.queues[l.Key]
	var lt *later
	if len(s.later) > 0 {
		lt = s.later[l.Key]
	}
	if !lr.later && !v.ok && (q == nil || q.n == 0 || r.due <= q.front().due) {
		if q == nil {
			q = new(ring)
			s.queues[l.Key] = q
		}
		q.pushFront(r)
	} else {
		if lt == nil {
			lt = newLater(q)
			s.later[l.Key] = lt
		}
		lt.pushFirst(laterEntry{rec: r, visit: v}, q)
	}
	s.reportFirst(l.Key, q, lt)
}

// Done implements Store.
func (s *MemoryStore) Done(ctx context.Context, l *Lease, now time.Time, o Outcome) error {
	return s.end(ctx, l, now, o, false)
}

// Requeue implements Store.
func (s *MemoryStore) Requeue(ctx context.Context, l *Lease, now time.Time, o Outcome) error {
	return s.end(ctx, l, now, o, true)
}

// EditQueued implements QueueEditor, in one step under the store's lock:
// an edit the store cannot hold (a time out of its range, a URL or Key
// changed) fails the call with ErrEdit, and none of its edits is stored.
func (s *MemoryStore) EditQueued(ctx context.Context, key string, edit func(*Item) bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.later[key] // a key's items with a Visit are all in its heap
	if l == nil {
		return 0, nil
	}
	type edited struct {
		at int
		e  laterEntry
	}
	var done []edited
	for i := range l.heap {
		e := &l.heap[i]
		if !e.visit.ok {
			continue
		}
		it := e.rec.item(key)
		it.Visit = e.visit.visit()
		if !edit(&it) {
			continue
		}
		if it.URL != e.rec.urlString() || it.Key != key {
			return 0, fmt.Errorf("%w: %s under %q changed to %s under %q", ErrEdit, e.rec.urlString(), key, it.URL, it.Key)
		}
		r, err := toRecord(&it)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrEdit, err)
		}
		v, err := toVisitRecord(it.Visit)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrEdit, err)
		}
		done = append(done, edited{at: i, e: laterEntry{rec: r, visit: v, pos: e.pos, seq: e.seq}})
	}
	next := 0
	l.edit(func(e *laterEntry) bool {
		if next == len(done) || e != &l.heap[done[next].at] {
			return false
		}
		moved := e.rec.due != done[next].e.rec.due
		*e = done[next].e
		next++
		return moved
	})
	s.reportFirst(key, s.queues[key], l)
	return len(done), nil
}

// GiveUp implements Store.
func (s *MemoryStore) GiveUp(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	s.sched.GiveUp(key)
	return nil
}

// Host implements Store.
func (s *MemoryStore) Host(ctx context.Context, key string) (ratelimit.HostState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sched.Host(key), nil
}

// QueuedFor implements KeyCounter: the items of key's queue, revisits
// waiting for their Due included.
func (s *MemoryStore) QueuedFor(ctx context.Context, key string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if q := s.queues[key]; q != nil {
		n += int(q.n)
	}
	if l := s.later[key]; l != nil {
		n += len(l.heap)
	}
	return n, nil
}

// Counts implements Store.
func (s *MemoryStore) Counts(ctx context.Context, now time.Time) (Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sched.Counts(now), nil
}

// Meta implements Store.
func (s *MemoryStore) Meta(ctx context.Context, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	return slices.Clone(s.meta[name]), nil
}

// SetMeta implements Store.
func (s *MemoryStore) SetMeta(ctx context.Context, name string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	s.meta[name] = slices.Clone(value)
	return nil
}

// Checkpoint implements Store.
func (s *MemoryStore) Checkpoint(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.checkpoint), nil
}

// Close implements Store; a MemoryStore has nothing to release.
func (s *MemoryStore) Close() error { return nil }

// Len returns the number of items queued under key.
func (s *MemoryStore) Len(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if q := s.queues[key]; q != nil {
		n += int(q.n)
	}
	if l := s.later[key]; l != nil {
		n += len(l.heap)
	}
	return n
}

// DueCounts counts the queued items by when they fall due, seen from now,
// exactly: a key's ring holds its items in the order of their Due, so it
// is counted by a binary search per edge, and only its later heap
// (revisits) is read item by item. It holds the Store's lock meanwhile.
func (s *MemoryStore) DueCounts(ctx context.Context, now time.Time, edges []time.Duration) (DueCounts, error) {
	d := NewDueCounts(edges)
	n := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, q := range s.queues {
		q.countDue(&d, n, key)
	}
	for key, l := range s.later {
		for i := range l.heap {
			r := &l.heap[i].rec
			d.Add(n, r.due, 1, key, r.urlString())
		}
	}
	d.Scale(s.sched.Counts(now).Queued)
	return d, ctx.Err()
}

// countDue adds q's records, queued under key, to d, seen from now (Unix
// nanoseconds): its records are in the order of their Due.
func (q *ring) countDue(d *DueCounts, now int64, key string) {
	if q.n == 0 {
		return
	}
	at := func(i int) *record { return &q.buf[(q.head+int32(i))%int32(len(q.buf))] }
	first := at(0)
	d.Add(now, first.due, 1, key, first.urlString())
	from := 1 // the first is counted, as a candidate for the oldest
	for b := range d.Counts {
		to := int(q.n)
		if b < len(d.Counts)-1 {
			limit := now
			if b > 0 {
				limit += int64(d.Edges[b-1])
			}
			to = max(from, sort.Search(int(q.n), func(i int) bool { return at(i).due > limit }))
		}
		d.Counts[b] += to - from
		d.Read += to - from
		from = to
	}
}
