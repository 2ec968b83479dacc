package pebblestore

import (
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// queue is the Store's state of one key with queued items or leases. Its
// items lie in two parts, merged by (Due, arrival) as they are claimed:
// the run, items queued in the order of their Due — new URLs, which Add
// brings stamped with their admission time — under sequence numbers, and
// the due part, items that came out of that order — revisits, and items
// added due earlier than the run's last — under their position (duePos).
// The run's queued items are the entries of out.front, then those from
// head to tail-1; its leased items keep their entries, at the sequence
// numbers in out.leased, until they are done or requeued. The due part's
// are due's. It is kept small: the Store holds one for every key with
// items in its run or out, and forgets the others (forgetIfIdle).
type queue struct {
	head, tail uint64
	// runDue is the latest Due of the run's items (dueNanos): an item
	// added due no earlier joins the run.
	runDue int64
	out    *outState  // nil while nothing is out or requeued, and nothing carried
	ahead  *readAhead // nil while no entry is held ahead of head
	due    *dueState  // nil while the due part is empty
}

// dueState is a key's due part: its entries are those in pebble from
// first on, but for the leased ones (out.dueLeased), which keep their
// entries until they are done or requeued; it finds each next first with
// a seek, under the Store's lock.
type dueState struct {
	first duePos // of the first queued entry, when n > 0
	n     int32  // entries queued
	next  uint64 // duePos.n of the next entry queued

	// headSeq and headDue are the sequence number and Due of the run's
	// first item, read to compare it with first: headSeq is zero, or a
	// sequence number whose entry does not change while queued.
	headSeq uint64
	headDue int64
}

// outState is what a key has out, and what its record carries: few keys
// have any.
type outState struct {
	front     []uint64 // requeued items, in order, before head
	leased    []uint64 // the run's items out
	dueLeased []duePos // the due part's items out
	keyLeases int      // ClaimKey's leases out
	// carry is what the key's record on disk counts beyond what the
	// Schedule does: the Schedule forgets idle keys and their counters,
	// while the records on disk add up to the crawl's totals.
	carry counters
}

type counters struct{ scheduled, sitemaps, sitemapURLs int32 }

// lease is what the Store remembers of a lease in memory: its key, and
// where its item's entry lies (ClaimKey's have none): at seq in the run,
// or at pos in the due part.
type lease struct {
	key   string
	seq   uint64
	pos   duePos
	item  bool
	inDue bool
}

// queued is the number of items queued.
func (q *queue) queued() int { return q.runQueued() + q.dueQueued() }

// runQueued is the number of the run's items queued.
func (q *queue) runQueued() int { return len(q.front()) + int(q.tail-q.head) }

// dueQueued is the number of the due part's items queued.
func (q *queue) dueQueued() int {
	if q.due == nil {
		return 0
	}
	return int(q.due.n)
}

// runEmpty reports whether the run has no entry, queued or leased: an
// item may then start it whatever its Due.
func (q *queue) runEmpty() bool {
	return q.runQueued() == 0 && (q.out == nil || len(q.out.leased) == 0)
}

// runHead returns the sequence number of the run's first queued item;
// the run has one.
func (q *queue) runHead() uint64 {
	if f := q.front(); len(f) > 0 {
		return f[0]
	}
	return q.head
}

// dueState returns q.due, making it if needed.
func (q *queue) dueState() *dueState {
	if q.due == nil {
		q.due = new(dueState)
	}
	return q.due
}

// queue queues the entry at p, a new one or one requeued.
func (d *dueState) queue(p duePos) {
	if d.n == 0 || p.before(d.first) {
		d.first = p
	}
	d.n++
}

// dueLeases returns the positions of the due part's items out.
func (q *queue) dueLeases() []duePos {
	if q.out == nil {
		return nil
	}
	return q.out.dueLeased
}

// dueLow is the first position of the due part that may hold an entry:
// what a record tells recovery to seek from.
func (q *queue) dueLow() duePos {
	low := duePos{due: math.MaxInt64, at: math.MaxUint64, n: math.MaxUint64}
	if q.due != nil && q.due.n > 0 {
		low = q.due.first
	}
	for _, p := range q.dueLeases() {
		if p.before(low) {
			low = p
		}
	}
	return low
}

// unleaseDue forgets the lease of the due part's entry at p.
func (q *queue) unleaseDue(p duePos) {
	if o := q.out; o != nil {
		if i := slices.Index(o.dueLeased, p); i >= 0 {
			o.dueLeased = slices.Delete(o.dueLeased, i, i+1)
		}
	}
}

// front returns the sequence numbers of the requeued items.
func (q *queue) front() []uint64 {
	if q.out == nil {
		return nil
	}
	return q.out.front
}

// outState returns q.out, making it if needed.
func (q *queue) outState() *outState {
	if q.out == nil {
		q.out = new(outState)
	}
	return q.out
}

// tidy drops q.out and q.due once they hold nothing.
func (q *queue) tidy() {
	if d := q.due; d != nil && d.n == 0 && len(q.dueLeases()) == 0 {
		q.due = nil // numbering starts again: no entry is left to follow
	}
	if o := q.out; o != nil && len(o.front) == 0 && len(o.leased) == 0 && len(o.dueLeased) == 0 && o.keyLeases == 0 && o.carry == (counters{}) {
		q.out = nil
	}
}

// release queues the item of ls, leased, again at its place: its
// position in the due part, or the front of the run, before head, which
// holds the requeued items in the order of their entries, the order they
// would have after a crash.
func (q *queue) release(ls lease) {
	if ls.inDue {
		q.due.queue(ls.pos)
		return
	}
	o := q.outState()
	i, _ := slices.BinarySearch(o.front, ls.seq)
	o.front = slices.Insert(o.front, i, ls.seq)
}

// low is the first entry that may hold an item: what a record tells
// recovery to look from.
func (q *queue) low() uint64 {
	low := q.head
	if o := q.out; o != nil {
		if len(o.front) > 0 {
			low = min(low, o.front[0])
		}
		for _, seq := range o.leased {
			low = min(low, seq)
		}
	}
	return low
}

// unlease forgets the lease of the item at seq.
func (q *queue) unlease(seq uint64) {
	if o := q.out; o != nil {
		if i := slices.Index(o.leased, seq); i >= 0 {
			o.leased = slices.Delete(o.leased, i, i+1)
		}
	}
}

// queue returns the state of key's queue, reading it from the key's
// record if the Store has none in memory.
func (s *Store) queue(key string) (*queue, error) {
	if q := s.queues[key]; q != nil {
		return q, nil
	}
	q := &queue{head: seqStart, tail: seqStart, runDue: math.MinInt64}
	v, err := s.get(recordKey(s.scratch[:0], key))
	if err != nil {
		return nil, s.fail(err)
	}
	if v != nil {
		r, err := decodeRecord(v)
		if err != nil {
			return nil, s.fail(fmt.Errorf("record of %q: %w", key, err))
		}
		// The run is empty and nothing is out (the Store forgets no
		// other queue): the run goes on from where it ended, and the due
		// part is as the record says, its first entry at dueLow.
		q.head, q.tail = r.tail, r.tail
		if r.dueCount > 0 {
			q.due = &dueState{first: r.dueLow, n: int32(r.dueCount), next: r.dueNext}
		}
		now := s.sched.Record(key)
		if c := (counters{
			scheduled:   int32(max(r.Scheduled-now.Scheduled, 0)),
			sitemaps:    int32(max(r.Sitemaps-now.Sitemaps, 0)),
			sitemapURLs: int32(max(r.SitemapURLs-now.SitemapURLs, 0)),
		}); c != (counters{}) {
			q.outState().carry = c
		}
	}
	s.queues[key] = q
	return q, nil
}

// setRecord writes key's record into b.
func (s *Store) setRecord(b *pebble.Batch, key string, q *queue) {
	r := record{KeyRecord: s.sched.Record(key), low: q.low(), head: q.head, tail: q.tail, runDue: math.MinInt64}
	if !q.runEmpty() {
		r.runDue = q.runDue
	}
	if d := q.due; d != nil {
		r.dueCount, r.dueNext, r.dueLow = uint64(int(d.n)+len(q.dueLeases())), d.next, q.dueLow()
	}
	if o := q.out; o != nil {
		r.Scheduled += int(o.carry.scheduled)
		r.Sitemaps += int(o.carry.sitemaps)
		r.SitemapURLs += int(o.carry.sitemapURLs)
	}
	s.scratch = recordKey(s.scratch[:0], key)
	n := len(s.scratch)
	s.scratch = appendRecord(s.scratch, &r)
	b.Set(s.scratch[:n], s.scratch[n:], nil)
}

// forgetIfIdle drops key's state once its record, written, holds all of
// it: its run is empty and nothing is out, requeued, held ahead or
// carried. A key whose items all wait in its due part — every key of a
// continuous crawl between its visits — then costs no memory here; the
// queue is read back from its record (queue) when the key is claimed or
// its items change. s.mu is held.
func (s *Store) forgetIfIdle(key string, q *queue) {
	if q.tidy(); q.runQueued() == 0 && q.out == nil && q.ahead == nil {
		delete(s.queues, key)
	}
}
