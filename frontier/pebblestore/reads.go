package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

// get returns a copy of the value under k, or nil if there is none.
func (s *Store) get(k []byte) ([]byte, error) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v = bytes.Clone(v)
	if v == nil {
		v = []byte{}
	}
	return v, closer.Close()
}

// has reports whether k is set.
func (s *Store) has(k []byte) (bool, error) {
	_, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

// Host implements frontier.Store.
func (s *Store) Host(ctx context.Context, key string) (ratelimit.HostState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return ratelimit.HostState{}, err
	}
	return s.sched.Host(key), nil
}

// Counts implements frontier.Store.
func (s *Store) Counts(ctx context.Context, now time.Time) (frontier.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return frontier.Counts{}, err
	}
	return s.sched.Counts(now), nil
}

// Meta implements frontier.Store.
func (s *Store) Meta(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	v, err := s.get(metaKey(nil, name))
	if err != nil {
		return nil, s.fail(err)
	}
	return v, nil
}

// SetMeta implements frontier.Store. The value is durable when SetMeta
// returns.
func (s *Store) SetMeta(ctx context.Context, name string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	err := s.usable()
	if err == nil {
		b := s.db.NewBatch()
		b.Set(metaKey(nil, name), value, nil)
		err = s.apply(b)
		b.Close()
	}
	w := s.writes
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.syncTo(w)
}

// QueuedFor implements frontier.KeyCounter from the count the Schedule
// keeps of each key: no disk is read.
func (s *Store) QueuedFor(ctx context.Context, key string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	return s.sched.Queued(key), nil
}

// dueScan bounds the entries DueCounts reads.
const dueScan = 20000

// DueCounts counts the queued items by when they fall due, seen from now,
// by reading the queue entries on disk, outside the Store's lock: the due
// part's from their keys alone, the runs' decoded for their Due. Leased
// items, whose entries stay until they are done, are counted too (a
// worker's worth at most). Past dueScan entries of each part the counts are
// scaled from those read (DueCounts.Approximate), so that a live view
// polling a store of millions of URLs costs a bounded read.
func (s *Store) DueCounts(ctx context.Context, now time.Time, edges []time.Duration) (frontier.DueCounts, error) {
	d := frontier.NewDueCounts(edges)
	n := now.UnixNano()
	read := 0
	err := s.scan([]byte{prefixDue}, []byte{prefixDue + 1}, func(k, v []byte) (bool, error) {
		key, p, ok := parseDueKey(k)
		if !ok {
			return false, errCorrupt
		}
		url := ""
		if p.due <= n && (d.OldestKey == "" || p.due < d.OldestDue.UnixNano()) {
			it, err := decodeItem(v, key)
			if err != nil {
				return false, err
			}
			url = it.URL
		}
		d.Add(n, p.due, 1, key, url)
		read++
		return read < dueScan && ctx.Err() == nil, nil
	})
	if err != nil {
		return d, err
	}
	read = 0
	err = s.scan([]byte{prefixQueue}, []byte{prefixQueue + 1}, func(k, v []byte) (bool, error) {
		key, _, ok := parseQueueKey(k)
		if !ok {
			return false, errCorrupt
		}
		it, err := decodeItem(v, key)
		if err != nil {
			return false, err
		}
		d.Add(n, dueNanos(it.Due), 1, key, it.URL)
		read++
		return read < dueScan && ctx.Err() == nil, nil
	})
	if err != nil {
		return d, err
	}
	c, err := s.Counts(ctx, now)
	if err != nil {
		return d, err
	}
	d.Scale(c.Queued + c.Leased)
	return d, ctx.Err()
}

// parseDueKey returns the politeness key and position of a due entry's
// key.
func parseDueKey(k []byte) (string, duePos, bool) {
	if len(k) < 1 || k[0] != prefixDue {
		return "", duePos{}, false
	}
	n, w := binary.Uvarint(k[1:])
	if w <= 0 || uint64(len(k)) < 1+uint64(w)+n {
		return "", duePos{}, false
	}
	key := string(k[1+w : 1+w+int(n)])
	p, ok := parseDuePos(k, int(n))
	return key, p, ok
}
