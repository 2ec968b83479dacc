package pebblestore

import (
	"bytes"
	"context"
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
