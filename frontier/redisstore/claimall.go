package redisstore

// Claims for several callers at once, on a single Redis: one script
// (claimmany.lua) leases the items of as many Claims as wait, taken from
// the shards in the order of their first ready keys.

import (
	"context"
	"fmt"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// batchExtra is how many candidate shards a claimmany.lua call reads
// beyond one a Claim: a shard the Store thought ready may hand out
// nothing (another process took its key).
const batchExtra = 1

// claimReq is a Claim waiting for a batch, and its answer.
type claimReq struct {
	now   time.Time
	opt   frontier.ClaimOptions
	lease *frontier.Lease
	err   error
}

// claimAll claims a ready key, together with the other Claims of the
// Store waiting at the same time, and returns a nil Lease if the batch
// found none for this one.
func (s *Store) claimAll(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (*frontier.Lease, error) {
	for try := 0; try < maxProbes; try++ {
		if err := s.refresh(ctx, false); err != nil {
			return nil, err
		}
		if !s.view.anyReady(s.clockNow(now)) {
			return nil, nil
		}
		w, err := s.claims.join(ctx, claimReq{now: now, opt: opt}, s.runClaims)
		if err != nil {
			return nil, err
		}
		if w.err != nil || w.lease != nil {
			return w.lease, w.err
		}
	}
	return nil, nil
}

// runClaims serves the Claims of batch: those waiting first, with the
// options of the first and, with CallerClock, its now.
func (s *Store) runClaims(ctx context.Context, b *batcher[claimReq]) []*waiter[claimReq] {
	batch := b.take(func(first, w *claimReq) bool {
		return w.opt == first.opt && (!s.opt.CallerClock || w.now.Equal(first.now))
	})
	if len(batch) > 0 {
		s.runBatch(ctx, batch)
	}
	return batch
}

// runBatch runs claimmany.lua for batch, on the shards the view knows
// ready, and gives each Claim its lease, if any, or the error.
func (s *Store) runBatch(ctx context.Context, batch []*waiter[claimReq]) {
	first := &batch[0].req
	cands, bound, name := s.view.candidates(s.clockNow(first.now), len(batch)+batchExtra)
	if len(cands) == 0 {
		return
	}
	args := []any{max(first.opt.PerHost, 1), leaseMicros(first.opt.Lease), len(batch), bound, name, len(cands)}
	for _, i := range cands {
		sh := s.shards[i]
		args = append(args, sh.prefix, sh.keys[0], flag(sh.joined.Load()))
	}
	leases, err := s.claimMany(ctx, cands, first.now, args)
	for i, w := range batch {
		switch {
		case err != nil:
			w.req.err = err
		case i < len(leases):
			w.req.lease = leases[i]
			w.req.lease.Expires = base(w.req.now).Add(w.req.lease.Expires.Sub(base(first.now)))
		}
	}
}

// claimMany runs claimmany.lua on the candidate shards cands with args,
// learns their tails and returns the leases granted.
func (s *Store) claimMany(ctx context.Context, cands []int, now time.Time, args []any) ([]*frontier.Lease, error) {
	shards := make([]*shard, len(cands))
	for j, i := range cands {
		shards[j] = s.shards[i]
	}
	reply, err := s.callShards(ctx, claimManyScript, "claim", shards, now, args, 1)
	if err != nil {
		return nil, err
	}
	n := int(intOf(reply[0]))
	if len(reply) != 1+n*(1+leaseLen) {
		return nil, fmt.Errorf("redisstore: claim: %w: reply %v", errCorrupt, reply)
	}
	leases := make([]*frontier.Lease, 0, n)
	for j := range n {
		l := reply[1+j*(1+leaseLen):]
		c := int(intOf(l[0]))
		if c < 1 || c > len(cands) {
			return nil, fmt.Errorf("redisstore: claim: %w: candidate %d of %d", errCorrupt, c, len(cands))
		}
		lease, err := s.leaseOf(shards[c-1], now, l[1:1+leaseLen])
		if err != nil {
			return nil, err
		}
		leases = append(leases, lease)
	}
	return leases, nil
}
