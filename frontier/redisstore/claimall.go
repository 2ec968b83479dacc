package redisstore

// Claims for several callers at once, on a single Redis: one script
// (claimmany.lua) leases the items of as many Claims as wait, taken from
// the shards in the order of their first ready keys.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// batchMax bounds the Claims one claimmany.lua call serves, and
// batchExtra is how many candidate shards it reads beyond one a Claim: a
// shard the Store thought ready may hand out nothing (another process
// took its key).
const batchMax, batchExtra = 32, 1

// batcher queues the Claims of a Store on a single Redis: while one
// batch is in flight, the Claims that come wait, and the next batch
// serves them together. The Claim that finds no batch running runs the
// next (it leads); when its batch comes back, it hands the lead to the
// first Claim still waiting.
type batcher struct {
	mu      sync.Mutex
	waiting []*claimWait
	running bool
}

// claimWait is a Claim waiting for a batch.
type claimWait struct {
	now   time.Time
	opt   frontier.ClaimOptions
	lead  chan struct{} // closed (once) when it is to run the next batch
	led   bool
	done  chan struct{} // closed when its batch came back
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
		w := &claimWait{now: now, opt: opt, lead: make(chan struct{}), done: make(chan struct{})}
		if err := s.batch.wait(ctx, w); err != nil {
			return nil, err
		}
		if w.led {
			s.runBatches(ctx, w)
		}
		<-w.done
		if w.err != nil || w.lease != nil {
			return w.lease, w.err
		}
	}
	return nil, nil
}

// wait queues w, and returns once w leads or was taken into a batch; or
// ctx's error, w withdrawn, if ctx ends first.
func (b *batcher) wait(ctx context.Context, w *claimWait) error {
	b.mu.Lock()
	b.waiting = append(b.waiting, w)
	if !b.running {
		b.running, w.led = true, true
		close(w.lead)
	}
	b.mu.Unlock()
	select {
	case <-w.lead:
		return nil
	case <-w.done:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.waiting, w); i >= 0 {
		b.waiting = slices.Delete(b.waiting, i, i+1)
		if w.led {
			b.handOff()
		}
		return ctx.Err()
	}
	return nil // taken into a batch: its answer comes
}

// handOff gives the lead to the first Claim waiting, or stops. b.mu is
// held.
func (b *batcher) handOff() {
	if len(b.waiting) == 0 {
		b.running = false
		return
	}
	next := b.waiting[0]
	next.led = true
	close(next.lead)
}

// take returns the next batch: the Claims waiting first, up to batchMax,
// with the options of the first and, with CallerClock, its now.
func (b *batcher) take(callerClock bool) []*claimWait {
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch []*claimWait
	rest := b.waiting[:0]
	for _, w := range b.waiting {
		if len(batch) < batchMax && (len(batch) == 0 || w.opt == batch[0].opt && (!callerClock || w.now.Equal(batch[0].now))) {
			batch = append(batch, w)
		} else {
			rest = append(rest, w)
		}
	}
	clear(b.waiting[len(rest):])
	b.waiting = rest
	return batch
}

// runBatches runs batches until one has served w, which leads, then
// hands the lead on.
func (s *Store) runBatches(ctx context.Context, w *claimWait) {
	// The batch serves other Claims too: w's caller giving up must not
	// fail theirs.
	ctx = context.WithoutCancel(ctx)
	for {
		batch := s.batch.take(s.opt.CallerClock)
		if len(batch) == 0 {
			break
		}
		s.runBatch(ctx, batch)
		for _, o := range batch {
			close(o.done)
		}
		if slices.Contains(batch, w) {
			break
		}
	}
	s.batch.mu.Lock()
	s.batch.handOff()
	s.batch.mu.Unlock()
}

// runBatch runs claimmany.lua for batch, on the shards the view knows
// ready, and gives each Claim its lease, if any, or the error.
func (s *Store) runBatch(ctx context.Context, batch []*claimWait) {
	first := batch[0]
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
			w.err = err
		case i < len(leases):
			w.lease = leases[i]
			w.lease.Expires = base(w.now).Add(w.lease.Expires.Sub(base(first.now)))
		}
	}
}

// claimMany runs claimmany.lua on the candidate shards cands with args,
// learns their tails and returns the leases granted.
func (s *Store) claimMany(ctx context.Context, cands []int, now time.Time, args []any) ([]*frontier.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := s.prepare(s.shards[cands[0]], claimManyScript, "claim", now, args...)
	reply, err := s.send(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	r.noted()
	n := int(intOf(reply[0]))
	if len(reply) != 1+n*(1+leaseLen)+len(cands)*tailLen {
		return nil, fmt.Errorf("redisstore: claim: %w: reply %v", errCorrupt, reply)
	}
	at := 1 + n*(1+leaseLen)
	for _, i := range cands {
		if err := s.learnTail(ctx, s.shards[i], reply[at:at+tailLen]); err != nil {
			return nil, err
		}
		at += tailLen
	}
	leases := make([]*frontier.Lease, 0, n)
	for j := range n {
		l := reply[1+j*(1+leaseLen):]
		c := int(intOf(l[0]))
		if c < 1 || c > len(cands) {
			return nil, fmt.Errorf("redisstore: claim: %w: candidate %d of %d", errCorrupt, c, len(cands))
		}
		lease, err := s.leaseOf(s.shards[cands[c-1]], now, l[1:1+leaseLen])
		if err != nil {
			return nil, err
		}
		leases = append(leases, lease)
	}
	return leases, nil
}
