package pebblestore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/heedcrawl/heed/frontier"
)

// readAhead holds, in memory, the entries at the head of a key's queue:
// a claim takes its item from here without reading pebble. They get here
// two ways: a claim that must read its item reads the entries after it
// too, in one seek of the key's range of the queue keyspace; and an item
// added to a queue whose every entry is held here is held too, up to
// aheadItems. A queued entry never changes until it is claimed (only
// GiveUp deletes queued entries, and drops these), so what is held here
// stays what pebble holds.
//
// On bench workload (e), reading each claimed item with a pebble Get cost
// 11 CPU-s of a 97-s crawl: about 10 µs a Get, most of it pebble looking
// through every level of its tree.
type readAhead struct {
	// buf holds the values of the entries from the queue's head on, in
	// order, each after its length (a uvarint); n counts them. A value
	// taken from buf stays valid: buf is only ever appended to or
	// dropped, never written over.
	buf []byte
	n   int
	// size is the capacity of the array buf lies in, which the Store
	// counts in aheadBytes until the array is dropped: a value taken
	// leaves its bytes in the array, and counting only those held let
	// the arrays of a crawl over 10,000 hosts take 15 MB for 4 counted.
	size int
	// reading is set while a claim reads the entries after its own; no
	// other claim or add then reads or holds entries of the queue ahead.
	reading bool
}

// aheadItems is the most entries held ahead of a queue's head: enough
// that one seek serves the claims of a key for a while, few enough that
// the memory of a thousand busy keys stays small.
const aheadItems = 16

// takeAhead returns the value of the entry at q's head, which the caller
// is claiming, if it is held ahead. s.mu is held.
func (s *Store) takeAhead(q *queue) ([]byte, bool) {
	ra := q.ahead
	if ra == nil || ra.n == 0 {
		return nil, false
	}
	n, w := binary.Uvarint(ra.buf)
	end := w + int(n)
	v := ra.buf[w:end:end]
	ra.buf, ra.n = ra.buf[end:], ra.n-1
	if ra.n == 0 && !ra.reading {
		s.dropAhead(q)
	}
	return v, true
}

// dropAhead drops q's read-ahead and stops counting its array. s.mu is
// held.
func (s *Store) dropAhead(q *queue) {
	s.aheadBytes -= q.ahead.size
	q.ahead = nil
}

// peek returns the value of the entry at the queue's head, held; ra holds
// at least one.
func (ra *readAhead) peek() []byte {
	n, w := binary.Uvarint(ra.buf)
	end := w + int(n)
	return ra.buf[w:end:end]
}

// planAhead returns how far a claim of the entry at seq, just taken from
// q's head, should read: past seq if it should read the entries after its
// own too, which it is then alone to do. s.mu is held.
func (s *Store) planAhead(q *queue, seq uint64) (to uint64) {
	if s.opts.ReadAhead <= 0 || s.aheadBytes >= s.opts.ReadAhead || q.tail <= seq+1 {
		return seq + 1
	}
	if q.ahead == nil {
		q.ahead = new(readAhead)
	} else if q.ahead.reading || q.ahead.n > 0 {
		return seq + 1
	}
	q.ahead.reading = true
	return min(q.tail, seq+1+aheadItems)
}

// keepAhead holds v, the value of the entry just added at q's tail, if
// every entry before it is held and there is room. s.mu is held.
func (s *Store) keepAhead(q *queue, v []byte) {
	if s.opts.ReadAhead <= 0 || s.aheadBytes >= s.opts.ReadAhead {
		return
	}
	ra := q.ahead
	if ra == nil {
		if q.head != q.tail-1 {
			return
		}
		ra = new(readAhead)
		q.ahead = ra
	}
	if ra.reading || ra.n >= aheadItems || q.head+uint64(ra.n) != q.tail-1 {
		return
	}
	before := cap(ra.buf)
	ra.buf = binary.AppendUvarint(ra.buf, uint64(len(v)))
	ra.buf = append(ra.buf, v...)
	ra.n++
	if cap(ra.buf) != before { // a new array, the old one dropped
		s.aheadBytes += cap(ra.buf) - ra.size
		ra.size = cap(ra.buf)
	}
}

// claimRead reads the item at seq of key's queue q, claimed, outside s.mu,
// and the entries after it up to to, which it holds ahead of q's head
// unless the queue changed meanwhile.
func (s *Store) claimRead(key string, q *queue, seq, to uint64) (frontier.Item, error) {
	var item frontier.Item
	var buf []byte
	n, found := 0, false
	err := s.scan(queueKey(nil, key, seq), queueKey(nil, key, to), func(k, v []byte) (bool, error) {
		_, at, ok := parseQueueKey(k)
		switch {
		case !ok:
			return false, fmt.Errorf("%w: queue entry key %x", errCorrupt, k)
		case at == seq:
			var err error
			item, err = decodeItem(v, key)
			found = err == nil
			return found, err
		case !found || at != seq+1+uint64(n):
			return false, nil // entries missing: a bug, which their claims will meet
		}
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		buf = append(buf, v...)
		n++
		return true, nil
	})
	if err == nil && !found {
		err = pebble.ErrNotFound
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	ra := q.ahead
	ra.reading = false
	// Claims made meanwhile read their own items; those that remain are
	// held, if the queue's head has not moved past them (GiveUp).
	if err == nil && s.queues[key] == q && ra.n == 0 && q.head >= seq+1 && q.head < seq+1+uint64(n) {
		for range q.head - (seq + 1) {
			l, w := binary.Uvarint(buf)
			buf = buf[w+int(l):]
			n--
		}
		ra.buf, ra.n = bytes.Clone(buf), n // in an array of its size
		s.aheadBytes += cap(ra.buf) - ra.size
		ra.size = cap(ra.buf)
	}
	if ra.n == 0 && q.ahead == ra {
		s.dropAhead(q)
	}
	return item, err
}

// scan calls f with each entry from lower to upper, outside s.mu, while f
// asks for more. It fails with ErrClosed once Close has begun closing
// pebble.
func (s *Store) scan(lower, upper []byte, f func(k, v []byte) (more bool, err error)) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.dbClosed || s.broken.Load() {
		return ErrClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for valid := it.First(); valid; valid = it.Next() {
		more, err := f(it.Key(), it.Value())
		if err != nil || !more {
			it.Close()
			return err
		}
	}
	return it.Close()
}
