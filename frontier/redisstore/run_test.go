package redisstore

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// runOpt claims with an Affinity of 3: runs of four items.
var runOpt = frontier.ClaimOptions{PerHost: 1, Lease: time.Minute, Affinity: 3}

// addPaths adds key's items /1 to /n, in order.
func addPaths(t *testing.T, s *Store, key string, n int) {
	t.Helper()
	var items []frontier.Item
	for i := 1; i <= n; i++ {
		items = append(items, item(key, fmt.Sprintf("/%d", i)))
	}
	mustAdd(t, s, items...)
}

// claimURL claims at now with o and returns the lease, failing unless
// it is of url.
func claimURL(t *testing.T, s *Store, now time.Time, o frontier.ClaimOptions, url string) *frontier.Lease {
	t.Helper()
	l := claimAt(t, s, now, o).Lease
	if l == nil || l.URL != url {
		t.Fatalf("Claim = %+v, want %s", l, url)
	}
	return l
}

// countedStore returns a Store of a new job on srv with o, on a client of
// its own whose round trips count counts.
func countedStore(t *testing.T, srv *redistest.Server, o Options) (s *Store, count *countingHook) {
	t.Helper()
	c := srv.Client()
	count = &countingHook{}
	c.AddHook(count)
	s, err := New(c, newJob(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, count
}

// wantQueue drains s at now (drainAt) and fails unless it handed out
// key's items /from to /to, in order; when says after what.
func wantQueue(t *testing.T, s *Store, now time.Time, key string, from, to int, when string) {
	t.Helper()
	var want []string
	for i := from; i <= to; i++ {
		want = append(want, fmt.Sprintf("http://%s/%d", key, i))
	}
	if got := drainAt(t, s, now); !slices.Equal(got, want) {
		t.Errorf("%s, the queue = %v, want %v", when, got, want)
	}
}

// mustDone ends l at now, after a request to Redis, as a page's links
// are added: a run's Done then needs no probe of its own.
func mustDone(t *testing.T, s *Store, l *frontier.Lease, now time.Time) {
	t.Helper()
	redisAnswers(t, s)
	if err := s.Done(ctx, l, now, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatalf("Done(%s): %v", l.URL, err)
	}
}

// redisAnswers makes a request to Redis that changes nothing a test reads: a
// URL recorded as seen.
func redisAnswers(t *testing.T, s *Store) {
	t.Helper()
	u := fmt.Sprintf("http://answer/%d", s.lastReq.Load())
	if _, err := s.Add(ctx, []frontier.Item{{URL: u, Key: "answer", SeenOnly: true}}, frontier.Limits{}); err != nil {
		t.Fatal(err)
	}
}

func queuedAt(t *testing.T, s *Store, now time.Time) int {
	t.Helper()
	c, err := s.Counts(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	return c.Queued
}

// TestRun: a key ready again at once is served Affinity+1 items in a row
// by one lease, ahead of a key that waited; the Dones and Claims between
// the first and the end of the run cost no round trip, and the items not done
// stay counted as queued.
func TestRun(t *testing.T) {
	srv := redistest.Start(t)
	s, count := countedStore(t, srv, Options{CallerClock: true, FixedLeases: true})
	addPaths(t, s, "a", 6)
	addPaths(t, s, "b", 2)
	now := time.Now()
	l := claimURL(t, s, now, runOpt, "http://a/1")
	if want := now.Add(runOpt.Lease * 5 / 4); !l.Expires.Equal(want) {
		t.Errorf("a run's lease expires at now+%v, want now+%v", l.Expires.Sub(now), want.Sub(now))
	}
	token := l.Token
	if got := queuedAt(t, s, now); got != 7 {
		t.Errorf("while a run of 4 is out, Counts.Queued = %d, want 7", got)
	}
	for i := 2; i <= 4; i++ {
		redisAnswers(t, s) // as the page's links are added
		before := count.n.Load()
		if err := s.Done(ctx, l, now, frontier.Outcome{Pace: l.Pace}); err != nil {
			t.Fatal(err)
		}
		l = claimURL(t, s, now, runOpt, fmt.Sprintf("http://a/%d", i))
		if n := count.n.Load() - before; n != 0 {
			t.Errorf("a Done and a Claim in a run took %d round trips, want 0", n)
		}
		if l.Token != token || !l.Expires.Equal(now.Add(runOpt.Lease*5/4)) {
			t.Errorf("a/%d: token %d, expires now+%v; want the run's, %d, now+%v", i, l.Token, l.Expires.Sub(now), token, runOpt.Lease*5/4)
		}
	}
	mustDone(t, s, l, now) // the last: the run ends
	if got := queuedAt(t, s, now); got != 4 {
		t.Errorf("after the run, Counts.Queued = %d, want 4", got)
	}
	var got []string
	for range 4 {
		l := claimAt(t, s, now, runOpt).Lease
		got = append(got, l.URL)
		mustDone(t, s, l, now)
	}
	// b waited longer than a, which went back to the ready set at its end.
	if want := []string{"http://b/1", "http://b/2", "http://a/5", "http://a/6"}; !slices.Equal(got, want) {
		t.Errorf("after the run, Claims = %v, want %v", got, want)
	}
	if cl := claimAt(t, s, now, runOpt); !cl.Idle {
		t.Errorf("all done: Claim = %+v, want idle", cl)
	}
}

// TestRunRests: a Done that makes the key rest holds the run's next item
// back until the rest is over; a Requeue ends the run, and the items not
// handed out go back to the front of the queue in order, behind it.
func TestRunRests(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true})
	addPaths(t, s, "a", 6)
	addPaths(t, s, "b", 1)
	now := time.Now()
	l := claimURL(t, s, now, runOpt, "http://a/1")
	token := l.Token
	mustDone(t, s, l, now)
	l = claimURL(t, s, now, runOpt, "http://a/2")
	redisAnswers(t, s)
	if err := s.Done(ctx, l, now, frontier.Outcome{Pace: l.Pace, Rest: time.Second}); err != nil {
		t.Fatal(err)
	}
	b := claimURL(t, s, now, runOpt, "http://b/1") // while a rests
	mustDone(t, s, b, now)
	if cl := claimAt(t, s, now, runOpt); cl.Lease != nil || !cl.Next.Equal(now.Add(time.Second)) {
		t.Fatalf("while a rests, Claim = %+v, want its next at now+1s", cl)
	}
	if cl := claimAt(t, s, now.Add(time.Second-time.Microsecond), runOpt); cl.Lease != nil {
		t.Fatalf("before a's rest is over, Claim = %s", cl.Lease.URL)
	}
	now = now.Add(time.Second)
	l = claimURL(t, s, now, runOpt, "http://a/3")
	if l.Token != token || !l.Pace.NextAllowed.Equal(now) {
		t.Errorf("after the rest, a/3: token %d, NextAllowed now%+v; want the run's %d, now", l.Token, l.Pace.NextAllowed.Sub(now), token)
	}
	l.Retries = 1
	if err := s.Requeue(ctx, l, now, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, s, now, "a", 3, 6, "after the Requeue")
}

// TestRunNotForDelayedKeys: a run holds no more items than the key's
// Delay lets be fetched in a quarter lease — none beyond the first if
// the Delay is longer; and a key claimed with more than one lease a key,
// or without Affinity, leases one item at a time.
func TestRunNotForDelayedKeys(t *testing.T) {
	srv := redistest.Start(t)
	now := time.Now()
	for _, o := range []frontier.ClaimOptions{{PerHost: 2, Lease: time.Minute, Affinity: 3}, {PerHost: 1, Lease: time.Minute}} {
		s := mustNew(t, srv, newJob(t), Options{CallerClock: true, FixedLeases: true})
		addPaths(t, s, "a", 4)
		if l := claimAt(t, s, now, o).Lease; !l.Expires.Equal(now.Add(time.Minute)) {
			t.Errorf("Claim with %+v: lease of now+%v, want one item's, now+1m", o, l.Expires.Sub(now))
		}
	}
	for _, c := range []struct {
		delay time.Duration
		run   []string // the items leased with the first
	}{
		{10 * time.Second, []string{"http://a/2", "http://a/3"}}, // two Delays in 15 s
		{20 * time.Second, []string{"http://a/2"}},
	} {
		s := mustNew(t, srv, newJob(t), Options{CallerClock: true, FixedLeases: true})
		addPaths(t, s, "a", 6)
		l := claimURL(t, s, now, frontier.ClaimOptions{PerHost: 1, Lease: time.Minute}, "http://a/1")
		h := l.Pace
		h.Delay = c.delay
		if err := s.Done(ctx, l, now, frontier.Outcome{Pace: h, Rest: c.delay}); err != nil {
			t.Fatal(err)
		}
		at := now.Add(c.delay)
		l = claimAt(t, s, at, runOpt).Lease
		if want := at.Add(time.Minute * time.Duration(4+min(len(c.run)-1, 1)) / 4); !l.Expires.Equal(want) {
			t.Errorf("Delay %v, lease 1m: lease of at+%v, want at+%v", c.delay, l.Expires.Sub(at), want.Sub(at))
		}
		got := []string{l.URL}
		redisAnswers(t, s)
		if err := s.Done(ctx, l, at, frontier.Outcome{Pace: h, Rest: c.delay}); err != nil {
			t.Fatal(err)
		}
		if next := claimAt(t, s, at.Add(c.delay), runOpt).Lease; next != nil && next.Token == l.Token {
			got = append(got, next.URL) // the run's second
		}
		if !slices.Equal(got, c.run) {
			t.Errorf("Delay %v, lease 1m: a run of %v, want %v", c.delay, got, c.run)
		}
	}
}

// TestRunExpires: the lease of a run that was not ended expires as one:
// every item comes back, those whose Dones the Store held back too, and
// the holder's Done is refused; a run whose next item would have less
// than a lease left ends instead of handing it out.
func TestRunExpires(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	s1 := mustNew(t, srv, job, Options{CallerClock: true, FixedLeases: true})
	s2 := mustNew(t, srv, job, Options{CallerClock: true, FixedLeases: true})
	addPaths(t, s1, "a", 6)
	now := time.Now()
	l := claimURL(t, s1, now, runOpt, "http://a/1")
	mustDone(t, s1, l, now)
	l = claimURL(t, s1, now, runOpt, "http://a/2")
	if cl := claimAt(t, s2, now, runOpt); cl.Lease != nil || cl.Idle {
		t.Fatalf("another process's Claim while a run holds a = %+v, want nothing", cl)
	}
	late := now.Add(runOpt.Lease * 5 / 4)
	wantQueue(t, s2, late, "a", 1, 6, "after the run's lease expired")
	if err := s1.Done(ctx, l, late, frontier.Outcome{Pace: l.Pace}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Done of an expired run's item: %v, want ErrLeaseLost", err)
	}

	// Too late to hand out the next item with a lease to go: the run
	// ends, and the item comes in a lease of its own.
	addPaths(t, s1, "b", 3)
	now = late.Add(time.Hour)
	l = claimURL(t, s1, now, runOpt, "http://b/1")
	first := l.Token
	mustDone(t, s1, l, now)
	later := now.Add(runOpt.Lease / 4)
	l = claimURL(t, s1, later, runOpt, "http://b/2")
	if l.Token == first || !l.Expires.Equal(later.Add(runOpt.Lease*5/4)) {
		t.Errorf("b/2 handed out a quarter lease into the run: token %d (the run's %d), expires later+%v; want a new lease of later+%v", l.Token, first, l.Expires.Sub(later), runOpt.Lease*5/4)
	}
}

// TestRunClose: Close gives back the items of a run that were not done —
// the one out, and those not handed out — and not those done.
func TestRunClose(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	s1 := mustNew(t, srv, job, Options{CallerClock: true})
	s2 := mustNew(t, srv, job, Options{CallerClock: true})
	addPaths(t, s1, "a", 5)
	addPaths(t, s1, "b", 5)
	now := time.Now()
	l := claimURL(t, s1, now, runOpt, "http://a/1")
	mustDone(t, s1, l, now)
	claimURL(t, s1, now, runOpt, "http://a/2") // out when the Store closes
	l = claimURL(t, s1, now, frontier.ClaimOptions{PerHost: 1, Lease: time.Minute, Affinity: 1}, "http://b/1")
	mustDone(t, s1, l, now) // b/2 not handed out yet
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if got := queuedAt(t, s2, now); got != 8 {
		t.Errorf("after Close, Counts.Queued = %d, want 8", got)
	}
	got := drainAt(t, s2, now.Add(time.Hour))
	slices.Sort(got)
	want := []string{"http://a/2", "http://a/3", "http://a/4", "http://a/5", "http://b/2", "http://b/3", "http://b/4", "http://b/5"}
	if !slices.Equal(got, want) {
		t.Errorf("after Close, the queue = %v, want %v", got, want)
	}
}

// TestRunGivenUp: a key given up mid-run ends its run at the next Done:
// its items are handed out to be reported, as given-up keys' are.
func TestRunGivenUp(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true})
	addPaths(t, s, "a", 5)
	now := time.Now()
	l := claimURL(t, s, now, runOpt, "http://a/1")
	if err := s.GiveUp(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	mustDone(t, s, l, now)
	l = claimURL(t, s, now, runOpt, "http://a/2")
	if !l.GivenUp {
		t.Errorf("after GiveUp, a/2 came from the run, not given up")
	}
}

// TestRunClaimKey: ClaimKey of a key whose run waits for its next Claim
// ends the run and leases the key.
func TestRunClaimKey(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true})
	addPaths(t, s, "a", 5)
	now := time.Now()
	l := claimURL(t, s, now, runOpt, "http://a/1")
	mustDone(t, s, l, now)
	k, next, err := s.ClaimKey(ctx, "a", now, runOpt)
	if err != nil || k == nil {
		t.Fatalf("ClaimKey(a) = %v, %v, %v; want the key", k, next, err)
	}
	if err := s.Done(ctx, k, now, frontier.Outcome{Pace: k.Pace}); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, s, now, "a", 2, 5, "after ClaimKey")
}

// TestRunNeedsRedis: a run goes on only once Redis answered a request
// made after its item was handed out — if none was, the Done asks, in
// one script call — and not once a reply said Redis restarted, nor when
// Redis does not answer.
func TestRunNeedsRedis(t *testing.T) {
	srv := redistest.Start(t)
	s, count := countedStore(t, srv, Options{CallerClock: true, RetryFor: -1})
	addPaths(t, s, "a", 8)
	now := time.Now()
	l := claimURL(t, s, now, runOpt, "http://a/1")
	before := count.scripts.Load()
	if err := s.Done(ctx, l, now, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	if n := count.scripts.Load() - before; n != 1 {
		t.Errorf("a Done in a run with no reply since its item was handed out: %d script calls, want 1", n)
	}
	if l2 := claimURL(t, s, now, runOpt, "http://a/2"); l2.Token != l.Token {
		t.Fatalf("a/2 did not come from the run")
	} else {
		l = l2
	}
	srv.Kill()
	srv.Restart()
	redisAnswers(t, s) // its reply says Redis restarted
	if err := s.Done(ctx, l, now, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	run := l.Token
	if l = claimURL(t, s, now, runOpt, "http://a/3"); l.Token == run {
		t.Errorf("a/3 came from the run, though Redis restarted since it began")
	}
	srv.Kill()
	if err := s.Done(ctx, l, now, frontier.Outcome{Pace: l.Pace}); err == nil {
		t.Errorf("Done with Redis gone: no error")
	}
	if cl, err := s.Claim(ctx, now, runOpt); err == nil && cl.Lease != nil {
		t.Errorf("with Redis gone, Claim handed out %s", cl.Lease.URL)
	}
	srv.Restart() // for Close
}

// TestRunRevisits: the revisits of a run's items wait for the run's end,
// and are all queued then; a Store that closes while a run waits for its
// next Claim ends it so, and one that closes while a run's item is out
// gives back its items, those done too: no revisit is lost.
func TestRunRevisits(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	s1 := mustNew(t, srv, job, Options{CallerClock: true})
	addPaths(t, s1, "a", 4)
	now := time.Now()
	due := now.Add(time.Hour)
	l := claimURL(t, s1, now, runOpt, "http://a/1")
	token := l.Token
	for i := 2; i <= 4; i++ {
		revisitAt(t, s1, l, now, due)
		l = claimURL(t, s1, now, runOpt, fmt.Sprintf("http://a/%d", i))
		if l.Token != token {
			t.Fatalf("a/%d: not from the run: a Done with a revisit ended it", i)
		}
	}
	revisitAt(t, s1, l, now, due) // the last: the run ends, four revisits queued
	if got := queuedAt(t, s1, now); got != 4 {
		t.Errorf("after the run, Counts.Queued = %d, want its 4 revisits", got)
	}
	got := drainAt(t, s1, due)
	slices.Sort(got)
	if want := []string{"http://a/1", "http://a/2", "http://a/3", "http://a/4"}; !slices.Equal(got, want) {
		t.Errorf("revisits due = %v, want %v", got, want)
	}

	// Close while the run waits for its next Claim, then while its item
	// is out.
	for _, out := range []bool{false, true} {
		job := newJob(t)
		s := mustNew(t, srv, job, Options{CallerClock: true})
		addPaths(t, s, "b", 3)
		l := claimURL(t, s, now, runOpt, "http://b/1")
		revisitAt(t, s, l, now, due)
		if out {
			claimURL(t, s, now, runOpt, "http://b/2")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := mustNew(t, srv, job, Options{CallerClock: true})
		got := drainAt(t, s2, due)
		slices.Sort(got)
		want := []string{"http://b/1", "http://b/2", "http://b/3"} // b/1 again, or its revisit
		if !slices.Equal(got, want) {
			t.Errorf("closed with an item out: %v; queued after Close, then due: %v, want %v", out, got, want)
		}
		s2.Close()
	}
}
