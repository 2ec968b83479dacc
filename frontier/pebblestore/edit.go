package pebblestore

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/heedcrawl/heed/frontier"
)

// EditQueued implements frontier.QueueEditor, under the Store's lock: the
// items with a Visit all lie in key's due part (revisits, and items added
// or requeued with one), which it reads — a key forgotten from memory is
// read back from its record, as a claim does, and forgotten again after —
// and whose edited entries it writes, each at its new position (its new
// Due, its arrival kept) with the key's record, in one batch. An edit
// that changes an item's URL or Key fails the call, and the batch is
// dropped.
//
// The batch is applied like Add's, without a sync, and made durable by
// the next group commit (see the package documentation): it carries no
// checkpoint, and an edit a crash loses is lost whole, every item of it
// queued as it was before.
func (s *Store) EditQueued(ctx context.Context, key string, edit func(*frontier.Item) bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	q, err := s.queue(key)
	if err != nil {
		return 0, err
	}
	defer s.forgetIfIdle(key, q)
	if q.dueQueued() == 0 {
		return 0, nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	first, n, err := s.editDue(b, key, q, edit)
	if err != nil || n == 0 {
		return 0, err
	}
	// The record's dueLow, where recovery seeks the due part's first
	// entry from, follows an entry moved before it.
	q.due.first = first
	s.setRecord(b, key, q)
	if err := s.apply(b); err != nil {
		return 0, err
	}
	s.reportHead(key, q)
	return n, nil
}

// editDue calls edit with each queued item of key's due part that holds
// a Visit, in the order of their positions, and writes into b those it
// edited: at their old positions if their Due kept them there, else
// deleted there and set at the new ones. It returns the position of the
// due part's first queued entry after the edits, and how many items were
// edited; it changes nothing in memory. A read or an entry it cannot
// decode fails the Store. s.mu is held.
func (s *Store) editDue(b *pebble.Batch, key string, q *queue, edit func(*frontier.Item) bool) (first duePos, n int, err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: dueKey(nil, key, duePos{due: math.MinInt64}), UpperBound: dueKeyEnd(key)})
	if err != nil {
		return duePos{}, 0, s.fail(err)
	}
	defer it.Close()
	leased := q.dueLeases()
	first = duePos{due: math.MaxInt64, at: math.MaxUint64, n: math.MaxUint64}
	queued := 0
	for valid := it.First(); valid; valid = it.Next() {
		p, ok := parseDuePos(it.Key(), len(key))
		if !ok {
			return duePos{}, 0, s.fail(fmt.Errorf("%w: due entry key %x", errCorrupt, it.Key()))
		}
		if slices.Contains(leased, p) {
			continue
		}
		queued++
		item, err := decodeItem(it.Value(), key)
		if err != nil {
			return duePos{}, 0, s.fail(fmt.Errorf("due part of %q at %+v: %w", key, p, err))
		}
		at := p
		if item.Visit != nil {
			url := item.URL
			if edit(&item) {
				if item.URL != url || item.Key != key {
					return duePos{}, 0, fmt.Errorf("pebblestore: %w: %s under %q changed to %s under %q", frontier.ErrEdit, url, key, item.URL, item.Key)
				}
				if at.due = dueNanos(item.Due); at != p {
					b.Delete(it.Key(), nil)
				}
				s.scratch = dueKey(s.scratch[:0], key, at)
				s.setItem(b, &item)
				n++
			}
		}
		if at.before(first) {
			first = at
		}
	}
	if err := it.Error(); err != nil {
		return duePos{}, 0, s.fail(err)
	}
	if queued != int(q.due.n) {
		return duePos{}, 0, s.fail(fmt.Errorf("%w: the due part of %q counts %d queued entries and holds %d", errCorrupt, key, q.due.n, queued))
	}
	return first, n, nil
}
