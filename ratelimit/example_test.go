package ratelimit_test

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
)

// A worker's life with a Policy: the politeness key chooses the host's
// pacing state (in a crawler, the frontier hands it out with a lease and
// keeps it), and after each answer the Policy updates the state and says
// how long the host rests.
func Example() {
	keys, err := ratelimit.NewKeys(ratelimit.KeyHost, nil, 0, nil, nil)
	if err != nil {
		panic(err)
	}
	pol, err := ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

	u, _ := url.Parse("https://WWW.Example.com:443/page")
	key := keys.Key(u) // also the frontier's and the robots gate's key function
	var h ratelimit.HostState
	pol.SetCrawlDelay(key, &h, 5*time.Second, true) // from the host's robots.txt

	// ... the request: fetch.Classify tells how it ended ...
	rest := pol.Observe(key, &h, now, ratelimit.Answer{Failure: ratelimit.StatusFailure(http.StatusOK), RTT: 80 * time.Millisecond})
	fmt.Printf("%s: next request in %v (%v)\n", key, rest, pol.Status(key, h, now).Reason)

	// The site says it is overloaded and asks for two minutes' rest.
	now = now.Add(5 * time.Second)
	rest = pol.Observe(key, &h, now, ratelimit.Answer{
		Failure: ratelimit.StatusFailure(http.StatusServiceUnavailable), // ratelimit.FailureThrottled
		Header:  http.Header{"Retry-After": {"120"}},
	})
	fmt.Println("paused for", rest)

	// A site asking for a one-hour Crawl-delay is crawled at MaxDelay.
	var slow ratelimit.HostState
	pol.SetCrawlDelay("slow.example", &slow, time.Hour, true)
	s := pol.Status("slow.example", slow, now)
	fmt.Println("slow.example:", s.Delay, s.Reason, "capped:", s.Capped)

	// Output:
	// www.example.com: next request in 5s (crawl-delay)
	// paused for 2m0s
	// slow.example: 30s crawl-delay capped: true
}

// Failures double a host's delay and successes bring it back.
func ExamplePolicy_Observe() {
	pol, _ := ratelimit.NewPolicy(ratelimit.Config{Jitter: -1})
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var h ratelimit.HostState
	for _, status := range []int{500, 502, 429, 200, 200, 200} {
		pol.Observe("a.example", &h, now, ratelimit.Answer{Failure: ratelimit.StatusFailure(status)})
		d, why, _ := pol.Delay(h)
		fmt.Println(status, d, why)
	}
	// Output:
	// 500 2s back-off
	// 502 4s back-off
	// 429 8s back-off
	// 200 4s back-off
	// 200 2s back-off
	// 200 1s min-delay
}

// A Policy keeps no state: the host's pacing state is a ratelimit.HostState
// that the frontier keeps, and the Policy says how long the host rests
// after each answer.
func ExamplePolicy() {
	pol, err := ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: time.Minute})
	if err != nil {
		panic(err)
	}
	var h ratelimit.HostState // as the frontier hands it out with a lease
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

	pol.SetCrawlDelay("example.com", &h, 5*time.Second, true) // from robots.txt
	fmt.Println("after a 200:", pol.Observe("example.com", &h, now, ratelimit.Answer{RTT: 80 * time.Millisecond}))

	header := http.Header{"Retry-After": {"120"}}
	fmt.Println("after a 503 with Retry-After:", pol.Observe("example.com", &h, now, ratelimit.Answer{Failure: ratelimit.FailureThrottled, Header: header}))
	d, why, _ := pol.Delay(h)
	fmt.Println("delay:", d, why)
	// Output:
	// after a 200: 5s
	// after a 503 with Retry-After: 2m0s
	// delay: 5s crawl-delay
}
