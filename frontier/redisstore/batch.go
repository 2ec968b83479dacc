package redisstore

// Batches: the calls of a Store that wait at once share one script.

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// batchMax bounds the calls one batch serves.
const batchMax = 32

// batcher queues the calls of a Store (Claims, or Dones) on a single
// Redis, or those of one shard on a cluster: while one batch is in flight, the calls that come wait, and the
// next batch serves them together. The call that finds no batch running
// runs the next (it leads); when a batch that served it comes back, it
// hands the lead to the first call still waiting.
type batcher[R any] struct {
	mu      sync.Mutex
	waiting []*waiter[R]
	running bool
	most    int         // the most calls a batch serves; 0: batchMax
	queued  func(n int) // if set, called with the calls waiting once a call queued (tests)

	// linger, if > 0: a batch starts no sooner than linger after the
	// previous one came back, unless a full batch (most) waits — so that
	// a busy batcher's calls share fewer, larger batches, each waiting
	// at most linger more; a call that finds the batcher idle that long
	// runs at once.
	linger time.Duration
	back   time.Time     // when the last batch came back
	full   chan struct{} // closed when a full batch waits, while the lead lingers
	// now and after replace time.Now and time.After (tests).
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

// waiter is a call waiting for a batch: its request and answer.
type waiter[R any] struct {
	req  R
	ctx  context.Context // the caller's
	lead chan struct{}   // closed (once) when it is to run the next batch
	led  bool
	done chan struct{} // closed when its batch came back
}

// join queues req and returns it answered, by the batches run (each run
// serves the calls it takes from b, and returns them); or ctx's error,
// req withdrawn, if ctx ends before a batch took it.
func (b *batcher[R]) join(ctx context.Context, req R, run func(*batcher[R]) []*waiter[R]) (*R, error) {
	w := &waiter[R]{req: req, ctx: ctx, lead: make(chan struct{}), done: make(chan struct{})}
	if err := b.wait(ctx, w); err != nil {
		return nil, err
	}
	if w.led {
		for {
			b.settle()
			batch := run(b)
			b.mu.Lock()
			if b.linger > 0 {
				b.back = b.clock()
			}
			b.mu.Unlock()
			for _, o := range batch {
				close(o.done)
			}
			if len(batch) == 0 || slices.Contains(batch, w) {
				break
			}
		}
		b.mu.Lock()
		b.handOff()
		b.mu.Unlock()
	}
	<-w.done
	return &w.req, nil
}

// batchContext returns the context of serving batch: a batch serves
// several calls, and is cancelled only once every one of them gave up
// (its context ended). release frees it.
func batchContext[R any](batch []*waiter[R]) (ctx context.Context, release func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var live atomic.Int64
	live.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, w := range batch {
		stops[i] = context.AfterFunc(w.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// wait queues w, and returns once w leads or was taken into a batch; or
// ctx's error, w withdrawn, if ctx ends first.
func (b *batcher[R]) wait(ctx context.Context, w *waiter[R]) error {
	b.mu.Lock()
	b.waiting = append(b.waiting, w)
	if !b.running {
		b.running, w.led = true, true
		close(w.lead)
	}
	if b.full != nil && len(b.waiting) >= b.mostCalls() {
		close(b.full)
		b.full = nil
	}
	n, queued := len(b.waiting), b.queued
	b.mu.Unlock()
	if queued != nil {
		queued(n)
	}
	select {
	case <-w.lead:
		return nil
	case <-w.done:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.waiting, w); i >= 0 {
		b.waiting = slices.Delete(b.waiting, i, i+1)
		if w.led {
			b.handOff()
		}
		return ctx.Err()
	}
	return nil // taken into a batch: its answer comes
}

// handOff gives the lead to the first call waiting, or stops. b.mu is
// held.
func (b *batcher[R]) handOff() {
	if len(b.waiting) == 0 {
		b.running = false
		return
	}
	next := b.waiting[0]
	next.led = true
	close(next.lead)
}

// take returns the next batch: the calls waiting first, up to b.most
// (batchMax if 0), that fit (fits is asked in order, and told of each
// call it took).
func (b *batcher[R]) take(fits func(w *R) bool) []*waiter[R] {
	b.mu.Lock()
	defer b.mu.Unlock()
	most := b.mostCalls()
	var batch []*waiter[R]
	rest := b.waiting[:0]
	for _, w := range b.waiting {
		if len(batch) < most && fits(&w.req) {
			batch = append(batch, w)
		} else {
			rest = append(rest, w)
		}
	}
	clear(b.waiting[len(rest):])
	b.waiting = rest
	return batch
}

// mostCalls is the most calls a batch serves. b.mu is held.
func (b *batcher[R]) mostCalls() int {
	if b.most == 0 {
		return batchMax
	}
	return b.most
}

// settle is the lead's linger before its batch: it returns once linger
// passed since the last batch came back, or a full batch waits (at once
// if either holds already, or b has no linger).
func (b *batcher[R]) settle() {
	b.mu.Lock()
	if b.linger <= 0 {
		b.mu.Unlock()
		return
	}
	d := b.linger - b.clock().Sub(b.back)
	if d <= 0 || len(b.waiting) >= b.mostCalls() {
		b.mu.Unlock()
		return
	}
	full := make(chan struct{})
	b.full = full
	after := b.after
	b.mu.Unlock()
	if after == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-full:
		}
	} else {
		select {
		case <-after(d):
		case <-full:
		}
	}
	b.mu.Lock()
	if b.full == full {
		b.full = nil
	}
	b.mu.Unlock()
}

// clock is b.now, or time.Now.
func (b *batcher[R]) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}
