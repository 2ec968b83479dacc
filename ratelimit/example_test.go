package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/ratelimit"
)

// A worker's life with the limiter: the scheduler hands a key out once
// ReadyAt has come, the worker's Wait returns at once, and after the request
// ReadyAt already tells the scheduler when the key may be used next.
func Example() {
	ctx := context.Background()
	clock := fakeclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	lim, err := ratelimit.New(ratelimit.Config{MinDelay: time.Second, MaxDelay: 30 * time.Second, Clock: clock})
	if err != nil {
		panic(err)
	}

	u, _ := url.Parse("https://WWW.Example.com/page")
	key := lim.Key(u)                     // also the frontier's and the robots gate's key function
	lim.SetCrawlDelay(key, 5*time.Second) // from the host's robots.txt

	if err := lim.Wait(ctx, key); err != nil { // ready: returns at once
		panic(err)
	}
	// ... the request ...
	lim.Observe(key, http.StatusOK, nil, 80*time.Millisecond, nil)
	lim.Done(key)
	s := lim.Status(key)
	fmt.Printf("%s: next request in %v (%v)\n", key, lim.ReadyAt(key).Sub(clock.Now()), s.Reason)

	// The site says it is overloaded and asks for two minutes' rest.
	clock.Advance(5 * time.Second)
	_ = lim.Wait(ctx, key)
	lim.Observe(key, http.StatusServiceUnavailable, http.Header{"Retry-After": {"120"}}, 0, nil)
	lim.Done(key)
	fmt.Println("paused for", lim.Status(key).PausedUntil.Sub(clock.Now()))

	// A site asking for a one-hour Crawl-delay is crawled at MaxDelay.
	lim.SetCrawlDelay("slow.example", time.Hour)
	s = lim.Status("slow.example")
	fmt.Println("slow.example:", s.Delay, s.Reason, "capped:", s.Capped)

	// Output:
	// www.example.com: next request in 5s (crawl-delay)
	// paused for 2m0s
	// slow.example: 30s crawl-delay capped: true
}

// Failures double a host's delay and successes bring it back.
func ExampleHostLimiter_Observe() {
	clock := fakeclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	lim, _ := ratelimit.New(ratelimit.Config{Jitter: -1, Clock: clock})
	for _, status := range []int{500, 502, 429, 200, 200, 200} {
		lim.Observe("a.example", status, nil, 0, nil)
		s := lim.Status("a.example")
		fmt.Println(status, s.Delay, s.Reason)
	}
	// Output:
	// 500 2s back-off
	// 502 4s back-off
	// 429 8s back-off
	// 200 4s back-off
	// 200 2s back-off
	// 200 1s min-delay
}

// A Policy keeps no state: the host's pacing state is a frontier.HostState
// that the frontier keeps, and the Policy says how long the host rests
// after each answer.
func ExamplePolicy() {
	pol, err := ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: time.Minute})
	if err != nil {
		panic(err)
	}
	var h frontier.HostState // as the frontier hands it out with a lease
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

	pol.SetCrawlDelay("example.com", &h, 5*time.Second, true) // from robots.txt
	fmt.Println("after a 200:", pol.Observe("example.com", &h, now, 200, nil, 80*time.Millisecond, nil))

	header := http.Header{"Retry-After": {"120"}}
	fmt.Println("after a 503 with Retry-After:", pol.Observe("example.com", &h, now, 503, header, 0, nil))
	d, why, _ := pol.Delay(h)
	fmt.Println("delay:", d, why)
	// Output:
	// after a 200: 5s
	// after a 503 with Retry-After: 2m0s
	// delay: 5s crawl-delay
}
