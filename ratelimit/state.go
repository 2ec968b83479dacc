package ratelimit

import "time"

// HostState is the pacing state of one politeness key: when the key may
// next be fetched, and what Policy needs to decide how long it rests after
// each answer. The frontier's Store keeps it with the key's queue and
// Bucket, persists and shares it; Policy computes it. It is defined here,
// beside the policy that reads it, so that the frontier can pace keys with
// this package's buckets without an import cycle.
type HostState struct {
	// NextAllowed is the earliest time the key may be fetched again: when
	// its Bucket has its token back, as the Store last computed it. The
	// Store keeps it to persist and report the bucket's state, and
	// rebuilds the bucket from it on reopening; what a worker hands back
	// in an Outcome is ignored.
	NextAllowed time.Time
	// Delay is the key's effective delay between requests as last
	// computed: a Store that reopens after a stop makes every key wait
	// this long from the reopening, since a request may have been under
	// way when the process stopped.
	Delay time.Duration
	// CrawlDelay is the robots.txt Crawl-delay for us, as last read;
	// HasCrawlDelay says whether there was one.
	CrawlDelay    time.Duration
	HasCrawlDelay bool
	// Backoff is the delay that failures have pushed the key to; zero
	// when healthy.
	Backoff time.Duration
	// RTT is the smoothed response time.
	RTT time.Duration
	// PausedUntil is when a Retry-After pause ends; zero if none.
	PausedUntil time.Time
	// Failures counts consecutive failed requests.
	Failures int
	// ClosedUntil is when the key's robots.txt may be asked for again
	// after it was found unreachable, which RFC 9309 §2.3.1.4 makes a
	// complete disallow: until then the key's queued items are handed out
	// at once, whatever NextAllowed says, to be reported rather than left
	// waiting, and no request is made under their leases (Lease.Closed).
	// Zero when the key is open.
	ClosedUntil time.Time
	// Interrupted is when a Store found that a request to the key may have
	// been cut short — it reopened after its process stopped — or zero. The
	// key must not be asked again before a full delay after it, whatever
	// the delay turns out to be once robots.txt is read (a Crawl-delay the
	// stopped process learnt but could not record). A worker clears it
	// once a request has completed. pebblestore and redisstore keep it
	// (a reopened pebblestore sets it to the reopening anyway).
	Interrupted time.Time
}
