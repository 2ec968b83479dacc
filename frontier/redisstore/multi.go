package redisstore

import (
	"context"
	"fmt"
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

// doneAddingAll is DoneAdding on a single Redis, without a page limit: one
// script (multi.lua) adds the links of every shard and ends l, instead of
// one script per shard. gs are the batch's groups, own's last.
func (s *Store) doneAddingAll(ctx context.Context, l *frontier.Lease, own *shard, gs []group, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if gs[len(gs)-1].sh != own {
		gs = append(gs, group{sh: own})
	}
	gs = append(gs[len(gs)-1:], gs[:len(gs)-1]...) // the lease's shard first
	args := append(s.finishArgs(l, now, o, false), len(gs))
	blocks := make([][]any, len(gs))
	for i, g := range gs {
		blocks[i] = s.addArgs(nil, base(now), g.items(batch), lim, -1)
		args = append(args, g.sh.prefix, g.sh.keys[0], flag(g.sh.joined.Load()), len(blocks[i]))
	}
	for _, b := range blocks {
		args = append(args, b...)
	}
	r, err := s.callAll(ctx, own, now, args)
	if err != nil {
		return nil, err
	}
	refused := make([]error, len(batch))
	if len(r) < 1 {
		return nil, fmt.Errorf("redisstore: done adding: %w: reply %v", errCorrupt, r)
	}
	doneErr := finishAnswer("done adding", r[:1])
	at := 1
	for _, g := range gs {
		n := len(g.idx)
		if len(r) < at+n+tailLen {
			return nil, fmt.Errorf("redisstore: done adding: %w: reply %v", errCorrupt, r)
		}
		got, err := addAnswers("done adding", r[at:at+n], g.items(batch))
		if err != nil {
			return nil, err
		}
		for j, i := range g.idx {
			refused[i] = got[j]
		}
		if err := s.learnTail(ctx, g.sh, r[at+n:at+n+tailLen]); err != nil {
			return nil, err
		}
		at += n + tailLen
	}
	s.unhold(l.Token)
	return refused, doneErr
}

// callAll runs multi.lua with args, as call runs a script of one shard:
// the request is own's (its memo is in own's slot); the reply's tails are
// left to the caller.
func (s *Store) callAll(ctx context.Context, own *shard, now time.Time, args []any) ([]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := s.prepare(own, multiScript, "done adding", now, args...)
	reply, err := s.send(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	r.noted()
	return reply, nil
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
