package ratelimit

import "time"

// Clock is the time source heed paces by: the frontier's schedule and its
// stores, the robots.txt cache and the crawler all read one. A nil Clock in
// any of their configurations means real time (SystemClock). Tests pass a
// clock they advance by hand; any type with these two methods will do.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock is real time: time.Now and time.After.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
