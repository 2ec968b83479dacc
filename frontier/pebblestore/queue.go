package pebblestore

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// queue is the Store's state of one key with queued items or leases. Its
// queued items are the entries of out.front, then those from head to
// tail-1; its leased items keep their entries, at the sequence numbers in
// out.leased, until they are done or requeued. It is kept small: the
// Store holds one for every key with work.
type queue struct {
	head, tail uint64
	out        *outState  // nil while nothing is out or requeued, and nothing carried
	ahead      *readAhead // nil while no entry is held ahead of head
}

// outState is what a key has out, and what its record carries: few keys
// have any.
type outState struct {
	front     []uint64 // requeued items, in order, before head
	leased    []uint64 // the items out
	keyLeases int      // ClaimKey's leases out
	// carry is what the key's record on disk counts beyond what the
	// Schedule does: the Schedule forgets idle keys and their counters,
	// while the records on disk add up to the crawl's totals.
	carry counters
}

type counters struct{ scheduled, sitemaps, sitemapURLs int32 }

// lease is what the Store remembers of a lease in memory: its key, and
// the sequence number of its item's entry (ClaimKey's have none).
type lease struct {
	key  string
	seq  uint64
	item bool
}

// queued is the number of items queued.
func (q *queue) queued() int { return len(q.front()) + int(q.tail-q.head) }

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

// tidy drops q.out once it holds nothing.
func (q *queue) tidy() {
	if o := q.out; o != nil && len(o.front) == 0 && len(o.leased) == 0 && o.keyLeases == 0 && o.carry == (counters{}) {
		q.out = nil
	}
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

// queue returns the state of key's queue, reading what the key's record
// counts if the Store has none in memory.
func (s *Store) queue(key string) (*queue, error) {
	if q := s.queues[key]; q != nil {
		return q, nil
	}
	q := &queue{head: seqStart, tail: seqStart}
	v, err := s.get(recordKey(s.scratch[:0], key))
	if err != nil {
		return nil, s.fail(err)
	}
	if v != nil {
		r, err := decodeRecord(v)
		if err != nil {
			return nil, s.fail(fmt.Errorf("record of %q: %w", key, err))
		}
		// The queue is empty (the Store forgets only empty queues); it
		// goes on from where it ended.
		q.head, q.tail = r.tail, r.tail
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
	r := record{KeyRecord: s.sched.Record(key), low: q.low(), head: q.head, tail: q.tail}
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

// forgetIfIdle drops key's state once nothing is queued or leased: memory
// follows the keys with work.
func (s *Store) forgetIfIdle(key string, q *queue) {
	if q.tidy(); q.queued() == 0 && q.out == nil {
		delete(s.queues, key)
	}
}
