package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/redistest"
)

// TestBatcher: while a batch is in flight, the calls that come wait, and
// the next batch serves them together, led by the first of them; a call
// whose context ends while it waits is withdrawn and does not block the
// others.
func TestBatcher(t *testing.T) {
	var b batcher[int]
	queued := make(chan int, 8)
	b.queued = func(n int) { queued <- n }
	inRun := make(chan []int, 4)
	release := make(chan struct{})
	run := func(b *batcher[int]) []*waiter[int] {
		batch := b.take(func(*int) bool { return true })
		var reqs []int
		for _, w := range batch {
			reqs = append(reqs, w.req)
			w.req *= 10
		}
		inRun <- reqs
		<-release
		return batch
	}
	answers := make(chan int, 8)
	call := func(ctx context.Context, req int) {
		got, err := b.join(ctx, req, run)
		if err != nil {
			answers <- -1
			return
		}
		answers <- *got
	}
	go call(context.Background(), 1)
	<-queued
	if got := <-inRun; !slices.Equal(got, []int{1}) {
		t.Fatalf("first batch %v, want [1]", got)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	go call(cancelled, 99)
	if n := <-queued; n != 1 {
		t.Fatalf("%d calls waiting, want 1", n)
	}
	cancel()
	if got := <-answers; got != -1 {
		t.Fatalf("a call withdrawn: answer %d, want its context's error", got)
	}
	for _, req := range []int{2, 3, 4} {
		go call(context.Background(), req)
		if n := <-queued; n != req-1 {
			t.Fatalf("%d calls waiting, want %d", n, req-1)
		}
	}
	release <- struct{}{}
	if got := <-answers; got != 10 {
		t.Fatalf("answer %d, want 10", got)
	}
	if got := <-inRun; !slices.Equal(got, []int{2, 3, 4}) {
		t.Errorf("second batch %v, want the three calls that waited, [2 3 4]", got)
	}
	release <- struct{}{}
	var got []int
	for range 3 {
		got = append(got, <-answers)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{20, 30, 40}) {
		t.Errorf("answers %v, want [20 30 40]", got)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running || len(b.waiting) > 0 {
		t.Errorf("after the last batch: running %v, %d waiting", b.running, len(b.waiting))
	}
}

// TestBatchContext: a batch's context ends once every call of it gave
// up, not before.
func TestBatchContext(t *testing.T) {
	a, cancelA := context.WithCancel(context.Background())
	b, cancelB := context.WithCancel(context.Background())
	ctx, release := batchContext([]*waiter[int]{{ctx: a}, {ctx: b}})
	defer release()
	cancelA()
	select {
	case <-ctx.Done():
		t.Fatal("the batch's context ended with one of its two calls")
	default:
	}
	cancelB()
	<-ctx.Done() // the test times out if it never ends
}

// TestFairBatch: Claims made at once, served by batches, take the keys
// that became ready first, across shards, and each item once.
func TestFairBatch(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true, Shards: 64})
	t0 := time.Now()
	var want []string
	for i := range 20 {
		s.lastNow.Store(micros(t0.Add(time.Duration(i) * time.Millisecond)))
		key := fmt.Sprintf("k%d", i)
		mustAdd(t, s, item(key, "/1"))
		if i < 8 {
			want = append(want, "http://"+key+"/1")
		}
	}
	end := t0.Add(time.Second)
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.Claim(ctx, end, opt)
			if err != nil || c.Lease == nil {
				t.Errorf("Claim = %+v, %v", c, err)
				return
			}
			mu.Lock()
			got = append(got, c.Lease.URL)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("8 Claims at once took %v, want the 8 keys ready first %v", got, want)
	}
}
