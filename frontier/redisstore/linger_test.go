package redisstore

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAfter is a timer seam: each wait asks for its duration on asked,
// and ends when the test sends on fire.
type fakeAfter struct {
	asked chan time.Duration
	fire  chan time.Time
}

func newFakeAfter() *fakeAfter {
	return &fakeAfter{asked: make(chan time.Duration, 8), fire: make(chan time.Time)}
}

func (f *fakeAfter) after(d time.Duration) <-chan time.Time {
	f.asked <- d
	return f.fire
}

// TestBatcherLinger: a call that finds the batcher idle runs at once; a
// batch that follows another waits at most linger for more calls, ends
// its wait once a full batch waits, and serves the calls that came
// meanwhile.
func TestBatcherLinger(t *testing.T) {
	const linger = 2 * time.Millisecond
	t0 := time.Unix(1000, 0)
	var clock atomic.Int64 // ns since t0
	fa := newFakeAfter()
	b := batcher[int]{linger: linger, most: 3, after: fa.after}
	b.now = func() time.Time { return t0.Add(time.Duration(clock.Load())) }
	queued := make(chan int, 8)
	b.queued = func(n int) { queued <- n }
	inRun := make(chan []int, 4)
	run := func(b *batcher[int]) []*waiter[int] {
		batch := b.take(func(*int) bool { return true })
		var reqs []int
		for _, w := range batch {
			reqs = append(reqs, w.req)
		}
		inRun <- reqs
		return batch
	}
	answers := make(chan int, 8)
	call := func(req int) {
		got, err := b.join(context.Background(), req, run)
		if err != nil {
			answers <- -1
			return
		}
		answers <- *got
	}

	// Idle: no linger.
	go call(1)
	select {
	case got := <-inRun:
		if !slices.Equal(got, []int{1}) {
			t.Fatalf("first batch %v, want [1]", got)
		}
	case d := <-fa.asked:
		t.Fatalf("a call of an idle batcher lingered %v, want none", d)
	}
	guarded(t, "an answer", answers)
	guarded(t, "a call queued", queued)

	// Half the linger after that batch came back: the next waits the
	// rest, no more, and runs once it passed.
	clock.Add(int64(linger / 2))
	var fired atomic.Bool
	go call(2)
	if d := guarded(t, "a linger asked", fa.asked); d <= 0 || d > linger/2 {
		t.Fatalf("lingered %v, want (0, %v]", d, linger/2)
	}
	go call(3)
	guarded(t, "a call queued", queued)
	guarded(t, "a call queued", queued)
	fired.Store(true)
	fa.fire <- time.Time{}
	if got := guarded(t, "a batch run", inRun); !fired.Load() || !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("second batch %v (linger over: %v), want [2 3] once the linger passed", got, fired.Load())
	}
	guarded(t, "an answer", answers)
	guarded(t, "an answer", answers)

	// Right after: a full batch ends the linger without the timer.
	go call(4)
	if d := guarded(t, "a linger asked", fa.asked); d != linger {
		t.Fatalf("lingered %v right after a batch, want %v", d, linger)
	}
	guarded(t, "a call queued", queued)
	go call(5)
	guarded(t, "a call queued", queued)
	go call(6) // the third: a full batch
	select {
	case got := <-inRun:
		if !slices.Equal(got, []int{4, 5, 6}) {
			t.Fatalf("third batch %v, want [4 5 6]", got)
		}
	case <-time.After(30 * time.Second): // a guard, not a wait
		t.Fatal("after 30 s, a full batch still lingers")
	}
	for range 3 {
		guarded(t, "an answer", answers)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running || len(b.waiting) > 0 || b.full != nil {
		t.Errorf("after the last batch: running %v, %d waiting, full %v", b.running, len(b.waiting), b.full != nil)
	}
}

// TestRoundGate: a batch that finds no round in flight enters at once;
// one that finds a round in flight waits for it to come back, or at most
// gateWait; a round waits for the batches that entered to join it, or
// at most gateWait.
func TestRoundGate(t *testing.T) {
	fa := newFakeAfter()
	g := roundGate{after: fa.after}

	// No round in flight, none coming: no wait either side (a wait
	// would ask fa, whose channel is buffered, and block).
	tk := g.enter()
	tk.leave()
	tk.leave() // once only
	back := g.start()
	select {
	case d := <-fa.asked:
		t.Fatalf("waited %v with no round in flight and no batch coming", d)
	default:
	}

	// A round in flight: a batch that enters waits for it to come back.
	var came atomic.Bool
	entered := make(chan *ticket)
	go func() { entered <- g.enter() }()
	if d := guarded(t, "the batch's wait", fa.asked); d != gateWait {
		t.Fatalf("a batch's wait bounded by %v, want %v", d, gateWait)
	}
	came.Store(true)
	back()
	tk = guarded(t, "the batch entering", entered)
	if !came.Load() {
		t.Fatal("a batch entered before the round in flight came back")
	}

	// The next round waits for it to join.
	var joined atomic.Bool
	started := make(chan func())
	go func() { started <- g.start() }()
	if d := guarded(t, "the round's wait", fa.asked); d != gateWait {
		t.Fatalf("a round's wait bounded by %v, want %v", d, gateWait)
	}
	joined.Store(true)
	tk.leave()
	back = guarded(t, "the round starting", started)
	if !joined.Load() {
		t.Fatal("a round started before the batch coming to it joined")
	}

	// Bounded: a batch that never joins delays a round by gateWait at
	// most, and a round that never comes back a batch likewise.
	go func() { entered <- g.enter() }()
	guarded(t, "the batch's wait", fa.asked)
	fa.fire <- time.Time{} // the round in flight did not come back
	tk = guarded(t, "the batch entering at its bound", entered)
	back()
	go func() { started <- g.start() }()
	guarded(t, "the round's wait", fa.asked)
	fa.fire <- time.Time{} // tk's batch did not join
	guarded(t, "the round starting at its bound", started)()
	tk.leave()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.coming != 0 || g.flight != nil || g.joined != nil {
		t.Errorf("at rest: %d coming, flight %v, joined %v", g.coming, g.flight != nil, g.joined != nil)
	}
}

// guarded receives from ch, failing the test if nothing comes within 30 s:
// a guard, not a wait, so that a gate that never lets go fails the test
// instead of hanging it.
func guarded[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: nothing within 30 s", what)
		panic("unreachable")
	}
}
