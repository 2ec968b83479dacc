package pebblestore

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/heedcrawl/heed/frontier"
)

// queueItem writes into b the entry of it, queued under key (q), and
// changes q accordingly: at the run's tail if it comes after every item of
// the run (an item added due no earlier than the run's last), else into
// the due part, where revisits, and items added with a Visit (revisit
// set for them too), always go: EditQueued finds them all there. s.mu is
// held.
func (s *Store) queueItem(b *pebble.Batch, key string, q *queue, it *frontier.Item, revisit bool) {
	due := dueNanos(it.Due)
	if !revisit && (due >= q.runDue || q.runEmpty()) {
		q.runDue = due
		s.scratch = queueKey(s.scratch[:0], key, q.tail)
		v := s.setItem(b, it)
		q.tail++
		s.keepAhead(q, v)
		return
	}
	s.queueDue(b, key, q, it, q.tail)
}

// queueDue writes into b the entry of it in key's due part, and queues
// it there, at the place of an item that came when the run's tail was at.
// s.mu is held.
func (s *Store) queueDue(b *pebble.Batch, key string, q *queue, it *frontier.Item, at uint64) {
	d := q.dueState()
	p := duePos{due: dueNanos(it.Due), at: at, n: d.next}
	d.next++
	s.scratch = dueKey(s.scratch[:0], key, p)
	s.setItem(b, it)
	d.queue(p)
}

// setItem writes the entry of it into b, under the key s.scratch holds,
// and returns its value, which stays valid until s.scratch is written
// again. s.mu is held.
func (s *Store) setItem(b *pebble.Batch, it *frontier.Item) []byte {
	n := len(s.scratch)
	s.scratch = appendItem(s.scratch, it)
	b.Set(s.scratch[:n], s.scratch[n:], nil)
	return s.scratch[n:]
}

// reportHead tells the Schedule when key's first item is due, as
// Schedule.Head asks after every change of the first item: at once while
// the run has items queued — run items are expected due, being new URLs
// stamped at their admission, and firstDue answers for them when the
// Schedule asks — else when the due part's first is. s.mu is held.
func (s *Store) reportHead(key string, q *queue) {
	var due time.Time
	if d := q.due; d != nil && d.n > 0 && q.runQueued() == 0 {
		due = dueTime(d.first.due)
	}
	s.sched.Head(key, due)
}

// firstDue returns when key's first item is due, for
// Schedule.ClaimDue at now: the zero time if it is due for sure without a
// read (every item of the run is). A read that fails fails the Store, and
// Claim reports it. s.mu is held.
func (s *Store) firstDue(key string, now time.Time) time.Time {
	q, err := s.queue(key)
	if err != nil {
		return time.Time{} // the Store failed
	}
	defer s.forgetIfIdle(key, q) // if read back, until it is claimed
	first := int64(math.MaxInt64)
	if d := q.due; d != nil && d.n > 0 {
		first = d.first.due
	}
	if q.runQueued() > 0 {
		if q.runDue <= dueNanos(now) {
			return time.Time{}
		}
		due, _, err := s.runHeadDue(key, q)
		if err != nil {
			s.fail(err)
			return time.Time{}
		}
		first = min(first, due)
	}
	if first == math.MaxInt64 {
		return time.Time{}
	}
	return dueTime(first)
}

// fromDue reports whether key's first item is the due part's rather than
// the run's, and returns the run's first entry if it read it to decide.
// s.mu is held.
func (s *Store) fromDue(key string, q *queue) (ok bool, runHead []byte, err error) {
	d := q.due
	switch {
	case d == nil || d.n == 0:
		return false, nil, nil
	case q.runQueued() == 0:
		return true, nil, nil
	case d.first.due > q.runDue:
		return false, nil, nil // every item of the run is due earlier
	}
	due, v, err := s.runHeadDue(key, q)
	if err != nil {
		return false, nil, err
	}
	return d.first.beforeRun(due, q.runHead()), v, nil
}

// runHeadDue returns the Due of the run's first item (which there is),
// and its entry if it read it: from the read-ahead, the cache of the last
// answer, or pebble. s.mu is held.
func (s *Store) runHeadDue(key string, q *queue) (due int64, v []byte, err error) {
	seq := q.runHead()
	d := q.dueState()
	if d.headSeq == seq {
		return d.headDue, nil, nil
	}
	if ra := q.ahead; ra != nil && ra.n > 0 && len(q.front()) == 0 {
		v = ra.peek()
	} else if v, err = s.get(queueKey(nil, key, seq)); err == nil && v == nil {
		err = pebble.ErrNotFound
	}
	if err != nil {
		return 0, nil, fmt.Errorf("queue of %q at %d: %w", key, seq, err)
	}
	it, err := decodeItem(v, key)
	if err != nil {
		return 0, nil, fmt.Errorf("queue of %q at %d: %w", key, seq, err)
	}
	d.headSeq, d.headDue = seq, dueNanos(it.Due)
	return d.headDue, v, nil
}

// takeDue takes the due part's first entry, leased, and finds the next
// first with the same seek, skipping the entries leased. It returns the
// entry taken and its value. s.mu is held.
func (s *Store) takeDue(key string, q *queue) (duePos, []byte, error) {
	d := q.due
	p := d.first
	lower := dueKey(nil, key, p)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: dueKeyEnd(key)})
	if err != nil {
		return duePos{}, nil, err
	}
	defer it.Close()
	if !it.First() || !bytes.Equal(it.Key(), lower) {
		return duePos{}, nil, s.dueMissing(it, key, p)
	}
	v := bytes.Clone(it.Value())
	d.n--
	if d.n > 0 {
		next, err := s.nextDue(it, key, q)
		if err != nil {
			return duePos{}, nil, err
		}
		d.first = next
	}
	o := q.outState()
	o.dueLeased = append(o.dueLeased, p)
	return p, v, nil
}

// nextDue moves it to the first entry after its own that is not leased,
// and returns its position. s.mu is held.
func (s *Store) nextDue(it *pebble.Iterator, key string, q *queue) (duePos, error) {
	for it.Next() {
		p, ok := parseDuePos(it.Key(), len(key))
		if !ok {
			return duePos{}, fmt.Errorf("%w: due entry key %x", errCorrupt, it.Key())
		}
		if !slices.Contains(q.dueLeases(), p) {
			return p, nil
		}
	}
	if err := it.Error(); err != nil {
		return duePos{}, err
	}
	return duePos{}, fmt.Errorf("%w: the due part of %q counts %d more entries than it holds", errCorrupt, key, q.due.n)
}

// dueMissing is the error of a due entry not found where it should be.
func (s *Store) dueMissing(it *pebble.Iterator, key string, p duePos) error {
	if err := it.Error(); err != nil {
		return err
	}
	return fmt.Errorf("%w: the due part of %q has no entry at %+v", errCorrupt, key, p)
}

// firstDueEntry returns the position of the first entry of key's due part
// from low on, on opening: every entry is queued then.
func (s *Store) firstDueEntry(key string, low duePos) (duePos, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: dueKey(nil, key, low), UpperBound: dueKeyEnd(key)})
	if err != nil {
		return duePos{}, err
	}
	defer it.Close()
	if !it.First() {
		if err := it.Error(); err != nil {
			return duePos{}, err
		}
		return duePos{}, fmt.Errorf("%w: the due part of %q holds no entry from %+v on", errCorrupt, key, low)
	}
	p, ok := parseDuePos(it.Key(), len(key))
	if !ok {
		return duePos{}, fmt.Errorf("%w: due entry key %x", errCorrupt, it.Key())
	}
	return p, nil
}
