package redisstore

// Claiming: the shard whose ready key has waited longest, and keys alone.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// leaseMicros is a lease's duration in microseconds.
func leaseMicros(d time.Duration) int64 {
	if d <= 0 {
		d = frontier.DefaultLease
	}
	return ceilMicros(d)
}

// leaseArg returns the claim scripts' lease argument for opt, µs: the
// lease, for FixedLeases; for a member, whose leases last while it
// beats, the lease whose quarter bounds a run (runLease).
func (s *Store) leaseArg(opt frontier.ClaimOptions) int64 {
	if s.opt.FixedLeases {
		return leaseMicros(opt.Lease)
	}
	return ceilMicros(runLease)
}

// leaseExpires returns the Lease.Expires, on the clock of now, of a lease
// a script granted with left µs to go, or, for left -ID, held while
// member ID beats (expiresAt).
func (s *Store) leaseExpires(now time.Time, left int64) time.Time {
	if left < 0 {
		return s.expiresAt(now, -left)
	}
	return base(now).Add(time.Duration(left) * time.Microsecond)
}

// Claim implements frontier.Store. The next item of a run this Store
// holds comes first, without a round trip, once its key rested (see the
// package documentation, Affinity); else it asks the shard whose ready
// key has waited longest, as far as the Store knows (see Shards), and
// with no shard ready, answers from what it knows: Idle only once every
// shard was read empty.
func (s *Store) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	if err := s.open(); err != nil {
		return frontier.Claim{}, err
	}
	if err := s.setup(ctx); err != nil {
		return frontier.Claim{}, err
	}
	s.noteNow(now) // the heartbeat's clock, with CallerClock
	if err := s.ensureMember(ctx, opt.Lease); err != nil {
		return frontier.Claim{}, err
	}
	for {
		c, err := s.claimOnce(ctx, now, opt)
		if err != nil || c.Lease == nil {
			return c, err
		}
		rv, ok := s.takeLost(c.Lease)
		if !ok {
			return c, nil
		}
		// This process wrote the item's record already, and lost its
		// lease before its Done (lost.go): it is done, not fetched twice.
		if err := s.Done(ctx, c.Lease, now, frontier.Outcome{Pace: c.Lease.Pace, Revisit: rv}); err != nil && !errors.Is(err, frontier.ErrLeaseLost) {
			return frontier.Claim{}, err
		}
	}
}

// claimOnce is Claim of a run's next item or a key in Redis.
func (s *Store) claimOnce(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	l, next, err := s.claimRun(ctx, now)
	if l != nil || err != nil {
		return frontier.Claim{Lease: l}, err
	}
	c, err := s.claimStore(ctx, now, opt)
	if err == nil && c.Lease == nil && !next.IsZero() && (c.Next.IsZero() || next.Before(c.Next)) {
		c.Next, c.Idle = next, false // a run's next item, once its key rested
	}
	return c, err
}

// claimStore is Claim of a key in Redis.
func (s *Store) claimStore(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	at := base(now)
	for range 2 {
		rnow := s.clockNow(now)
		l, err := s.claimReady(ctx, now, rnow, opt)
		if err != nil || l != nil {
			return frontier.Claim{Lease: l}, err
		}
		if next, ok := s.view.next(); ok && s.view.knowsQueued() {
			return frontier.Claim{Next: at.Add(time.Duration(max(next-rnow, 0)) * time.Microsecond)}, nil
		}
		// Leases alone, as far as the Store knows: the crawl may be
		// over, which only reading every shard can tell — not while
		// this Store holds leases, which the shards were read for
		// within a Poll.
		if s.verifiedLately() {
			next, ok := s.view.next()
			if !ok {
				return frontier.Claim{}, nil
			}
			return frontier.Claim{Next: at.Add(time.Duration(max(next-rnow, 0)) * time.Microsecond)}, nil
		}
		idle, err := s.verify(ctx, now)
		if err != nil || idle {
			return frontier.Claim{Idle: idle}, err
		}
		if !s.view.knowsQueued() {
			next, _ := s.view.next()
			return frontier.Claim{Next: at.Add(time.Duration(max(next-s.clockNow(now), 0)) * time.Microsecond)}, nil
		}
	}
	return frontier.Claim{}, nil
}

// verifiedLately reports whether the Store holds leases and read every
// shard (verify) less than verifyEvery ago: the job is not over, and
// another read would cost 2 commands a shard for nothing.
func (s *Store) verifiedLately() bool {
	s.mu.Lock()
	holds := len(s.held) > 0
	s.mu.Unlock()
	at := s.verifiedAt.Load()
	return holds && at != 0 && time.Since(time.Unix(0, at)) < s.verifyEvery()
}

// claimReady claims a ready key at now (rnow on the clock of the
// decisions), as far as the Store knows of one: on a single Redis with
// the Claims of other callers of the Store (claimAll), else by probing
// the shards (claimProbing). A nil Lease means none was found.
func (s *Store) claimReady(ctx context.Context, now time.Time, rnow int64, opt frontier.ClaimOptions) (*frontier.Lease, error) {
	if s.oneServer() {
		return s.claimAll(ctx, now, opt)
	}
	return s.claimProbing(ctx, now, rnow, opt)
}

// claimProbing asks the shard whose ready key has waited longest, as far
// as the Store knows, bounded by the first ready key of the others; a
// shard that hands out nothing corrects the view, and the next is asked.
func (s *Store) claimProbing(ctx context.Context, now time.Time, rnow int64, opt frontier.ClaimOptions) (*frontier.Lease, error) {
	for probe := 0; probe < 4*maxProbes; probe++ {
		if err := s.refresh(ctx, false); err != nil {
			return nil, err
		}
		i, bound, name, ok, busy := s.view.pick(rnow, probe < maxProbes)
		if !ok && busy != nil {
			// Every ready shard has as many claims in flight as it
			// has ready keys: wait for one to come back instead of
			// sending a claim that would find nothing.
			select {
			case <-busy:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if !ok {
			break
		}
		var l *frontier.Lease
		var err error
		if s.perSlot() {
			l, err = s.claimNode(ctx, s.shards[i], now, opt, bound, name)
		} else {
			l, err = s.claimShard(ctx, s.shards[i], now, opt, bound, name)
		}
		s.view.release(i)
		if err != nil || l != nil {
			return l, err
		}
	}
	return nil, nil
}

// claimNode claims a key on a cluster, having picked sh, bounded by the
// key bound µs from now named name (none if bound is ""): with the other
// calls of the Store for sh's node that wait at once, in one batch.lua
// call there (see claimCandidates), or, if the Store knows no node of sh,
// with its other Claims for sh (claimSlot). A nil Lease if the batch had
// none for this one.
func (s *Store) claimNode(ctx context.Context, sh *shard, now time.Time, opt frontier.ClaimOptions, bound, name string) (*frontier.Lease, error) {
	addr := s.nodeOf(ctx, sh)
	if addr == "" {
		return s.claimSlot(ctx, sh, now, opt, bound, name)
	}
	b, run := s.nodeBatcher(addr)
	return s.claimIn(ctx, b, run, sh, now, opt, bound, name)
}

// claimSlot claims a key of sh, on a cluster, with the other Claims of
// the Store for sh waiting at the same time (one batch.lua call), bounded
// by the key bound µs from now named name (none if bound is ""), or
// tighter if another Claim of the batch is: a nil Lease if the batch had
// none for this one.
func (s *Store) claimSlot(ctx context.Context, sh *shard, now time.Time, opt frontier.ClaimOptions, bound, name string) (*frontier.Lease, error) {
	b, run := s.slotBatcher(sh)
	return s.claimIn(ctx, b, run, sh, now, opt, bound, name)
}

// claimIn is a Claim that picked sh, in the batches of b.
func (s *Store) claimIn(ctx context.Context, b *batcher[batchOp], run func(*batcher[batchOp]) []*waiter[batchOp], sh *shard, now time.Time, opt frontier.ClaimOptions, bound, name string) (*frontier.Lease, error) {
	op := batchOp{claim: true, now: now, opt: opt, pick: sh}
	if bound != "" {
		d, err := strconv.ParseInt(bound, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redisstore: claim: bound %q: %w", bound, err)
		}
		op.bounded, op.bound, op.boundName = true, d, name
	}
	w, err := b.join(ctx, op, run)
	if err != nil {
		return nil, err
	}
	return w.lease, w.err
}

// claimShard runs claim.lua on sh, bounded by the key bound µs from now
// named name (none if bound is ""): a nil Lease if sh has no key to hand
// out.
func (s *Store) claimShard(ctx context.Context, sh *shard, now time.Time, opt frontier.ClaimOptions, bound, name string) (*frontier.Lease, error) {
	r, err := s.call(ctx, sh, claimScript, "claim", now, claimArg(opt), s.leaseArg(opt), bound, name)
	if err != nil {
		return nil, err
	}
	if len(r) == 4 && intOf(r[0]) == 0 {
		return nil, nil
	}
	if len(r) != 1+leaseLen || intOf(r[0]) != 1 {
		return nil, fmt.Errorf("redisstore: claim: %w: reply %v", errCorrupt, r)
	}
	return s.leaseOf(sh, now, r[1:])
}

// leaseLen is the length of a lease in a claim's reply (claimone.lua).
const leaseLen = 10

// leaseOf decodes a lease of shard sh granted to a Claim at now, r =
// claimOne's {token, key, item, host state, next allowed, lease left µs,
// given up, closed until, revisit state, run}, and holds it.
func (s *Store) leaseOf(sh *shard, now time.Time, r []any) (*frontier.Lease, error) {
	tok := token(sh, intOf(r[0]))
	key := strOf(r[1])
	s.hold(tok, key)
	if err := s.startRun(sh, tok, key, []byte(strOf(r[9])), intOf(r[5])); err != nil {
		return nil, err
	}
	it, err := decodeItem([]byte(strOf(r[2])), key)
	if err != nil {
		return nil, fmt.Errorf("redisstore: claim: item of %s: %w", key, err)
	}
	host, err := decodeHost([]byte(strOf(r[3])))
	if err != nil {
		return nil, fmt.Errorf("redisstore: claim: host %s: %w", key, err)
	}
	host.NextAllowed = timeOf(intOf(r[4]))
	host.ClosedUntil = timeOf(intOf(r[7]))
	rv, err := decodeRevisiting(r[8])
	if err != nil {
		return nil, fmt.Errorf("redisstore: claim: revisit state of %s: %w", key, err)
	}
	return &frontier.Lease{
		Item:       it,
		Pace:       host,
		Token:      tok,
		Expires:    s.leaseExpires(now, intOf(r[5])),
		GivenUp:    intOf(r[6]) == 1,
		Revisiting: rv,
	}, nil
}

// ClaimKey implements frontier.Store.
func (s *Store) ClaimKey(ctx context.Context, key string, now time.Time, opt frontier.ClaimOptions) (*frontier.Lease, time.Time, error) {
	if err := s.open(); err != nil {
		return nil, time.Time{}, err
	}
	if err := s.setup(ctx); err != nil {
		return nil, time.Time{}, err
	}
	s.noteNow(now)
	if err := s.ensureMember(ctx, opt.Lease); err != nil {
		return nil, time.Time{}, err
	}
	if err := s.endRunOf(ctx, key); err != nil {
		return nil, time.Time{}, err
	}
	sh := s.shardOf(key)
	r, err := s.call(ctx, sh, claimKeyScript, "claim key", now, max(opt.PerHost, 1), s.leaseArg(opt), key, ceilMicros(fullRecheck))
	if err != nil {
		return nil, time.Time{}, err
	}
	at := base(now)
	switch {
	case len(r) == 7 && intOf(r[0]) == 1:
		tok := token(sh, intOf(r[1]))
		s.hold(tok, key)
		host, err := decodeHost([]byte(strOf(r[2])))
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("redisstore: claim key: host %s: %w", key, err)
		}
		host.NextAllowed = timeOf(intOf(r[3]))
		host.ClosedUntil = timeOf(intOf(r[5]))
		rv, err := decodeRevisiting(r[6])
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("redisstore: claim key: revisit state of %s: %w", key, err)
		}
		return &frontier.Lease{
			Item:       frontier.Item{Key: key},
			Pace:       host,
			Token:      tok,
			Expires:    s.leaseExpires(now, intOf(r[4])),
			Revisiting: rv,
		}, time.Time{}, nil
	case len(r) == 2 && intOf(r[0]) == 0:
		return nil, at.Add(time.Duration(intOf(r[1])) * time.Microsecond), nil
	}
	return nil, time.Time{}, fmt.Errorf("redisstore: claim key: %w: reply %v", errCorrupt, r)
}
