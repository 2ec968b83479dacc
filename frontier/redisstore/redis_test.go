package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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

var ctx = context.Background()

var opt = frontier.ClaimOptions{PerHost: 1, Lease: time.Minute}

func item(key, path string) frontier.Item {
	return frontier.Item{URL: "http://" + key + path, Key: key}
}

func mustAdd(t *testing.T, s *Store, items ...frontier.Item) {
	t.Helper()
	refused, err := s.Add(ctx, items, frontier.Limits{})
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	for i, err := range refused {
		if err != nil {
			t.Fatalf("Add(%s): %v", items[i].URL, err)
		}
	}
}

func claimAt(t *testing.T, s *Store, now time.Time, o frontier.ClaimOptions) frontier.Claim {
	t.Helper()
	c, err := s.Claim(ctx, now, o)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return c
}

// claimWithin claims until a lease comes, waiting for each Claim.Next on
// the real clock, for at most d: Redis's clock decides, so the test waits
// for it.
func claimWithin(t *testing.T, s *Store, o frontier.ClaimOptions, d time.Duration) *frontier.Lease {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		now := time.Now()
		c := claimAt(t, s, now, o)
		if c.Lease != nil {
			return c.Lease
		}
		if c.Idle {
			t.Fatal("Claim: idle, want a lease")
		}
		wait := 10 * time.Millisecond
		if !c.Next.IsZero() {
			wait = max(c.Next.Sub(now), time.Millisecond)
		}
		<-time.After(min(wait, time.Until(deadline)))
	}
	t.Fatalf("no lease within %v", d)
	return nil
}

// TestRedisClock: by default Redis's clock decides when a key may be
// fetched, whatever now the caller passes; the times returned are on the
// caller's clock.
func TestRedisClock(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{FixedLeases: true})
	mustAdd(t, s, item("a", "/1"), item("a", "/2"))
	l := claimAt(t, s, time.Now(), opt).Lease
	if l == nil || l.URL != "http://a/1" {
		t.Fatalf("Claim = %+v, want a/1", l)
	}
	const rest = time.Second
	done := time.Now()
	if err := s.Done(ctx, l, done, frontier.Outcome{Pace: l.Pace, Rest: rest}); err != nil {
		t.Fatal(err)
	}
	// A caller whose clock runs an hour ahead cannot cut the rest short,
	// and is told when to ask again on its own clock.
	far := time.Now().Add(time.Hour)
	c := claimAt(t, s, far, opt)
	if c.Lease != nil {
		t.Fatalf("a/2 claimed during a's rest by a caller an hour ahead")
	}
	if c.Next.Before(far) || c.Next.After(far.Add(rest)) {
		t.Errorf("Claim.Next = far%+v, want within far+(0, %v]", c.Next.Sub(far), rest)
	}
	// A caller whose clock runs behind gets a lease expiring a Lease after
	// its now.
	l = claimWithin(t, s, opt, 10*time.Second)
	if waited := time.Since(done); waited < rest {
		t.Errorf("a/2 claimed %v after the ack, within its %v rest", waited, rest)
	}
	if l.URL != "http://a/2" {
		t.Errorf("Claim = %s, want a/2", l.URL)
	}
	if err := s.Requeue(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	l = claimAt(t, s, past, opt).Lease
	if l == nil {
		t.Fatal("a/2 not claimed again after Requeue")
	}
	if got := l.Expires.Sub(past); got != opt.Lease {
		t.Errorf("Lease.Expires = now+%v, want now+%v on the caller's clock", got, opt.Lease)
	}
	if h, _ := s.Host(ctx, "a"); h.NextAllowed.Before(done.Add(rest)) {
		t.Errorf("Host(a).NextAllowed = ack+%v, want at least ack+%v", h.NextAllowed.Sub(done), rest)
	}
}

// TestLeaseExpiry: a lease not ended within its Lease is taken back by the
// next Claim of any process: its item goes back to the front of its queue,
// its key rests a full Delay from the expiry, and the worker that held it
// can no longer end it.
func TestLeaseExpiry(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	s1 := mustNew(t, srv, job, Options{FixedLeases: true})
	s2 := mustNew(t, srv, job, Options{FixedLeases: true})
	mustAdd(t, s1, item("a", "/1"), item("a", "/2"))
	l := claimAt(t, s1, time.Now(), opt).Lease
	const delay, lease = 500 * time.Millisecond, time.Second
	host := l.Pace
	host.Delay = delay
	if err := s1.Done(ctx, l, time.Now(), frontier.Outcome{Pace: host}); err != nil {
		t.Fatal(err)
	}
	short := frontier.ClaimOptions{PerHost: 1, Lease: lease}
	granted := time.Now()
	l = claimAt(t, s1, granted, short).Lease
	if l == nil || l.URL != "http://a/2" {
		t.Fatalf("Claim = %+v, want a/2", l)
	}
	if l.Expires != granted.Add(lease) {
		t.Errorf("Lease.Expires = now+%v, want now+%v", l.Expires.Sub(granted), lease)
	}
	mustAdd(t, s2, item("a", "/3")) // behind a/2, which must come back first
	if c := claimAt(t, s2, time.Now(), short); c.Lease != nil || c.Idle {
		t.Fatalf("another process's Claim while a/2 is leased = %+v, want nothing and not idle", c)
	}
	again := claimWithin(t, s2, short, 10*time.Second)
	if since := time.Since(granted); since < lease+delay {
		t.Errorf("a/2 handed out again %v after its lease, want at least lease+Delay = %v", since, lease+delay)
	}
	if again.URL != "http://a/2" {
		t.Errorf("after expiry Claim = %s, want a/2 back at the front", again.URL)
	}
	if again.Token == l.Token {
		t.Errorf("the new lease has the old token %d", l.Token)
	}
	if err := s1.Done(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Done of the expired lease: %v, want ErrLeaseLost", err)
	}
	if err := s1.Requeue(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Requeue of the expired lease: %v, want ErrLeaseLost", err)
	}
	if err := s2.Done(ctx, again, time.Now(), frontier.Outcome{Pace: again.Pace}); err != nil {
		t.Errorf("Done of the new lease: %v", err)
	}
}

// TestLeaseExpiryNotTaken: an Done that comes after its lease's expiry is
// refused even if no Claim took the lease back yet.
func TestLeaseExpiryNotTaken(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true, FixedLeases: true})
	mustAdd(t, s, item("a", "/1"))
	t0 := time.Now()
	l := claimAt(t, s, t0, opt).Lease
	if err := s.Done(ctx, l, t0.Add(opt.Lease), frontier.Outcome{Pace: l.Pace}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Done at the lease's expiry: %v, want ErrLeaseLost", err)
	}
	if l := claimAt(t, s, t0.Add(opt.Lease), opt).Lease; l == nil || l.URL != "http://a/1" {
		t.Errorf("after the late Done, Claim = %+v, want a/1 again", l)
	}
}

// TestTwoProcesses: workers of two Stores on one job never hold leases of
// one key at once, and every item is done exactly once.
func TestTwoProcesses(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	stores := []*Store{mustNew(t, srv, job, Options{}), mustNew(t, srv, job, Options{})}
	var want []string
	for k := range 4 {
		for i := range 25 {
			it := item(fmt.Sprintf("h%d", k), fmt.Sprintf("/%d", i))
			want = append(want, it.URL)
			mustAdd(t, stores[k%2], it)
		}
	}
	var (
		holders sync.Map // key → *atomic.Int32
		mu      sync.Mutex
		done    []string
		wg      sync.WaitGroup
	)
	for w := range 8 {
		s := stores[w%2]
		wg.Go(func() {
			for {
				now := time.Now()
				c, err := s.Claim(ctx, now, opt)
				if err != nil {
					t.Error(err)
					return
				}
				if c.Idle {
					return
				}
				if c.Lease == nil {
					<-time.After(5 * time.Millisecond) // another process's lease ends without telling us
					continue
				}
				l := c.Lease
				n, _ := holders.LoadOrStore(l.Key, new(atomic.Int32))
				if h := n.(*atomic.Int32).Add(1); h > 1 {
					t.Errorf("%d leases of %s at once", h, l.Key)
				}
				// Work under the lease: a round trip, as a page's links
				// would be.
				if _, err := s.Add(ctx, []frontier.Item{item(l.Key, "/1")}, frontier.Limits{}); err != nil {
					t.Error(err)
				}
				n.(*atomic.Int32).Add(-1)
				mu.Lock()
				done = append(done, l.URL)
				mu.Unlock()
				if err := s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(want)
	slices.Sort(done)
	if !slices.Equal(done, want) {
		t.Errorf("done %d items, want each of the %d once", len(done), len(want))
	}
}

// TestRestart: Redis killed with SIGKILL and started again on its
// append-only file (appendfsync always) has everything: queues, seen-set,
// counters, leases. Every key rests a full Delay from the restart, and
// the fencing tokens move past any the old server could have granted.
func TestRestart(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{})
	mustAdd(t, s, item("a-slow", "/1"), item("a-slow", "/2"), item("b-fast", "/1"), item("b-fast", "/2"), item("c-other", "/1"))
	l := claimAt(t, s, time.Now(), opt).Lease
	if l.Key != "a-slow" {
		t.Fatalf("Claim = %s, want a-slow/1", l.URL)
	}
	host := l.Pace
	host.Delay = time.Hour
	if err := s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: host, Checkpoint: []byte("cp")}); err != nil {
		t.Fatal(err)
	}
	inFlight := claimAt(t, s, time.Now(), opt).Lease // fast/1, leased across the restart
	if inFlight.Key != "b-fast" {
		t.Fatalf("Claim = %s, want b-fast/1", inFlight.URL)
	}
	before, err := s.Counts(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	srv.Restart()
	restarted := time.Now()

	after, err := s.Counts(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if after.Queued != before.Queued || after.Leased != before.Leased || after.Scheduled != before.Scheduled || after.Hosts != before.Hosts {
		t.Errorf("Counts after the restart = %+v, before %+v", after, before)
	}
	if err := s.Done(ctx, inFlight, time.Now(), frontier.Outcome{Pace: inFlight.Pace}); err != nil {
		t.Errorf("Done of a lease granted before the restart: %v", err)
	}
	if h, _ := s.Host(ctx, "a-slow"); h.NextAllowed.Before(restarted.Add(time.Hour)) || h.Delay != time.Hour {
		t.Errorf("Host(a-slow) = %+v, want resting an hour from the restart", h)
	}
	if cp, _ := s.Checkpoint(ctx); string(cp) != "cp" {
		t.Errorf("Checkpoint = %q, want cp", cp)
	}
	refused, err := s.Add(ctx, []frontier.Item{item("a-slow", "/1"), item("c-other", "/1")}, frontier.Limits{})
	if err != nil || !errors.Is(refused[0], frontier.ErrSeen) || !errors.Is(refused[1], frontier.ErrSeen) {
		t.Errorf("seen-set after the restart: %v, %v", refused, err)
	}
	var got []string
	for {
		c := claimAt(t, s, time.Now(), opt)
		if c.Lease == nil {
			break
		}
		if c.Lease.Key == inFlight.Key && c.Lease.Token < inFlight.Token+1<<32 {
			t.Errorf("token %d after the restart; the last before was %d", c.Lease.Token, inFlight.Token)
		}
		got = append(got, c.Lease.URL)
		if err := s.Done(ctx, c.Lease, time.Now(), frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	if want := []string{"http://b-fast/2", "http://c-other/1"}; !slices.Equal(got, want) {
		t.Errorf("claimed after the restart %v, want %v (a-slow resting)", got, want)
	}
}

// TestStateLost: a Redis that restarts without persistence has lost the
// job: a Store that used it says so instead of ending the crawl as done.
func TestStateLost(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{NoPersistence: true})
	job := newJob(t)
	s := mustNew(t, srv, job, Options{})
	mustAdd(t, s, item("a", "/1"))
	srv.Kill()
	srv.Restart()
	if _, err := s.Claim(ctx, time.Now(), opt); !errors.Is(err, ErrStateLost) {
		t.Errorf("Claim after losing the job: %v, want ErrStateLost", err)
	}
	if _, err := s.Add(ctx, []frontier.Item{item("a", "/2")}, frontier.Limits{}); !errors.Is(err, ErrStateLost) {
		t.Errorf("Add after losing the job: %v, want ErrStateLost", err)
	}
	// A new Store starts the job afresh.
	fresh := mustNew(t, srv, job, Options{})
	if c := claimAt(t, fresh, time.Now(), opt); !c.Idle {
		t.Errorf("a new Store on the lost job: Claim = %+v, want idle", c)
	}
}

// scriptCall reports whether cmd calls a script: EVALSHA, EVAL or FCALL.
func scriptCall(cmd redis.Cmder) bool {
	return strings.HasPrefix(cmd.Name(), "eval") || strings.HasPrefix(cmd.Name(), "fcall")
}

// countingHook counts the round trips of a client — each command, or each
// pipeline, is one — and among them the script calls (scriptCall).
type countingHook struct {
	n, scripts atomic.Int64
}

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		if scriptCall(cmd) {
			h.scripts.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// crawl is a crawl in the shape of a real one, through a Frontier on a
// Store: twenty hosts, each page a Next and a DoneAdding of ten links
// spread over them.
type crawl struct {
	f *frontier.Frontier
}

func newCrawl(tb testing.TB, c redis.UniversalClient, job string, shards int) *crawl {
	tb.Helper()
	s, err := New(c, job, Options{Shards: shards})
	if err != nil {
		tb.Fatal(err)
	}
	f := frontier.New(frontier.Config{Store: s, Scope: frontier.ScopeAny, Poll: s.PollInterval()})
	var seeds []string
	for i := range 20 {
		seeds = append(seeds, fmt.Sprintf("http://h%d.example/", i))
	}
	if _, err := f.AddSeeds(ctx, seeds); err != nil {
		tb.Fatal(err)
	}
	return &crawl{f}
}

// page fetches page i: its lease ends with its links and, with revisit,
// its revisit, due in an hour with a full Visit.
func (c *crawl) page(tb testing.TB, i int, revisit bool) {
	tb.Helper()
	l, err := c.f.Next(ctx)
	if err != nil {
		tb.Fatalf("page %d: %v", i, err)
	}
	links := make([]frontier.Item, 10)
	for j := range links {
		links[j] = l.Child(fmt.Sprintf("http://h%d.example/p%d-%d", (i+j)%20, i, j))
	}
	o := frontier.Outcome{Pace: l.Pace}
	if revisit {
		rv := l.Item
		rv.Due = time.Now().Add(time.Hour)
		rv.Visit = fullVisit(l.URL, time.Now())
		o.Revisit = &rv
	}
	if _, err := c.f.DoneAdding(ctx, l, o, links); err != nil {
		tb.Fatal(err)
	}
}

// TestRoundTripsPerPage: a Frontier on a Store of one shard costs two
// round trips per page: its Claim, and the Done that adds its links
// (DoneAdding) and queues its revisit. Sharded on a single Redis, the
// links of every shard go in the DoneAdding's one script, a shard that
// wakes costs one round trip to say so, and the wake index is read once a
// Poll: here, where every page links to ten hosts, some 2.3 (3.4 when the
// links of other shards took a pipelined round of their own).
func TestRoundTripsPerPage(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	hook := new(countingHook)
	c.AddHook(hook)
	for _, shards := range []int{1, DefaultShards} {
		for _, revisit := range []bool{false, true} {
			cr := newCrawl(t, c, newJob(t), shards)
			cr.page(t, 0, revisit) // loads the scripts into Redis
			const pages = 50
			hook.n.Store(0)
			for i := 1; i <= pages; i++ {
				cr.page(t, i, revisit)
			}
			got := float64(hook.n.Load()) / pages
			t.Logf("%d shards, revisits %v: %.2f round trips per page", shards, revisit, got)
			if want := map[int]float64{1: 2.2, DefaultShards: 2.6}[shards]; got > want {
				t.Errorf("%d shards, revisits %v: %.2f round trips per page, want at most %.2f", shards, revisit, got, want)
			}
		}
	}
}

// dropReplyHook makes the next script call armed for fail as if its reply
// were lost: the script runs, the caller gets a connection error.
type dropReplyHook struct {
	armed atomic.Bool
}

func (h *dropReplyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *dropReplyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if scriptCall(cmd) && err == nil && h.armed.CompareAndSwap(true, false) {
			err = fmt.Errorf("reply lost: %w", io.ErrUnexpectedEOF)
			cmd.SetErr(err)
		}
		return err
	}
}

func (h *dropReplyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestRetryAppliesOnce: a request whose reply was lost is retried, and the
// retry gets the reply of the request that ran instead of running again —
// an Add is not refused as seen, a Claim does not lease a second item, an
// Done is not refused as lost.
func TestRetryAppliesOnce(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	drop := new(dropReplyHook)
	c.AddHook(drop)
	s, err := New(c, newJob(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	drop.armed.Store(true)
	refused, err := s.Add(ctx, []frontier.Item{item("a", "/1"), item("b", "/1")}, frontier.Limits{})
	if err != nil || refused[0] != nil || refused[1] != nil {
		t.Errorf("Add whose reply was lost: %v, %v; want both queued", refused, err)
	}
	drop.armed.Store(true)
	l := claimAt(t, s, time.Now(), opt).Lease
	if l == nil {
		t.Fatal("Claim whose reply was lost: no lease")
	}
	counts, _ := s.Counts(ctx, time.Now())
	if counts.Leased != 1 || counts.Queued != 1 {
		t.Errorf("after a Claim whose reply was lost, Counts = %+v, want 1 leased and 1 queued", counts)
	}
	drop.armed.Store(true)
	if err := s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Errorf("Done whose reply was lost: %v", err)
	}
	if drop.armed.Load() {
		t.Fatal("no reply was dropped: the test tests nothing")
	}
}

// TestRetryBudget: while Redis is down, an operation is retried; it
// succeeds once Redis is back, and fails with a clear error when Redis
// stays away longer than RetryFor.
func TestRetryBudget(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	failed := make(chan struct{}, 1)
	c.AddHook(failHook{failed})
	s, err := New(c, newJob(t), Options{RetryFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, item("a", "/1"))
	srv.Kill()
	type result struct {
		c   frontier.Claim
		err error
	}
	res := make(chan result, 1)
	go func() {
		c, err := s.Claim(ctx, time.Now(), opt)
		res <- result{c, err}
	}()
	<-failed // the Claim met the dead server at least once
	srv.Restart()
	r := <-res
	if r.err != nil || r.c.Lease == nil || r.c.Lease.URL != "http://a/1" {
		t.Errorf("Claim across a restart = %+v, %v; want a/1", r.c, r.err)
	}

	short, err := New(c, s.Job(), Options{RetryFor: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	start := time.Now()
	_, err = short.Claim(ctx, time.Now(), opt)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !strings.Contains(err.Error(), "still failing after 200ms") {
		t.Errorf("Claim with Redis down: %v; want the network error, after retrying 200ms", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Claim with Redis down took %v to fail", took)
	}
}

// failHook signals each failed command.
type failHook struct{ failed chan struct{} }

func (h failHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h failHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil {
			select {
			case h.failed <- struct{}{}:
			default:
			}
		}
		return err
	}
}

func (h failHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestCloseEndsLeases: a Store that closes gives its leases back at once,
// so another process need not wait for them to expire; it grants no more.
func TestCloseEndsLeases(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	s1 := mustNew(t, srv, job, Options{})
	s2 := mustNew(t, srv, job, Options{})
	mustAdd(t, s1, item("a", "/1"))
	l := claimAt(t, s1, time.Now(), opt).Lease
	l.Retries = 5 // what the worker did is not what Redis holds
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	got := claimAt(t, s2, time.Now(), opt).Lease
	if got == nil || got.URL != "http://a/1" || got.Retries != 0 {
		t.Fatalf("after the lease holder closed, Claim = %+v, want a/1 at once", got)
	}
	if _, err := s1.Claim(ctx, time.Now(), opt); !errors.Is(err, ErrClosed) {
		t.Errorf("Claim after Close: %v, want ErrClosed", err)
	}
	if err := s1.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestIdleAcrossProcesses: the crawl is over for every process only when
// nothing is queued and no process holds a lease.
func TestIdleAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	s1 := mustNew(t, srv, job, Options{})
	s2 := mustNew(t, srv, job, Options{})
	mustAdd(t, s1, item("a", "/1"))
	l := claimAt(t, s1, time.Now(), opt).Lease
	if c := claimAt(t, s2, time.Now(), opt); c.Idle || c.Lease != nil {
		t.Errorf("while another process holds a lease, Claim = %+v, want not idle", c)
	}
	if err := s1.Done(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	if c := claimAt(t, s2, time.Now(), opt); !c.Idle {
		t.Errorf("all done: Claim = %+v, want idle", c)
	}
}

// TestIdleKeysExpire: a key with nothing queued or leased keeps its state
// only until a while after its rest; with per-key limits, or given up, for
// good.
func TestIdleKeysExpire(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	s := mustNew(t, srv, newJob(t), Options{})
	mustAdd(t, s, item("a", "/1"))
	ttl := func(key string) time.Duration {
		t.Helper()
		d, err := c.PTTL(ctx, s.keyPrefix(t, key)+"k:"+key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := ttl("a"); d != -1 {
		t.Errorf("TTL of a key with a queued item: %v, want none", d)
	}
	l := claimAt(t, s, time.Now(), opt).Lease
	if err := s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace, Rest: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if d := ttl("a"); d < time.Hour || d > time.Hour+2*time.Minute {
		t.Errorf("TTL of an idle key resting an hour: %v, want an hour and a minute", d)
	}
	if err := s.GiveUp(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if d := ttl("a"); d != -1 {
		t.Errorf("TTL of a given-up key: %v, want none", d)
	}
	if _, err := s.Add(ctx, []frontier.Item{item("b", "/1")}, frontier.Limits{MaxPagesPerHost: 5}); err != nil {
		t.Fatal(err)
	}
	l = claimAt(t, s, time.Now(), opt).Lease
	if err := s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	if d := ttl("b"); d != -1 {
		t.Errorf("TTL of an idle key under a per-key limit: %v, want none", d)
	}
}

// TestSeenKindMismatch: Stores of one job must agree on what the seen-set
// holds.
func TestSeenKindMismatch(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	mustAdd(t, mustNew(t, srv, job, Options{}), item("a", "/1"))
	exact := mustNew(t, srv, job, Options{ExactSeen: true})
	_, err := exact.Add(ctx, []frontier.Item{item("a", "/1")}, frontier.Limits{})
	if err == nil || !strings.Contains(err.Error(), "ExactSeen") {
		t.Errorf("Add with ExactSeen to a job of fingerprints: %v, want an error naming ExactSeen", err)
	}
}

func TestJobName(t *testing.T) {
	for _, job := range []string{"", "a{b", "a}b"} {
		if _, err := New(nil, job, Options{}); !errors.Is(err, ErrJob) {
			t.Errorf("New(%q): %v, want ErrJob", job, err)
		}
	}
}
