package ratelimit_test

import (
	"fmt"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
)

// A key's bucket, as the frontier's Store keeps it. With several requests
// in flight, each start takes the token at the key's delay; an answer's
// Retry-After pause acts on the same bucket; an hour idle earns one token,
// not a burst.
func ExampleBucket() {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(t time.Time) time.Duration { return t.Sub(t0) }
	var b ratelimit.Bucket // full: a key never paced is ready
	const delay = 2 * time.Second

	fmt.Println("first request starts, next at", at(b.Take(t0, delay)))
	fmt.Println("a shorter rest changes nothing:", at(b.Take(t0.Add(time.Second), time.Second)))
	fmt.Println("a 30s Retry-After pause 1s on:", at(b.Take(t0.Add(time.Second), 30*time.Second)))

	idle := t0.Add(time.Hour)
	fmt.Println("after an hour idle, a request starts, next at", at(b.Take(idle, delay)))
	fmt.Println("a second one at once? ready at", at(b.ReadyAt(idle)))
	// Output:
	// first request starts, next at 2s
	// a shorter rest changes nothing: 2s
	// a 30s Retry-After pause 1s on: 31s
	// after an hour idle, a request starts, next at 1h0m2s
	// a second one at once? ready at 1h0m2s
}
