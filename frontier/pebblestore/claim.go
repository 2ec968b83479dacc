package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

// Claim implements frontier.Store. It writes nothing: the item keeps its
// entry, before its queue's head, until the lease ends, and goes back to
// the front of the queue if the process stops first.
func (s *Store) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	if err := ctx.Err(); err != nil {
		return frontier.Claim{}, err
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return frontier.Claim{}, err
	}
	var key string
	var host ratelimit.HostState
	var givenUp bool
	var q *queue
	var seq, readTo uint64
	var held []byte // the item's entry, held ahead of its queue's head
	for {
		var next time.Time
		var ok bool
		key, host, next, ok = s.sched.Claim(now, opt)
		if !ok {
			idle := s.sched.Idle()
			s.mu.Unlock()
			return frontier.Claim{Next: next, Idle: idle}, nil
		}
		q = s.queues[key]
		if q == nil || q.queued() == 0 {
			// The Schedule counts items the Store does not have: a bug,
			// which must not spin Claim.
			s.sched.End(key, now, frontier.Outcome{Pace: host}, false)
			s.sched.Lost(key)
			s.opts.Logger.Error("pebblestore: scheduled key has no queued item", "key", key)
			continue
		}
		givenUp = s.sched.GivenUp(key)
		seq = q.head
		o := q.outState()
		if len(o.front) > 0 {
			seq = o.front[0]
			o.front = o.front[1:]
		} else {
			q.head++
			if v, ok := s.takeAhead(q); ok {
				held = v
			} else {
				readTo = s.planAhead(q, seq)
			}
		}
		o.leased = append(o.leased, seq)
		break
	}
	s.token++
	token := s.token
	s.leases[token] = lease{key: key, seq: seq, item: true}
	s.mu.Unlock()
	// The entry is read outside the lock: it stays as it is until the
	// lease ends, which only its holder can do.
	var item frontier.Item
	var err error
	switch {
	case held != nil:
		item, err = decodeItem(held, key)
	case readTo > seq+1:
		item, err = s.claimRead(key, q, seq, readTo)
	default:
		err = s.read(queueKey(nil, key, seq), func(v []byte) (err error) {
			item, err = decodeItem(v, key)
			return err
		})
	}
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return frontier.Claim{}, s.readFailed(err)
		}
		return frontier.Claim{}, s.fail(fmt.Errorf("queue of %q at %d: %w", key, seq, err))
	}
	return frontier.Claim{Lease: &frontier.Lease{Item: item, Pace: host, Token: token, GivenUp: givenUp}}, nil
}

// read calls f with the value under k, outside s.mu: pebble's reads are
// safe beside its writes. It fails with ErrClosed once Close has begun
// closing pebble.
func (s *Store) read(k []byte, f func(v []byte) error) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.dbClosed || s.broken.Load() {
		return ErrClosed
	}
	v, closer, err := s.db.Get(k)
	if err != nil {
		return err
	}
	defer closer.Close()
	return f(v)
}

// ClaimKey implements frontier.Store. A key lease holds no item: nothing
// is written until it ends.
func (s *Store) ClaimKey(ctx context.Context, key string, now time.Time, opt frontier.ClaimOptions) (*frontier.Lease, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, time.Time{}, err
	}
	host, next, ok := s.sched.ClaimKey(key, now, opt)
	if !ok {
		return nil, next, nil
	}
	q, err := s.queue(key)
	if err != nil {
		return nil, time.Time{}, err
	}
	q.outState().keyLeases++
	s.token++
	s.leases[s.token] = lease{key: key}
	return &frontier.Lease{Item: frontier.Item{Key: key}, Pace: host, Token: s.token}, time.Time{}, nil
}
