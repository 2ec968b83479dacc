package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
)

// oneServer reports whether every shard of the job is on one server that
// lets a script touch several of them: a single Redis, not a cluster.
func (s *Store) oneServer() bool {
	_, ok := s.c.(*redis.Client)
	return ok && !s.legacy()
}

// doneAddingAll is DoneAdding on a single Redis, without a page limit: the
// links of every shard are added and l ended in one script, with the
// other calls of the Store that wait at once (batch.lua), instead of one
// script per shard. gs are the batch's groups, own's last.
func (s *Store) doneAddingAll(ctx context.Context, l *frontier.Lease, own *shard, gs []group, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if gs[len(gs)-1].sh != own {
		gs = append(gs, group{sh: own})
	}
	gs = append(gs[len(gs)-1:], gs[:len(gs)-1]...) // the lease's shard first
	blocks := make([][]any, len(gs))
	for i, g := range gs {
		blocks[i] = s.addArgs(nil, base(now), g.items(batch), lim, -1)
	}
	w, err := s.ops.join(ctx, batchOp{sh: own, now: now, args: s.finishArgs(l, now, o, false), groups: gs, blocks: blocks}, s.runOps)
	if err != nil {
		return nil, err
	}
	if w.err != nil {
		return nil, w.err
	}
	r := w.reply
	doneErr := finishAnswer("done adding", r[:1])
	refused := make([]error, len(batch))
	at := 1
	for _, g := range gs {
		got, err := addAnswers("done adding", r[at:at+len(g.idx)], g.items(batch))
		if err != nil {
			return nil, err
		}
		for j, i := range g.idx {
			refused[i] = got[j]
		}
		at += len(g.idx)
	}
	s.unhold(l.Token)
	return refused, doneErr
}

// learnTail learns the tail t of a reply of shard sh, and publishes the
// shard if it woke.
func (s *Store) learnTail(ctx context.Context, sh *shard, t []any) error {
	sh.joined.Store(true)
	if e, was := intOf(t[6])+1, sh.epoch.Swap(intOf(t[6])+1); was != 0 && was != e {
		// Redis restarted or failed over since the shard's last reply:
		// it may have lost writes.
		s.resetSeen()
	}
	s.view.learn(sh.i, t, s.opt.CallerClock)
	ver := intOf(t[3])
	switch {
	case ver <= 0:
	case s.oneServer():
		s.view.published(sh.i, ver, intOf(t[1])) // by the script
	default:
		return s.publish(ctx, sh.i, ver, intOf(t[1]))
	}
	return nil
}
