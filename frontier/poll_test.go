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

// waitingWorkers starts n workers calling fr.Next until Close, and returns
// once all of them wait: waiting receives each time one is about to block
// again, and done ends once all have returned.
func waitingWorkers(t *testing.T, fr *frontier.Frontier, n int) (waiting chan struct{}, done *sync.WaitGroup) {
	t.Helper()
	waiting = make(chan struct{}, 1000)
	frontier.SetWaitHook(fr, func() { waiting <- struct{}{} })
	done = new(sync.WaitGroup)
	for range n {
		done.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), watchdog)
			defer cancel()
			if _, err := fr.Next(ctx); err != frontier.ErrClosed {
				t.Errorf("Next: %v, want ErrClosed", err)
			}
		})
	}
	for range n {
		<-waiting
	}
	return waiting, done
}

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
	waiting, done := waitingWorkers(t, fr, workers)
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

// When the work done elsewhere ends, every waiting worker ends: the poll
// wakes one, and the one that finds the Store idle wakes the others, which
// would otherwise wait for a poll that only the first one re-arms.
func TestPollIdleEndsEveryWaiter(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	store := &busyElsewhereStore{}
	fr := frontier.New(frontier.Config{Store: store, Clock: clock, Poll: 100 * time.Millisecond})
	const workers = 4
	waiting := make(chan struct{}, 1000)
	frontier.SetWaitHook(fr, func() { waiting <- struct{}{} })
	ended := make(chan error, workers)
	for range workers {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), watchdog)
			defer cancel()
			_, err := fr.Next(ctx)
			ended <- err
		}()
	}
	for range workers {
		<-waiting
	}
	store.done.Store(true) // the last lease elsewhere was done
	clock.Advance(100 * time.Millisecond)
	for i := range workers {
		if err := <-ended; err != frontier.ErrExhausted {
			t.Fatalf("worker %d: Next: %v, want ErrExhausted", i, err)
		}
	}
}

// restingElsewhereStore is a shared Store whose keys are all resting, and
// taken by another process whenever they are ready: each Claim says when
// the next is due, and finds none.
type restingElsewhereStore struct {
	frontier.MemoryStore
	claims atomic.Int32
	every  time.Duration
}

func (s *restingElsewhereStore) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	s.claims.Add(1)
	return frontier.Claim{Next: now.Add(s.every)}, nil
}

// A key due again wakes one waiting worker, which asks the Store; the
// others are woken only if it found work: on a shared Store whose keys
// other processes take, each key due costs one question per process, not
// one per worker.
func TestDueKeyWakesOneWaiter(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	store := &restingElsewhereStore{every: 50 * time.Millisecond}
	fr := frontier.New(frontier.Config{Store: store, Clock: clock})
	const workers = 8
	waiting, done := waitingWorkers(t, fr, workers)
	before := store.claims.Load()
	const ticks = 5
	for range ticks {
		clock.Advance(50 * time.Millisecond)
		<-waiting // the woken worker asked the Store and waits again
	}
	if got := store.claims.Load() - before; got != ticks {
		t.Errorf("%d claims for %d due times with %d waiting workers, want one each", got, ticks, workers)
	}
	fr.Close()
	done.Wait()
}

// countingStore counts the Claims made of a MemoryStore.
type countingStore struct {
	frontier.MemoryStore
	claims atomic.Int32
}

func (s *countingStore) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	s.claims.Add(1)
	return s.MemoryStore.Claim(ctx, now, opt)
}

// A lease that ends wakes one waiting worker, which asks the Store (and
// learns when the key is due); the others are not woken for nothing.
func TestLeaseEndWakesOneWaiter(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	store := &countingStore{}
	fr := frontier.New(frontier.Config{Store: store, Clock: clock, Scope: frontier.ScopeAny})
	ctx := context.Background()
	if _, err := fr.AddAll(ctx, []frontier.Item{{URL: "http://a/1"}, {URL: "http://a/2"}}); err != nil {
		t.Fatal(err)
	}
	l, err := fr.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 8
	waiting := make(chan struct{}, 1000)
	frontier.SetWaitHook(fr, func() { waiting <- struct{}{} })
	got := make(chan string, workers)
	for range workers {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), watchdog)
			defer cancel()
			l, err := fr.Next(ctx)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- l.URL
			fr.Done(ctx, l, frontier.Outcome{})
		}()
	}
	for range workers {
		<-waiting
	}
	before := store.claims.Load()
	if err := fr.Done(ctx, l, frontier.Outcome{Rest: time.Second}); err != nil {
		t.Fatal(err)
	}
	<-waiting // the woken worker learnt that a rests, and waits again
	if n := store.claims.Load() - before; n != 1 {
		t.Errorf("a lease that ended cost %d claims with %d workers waiting, want 1", n, workers)
	}
	clock.Advance(time.Second)
	if u := <-got; u != "http://a/2" {
		t.Errorf("once a rested: %s, want http://a/2", u)
	}
	for range workers - 1 { // a/2 done, nothing is left
		if e := <-got; e != frontier.ErrExhausted.Error() {
			t.Errorf("after the last lease ended: %s, want ErrExhausted", e)
		}
	}
}
