package frontier

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Next returns a lease of an item whose key may be fetched now, blocking
// until one is ready. The key is busy until the lease is passed to Done or
// Requeue (with PerHost > 1, until PerHost leases of it are out). Keys are
// served earliest-ready first, round-robin among keys ready at once, and a
// key's items in FIFO order.
//
// Next returns ErrExhausted when no item is queued and none is leased (a
// leased item may still add links, so until its lease ends Next waits). It
// returns ErrClosed after Close, ctx.Err() if ctx is done, even when an
// item is ready, and a Store failure wrapped in ErrStore.
func (f *Frontier) Next(ctx context.Context) (*Lease, error) {
	f.watch(1)
	defer f.watch(-1)
	alone := false // woken alone: must wake the others on finding work
	for {
		wake, err := f.wakeChan(ctx)
		if err != nil {
			return nil, err
		}
		now := f.clock.Now()
		c, err := f.store.Claim(ctx, now, f.opt)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		if c.Lease != nil {
			if alone {
				f.nudgeOne() // there may be more work: the next one asks
			}
			return c.Lease, nil
		}
		if c.Idle {
			// The others may be waiting for a poll only this call would
			// have re-armed (the work ended in another process): they
			// must ask too, and end.
			f.broadcast()
			return nil, ErrExhausted
		}
		if err := f.wait(ctx, wake, c.Next, true); err == errAlone {
			alone = true
		} else if err != nil {
			return nil, err
		}
	}
}

// NextKey returns a lease of key itself, blocking until the key may be
// fetched and has a free slot: for a request that is not an item's (a
// robots.txt redirect hop to another host), paced with the key's pages.
// End it with Done.
func (f *Frontier) NextKey(ctx context.Context, key string) (*Lease, error) {
	f.watch(1)
	defer f.watch(-1)
	f.mu.Lock()
	f.keyWaiters++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.keyWaiters--
		f.mu.Unlock()
	}()
	for {
		wake, err := f.wakeChan(ctx)
		if err != nil {
			return nil, err
		}
		l, next, err := f.store.ClaimKey(ctx, key, f.clock.Now(), f.opt)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		if l != nil {
			return l, nil
		}
		if err := f.wait(ctx, wake, next, false); err != nil {
			return nil, err
		}
	}
}

// watch counts a Next or NextKey call in (d = 1) or out (d = -1) of those
// broadcast must wake. A call counts from before it first takes the wake
// channel until it returns, so that a change made between its question to
// the Store and its wait closes the channel it holds.
func (f *Frontier) watch(d int) {
	f.mu.Lock()
	f.waiters += d
	f.mu.Unlock()
}

// wakeChan returns the channel the next change closes, taken before the
// Store is asked so that no change is missed, or why Next must return.
func (f *Frontier) wakeChan(ctx context.Context) (chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	return f.wake, nil
}

// errAlone is wait's answer when a wake-up meant for every waiter reached
// this one alone: the time asked for came, or the poll interval passed. A
// waiter that then finds work wakes the others, so that a key ready again
// costs the Store one question, not one per waiting worker (and, on a
// shared Store, not one per worker of every process).
var errAlone = errors.New("frontier: woken alone")

// wait blocks until wake closes, the time at comes (zero: no time), the
// poll interval passes or ctx ends. Waiters for any key (shared) share one
// timer, armed for the earliest time asked, one poll timer and the nudge
// channel: each tick or nudge wakes one of them (errAlone). Others (a key lease) have timers of their
// own, since a wake-up they took would be lost to the rest.
func (f *Frontier) wait(ctx context.Context, wake chan struct{}, at time.Time, shared bool) error {
	var timer, poll <-chan time.Time
	f.mu.Lock()
	switch {
	case at.IsZero():
	case !shared:
		timer = f.clock.After(at.Sub(f.clock.Now()))
	default:
		if f.timer == nil || at.Before(f.timerAt) {
			f.timer = f.clock.After(at.Sub(f.clock.Now()))
			f.timerAt = at
		}
		timer = f.timer
	}
	switch {
	case f.poll <= 0:
	case !shared:
		poll = f.clock.After(f.poll)
	default:
		if f.pollTimer == nil {
			f.pollTimer = f.clock.After(f.poll)
		}
		poll = f.pollTimer
	}
	hook := f.waitHook
	f.mu.Unlock()
	var nudge chan struct{}
	if shared {
		nudge = f.nudge
	}
	woken := func(got <-chan time.Time, isPoll bool) error {
		if !shared {
			return nil
		}
		f.mu.Lock()
		if isPoll && f.pollTimer == got {
			f.pollTimer = nil
		} else if !isPoll && f.timer == got {
			f.timer = nil
		}
		f.mu.Unlock()
		return errAlone
	}
	// The same cases twice: first what is ready at once, without blocking,
	// so that the hook runs only when the call is about to block (a
	// select's default case cannot be made optional).
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
		return nil
	case <-nudge:
		return errAlone
	case <-poll:
		return woken(poll, true)
	case <-timer:
		return woken(timer, false)
	default:
	}
	if hook != nil {
		hook()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
		return nil
	case <-nudge:
		return errAlone
	case <-poll:
		return woken(poll, true)
	case <-timer:
		return woken(timer, false)
	}
}

// nudgeOne wakes one Next waiting (or the next to wait): something changed
// that may have made work ready. If it finds work, it wakes the next one
// in turn, so that a change costs the Store one question per item it made
// ready, plus one — not one per waiting worker.
func (f *Frontier) nudgeOne() {
	select {
	case f.nudge <- struct{}{}:
	default: // a token is waiting already
	}
}

// ended wakes whoever a lease that ended may concern: one Next, or every
// waiter while a NextKey, which waits for its key's slot, is among them.
func (f *Frontier) ended() {
	f.mu.Lock()
	keys := f.keyWaiters > 0
	f.mu.Unlock()
	if keys {
		f.broadcast()
	} else {
		f.nudgeOne()
	}
}

func (f *Frontier) broadcast() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiters == 0 {
		return
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// Close makes blocked and future Next and NextKey calls return ErrClosed:
// no more work is handed out. Add, Done and Requeue keep working, so that
// leases still held can end — and the links of pages they fetched are kept
// in the Store, for a crawl that resumes from it. Close does not close the
// Store.
func (f *Frontier) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	close(f.wake)
	f.wake = make(chan struct{})
}
