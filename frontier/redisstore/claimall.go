package redisstore

// Claims and ends of leases for several callers at once: one script
// (batch.lua) ends the leases of the Dones and Requeues that wait and
// leases the items of as many Claims as wait — on a single Redis taken
// from the shards in the order of their first ready keys, on a cluster
// from one shard (a batch there enters one slot).

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// batchExtra is how many candidate shards a batch.lua call reads
// beyond one a Claim: a shard the Store thought ready may hand out
// nothing (another process took its key).
const batchExtra = 1

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
		w, err := s.ops.join(ctx, batchOp{claim: true, now: now, opt: opt}, s.runOps)
		if err != nil {
			return nil, err
		}
		if w.err != nil || w.lease != nil {
			return w.lease, w.err
		}
	}
	return nil, nil
}

// batchOp is a call waiting for a batch: a Claim, or the end of a lease (Done,
// Requeue), and its answer.
type batchOp struct {
	now time.Time
	err error
	// A Claim: its options, and the lease it got, if any.
	claim bool
	opt   frontier.ClaimOptions
	lease *frontier.Lease
	// On a cluster, the shard a Claim picked, and its fairness bound, if
	// bounded: the first ready key of the other shards, µs from now, and
	// its name.
	pick      *shard
	bounded   bool
	bound     int64
	boundName string
	// The end of a lease: its shard, finish.lua's arguments, the groups of
	// links to add first (the lease's shard first) with add.lua's
	// arguments of each, and the reply: finish's code, then add's codes.
	// Or an Add: no finish arguments (args nil), sh its first group's
	// shard, and the reply add's codes alone.
	sh     *shard
	args   []any
	groups []group
	blocks [][]any
	reply  []any
}

// runOps serves the calls waiting first on a single Redis, in one script
// (batch.lua).
func (s *Store) runOps(b *batcher[batchOp]) []*waiter[batchOp] {
	return s.runOn(nil, b)
}

// slotBatcher returns the batcher of shard sh on a cluster, and the run
// of its batches.
func (s *Store) slotBatcher(sh *shard) (*batcher[batchOp], func(*batcher[batchOp]) []*waiter[batchOp]) {
	s.slotOpsOnce.Do(func() { s.slotOps = make([]batcher[batchOp], len(s.shards)) })
	return &s.slotOps[sh.i], func(b *batcher[batchOp]) []*waiter[batchOp] { return s.runOn(sh, b) }
}

// runOn serves the calls waiting first, in one script (batch.lua) that
// enters slot alone if not nil (a cluster's shard), else every shard it
// needs: with CallerClock those of the first's now, and the Claims with
// the options of the first Claim. On a cluster it takes them once the
// round in flight, if any, came back (roundGate).
func (s *Store) runOn(slot *shard, b *batcher[batchOp]) []*waiter[batchOp] {
	var t *ticket
	if s.perSlot() {
		t = s.gate.enter()
		defer t.leave()
	}
	var first, firstClaim *batchOp
	batch := b.take(func(w *batchOp) bool {
		if first == nil {
			first = w
		} else if s.opt.CallerClock && !w.now.Equal(first.now) {
			return false
		}
		if w.claim {
			if firstClaim == nil {
				firstClaim = w
			} else if w.opt != firstClaim.opt {
				return false
			}
		}
		return true
	})
	if len(batch) > 0 {
		ctx, release := batchContext(batch)
		if t != nil {
			ctx = context.WithValue(ctx, ticketKey{}, t)
		}
		s.runBatch(ctx, slot, batch, firstClaim)
		release()
	}
	return batch
}

// batchArgs are the shards of a batch and batch.lua's arguments that name
// them.
type batchArgs struct {
	shards []*shard
	at     map[*shard]int // 1-based
}

func (a *batchArgs) add(sh *shard) int {
	if i, ok := a.at[sh]; ok {
		return i
	}
	a.shards = append(a.shards, sh)
	a.at[sh] = len(a.shards)
	return len(a.shards)
}

// runBatch runs batch.lua for batch: the leases to end, and the Claims —
// in slot if not nil, else on the shards the view knows ready and those
// of the leases ended; it gives each call its answer.
func (s *Store) runBatch(ctx context.Context, slot *shard, batch []*waiter[batchOp], claimOpt *batchOp) {
	var ends, claims []*waiter[batchOp]
	a := batchArgs{at: map[*shard]int{}}
	if slot != nil {
		a.add(slot)
	}
	for _, w := range batch {
		if w.req.claim {
			claims = append(claims, w)
			continue
		}
		ends = append(ends, w)
		a.add(w.req.sh)
		for _, g := range w.req.groups {
			a.add(g.sh)
		}
	}
	now := batch[0].req.now
	var cands []any
	bound, name, perHost, lease := "", "", "1", int64(0)
	if claimOpt != nil {
		cands, bound, name = s.claimCandidates(&a, slot, now, ends, claims)
		perHost, lease = claimArg(claimOpt.opt), s.leaseArg(claimOpt.opt)
	}
	if len(a.shards) == 0 {
		return // Claims alone, and no shard ready
	}
	args := []any{perHost, lease, len(claims), bound, name, len(a.shards)}
	for _, sh := range a.shards {
		args = append(args, sh.prefix, sh.keys[0], flag(sh.joined.Load()))
	}
	args = append(append(args, len(cands)), cands...)
	args = append(args, len(ends))
	replies := 0 // of the ends
	for _, e := range ends {
		if e.req.args == nil { // an Add: shard 0, no lease to end
			args = append(args, 0)
		} else {
			args = append(append(args, a.at[e.req.sh]), e.req.args...)
			replies++
		}
		args = append(args, len(e.req.groups))
		for i, g := range e.req.groups {
			args = append(args, a.at[g.sh], len(e.req.blocks[i]))
			replies += len(g.idx)
		}
		for _, b := range e.req.blocks {
			args = append(args, b...)
		}
	}
	codes, leases, err := s.batchCall(ctx, a.shards, now, args, replies)
	for _, w := range ends {
		if w.req.err = err; err == nil {
			n := 1
			if w.req.args == nil {
				n = 0 // an Add: no finish code
			}
			for _, g := range w.req.groups {
				n += len(g.idx)
			}
			w.req.reply, codes = codes[:n], codes[n:]
		}
	}
	for i, w := range claims {
		switch {
		case err != nil:
			w.req.err = err
		case i < len(leases):
			w.req.lease = leases[i]
			w.req.lease.Expires = base(w.req.now).Add(w.req.lease.Expires.Sub(base(now)))
		}
	}
}

// claimCandidates returns the shards a batch's claims may take keys of,
// adding them to a, and their bound (µs from now, and a name; "" for
// none): in slot alone if not nil, bounded by the tightest bound of
// claims, so that none is served out of its turn beyond what it stated;
// else the shards whose ready keys the view knows to have waited longest
// and those of the leases the batch ends, bounded by the first ready key
// of the others.
func (s *Store) claimCandidates(a *batchArgs, slot *shard, now time.Time, ends, claims []*waiter[batchOp]) (cands []any, bound, name string) {
	if slot != nil {
		var tight *batchOp
		for _, w := range claims {
			c := &w.req
			if c.bounded && (tight == nil || c.bound < tight.bound || c.bound == tight.bound && c.boundName < tight.boundName) {
				tight = c
			}
		}
		if tight != nil {
			bound, name = strconv.FormatInt(tight.bound, 10), tight.boundName
		}
		return []any{a.add(slot)}, bound, name
	}
	if s.perSlot() {
		return s.nodeCandidates(a, now, claims)
	}
	idx, bound, name := s.view.candidates(s.clockNow(now), len(claims)+batchExtra)
	for _, i := range idx {
		cands = append(cands, a.add(s.shards[i]))
	}
	for _, e := range ends {
		if i := a.at[e.req.sh]; !slices.Contains(cands, any(i)) {
			cands = append(cands, i)
		}
	}
	return cands, bound, name
}

// nodeCandidates is claimCandidates for a batch of a cluster's node: the
// shards its Claims picked (served by the node), bounded by the first
// ready key of every other shard as the view knows it — unless no Claim
// of the batch is bounded (each probed maxProbes times already: the view
// may be wrong). Unlike a single Redis's, the shards of the leases it
// ends are not candidates: on a single Redis they are the one shard
// entered anyway, here each would cost two reads more (its sweep and
// ready set) for a key that became ready only now.
func (s *Store) nodeCandidates(a *batchArgs, now time.Time, claims []*waiter[batchOp]) (cands []any, bound, name string) {
	var idx []int
	in := func(sh *shard) {
		if i := a.add(sh); !slices.Contains(cands, any(i)) {
			cands, idx = append(cands, i), append(idx, sh.i)
		}
	}
	bounded := false
	for _, w := range claims {
		if w.req.pick != nil {
			in(w.req.pick)
		}
		bounded = bounded || w.req.bounded
	}
	if bounded {
		bound, name = s.view.boundExcept(s.clockNow(now), idx)
	}
	return cands, bound, name
}

// batchCall runs batch.lua on shards with args, for leases to end whose
// answers are ends values, learns the shards' tails and returns those
// answers and the leases granted.
func (s *Store) batchCall(ctx context.Context, shards []*shard, now time.Time, args []any, ends int) ([]any, []*frontier.Lease, error) {
	reply, err := s.callShards(ctx, batchScript, "claim", shards, now, args, ends+1)
	if err != nil {
		return nil, nil, err
	}
	n := int(intOf(reply[ends]))
	if len(reply) != ends+1+n*(1+leaseLen) {
		return nil, nil, fmt.Errorf("redisstore: claim: %w: reply %v", errCorrupt, reply)
	}
	leases := make([]*frontier.Lease, 0, n)
	for j := range n {
		l := reply[ends+1+j*(1+leaseLen):]
		c := int(intOf(l[0]))
		if c < 1 || c > len(shards) {
			return nil, nil, fmt.Errorf("redisstore: claim: %w: shard %d of %d", errCorrupt, c, len(shards))
		}
		lease, err := s.leaseOf(shards[c-1], now, l[1:1+leaseLen])
		if err != nil {
			return nil, nil, err
		}
		leases = append(leases, lease)
	}
	return reply[:ends], leases, nil
}
