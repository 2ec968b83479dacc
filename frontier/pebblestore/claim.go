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
// entry — before its run's head, or at its position in the due part —
// until the lease ends, and is queued at its place again if the process
// stops first.
func (s *Store) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	if err := ctx.Err(); err != nil {
		return frontier.Claim{}, err
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return frontier.Claim{}, err
	}
	due := func(key string) time.Time { return s.firstDue(key, now) }
	var key string
	var host ratelimit.HostState
	var q *queue
	var ls lease
	var readTo uint64
	var held []byte // the item's entry, held ahead of its queue's head or read already
	for {
		var next time.Time
		var ok bool
		key, host, next, ok = s.sched.ClaimDue(now, opt, due)
		if err := s.failed(); err != nil { // a read of firstDue failed
			s.mu.Unlock()
			return frontier.Claim{}, err
		}
		if !ok {
			idle := s.sched.Idle()
			s.mu.Unlock()
			return frontier.Claim{Next: next, Idle: idle}, nil
		}
		var err error
		if q, err = s.queue(key); err != nil {
			s.mu.Unlock()
			return frontier.Claim{}, err
		}
		if q.queued() == 0 {
			// The Schedule counts items the Store does not have: a bug,
			// which must not spin Claim.
			s.forgetIfIdle(key, q)
			s.sched.End(key, now, frontier.Outcome{Pace: host}, false)
			s.sched.Lost(key)
			s.opts.Logger.Error("pebblestore: scheduled key has no queued item", "key", key)
			continue
		}
		if ls, held, readTo, err = s.take(key, q); err != nil {
			s.mu.Unlock()
			return frontier.Claim{}, s.fail(fmt.Errorf("claim of %q: %w", key, err))
		}
		s.reportHead(key, q)
		break
	}
	givenUp, revisiting := s.sched.GivenUp(key), s.sched.Revisiting(key)
	s.token++
	token := s.token
	s.leases[token] = ls
	s.mu.Unlock()
	// The entry is read outside the lock: it stays as it is until the
	// lease ends, which only its holder can do.
	seq := ls.seq
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
	return frontier.Claim{Lease: &frontier.Lease{Item: item, Pace: host, Token: token, GivenUp: givenUp, Revisiting: revisiting}}, nil
}

// take leases key's first item, from the run or the due part, whichever
// comes first: it returns the lease, and the item's entry if it has it —
// the due part's, read under the lock, or the run's, held ahead or read to
// compare — or how far to read the run from the lease's entry on (see
// planAhead). s.mu is held.
func (s *Store) take(key string, q *queue) (ls lease, held []byte, readTo uint64, err error) {
	ls = lease{key: key, item: true}
	fromDue, runHead, err := s.fromDue(key, q)
	switch {
	case err != nil:
		return lease{}, nil, 0, err
	case fromDue:
		ls.inDue = true
		ls.pos, held, err = s.takeDue(key, q)
		return ls, held, 0, err
	}
	o := q.outState()
	if len(o.front) > 0 {
		ls.seq = o.front[0]
		o.front = o.front[1:]
		held = runHead
	} else {
		ls.seq = q.head
		q.head++
		if v, ok := s.takeAhead(q); ok {
			held = v
		} else if runHead != nil {
			held = runHead
		} else {
			readTo = s.planAhead(q, ls.seq)
		}
	}
	o.leased = append(o.leased, ls.seq)
	return ls, held, readTo, nil
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
	return &frontier.Lease{Item: frontier.Item{Key: key}, Pace: host, Token: s.token, Revisiting: s.sched.Revisiting(key)}, time.Time{}, nil
}
