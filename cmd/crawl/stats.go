package main

import (
	"context"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

// storeWait bounds how long the progress line and the summary wait for
// the Store's queue figures.
const storeWait = time.Second

// statsNow returns c's Stats for the progress line or a summary. During
// Run, a Store out of reach within storeWait (Redis restarting) leaves the
// queue's figures at zero for that reading: the line must not stall, and
// the crawl itself reports a Store that stays down. After Run, Stats asks
// the Store nothing.
func statsNow(c *crawler.Crawler) crawler.Stats {
	ctx, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	s, _ := c.Stats(ctx) // see above: the counters are whole either way
	return s
}
