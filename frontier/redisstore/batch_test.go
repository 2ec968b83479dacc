package redisstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"

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
	done, claimed := claimConcurrently(t, s, 8, t0.Add(time.Second), opt)
	<-done
	got := claimed()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("8 Claims at once took %v, want the 8 keys ready first %v", got, want)
	}
}

// firstScriptGate holds the first script call until gate is closed;
// held is closed once it holds it: the batch of that call is taken, and
// the calls made after held wait for the next one. (A batcher's queued
// hook says that a call queued, not that its batch was taken.)
type firstScriptGate struct {
	once       sync.Once
	gate, held chan struct{}
}

func newFirstScriptGate() *firstScriptGate {
	return &firstScriptGate{gate: make(chan struct{}), held: make(chan struct{})}
}

// wait waits until the gate holds the first script; a guard, not a wait:
// a call that never sends one fails the test instead of hanging it.
func (h *firstScriptGate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.held:
	case <-time.After(30 * time.Second):
		t.Fatal("no script reached the gate")
	}
}

// watchQueue reports the calls that queue in s's batcher (on a single
// Redis), and returns wait, which waits for the next one to have queued;
// a guard, not a wait: a call that never queues fails the test instead of
// hanging it. Calls beyond the few a test waits for are not reported.
func watchQueue(t *testing.T, s *Store) (wait func()) {
	queued := make(chan int, 4)
	s.ops.queued = func(n int) {
		select {
		case queued <- n:
		default:
		}
	}
	return func() {
		t.Helper()
		select {
		case <-queued:
		case <-time.After(30 * time.Second):
			t.Fatal("a call did not queue")
		}
	}
}

// heldDone loads batch.lua, then ends lease l of s with a Done whose
// script is held until the test closes gate.gate: the calls the test
// makes meanwhile queue for the next batch (wait waits for each). count
// counts the scripts from then on; done gets the Done's answer.
func heldDone(t *testing.T, c *redis.Client, s *Store, l *frontier.Lease) (gate *firstScriptGate, count *countingHook, wait func(), done <-chan error) {
	t.Helper()
	if err := batchScript.load(ctx, c); err != nil { // no NOSCRIPT to count
		t.Fatal(err)
	}
	gate, count = newFirstScriptGate(), new(countingHook)
	c.AddHook(gate)
	c.AddHook(count)
	wait = watchQueue(t, s)
	answer := make(chan error, 1)
	go func() { answer <- s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}) }()
	gate.wait(t) // its batch, itself alone, held in its script
	wait()       // the Done's own queueing
	return gate, count, wait, answer
}

// queueClaims makes n Claims on s, each once the one before queued
// (wait, of watchQueue), and returns their answers as they come.
func queueClaims(t *testing.T, s *Store, n int, wait func()) <-chan frontier.Claim {
	t.Helper()
	claims := make(chan frontier.Claim, n)
	for range n {
		go func() {
			cl, err := s.Claim(ctx, time.Now(), opt)
			if err != nil {
				t.Errorf("Claim: %v", err)
			}
			claims <- cl
		}()
		wait()
	}
	return claims
}

func (h *firstScriptGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *firstScriptGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if scriptCall(cmd) {
			h.once.Do(func() {
				close(h.held)
				<-h.gate
			})
		}
		return next(ctx, cmd)
	}
}

func (h *firstScriptGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestBatchClaimsInTurn: a batch of many Claims on one shard — more than
// batch.lua reads of the ready set at once — takes the keys in the order
// they became ready, each key at most PerHost times, each item once.
func TestBatchClaimsInTurn(t *testing.T) {
	for _, perHost := range []int{1, 2} {
		t.Run(fmt.Sprintf("perhost%d", perHost), func(t *testing.T) {
			srv := redistest.Start(t)
			gate := newFirstScriptGate()
			c := srv.Client()
			s, err := New(c, newJob(t), Options{CallerClock: true, Shards: 1})
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			const keys, claims = 40, 25
			for i := range keys {
				s.lastNow.Store(micros(t0.Add(time.Duration(i) * time.Millisecond)))
				key := fmt.Sprintf("k%02d", i)
				mustAdd(t, s, item(key, "/1"), item(key, "/2"))
			}
			if err := batchScript.load(ctx, c); err != nil { // no NOSCRIPT to count
				t.Fatal(err)
			}
			// A member before the count: its heartbeat is not a Claim's.
			s.live.manual = true
			if err := s.ensureMember(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
			c.AddHook(gate)
			count := new(countingHook)
			c.AddHook(count)
			queued := make(chan int, claims+1)
			s.ops.queued = func(n int) { queued <- n }
			o := frontier.ClaimOptions{PerHost: perHost, Lease: time.Minute}
			// The first Claim's batch is held until every other waits (or
			// every Claim came back: they failed).
			first, claimedFirst := claimConcurrently(t, s, 1, t0.Add(time.Second), o)
			gate.wait(t)
			done, claimed := claimConcurrently(t, s, claims-1, t0.Add(time.Second), o)
		wait:
			for {
				select {
				case n := <-queued:
					if n == claims-1 {
						break wait
					}
				case <-done:
					break wait
				case <-time.After(30 * time.Second): // a guard, not a wait: they queue at once
					t.Error("the Claims did not all queue")
					break wait
				}
			}
			close(gate.gate)
			<-first
			<-done
			got := append(claimedFirst(), claimed()...)
			var want []string
			for i := 0; len(want) < claims; i++ {
				for p := 1; p <= perHost && len(want) < claims; p++ {
					want = append(want, fmt.Sprintf("http://k%02d/%d", i, p))
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%d Claims in two batches took %v, want %v", claims, got, want)
			}
			if n := count.scripts.Load(); n != 2 {
				t.Errorf("%d Claims ran %d scripts, want 2: the first alone, then one batch of the others", claims, n)
			}
		})
	}
}

// TestBatchErrorSettles: a batch that fails part-way (a DoneAdding
// refused: the job's seen-set is of the other kind) leaves what Redis
// kept of it consistent — the Done before it in the same batch ended its
// lease, record, counters and all.
func TestBatchErrorSettles(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	fp := mustNew(t, srv, job, Options{Shards: 1})
	mustAdd(t, fp, item("a", "/1"), item("b", "/1"), item("c", "/1"))
	c := srv.Client()
	exact, err := New(c, job, Options{ExactSeen: true})
	if err != nil {
		t.Fatal(err)
	}
	var ls []*frontier.Lease
	for range 3 {
		ls = append(ls, claimAt(t, exact, time.Now(), opt).Lease)
	}
	if err := batchScript.load(ctx, c); err != nil {
		t.Fatal(err)
	}
	gate := newFirstScriptGate()
	c.AddHook(gate)
	queued := make(chan int, 4)
	exact.ops.queued = func(n int) { queued <- n }
	errs := make(chan error, 3)
	go func() { errs <- exact.Done(ctx, ls[0], time.Now(), frontier.Outcome{Pace: ls[0].Pace}) }()
	<-queued
	gate.wait(t) // its batch, itself alone, held in its script
	go func() { errs <- exact.Done(ctx, ls[1], time.Now(), frontier.Outcome{Pace: ls[1].Pace}) }()
	<-queued
	go func() {
		_, err := exact.DoneAdding(ctx, ls[2], time.Now(), frontier.Outcome{Pace: ls[2].Pace}, []frontier.Item{item("d", "/1")}, frontier.Limits{})
		errs <- err
	}()
	<-queued
	close(gate.gate)
	var refused int
	for range 3 {
		if err := <-errs; err != nil {
			if !strings.Contains(err.Error(), "ExactSeen") {
				t.Errorf("error %v, want one naming ExactSeen", err)
			}
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d calls refused, want the 2 of the failed batch", refused)
	}
	checkInvariants(t, 0, c, fp, time.Now(), 1)
}

// claimConcurrently makes n Claims on s at now at once, each expecting a
// lease; done is closed once all came back, and claimed then returns the
// URLs leased.
func claimConcurrently(t *testing.T, s *Store, n int, now time.Time, o frontier.ClaimOptions) (done <-chan struct{}, claimed func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c, err := s.Claim(ctx, now, o)
			if err != nil || c.Lease == nil {
				t.Errorf("Claim = %+v, %v", c, err)
				return
			}
			mu.Lock()
			got = append(got, c.Lease.URL)
			mu.Unlock()
		})
	}
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// TestBatchAdds: on a single Redis without a page limit, an Add waits
// with the other calls of the Store and shares their script (batch.lua):
// its items, of every shard, are added or refused as seen alike.
func TestBatchAdds(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprintf("shards%d", shards), func(t *testing.T) {
			srv := redistest.Start(t)
			c := srv.Client()
			s, err := New(c, newJob(t), Options{Shards: shards})
			if err != nil {
				t.Fatal(err)
			}
			mustAdd(t, s, item("a", "/1"))
			l := claimAt(t, s, time.Now(), opt).Lease
			mustAdd(t, s, item("e", "/1")) // ready: the Claim below waits for a batch
			gate, count, wait, doneErr := heldDone(t, c, s, l)
			type added struct {
				refused []error
				err     error
			}
			adds := make(chan added, 1)
			go func() {
				r, err := s.Add(ctx, []frontier.Item{item("b", "/1"), item("c", "/1"), item("a", "/1"), item("d", "/1")}, frontier.Limits{})
				adds <- added{r, err}
			}()
			wait()
			claims := queueClaims(t, s, 1, wait)
			close(gate.gate)
			if err := <-doneErr; err != nil {
				t.Fatalf("Done: %v", err)
			}
			a := <-adds
			if a.err != nil {
				t.Fatalf("Add: %v", a.err)
			}
			want := []error{nil, nil, frontier.ErrSeen, nil}
			for i := range want {
				if (want[i] == nil) != (a.refused[i] == nil) || want[i] != nil && !errors.Is(a.refused[i], want[i]) {
					t.Errorf("item %d: %v, want %v", i, a.refused[i], want[i])
				}
			}
			cl := <-claims
			if cl.Lease == nil {
				t.Fatalf("the Claim of the Add's batch = %+v, want a lease", cl)
			}
			if n := count.scripts.Load(); n != 2 {
				t.Errorf("Done, Add and Claim ran %d scripts, want 2: the Done alone, then the Add and the Claim in one batch", n)
			}
			if err := s.Done(ctx, cl.Lease, time.Now(), frontier.Outcome{Pace: cl.Lease.Pace}); err != nil {
				t.Fatal(err)
			}
			if shards == 1 {
				checkInvariants(t, 0, c, s, time.Now(), 1)
			}
			got := append(drainAt(t, s, time.Now()), cl.Lease.URL)
			slices.Sort(got)
			if want := []string{"http://b/1", "http://c/1", "http://d/1", "http://e/1"}; !slices.Equal(got, want) {
				t.Errorf("handed out after the Add %v, want %v", got, want)
			}
		})
	}
}

// TestBatchKeyTouchedAgain: a batch that touches one key several times —
// a lease of it ends with links of it, an Add queues more, a Claim takes
// it again — leaves Redis holding what the calls one at a time would
// have left: each step reads what the one before it wrote.
func TestBatchKeyTouchedAgain(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	s, err := New(c, newJob(t), Options{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, item("k", "/1"), item("other", "/1"), item("x", "/1"))
	l := claimAt(t, s, time.Now(), opt).Lease
	if l == nil || l.Key != "k" {
		t.Fatalf("first Claim = %+v, want k's", l)
	}
	first := claimAt(t, s, time.Now(), opt).Lease // other's: its Done leads
	gate, count, wait, firstDone := heldDone(t, c, s, first)
	errs := make(chan error, 3)
	go func() { errs <- <-firstDone }()
	pace := l.Pace
	pace.Delay = 0
	go func() {
		_, err := s.DoneAdding(ctx, l, time.Now(), frontier.Outcome{Pace: pace}, []frontier.Item{item("k", "/2"), item("k", "/3")}, frontier.Limits{})
		errs <- err
	}()
	wait()
	go func() {
		_, err := s.Add(ctx, []frontier.Item{item("k", "/4"), item("k", "/2")}, frontier.Limits{})
		errs <- err
	}()
	wait()
	// Two Claims: x/1, ready since it was added, then k/2, ready since
	// k's lease ended in the same script.
	claims := queueClaims(t, s, 2, wait)
	close(gate.gate)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var leases []*frontier.Lease
	var leased []string
	for range 2 {
		c := <-claims
		if c.Lease == nil {
			t.Fatalf("a Claim of the batch = %+v, want a lease", c)
		}
		leases = append(leases, c.Lease)
		leased = append(leased, c.Lease.URL)
	}
	slices.Sort(leased)
	if !slices.Equal(leased, []string{"http://k/2", "http://x/1"}) {
		t.Fatalf("the batch's Claims took %v, want k/2 (k's lease ended, its links queued, in the same script) and x/1", leased)
	}
	if n := count.scripts.Load(); n != 2 {
		t.Errorf("%d scripts, want 2: the Done alone, then one batch", n)
	}
	checkInvariants(t, 0, c, s, time.Now(), 1)
	cnt, err := s.Counts(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if cnt.Queued != 2 || cnt.Leased != 2 || cnt.Hosts != 2 || cnt.Busy != 2 {
		t.Errorf("Counts = %+v, want k/3 and k/4 queued, k/2 and x/1 leased, two hosts, busy", cnt)
	}
	for _, l := range leases {
		if err := s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: pace}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := drainAt(t, s, time.Now()), []string{"http://k/3", "http://k/4"}; !slices.Equal(got, want) {
		t.Errorf("k's items handed out after k/2 %v, want %v", got, want)
	}
	checkInvariants(t, 1, c, s, time.Now(), 1)
}

// TestQuietTail: a batch that claims nothing, adding a link to a key out
// on a lease, reads neither the ready set nor the expiry set (its tail
// says the shard's next event did not move), and the Store's view of the
// shard stands: the key's next item is handed out once the lease ends.
func TestQuietTail(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true})
	t0 := time.Now()
	s.lastNow.Store(micros(t0))
	mustAdd(t, s, item("k", "/1"))
	l := claimAt(t, s, t0, opt).Lease
	if l == nil {
		t.Fatal("no lease of the one item queued")
	}
	c := srv.Client()
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, item("k", "/2"))
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "cmdstat_evalsha:") && !strings.Contains(info, "cmdstat_eval:") && !strings.Contains(info, "cmdstat_fcall:") {
		t.Fatalf("the Add ran no script: %s", info)
	}
	if strings.Contains(info, "cmdstat_zrange:") {
		t.Errorf("an Add to a leased key read a sorted set of the shard:\n%s", info)
	}
	if err := s.Done(ctx, l, t0, frontier.Outcome{}); err != nil {
		t.Fatal(err)
	}
	if l := claimAt(t, s, t0.Add(time.Second), opt).Lease; l == nil || l.URL != "http://k/2" {
		t.Errorf("after the lease ended, Claim got %+v, want the link added meanwhile", l)
	}
}

// zrangeGate counts the pipelines that read sorted sets (a read of every
// shard) and holds the first until release is closed, telling held.
type zrangeGate struct {
	reads         atomic.Int64
	once          sync.Once
	held, release chan struct{}
}

func (h *zrangeGate) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *zrangeGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *zrangeGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "zrange" {
			h.reads.Add(1)
			h.once.Do(func() {
				close(h.held)
				<-h.release
			})
		}
		return next(ctx, cmds)
	}
}

// TestVerifyShared: the Claims that find a read of every shard under way
// wait for it and take its answer, instead of reading again.
func TestVerifyShared(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true, Shards: 64})
	mustAdd(t, s, item("k", "/1"))
	gate := &zrangeGate{held: make(chan struct{}), release: make(chan struct{})}
	s.c.(*redis.Client).AddHook(gate)
	now := time.Now()
	var wg sync.WaitGroup
	idle := make([]bool, 4)
	wg.Go(func() { idle[0], _ = s.verify(ctx, now) })
	select {
	case <-gate.held:
	case <-time.After(30 * time.Second): // a guard, not a wait
		t.Fatal("no read of every shard after 30 s")
	}
	for i := 1; i < len(idle); i++ {
		wg.Go(func() { idle[i], _ = s.verify(ctx, now) })
	}
	// The others find the read under way and wait for it.
	for guard := time.Now().Add(30 * time.Second); s.verifyWaiters() < len(idle)-1; runtime.Gosched() {
		if time.Now().After(guard) { // a guard, not a wait
			close(gate.release)
			wg.Wait()
			t.Fatalf("after 30 s, %d verifies wait for the one under way, want %d", s.verifyWaiters(), len(idle)-1)
		}
	}
	close(gate.release)
	wg.Wait()
	if n := gate.reads.Load(); n != 1 {
		t.Errorf("%d verifies at once read every shard %d times, want once", len(idle), n)
	}
	if slices.Contains(idle, true) {
		t.Errorf("verify answered idle %v with an item queued", idle)
	}
}

// verifyWaiters returns how many callers wait for the read of every
// shard under way.
func (s *Store) verifyWaiters() int {
	s.verifyMu.Lock()
	defer s.verifyMu.Unlock()
	if s.verifying == nil {
		return 0
	}
	return s.verifying.waiters
}

// TestOnePushPerKey: the links of one key that a script adds are
// appended to its queue in one RPUSH, and come out in the order added.
func TestOnePushPerKey(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true})
	t0 := time.Now()
	s.lastNow.Store(micros(t0))
	mustAdd(t, s, item("warm", "/1")) // the script loaded
	c := srv.Client()
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, item("k", "/1"), item("k", "/2"), item("k", "/3"), item("j", "/1"))
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "cmdstat_rpush:calls=2,") {
		t.Errorf("four links of two keys: want two RPUSHes, got\n%s", info)
	}
	var got []string
	for i := range 5 {
		l := claimAt(t, s, t0.Add(time.Duration(i)*time.Minute), opt).Lease
		if l == nil {
			t.Fatalf("claim %d: no lease", i)
		}
		got = append(got, l.URL)
		if err := s.Done(ctx, l, t0.Add(time.Duration(i)*time.Minute), frontier.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	var ks []string
	for _, u := range got {
		if strings.HasPrefix(u, "http://k/") {
			ks = append(ks, u)
		}
	}
	if want := []string{"http://k/1", "http://k/2", "http://k/3"}; !slices.Equal(ks, want) {
		t.Errorf("k's items came out %v, want %v", ks, want)
	}

	// More than one RPUSH's worth (a sitemap's URLs): every one queued.
	var big []frontier.Item
	for i := range 2500 {
		big = append(big, item("big", fmt.Sprintf("/%d", i)))
	}
	mustAdd(t, s, big...)
	n, err := c.LLen(ctx, s.shardOf("big").prefix+"q:big").Result()
	if err != nil || n != 2500 {
		t.Errorf("2,500 links of one key: its queue holds %d (%v), want 2500", n, err)
	}
}

// TestOneSeenTestPerShard: a batch's links of a shard are tested against
// its seen-set in one SMISMEMBER and the new ones added in one SADD, with
// the answers a SADD a link gives — a link seen before, one twice in the
// batch, a sitemap over its host's limit (left unseen) — and the same on a
// server without SMISMEMBER, a SADD a link.
func TestOneSeenTestPerShard(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		smis, sadd string
	}{
		{"SMISMEMBER", nil, "cmdstat_smismember:calls=1,", "cmdstat_sadd:calls=1,"},
		{"without it", []string{"--rename-command", "SMISMEMBER", ""}, "", "cmdstat_sadd:calls=6,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartWith(t, redistest.Options{Args: tc.args})
			s := mustNew(t, srv, newJob(t), Options{})
			mustAdd(t, s, item("k", "/0"))
			c := srv.Client()
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			sm := func(n int) frontier.Item {
				return frontier.Item{URL: fmt.Sprintf("http://k/sm%d.xml", n), Key: "k", Kind: frontier.KindSitemap}
			}
			items := []frontier.Item{item("k", "/1"), item("k", "/0"), item("k", "/2"), item("j", "/1"), item("k", "/1"), sm(1), sm(2)}
			refused, err := s.Add(ctx, items, frontier.Limits{MaxSitemapsPerHost: 1})
			if err != nil {
				t.Fatal(err)
			}
			want := []error{nil, frontier.ErrSeen, nil, nil, frontier.ErrSeen, nil, frontier.ErrSitemapLimit}
			for i := range want {
				if (want[i] == nil) != (refused[i] == nil) || want[i] != nil && !errors.Is(refused[i], want[i]) {
					t.Errorf("%s: %v, want %v", items[i].URL, refused[i], want[i])
				}
			}
			info, err := c.Info(ctx, "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			if tc.smis != "" && !strings.Contains(info, tc.smis) || !strings.Contains(info, tc.sadd) {
				t.Errorf("seven links of one shard: want %q and %q, got\n%s", tc.smis, tc.sadd, info)
			}
			seen, err := c.SMembers(ctx, s.shardOf("k").prefix+"seen").Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != 5 {
				t.Errorf("the seen-set holds %d members, want 5: /0, /1, /2, j's /1 and the first sitemap", len(seen))
			}
			// The sitemap the limit refused is not seen: a page may link to it.
			if refused, err := s.Add(ctx, []frontier.Item{{URL: "http://k/sm2.xml", Key: "k"}}, frontier.Limits{}); err != nil || refused[0] != nil {
				t.Errorf("the refused sitemap linked from a page: %v, %v; want it queued", refused, err)
			}
		})
	}
}
