package pebblestore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/heedcrawl/heed/frontier"
)

// Done implements frontier.Store: the item's entry goes, the entry of its
// revisit (o.Revisit) comes into the key's due part, and the key's record
// and the checkpoint change, in one batch.
func (s *Store) Done(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	return s.end(ctx, l, now, o, false)
}

// Requeue implements frontier.Store: the item's entry takes what it has
// been through and goes back to its place — the front of its run, or its
// position in the due part — and the key's record changes, in one batch.
func (s *Store) Requeue(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	return s.end(ctx, l, now, o, true)
}

func (s *Store) end(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, requeue bool) error {
	unlock, err := s.lockToEnd(ctx, o)
	if err != nil {
		return err
	}
	defer unlock()
	ls, ok := s.leases[l.Token]
	if !ok || ls.key != l.Key {
		return frontier.ErrLeaseLost
	}
	if requeue {
		o.Revisit = nil // Requeue ignores it
	} else if err := checkRevisit(l, ls, o); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	q, err := s.endTo(b, l, ls, now, o, requeue)
	if q == nil {
		return err // the Store failed
	}
	if err := s.apply(b); err != nil {
		return err
	}
	s.forgetIfIdle(l.Key, q)
	return err
}

// lockToEnd takes the locks that ending a lease with o needs — cpMu too
// when o carries a checkpoint and a BeforeSync holds such ends back — and
// returns how to release them, or why the Store cannot be used.
func (s *Store) lockToEnd(ctx context.Context, o frontier.Outcome) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cp := o.Checkpoint != nil && s.opts.BeforeSync != nil
	if cp {
		s.cpMu.Lock()
	}
	s.mu.Lock()
	unlock = func() {
		s.mu.Unlock()
		if cp {
			s.cpMu.Unlock()
		}
	}
	if err := s.usable(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// checkRevisit returns ErrRevisit if o.Revisit is not the item of l (held
// as ls).
func checkRevisit(l *frontier.Lease, ls lease, o frontier.Outcome) error {
	if rv := o.Revisit; rv != nil && (!ls.item || rv.URL != l.URL || rv.Key != l.Key) {
		return fmt.Errorf("%w: %s under %q, for a lease of %s under %q", frontier.ErrRevisit, rv.URL, rv.Key, l.URL, l.Key)
	}
	return nil
}

// endTo writes into b what ending lease l (held as ls) does, and changes
// the Store's state in memory accordingly: o.Revisit, checked, is queued.
// It returns the key's queue, or nil and an error if the Store failed.
// s.mu is held.
func (s *Store) endTo(b *pebble.Batch, l *frontier.Lease, ls lease, now time.Time, o frontier.Outcome, requeue bool) (*queue, error) {
	delete(s.leases, l.Token)
	q := s.queues[l.Key]
	if q == nil || ls.inDue && q.due == nil { // cannot be: a key with a lease keeps its state
		return nil, s.fail(fmt.Errorf("lease of %q without its queue", l.Key))
	}
	requeue = requeue && ls.item
	if !ls.item {
		q.outState().keyLeases--
	} else {
		if ls.inDue {
			q.unleaseDue(ls.pos)
			s.scratch = dueKey(s.scratch[:0], l.Key, ls.pos)
		} else {
			q.unlease(ls.seq)
			s.scratch = queueKey(s.scratch[:0], l.Key, ls.seq)
		}
		switch {
		case requeue && !ls.inDue && l.Item.Visit != nil:
			// An item of the run given a Visit moves to the due part,
			// where EditQueued looks for items with one, at the place
			// its entry in the run had.
			b.Delete(s.scratch, nil)
			s.queueDue(b, l.Key, q, &l.Item, ls.seq)
		case requeue:
			s.setItem(b, &l.Item) // in place, with what it has been through
			q.release(ls)
		default:
			b.Delete(s.scratch, nil)
		}
	}
	if o.Revisit != nil {
		s.queueItem(b, l.Key, q, o.Revisit, true)
	}
	s.reportHead(l.Key, q)
	s.sched.End(l.Key, now, o, requeue)
	s.setRecord(b, l.Key, q)
	if o.Checkpoint != nil {
		// A lease ended with nothing written to the caller's output
		// (a URL disallowed, a robots.txt) carries the checkpoint of
		// the end before it, which is written already.
		if !bytes.Equal(o.Checkpoint, s.checkpoint) {
			cp := bytes.Clone(o.Checkpoint)
			b.Set(keyCheckpoint, cp, nil)
			s.checkpoint = cp
		}
		s.applied = true
	}
	return q, nil
}

// GiveUp implements frontier.Store: the key's record is marked given up in
// one batch; its queued items stay, to be handed out and done one by one,
// each with the checkpoint of its report.
func (s *Store) GiveUp(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	q, err := s.queue(key)
	if err != nil {
		return err
	}
	s.sched.GiveUp(key)
	b := s.db.NewBatch()
	defer b.Close()
	s.setRecord(b, key, q)
	if err := s.apply(b); err != nil {
		return err
	}
	s.forgetIfIdle(key, q)
	return nil
}
