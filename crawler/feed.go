package crawler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/heedcrawl/heed/frontier"
)

// RunFeed crawls like RunSeeds from seeds that arrive on feed while the
// crawl goes on — the lines of a pipe, say: crawling starts with the first
// seed, every later one is scheduled as it arrives (widening the scope like
// a seed given to Run), and the crawl ends once feed is closed and no URL
// is left. A fed seed on a kind of address the first seed is not on
// (loopback, private; see WithAllowPrivate) is refused. RunFeed returns
// ErrNoSeeds if feed closes before any seed arrives.
func (c *Crawler) RunFeed(ctx context.Context, feed <-chan Seed) error {
	var first Seed
	select {
	case s, ok := <-feed:
		if !ok {
			return ErrNoSeeds
		}
		first = s
	case <-ctx.Done():
		return ctx.Err()
	}
	c.mu.Lock()
	c.feed = feed
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.feed = nil
		c.mu.Unlock()
	}()
	return c.RunSeeds(ctx, first)
}

// seedFeed schedules the seeds of a RunFeed as they arrive and keeps the
// crawl's workers from ending while more may come.
type seedFeed struct {
	mu    sync.Mutex
	open  bool
	moved chan struct{} // closed when a seed was scheduled or the feed ended
}

// waiting reports, for a worker that found nothing to do, whether the feed
// is still open; it then waits for the next seed or the feed's end (or for
// stop), and the worker asks the frontier again. A nil feed is never open.
func (f *seedFeed) waiting(stop context.Context) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	if !f.open {
		f.mu.Unlock()
		return false
	}
	moved := f.moved
	f.mu.Unlock()
	select {
	case <-moved:
	case <-stop.Done():
		return false
	}
	return true
}

// signal wakes the workers waiting on the feed; with end, the feed is over.
func (f *seedFeed) signal(end bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if end {
		f.open = false
	}
	close(f.moved)
	f.moved = make(chan struct{})
}

// scheduleFeed schedules the seeds arriving on feed until it closes or ctx ends.
func (r *crawl) scheduleFeed(ctx context.Context, feed <-chan Seed) {
	defer r.feed.signal(true)
	for {
		select {
		case s, ok := <-feed:
			if !ok {
				return
			}
			errs, err := r.fr.AddSeedItems(ctx, []frontier.Item{{URL: s.URL, Meta: s.Meta}})
			switch {
			case err != nil:
				r.fail(fmt.Errorf("crawler: scheduling %s: %w", s.URL, err))
				return
			case errs[0] != nil && !errors.Is(errs[0], frontier.ErrReported): // else reported on its own lease
				r.reportSkip(ctx, s.URL, skipReason(errs[0]), fmt.Errorf("seed skipped: %w", errs[0]))
			}
			r.feed.signal(false)
		case <-ctx.Done():
			return
		}
	}
}
