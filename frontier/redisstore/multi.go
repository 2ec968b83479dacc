package redisstore

import (
	"context"
	"fmt"
	"slices"
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

// perSlot reports whether the calls of the Store that wait at once for
// the same shard share a script entering that shard alone: on a cluster
// (a job of an earlier release, in one slot, keeps a script a call).
func (s *Store) perSlot() bool {
	return !s.oneServer() && !s.legacy()
}

// doneAddingSlot is DoneAdding on a cluster, without a page limit: the
// links of the shards of other nodes than own's go first, each node's in
// a batch of that node (addNodes), then the links of own's node are added
// and l ended in one script there (batch.lua), with the other calls of
// the Store for that node that wait at once. gs are the batch's groups,
// own's last; refused has a place for each link.
func (s *Store) doneAddingSlot(ctx context.Context, l *frontier.Lease, own *shard, gs []group, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits, refused []error) ([]error, error) {
	parts := s.byNode(ctx, gs, own)
	last := parts[len(parts)-1]
	mine := slices.ContainsFunc(last, func(g group) bool { return g.sh == own }) ||
		s.nodeOf(ctx, last[0].sh) == s.nodeOf(ctx, own) && s.nodeOf(ctx, own) != ""
	if !mine {
		last = nil // no link of own's node
	} else {
		parts = parts[:len(parts)-1]
	}
	var others []group
	for _, p := range parts {
		others = append(others, p...)
	}
	if len(others) > 0 {
		if err := s.addNodes(ctx, others, now, batch, lim, refused); err != nil {
			return nil, err
		}
	}
	return s.doneAddingAll(ctx, l, own, last, now, o, batch, lim, refused)
}

// doneAddingAll is DoneAdding on a single Redis, without a page limit: the
// links of every shard are added and l ended in one script, with the
// other calls of the Store that wait at once (batch.lua), instead of one
// script per shard. gs are the batch's groups, own's last (on a cluster,
// own's alone); their answers go into refused, which has a place for
// each link.
func (s *Store) doneAddingAll(ctx context.Context, l *frontier.Lease, own *shard, gs []group, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits, refused []error) ([]error, error) {
	j := slices.IndexFunc(gs, func(g group) bool { return g.sh == own })
	if j < 0 {
		gs, j = append(gs, group{sh: own}), len(gs)
	}
	gs = append(append([]group{gs[j]}, gs[:j]...), gs[j+1:]...) // the lease's shard first
	blocks := make([][]any, len(gs))
	for i, g := range gs {
		blocks[i] = s.addArgs(nil, base(now), g.items(batch), lim, -1)
	}
	b, run := s.batcherOf(ctx, own)
	w, err := b.join(ctx, batchOp{sh: own, now: now, args: s.finishArgs(l, now, o, false), groups: gs, blocks: blocks}, run)
	if err != nil {
		return nil, err
	}
	if w.err != nil {
		return nil, w.err
	}
	r := w.reply
	doneErr := finishAnswer("done adding", r[:1])
	if err := groupAnswers("done adding", r[1:], gs, batch, refused); err != nil {
		return nil, err
	}
	s.unhold(l.Token)
	return refused[:len(batch)], doneErr
}

// addAll is Add on a single Redis, without a page limit (or of one shard
// on a cluster): the items of every shard (gs, the batch's groups) are
// added in one script, with the
// other calls of the Store that wait at once (batch.lua) — a sitemap's
// entries share the script that ends the leases of the pages fetched
// meanwhile. Their answers go into refused.
func (s *Store) addAll(ctx context.Context, gs []group, now time.Time, batch []frontier.Item, lim frontier.Limits, refused []error) error {
	blocks := make([][]any, len(gs))
	for i, g := range gs {
		blocks[i] = s.addArgs(nil, base(now), g.items(batch), lim, -1)
	}
	b, run := s.batcherOf(ctx, gs[0].sh)
	w, err := b.join(ctx, batchOp{sh: gs[0].sh, now: now, groups: gs, blocks: blocks}, run)
	if err != nil {
		return err
	}
	if w.err != nil {
		return w.err
	}
	return groupAnswers("add", w.reply, gs, batch, refused)
}

// groupAnswers reads add.lua's codes of each group of gs, in order, from
// r into refused.
func groupAnswers(op string, r []any, gs []group, batch []frontier.Item, refused []error) error {
	at := 0
	for _, g := range gs {
		if at+len(g.idx) > len(r) {
			return fmt.Errorf("redisstore: %s: %w: reply %v", op, errCorrupt, r)
		}
		got, err := addAnswers(op, r[at:at+len(g.idx)], g.items(batch))
		if err != nil {
			return err
		}
		for j, i := range g.idx {
			refused[i] = got[j]
		}
		at += len(g.idx)
	}
	return nil
}

// learnTail learns the tail t of a reply of shard sh, and publishes the
// shard if it woke.
func (s *Store) learnTail(ctx context.Context, sh *shard, t []any) error {
	sh.joined.Store(true)
	if e, was := intOf(t[6])+1, sh.epoch.Swap(intOf(t[6])+1); was != 0 && was != e {
		// Redis restarted or failed over since the shard's last reply:
		// it may have lost writes.
		s.resetSeen()
		s.stopRunsOn(sh)
		s.epochChanged(sh)
	}
	if id := intOf(t[7]); id != 0 {
		s.memberDied(id)
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
