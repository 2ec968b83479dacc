package redisstore

// Rounds: on a cluster, the scripts a Store sends at once go in one
// pipelined round, split by node.

import (
	"context"
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
