package frontier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Done ends l: its item is done, whether the fetch succeeded, failed or was
// disallowed. The key takes o.Pace and rests o.Rest (see Outcome). Each
// lease Next returns must be passed to exactly one of Done or Requeue; a
// lease the Store no longer holds gets ErrLeaseLost.
//
// With o.Revisit set — l's item, with the Visit its fetch found and the
// Due of its next fetch (zero: now) — the item is queued again in the same
// Store operation, its URL still seen and not counted again against the
// limits; a Revisit of another URL or key is refused with ErrRevisit, and
// nothing is done.
func (f *Frontier) Done(ctx context.Context, l *Lease, o Outcome) error {
	return f.end(ctx, l, o, false)
}

// Requeue ends l without finishing its item: it goes back to the front of its
// key's queue (first among the items of its Due), with what it has been
// through (Retries, Redirects, …, its Visit), and the key takes o.Pace and
// rests o.Rest; o.Revisit is ignored. Use it when the worker's slot went
// to fetching robots.txt, robots.txt is temporarily unavailable, or the
// item is to be tried again. A deferred item is neither a duplicate nor
// counted again against limits. An item of a key closed meanwhile (given
// up, or its robots.txt unreachable) is handed out again at once, to be
// reported (Lease.Closed).
func (f *Frontier) Requeue(ctx context.Context, l *Lease, o Outcome) error {
	return f.end(ctx, l, o, true)
}

// DoneAdding is Done for a fetched page whose links are items: they are
// added as AddAll adds them, then l ends as Done ends it — in one Store
// operation when the Store is an DoneAdder (one round trip to a shared
// Store, one batch on disk). errs is AddAll's answer for the items, nil if
// the Store failed; err is Done's, or the Store's failure (ErrStore).
func (f *Frontier) DoneAdding(ctx context.Context, l *Lease, o Outcome, items []Item) (errs []error, err error) {
	aa, ok := f.store.(DoneAdder)
	if !ok || len(items) == 0 || l == nil {
		if len(items) > 0 {
			if errs, err = f.AddAll(ctx, items); err != nil {
				return nil, err
			}
		}
		return errs, f.Done(ctx, l, o)
	}
	now := f.clock.Now()
	if err := revisitOf(l, &o, now); err != nil {
		return nil, err
	}
	errs, batch, at, err := f.prepare(ctx, slices.Clone(items), false)
	if err != nil {
		return nil, err
	}
	o.Rest = max(o.Rest, 0)
	refused, err := aa.DoneAdding(ctx, l, now, o, batch, f.limits)
	f.ended()
	if refused == nil && err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	f.added(errs, batch, at, refused)
	switch {
	case err == nil, errors.Is(err, ErrLeaseLost), errors.Is(err, ErrGivenUp), errors.Is(err, ErrRevisit):
		return errs, err
	}
	return errs, fmt.Errorf("%w: %w", ErrStore, err)
}

// revisitOf checks that o.Revisit, if set, is l's item, and stamps its Due
// with now when zero (on a copy: the caller's item is left as it was).
func revisitOf(l *Lease, o *Outcome, now time.Time) error {
	rv := o.Revisit
	switch {
	case rv == nil:
		return nil
	case rv.URL != l.URL || rv.Key != l.Key || l.URL == "":
		return fmt.Errorf("%w: %s under %q, leased %s under %q", ErrRevisit, rv.URL, rv.Key, l.URL, l.Key)
	case rv.Due.IsZero():
		stamped := *rv
		stamped.Due = now
		o.Revisit = &stamped
	}
	return nil
}

func (f *Frontier) end(ctx context.Context, l *Lease, o Outcome, requeue bool) error {
	if l == nil {
		return ErrLeaseLost
	}
	o.Rest = max(o.Rest, 0)
	now := f.clock.Now()
	var err error
	if requeue {
		o.Revisit = nil
		err = f.store.Requeue(ctx, l, now, o)
	} else {
		if err := revisitOf(l, &o, now); err != nil {
			return err
		}
		err = f.store.Done(ctx, l, now, o)
	}
	f.ended()
	switch {
	case err == nil, errors.Is(err, ErrLeaseLost), errors.Is(err, ErrGivenUp), errors.Is(err, ErrRevisit):
		return err
	}
	return fmt.Errorf("%w: %w", ErrStore, err)
}

// GiveUp stops crawling key: Next hands out its queued items at once,
// whatever the key's pace, with Lease.GivenUp set, and so the new URLs of
// the key that AddAll and DoneAdding queue from now on: the caller reports
// each and ends its lease with Done, so that each URL of the key is
// reported once, whenever it was found, even across a crash of a Store
// that persists. A crawler gives a host up when it keeps failing, so
// that one dead server cannot hold a crawl open.
func (f *Frontier) GiveUp(ctx context.Context, key string) error {
	err := f.store.GiveUp(ctx, key)
	f.broadcast()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}

// EditQueued lets edit change the items queued under key that hold a Visit,
// as QueueEditor.EditQueued says, and wakes a waiting Next, since an item
// may now be due sooner. It returns how many items were changed; an error
// wrapping ErrEdit for an edit refused, errors.ErrUnsupported if the Store
// is not a QueueEditor, or else ErrStore.
func (f *Frontier) EditQueued(ctx context.Context, key string, edit func(*Item) bool) (int, error) {
	qe, ok := f.store.(QueueEditor)
	if !ok {
		return 0, fmt.Errorf("frontier: %T cannot edit queued items: %w", f.store, errors.ErrUnsupported)
	}
	n, err := qe.EditQueued(ctx, key, edit)
	if n > 0 {
		f.nudgeOne()
	}
	if err != nil && !errors.Is(err, ErrEdit) {
		return n, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return n, nil
}
