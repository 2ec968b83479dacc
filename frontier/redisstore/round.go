package redisstore

// Rounds: on a cluster, the scripts a Store sends at once go in one
// pipelined round, split by node.

import (
	"context"
	"sync"
	"time"
)

// roundMax bounds the scripts of one round: a batch of each of that many
// shards.
const roundMax = 256

// roundOp is a script call waiting for a round, and its answer.
type roundOp struct {
	r     *request
	reply []any
	err   error
}

// sendRound runs r as send does; on a cluster with the other scripts of
// the Store that wait at once, in one pipelined round (a pipeline a node,
// go-redis's ClusterClient sends them at once): while a round is in
// flight the scripts that come wait for the next, so that the batches of
// the shards on one node cost that node one read, one fsync (appendfsync
// always) and one reply.
func (s *Store) sendRound(ctx context.Context, r *request) ([]any, error) {
	if !s.perSlot() {
		return s.send(ctx, r, nil)
	}
	if t, ok := ctx.Value(ticketKey{}).(*ticket); ok {
		t.leave() // its batch's script is about to join
	}
	w, err := s.rounds.join(ctx, roundOp{r: r}, s.runRound)
	if err != nil {
		r.sh.giveBackForget(r.forget)
		return nil, err
	}
	return w.reply, w.err
}

// runRound sends the scripts waiting first in one pipelined round, and
// each that failed there, for want of its script or otherwise, on its
// own, with retries (send).
func (s *Store) runRound(b *batcher[roundOp]) []*waiter[roundOp] {
	back := s.gate.start()
	defer back()
	batch := b.take(func(*roundOp) bool { return true })
	if len(batch) == 0 {
		return batch
	}
	ctx, release := batchContext(batch)
	defer release()
	rs := make([]*request, len(batch))
	for i, w := range batch {
		rs[i] = w.req.r
	}
	replies, errs := s.sendMany(ctx, rs)
	for i, w := range batch {
		w.req.reply, w.req.err = replies[i], errs[i]
	}
	return batch
}

// gateWait bounds each wait of the round gate: a batch's for the round
// in flight, a round's for the batches it released.
const gateWait = 2 * time.Millisecond

// roundGate makes a cluster's batches take their calls as late as the
// rounds allow: a batch's script sent while a round is in flight waits
// for the next round anyway, so the batch waits for that round to come
// back before it takes its calls (the calls that come meanwhile join it
// instead of the batch after it), and the next round waits for the
// batches so released to join it (the nodes' scripts keep going in one
// round). Each wait is bounded by gateWait; a batch that finds no round in
// flight takes its calls at once.
type roundGate struct {
	mu     sync.Mutex
	flight chan struct{}                        // closed when the round in flight comes back; nil: none in flight
	coming int                                  // the batches that entered and have not yet joined a round
	joined chan struct{}                        // closed when coming drops to 0, if a round waits for it
	after  func(time.Duration) <-chan time.Time // replaces time.After (tests)
}

// ticket is a batch's place in the gate: left once its script joined a
// round, or it has none to send.
type ticket struct {
	g    *roundGate
	once sync.Once
}

// ticketKey is the context key of a batch's ticket (see sendRound).
type ticketKey struct{}

// enter is a batch's wait before it takes its calls: for the round in
// flight, if any, to come back (at most gateWait); its ticket counts it
// as coming to the next round until it is left.
func (g *roundGate) enter() *ticket {
	g.mu.Lock()
	g.coming++
	flight, after := g.flight, g.after
	g.mu.Unlock()
	if flight != nil {
		g.bounded(flight, after)
	}
	return &ticket{g: g}
}

// leave ends t's place: its batch's script joined a round (or it has
// none).
func (t *ticket) leave() {
	t.once.Do(func() {
		g := t.g
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.coming--; g.coming == 0 && g.joined != nil {
			close(g.joined)
			g.joined = nil
		}
	})
}

// start is a round's wait before it takes its scripts, for the batches
// coming to join it (at most gateWait); the round is in flight from then
// until the returned func is called.
func (g *roundGate) start() (back func()) {
	g.mu.Lock()
	after := g.after
	if g.coming > 0 {
		if g.joined == nil {
			g.joined = make(chan struct{})
		}
		joined := g.joined
		g.mu.Unlock()
		g.bounded(joined, after)
		g.mu.Lock()
	}
	flight := make(chan struct{})
	g.flight = flight
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.flight = nil
		g.mu.Unlock()
		close(flight)
	}
}

// bounded waits for ch to close, at most gateWait.
func (g *roundGate) bounded(ch chan struct{}, after func(time.Duration) <-chan time.Time) {
	if after != nil {
		select {
		case <-ch:
		case <-after(gateWait):
		}
		return
	}
	t := time.NewTimer(gateWait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}
