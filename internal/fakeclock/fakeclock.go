// Package fakeclock provides a manually advanced clock for tests of code that
// paces itself by time: the pacing policy, the frontier's schedule and the
// robots gate. It satisfies ratelimit.Clock (Now, After), the one clock
// heed's packages take, so tests are exact and never sleep.
package fakeclock

import (
	"sort"
	"sync"
	"time"
)

// Clock is a fake clock. Time moves only when Advance or Set is called.
// The zero value is not usable; call New.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*waiter
	changed chan struct{} // closed and replaced whenever waiters change
}

type waiter struct {
	at      time.Time
	ch      chan time.Time
	stopped bool
}

// New returns a fake clock reading start.
func New(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the time elapsed since t on this clock.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// After returns a channel that receives the clock's time once it has been
// advanced by at least d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	return c.NewTimer(d).C
}

// Timer is the fake counterpart of time.Timer.
type Timer struct {
	C <-chan time.Time
	c *Clock
	w *waiter
}

// Stop prevents the timer from firing. It reports whether it stopped it.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, w := range t.c.waiters {
		if w == t.w {
			t.c.waiters = append(t.c.waiters[:i], t.c.waiters[i+1:]...)
			t.c.notifyLocked()
			return true
		}
	}
	return false
}

// NewTimer returns a timer that fires once the clock has advanced by d.
func (c *Clock) NewTimer(d time.Duration) *Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &waiter{at: c.now.Add(d), ch: make(chan time.Time, 1)}
	t := &Timer{C: w.ch, c: c, w: w}
	if d <= 0 {
		w.ch <- c.now
		return t
	}
	c.waiters = append(c.waiters, w)
	c.notifyLocked()
	return t
}

// Advance moves the clock forward by d and fires every timer that is due,
// in order of their deadlines.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.setLocked(c.now.Add(d))
	c.mu.Unlock()
}

// Set moves the clock to t (never backwards) and fires the due timers.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.setLocked(t)
	}
	c.mu.Unlock()
}

func (c *Clock) setLocked(t time.Time) {
	c.now = t
	sort.SliceStable(c.waiters, func(i, j int) bool { return c.waiters[i].at.Before(c.waiters[j].at) })
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.ch <- t
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
	c.notifyLocked()
}

func (c *Clock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Waiters returns how many timers are pending.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// BlockUntil blocks until at least n timers are pending, so a test can
// advance the clock only once the code under test is waiting on it. It is
// the synchronisation that replaces sleeps in tests.
func (c *Clock) BlockUntil(n int) {
	for {
		c.mu.Lock()
		if len(c.waiters) >= n {
			c.mu.Unlock()
			return
		}
		ch := c.changed
		c.mu.Unlock()
		<-ch
	}
}

// NextDeadline returns the earliest pending timer deadline and true, or the
// zero time and false when no timer is pending.
func (c *Clock) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiters) == 0 {
		return time.Time{}, false
	}
	min := c.waiters[0].at
	for _, w := range c.waiters[1:] {
		if w.at.Before(min) {
			min = w.at
		}
	}
	return min, true
}
