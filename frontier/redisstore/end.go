package redisstore

// Ending leases: Done, Requeue, their checkpoints, and giving keys up.

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// Done implements frontier.Store.
func (s *Store) Done(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	return s.end(ctx, l, now, o, false)
}

// Requeue implements frontier.Store.
func (s *Store) Requeue(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	return s.end(ctx, l, now, o, true)
}

// end ends l with o (requeue: Requeue), and notes the items this process
// had done under it if the lease was lost (lost.go).
func (s *Store) end(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, requeue bool) error {
	done := s.runDone(l, o, requeue)
	err := s.endLease(ctx, l, now, o, requeue)
	s.noteLost(err, done)
	return err
}

func (s *Store) endLease(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, requeue bool) error {
	op := "done"
	if requeue {
		op = "requeue"
		o.Revisit = nil
	}
	if err := checkRevisit(l, o); err != nil {
		return err
	}
	if err := s.setup(ctx); err != nil {
		return err
	}
	sh := s.shardOf(l.Key)
	if shardOfToken(l.Token) != sh.i {
		return frontier.ErrLeaseLost // not a token of the key's shard
	}
	if !requeue {
		if deferred, err := s.deferDone(ctx, sh, l, now, o); err != nil || deferred {
			return err // if deferred, the run's next item is handed out next (run.go)
		}
	}
	if s.oneServer() || s.perSlot() {
		b, run := s.batcherOf(ctx, sh)
		w, err := b.join(ctx, batchOp{sh: sh, now: now, args: s.finishArgs(l, now, o, requeue)}, run)
		if err != nil {
			return err
		}
		if w.err != nil {
			return w.err
		}
		s.unhold(l.Token)
		return finishAnswer(op, w.reply[:1])
	}
	r, err := s.call(ctx, sh, finishScript, op, now, s.finishArgs(l, now, o, requeue)...)
	if err != nil {
		return err
	}
	s.unhold(l.Token)
	return finishAnswer(op, r)
}

// callShards runs sc, a script of several shards on a single Redis, or
// of one on a cluster (batch.lua), with args: the request is the first
// shard's (its memo is in that shard's slot). The reply's last tails are
// the shards', which it learns; it returns the rest, of at least n values.
func (s *Store) callShards(ctx context.Context, sc script, op string, shards []*shard, now time.Time, args []any, n int) ([]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := s.prepare(shards[0], sc, op, now, args...)
	reply, err := s.sendRound(ctx, r)
	if err != nil {
		return nil, err
	}
	r.noted()
	at := len(reply) - len(shards)*tailLen
	if at < n {
		return nil, fmt.Errorf("redisstore: %s: %w: reply %v", op, errCorrupt, reply)
	}
	for i, sh := range shards {
		if err := s.learnTail(ctx, sh, reply[at+i*tailLen:at+(i+1)*tailLen]); err != nil {
			return nil, err
		}
	}
	s.answeredBy(r, shards[1:]...)
	return reply[:at], nil
}

// finishArgs returns finish.lua's arguments for ending l with o.
func (s *Store) finishArgs(l *frontier.Lease, now time.Time, o frontier.Outcome, requeue bool) []any {
	var item []byte
	if requeue && l.URL != "" {
		item = encodeItem(nil, &l.Item) // with what it has been through since
	}
	cp := o.Checkpoint
	if cp == nil {
		cp = []byte{}
	} else if !s.legacy() {
		cp = s.stampCheckpoint(cp)
	}
	// ClosedUntil goes as a duration, like Rest: Redis decides on its
	// own clock.
	closedFor := int64(0)
	if !o.Pace.ClosedUntil.IsZero() {
		closedFor = max(o.Pace.ClosedUntil.Sub(base(now)).Microseconds(), 0)
	}
	var revisit []byte
	var due string
	if !requeue && o.Revisit != nil {
		revisit, due = encodeItem(nil, o.Revisit), s.dueArg(o.Revisit.Due, base(now))
	}
	handed, earlier, dues, rv := s.runEnd(l.Token, now)
	if o.Revisiting != nil {
		rv = o.Revisiting
	}
	var revisiting []byte
	if rv != nil {
		revisiting, _ = rv.MarshalBinary() // never fails
	}
	return []any{counterOf(l.Token), l.Key, flag(requeue), item,
		encodeHost(&o.Pace), ceilMicros(o.Pace.Delay), ceilMicros(o.Rest),
		flag(o.Checkpoint != nil), cp, s.opt.Checkpoint, closedFor, revisit, due, revisiting,
		handed, earlier, dues}
}

// stampCheckpoint returns cp behind its stamp, 8 bytes big-endian: µs on
// the Store's clock, and later than the stamp of every checkpoint the
// Store stored before, so that Checkpoint finds the last of the shards'.
func (s *Store) stampCheckpoint(cp []byte) []byte {
	t := time.Now().UnixMicro()
	for {
		last := s.cpStamp.Load()
		t = max(t, last+1)
		if s.cpStamp.CompareAndSwap(last, t) {
			break
		}
	}
	return append(binary.BigEndian.AppendUint64(nil, uint64(t)), cp...)
}

// finishAnswer reads finish's reply r.
func finishAnswer(op string, r []any) error {
	if len(r) != 1 {
		return fmt.Errorf("redisstore: %s: %w: reply %v", op, errCorrupt, r)
	}
	switch intOf(r[0]) {
	case 0:
		return nil
	case 1:
		return frontier.ErrLeaseLost
	}
	return fmt.Errorf("redisstore: %s: %w: reply %v", op, errCorrupt, r)
}

// GiveUp implements frontier.Store.
func (s *Store) GiveUp(ctx context.Context, key string) error {
	if err := s.setup(ctx); err != nil {
		return err
	}
	s.stopRuns(key)
	_, err := s.call(ctx, s.shardOf(key), giveUpScript, "give up", s.addNow(), key)
	return err
}
