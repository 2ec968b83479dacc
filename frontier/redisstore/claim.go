package redisstore

// Claiming: the shard whose ready key has waited longest, and keys alone.

import (
	"context"
	"fmt"
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

// Claim implements frontier.Store. It asks the shard whose ready key has
// waited longest, as far as the Store knows (see the package
// documentation, Shards), and with no shard ready, answers from what it
// knows: Idle only once every shard was read empty.
func (s *Store) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	if err := s.open(); err != nil {
		return frontier.Claim{}, err
	}
	if err := s.setup(ctx); err != nil {
		return frontier.Claim{}, err
	}
	at := base(now)
	for range 2 {
		rnow := s.clockNow(now)
		for probe := 0; probe < 4*maxProbes; probe++ {
			if err := s.refresh(ctx, false); err != nil {
				return frontier.Claim{}, err
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
					return frontier.Claim{}, ctx.Err()
				}
			}
			if !ok {
				break
			}
			l, err := s.claimShard(ctx, s.shards[i], now, opt, bound, name)
			s.view.release(i)
			if err != nil || l != nil {
				return frontier.Claim{Lease: l}, err
			}
		}
		if next, ok := s.view.next(); ok && s.view.knowsQueued() {
			return frontier.Claim{Next: at.Add(time.Duration(max(next-rnow, 0)) * time.Microsecond)}, nil
		}
		// Leases alone, as far as the Store knows: the crawl may be
		// over, which only reading every shard can tell.
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

// claimShard runs claim.lua on sh, bounded by the key bound µs from now
// named name (none if bound is ""): a nil Lease if sh has no key to hand
// out.
func (s *Store) claimShard(ctx context.Context, sh *shard, now time.Time, opt frontier.ClaimOptions, bound, name string) (*frontier.Lease, error) {
	r, err := s.call(ctx, sh, claimScript, "claim", now, max(opt.PerHost, 1), leaseMicros(opt.Lease), bound, name)
	if err != nil {
		return nil, err
	}
	if len(r) == 4 && intOf(r[0]) == 0 {
		return nil, nil
	}
	if len(r) != 10 || intOf(r[0]) != 1 {
		return nil, fmt.Errorf("redisstore: claim: %w: reply %v", errCorrupt, r)
	}
	tok := token(sh, intOf(r[1]))
	s.hold(tok)
	key := strOf(r[2])
	it, err := decodeItem([]byte(strOf(r[3])), key)
	if err != nil {
		return nil, fmt.Errorf("redisstore: claim: item of %s: %w", key, err)
	}
	host, err := decodeHost([]byte(strOf(r[4])))
	if err != nil {
		return nil, fmt.Errorf("redisstore: claim: host %s: %w", key, err)
	}
	host.NextAllowed = timeOf(intOf(r[5]))
	host.ClosedUntil = timeOf(intOf(r[8]))
	rv, err := decodeRevisiting(r[9])
	if err != nil {
		return nil, fmt.Errorf("redisstore: claim: revisit state of %s: %w", key, err)
	}
	return &frontier.Lease{
		Item:       it,
		Pace:       host,
		Token:      tok,
		Expires:    base(now).Add(time.Duration(intOf(r[6])) * time.Microsecond),
		GivenUp:    intOf(r[7]) == 1,
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
	sh := s.shardOf(key)
	r, err := s.call(ctx, sh, claimKeyScript, "claim key", now, max(opt.PerHost, 1), leaseMicros(opt.Lease), key, ceilMicros(fullRecheck))
	if err != nil {
		return nil, time.Time{}, err
	}
	at := base(now)
	switch {
	case len(r) == 7 && intOf(r[0]) == 1:
		tok := token(sh, intOf(r[1]))
		s.hold(tok)
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
			Expires:    at.Add(time.Duration(intOf(r[4])) * time.Microsecond),
			Revisiting: rv,
		}, time.Time{}, nil
	case len(r) == 2 && intOf(r[0]) == 0:
		return nil, at.Add(time.Duration(intOf(r[1])) * time.Microsecond), nil
	}
	return nil, time.Time{}, fmt.Errorf("redisstore: claim key: %w: reply %v", errCorrupt, r)
}
