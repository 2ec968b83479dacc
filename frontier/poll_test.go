package frontier_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/fakeclock"
)

// busyElsewhereStore is a shared Store whose work is leased by another
// process: it never has an item for us and is never idle, until done.
type busyElsewhereStore struct {
	frontier.MemoryStore
	claims atomic.Int32
	done   atomic.Bool
}

func (s *busyElsewhereStore) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	s.claims.Add(1)
	return frontier.Claim{Idle: s.done.Load()}, nil
}

// Waiting workers on a shared Store poll it once per interval between them,
// not once each.
func TestPollOnceForAllWaiters(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	store := &busyElsewhereStore{}
	fr := frontier.New(frontier.Config{Store: store, Clock: clock, Poll: 100 * time.Millisecond})
	const workers = 8
	waiting := make(chan struct{}, 1000)
	frontier.SetWaitHook(fr, func() { waiting <- struct{}{} })
	var done sync.WaitGroup
	for range workers {
		done.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), watchdog)
			defer cancel()
			if _, err := fr.Next(ctx); err != frontier.ErrClosed {
				t.Errorf("Next: %v, want ErrClosed", err)
			}
		})
	}
	for range workers {
		<-waiting
	}
	before := store.claims.Load()
	const ticks = 5
	for range ticks {
		n := store.claims.Load()
		clock.Advance(100 * time.Millisecond)
		<-waiting // the woken worker asked the Store and waits again
		if store.claims.Load() == n {
			t.Fatal("a poll interval passed without a claim")
		}
	}
	if got := store.claims.Load() - before; got > ticks {
		t.Errorf("%d claims for %d poll intervals with %d waiting workers, want one per interval", got, ticks, workers)
	}
	fr.Close()
	done.Wait()
}
