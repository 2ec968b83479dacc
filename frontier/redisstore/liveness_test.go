package redisstore

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/heedcrawl/heed/ratelimit"
)

// liveOpt claims runs of up to four items, with a liveness timeout of
// ten seconds.
var liveOpt = frontier.ClaimOptions{PerHost: 1, Lease: 10 * time.Second, Affinity: 3}

// manualMember returns a Store of job that beats only when the test says
// (beatAt), on a controlled clock: the caller's now for Redis's decisions
// and *mono for its own monotonic clock.
func manualMember(t *testing.T, srv *redistest.Server, job string) (*Store, *atomic.Int64) {
	t.Helper()
	s := mustNew(t, srv, job, Options{CallerClock: true, Shards: 1})
	s.live.manual = true
	mono := new(atomic.Int64)
	s.live.clock = func() time.Duration { return time.Duration(mono.Load()) }
	return s, mono
}

// beatAt sends s's heartbeat at now (the caller's clock of the job).
func beatAt(t *testing.T, s *Store, now time.Time) {
	t.Helper()
	s.lastNow.Store(micros(now))
	s.live.mu.Lock()
	err := s.beat(ctx)
	s.live.mu.Unlock()
	if err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	s.live.pending.Wait() // its reclaim, if any
}

// TestLivenessReclaim: a member that stops beating loses every lease it
// held once its last heartbeat is older than its timeout, to the first
// heartbeat of another member: the items go back to the front of their
// queue in order, the key rests a full Delay from then, the dead member's
// Done is refused, a late claim of it grants nothing, and its Store joins
// again as a new member.
func TestLivenessReclaim(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	a, aMono := manualMember(t, srv, job)
	b, _ := manualMember(t, srv, job)
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, a, item("k", "/0"), item("k", "/1"), item("k", "/2"), item("k", "/3"), item("k", "/4"), item("k", "/5"))
	// The key's Delay is 2s.
	one := frontier.ClaimOptions{PerHost: 1, Lease: liveOpt.Lease}
	l0 := claimAt(t, a, t0, one).Lease
	if l0 == nil || l0.URL != "http://k/0" {
		t.Fatalf("first Claim = %v, want k/0", l0)
	}
	if want := t0.Add(liveOpt.Lease * 3 / 4); !l0.Expires.Equal(want) {
		t.Errorf("Expires = t0+%v, want t0+%v: three quarters of the timeout after the last heartbeat", l0.Expires.Sub(t0), want.Sub(t0))
	}
	pace := ratelimit.HostState{Delay: 2 * time.Second}
	if err := a.Done(ctx, l0, t0, frontier.Outcome{Pace: pace, Rest: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(2 * time.Second)
	run := claimAt(t, a, t1, liveOpt).Lease
	if run == nil || run.URL != "http://k/1" {
		t.Fatalf("Claim at t0+2s = %v, want k/1, a run", run)
	}
	beatAt(t, b, t1)
	if c := claimAt(t, b, t1, liveOpt); c.Lease != nil || c.Idle {
		t.Fatalf("b's Claim while a beats = %+v, want nothing, not idle", c)
	}
	members, err := b.Members(ctx)
	if err != nil || len(members) != 2 {
		t.Fatalf("Members = %v, %v; want a and b", members, err)
	}

	// a stops beating; b's heartbeat a timeout and more later finds it dead.
	t2 := t1.Add(liveOpt.Lease + time.Second)
	aMono.Store(int64(liveOpt.Lease + time.Second))
	beatAt(t, b, t2)
	if c := claimAt(t, b, t2, liveOpt); c.Lease != nil || !c.Next.Equal(t2.Add(2*time.Second)) {
		t.Fatalf("b's Claim right after a died = %+v (%v), want none until its key rested a Delay, t2+2s", c, c.Lease)
	}
	got := claimAt(t, b, t2.Add(2*time.Second), one).Lease
	if got == nil || got.URL != "http://k/1" {
		t.Fatalf("b's Claim once k rested = %v, want k/1: a's run back at the front, in order", got)
	}
	if err := b.Done(ctx, got, t2.Add(2*time.Second), frontier.Outcome{Pace: pace}); err != nil {
		t.Fatal(err)
	}
	if next := claimAt(t, b, t2.Add(2*time.Second), one).Lease; next == nil || next.URL != "http://k/2" {
		t.Fatalf("b's next Claim = %v, want k/2", next)
	}

	// a's Done of its lost item is refused; a late claim of its old
	// member grants nothing; its next Claim joins as a new member.
	if err := a.Done(ctx, run, t2, frontier.Outcome{Pace: pace}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("dead member's Done = %v, want ErrLeaseLost", err)
	}
	old := a.live.cur.Load()
	old.dead.Store(false) // as if the Done had not told it: the claim's reply must
	mustAdd(t, b, item("z", "/1"))
	t3 := t2.Add(2 * time.Second) // z/1 is ready
	if l, err := a.claimStore(ctx, t3, liveOpt); err != nil || l.Lease != nil {
		t.Errorf("late claim of the dead member = %+v, %v; want nothing", l, err)
	}
	if !old.dead.Load() {
		t.Error("the script's tail did not say the member is dead")
	}
	l := claimAt(t, a, t3, liveOpt).Lease
	if l == nil || l.URL != "http://z/1" {
		t.Fatalf("a's Claim after it rejoined = %v, want z/1", l)
	}
	if cur := a.live.cur.Load(); cur == old || cur.dead.Load() {
		t.Errorf("a is member %d, want a new one (was %d)", cur.id, old.id)
	}
}

// TestLivenessLongLease: a lease lasts as long as its member beats,
// however long that is, and its Done is accepted.
func TestLivenessLongLease(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	a, aMono := manualMember(t, srv, job)
	b, _ := manualMember(t, srv, job)
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, a, item("k", "/1"), item("k", "/2"))
	l := claimAt(t, a, t0, liveOpt).Lease
	if l == nil {
		t.Fatal("no lease")
	}
	beatAt(t, b, t0)
	for d := time.Duration(0); d <= 6*liveOpt.Lease; d += liveOpt.Lease / 2 {
		now := t0.Add(d)
		aMono.Store(int64(d))
		beatAt(t, a, now)
		beatAt(t, b, now)
		if c := claimAt(t, b, now, frontier.ClaimOptions{PerHost: 1, Lease: liveOpt.Lease}); c.Lease != nil {
			t.Fatalf("at t0+%v b claimed %s, which a holds and beats for", d, c.Lease.URL)
		}
	}
	end := t0.Add(6 * liveOpt.Lease)
	if err := a.Done(ctx, l, end, frontier.Outcome{}); err != nil {
		t.Errorf("Done after six timeouts of heartbeats: %v", err)
	}
}

// TestLivenessPausedStartsNothing: a Store whose last acknowledged
// heartbeat is older than three quarters of its timeout hands out no
// lease a request may start on — the next item of its run comes expired
// — before it learns whether Redis declared it dead.
func TestLivenessPausedStartsNothing(t *testing.T) {
	srv := redistest.Start(t)
	a, aMono := manualMember(t, srv, newJob(t))
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, a, item("k", "/1"), item("k", "/2"), item("k", "/3"))
	l := claimAt(t, a, t0, liveOpt).Lease
	if l == nil || !l.Expires.After(t0) {
		t.Fatalf("Claim = %v, want a lease with time to go", l)
	}
	// Paused: the monotonic clock jumps past the timeout.
	aMono.Store(int64(liveOpt.Lease))
	if a.alive(a.live.cur.Load().id) {
		t.Fatal("a member paused past three quarters of its timeout says it is alive")
	}
	// Its Done is not held back for the run's next item: it goes to
	// Redis, which still has the lease (no other member beat since).
	if err := a.Done(ctx, l, t0, frontier.Outcome{}); err != nil {
		t.Fatalf("Done: %v", err)
	}
	a.mu.Lock()
	ready := len(a.ready)
	a.mu.Unlock()
	if ready != 0 {
		t.Errorf("the run goes on with %d items ready while its member may be dead", ready)
	}
}

// TestLivenessLostNotTwice: an item a Store did under a lease it lost
// (its member was declared dead) is not handed to its workers again: if
// the Store claims it again, it ends it at once — the process wrote its
// record already — and hands out the next.
func TestLivenessLostNotTwice(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	a, aMono := manualMember(t, srv, job)
	b, _ := manualMember(t, srv, job)
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, a, item("k", "/1"), item("k", "/2"))
	one := frontier.ClaimOptions{PerHost: 1, Lease: liveOpt.Lease}
	l := claimAt(t, a, t0, one).Lease
	if l == nil || l.URL != "http://k/1" {
		t.Fatalf("Claim = %v, want k/1", l)
	}
	claimAt(t, b, t0, one) // b joins
	beatAt(t, b, t0)
	// a is paused past its timeout: b takes k/1 back.
	t1 := t0.Add(liveOpt.Lease + time.Second)
	aMono.Store(int64(liveOpt.Lease + time.Second))
	beatAt(t, b, t1)
	if err := a.Done(ctx, l, t1, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Fatalf("Done of the lost lease = %v, want ErrLeaseLost", err)
	}
	// a joins again and claims k: k/1 is ended, k/2 handed out.
	got := claimAt(t, a, t1, one).Lease
	if got == nil || got.URL != "http://k/2" {
		t.Fatalf("a's Claim after it lost k/1 = %v, want k/2: k/1 is done, its record written", got)
	}
	if err := a.Done(ctx, got, t1, frontier.Outcome{}); err != nil {
		t.Fatal(err)
	}
	if c := claimAt(t, b, t1, one); !c.Idle {
		t.Errorf("b's Claim = %+v, want idle: k/1 done once, by a", c)
	}
}

// TestLivenessFailoverLostDone: a restart (or failover) that loses a Done
// the Store saw acknowledged leaves the lease, in Redis, with the member
// — which beats on, and would keep the key (PerHost 1: the host) until it
// ends. Once a reply tells the Store of the new epoch, its next heartbeat
// hands the lease back: the item is handed out again, a full Delay after.
func TestLivenessFailoverLostDone(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	a, _ := manualMember(t, srv, job)
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, a, item("k", "/0"), item("k", "/1"), item("k", "/2"))
	one := frontier.ClaimOptions{PerHost: 1, Lease: liveOpt.Lease}
	pace := ratelimit.HostState{Delay: 2 * time.Second}
	l0 := claimAt(t, a, t0, one).Lease
	// A lease granted before the restart and still held: it stays.
	mustAdd(t, a, item("j", "/0"))
	lj := claimAt(t, a, t0, one).Lease
	if lj == nil || lj.URL != "http://j/0" {
		t.Fatalf("Claim = %v, want j/0", lj)
	}
	if l0 == nil || l0.URL != "http://k/0" {
		t.Fatalf("Claim = %v, want k/0", l0)
	}
	if err := a.Done(ctx, l0, t0, frontier.Outcome{Pace: pace, Rest: pace.Delay}); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(pace.Delay)
	l1 := claimAt(t, a, t1, one).Lease
	if l1 == nil || l1.URL != "http://k/1" {
		t.Fatalf("Claim = %v, want k/1", l1)
	}
	copied := dumpJob(t, srv.Client(), job)
	if err := a.Done(ctx, l1, t1, frontier.Outcome{Pace: pace, Rest: pace.Delay}); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	srv.Restart()
	restoreJob(t, srv.Client(), copied) // the Done is lost

	t2 := t1.Add(3 * time.Second)
	if c := claimAt(t, a, t2, one); c.Lease != nil {
		t.Fatalf("Claim after the restart = %v, want nothing: the lost Done's lease holds the key", c.Lease)
	}
	beatAt(t, a, t2)
	if c := claimAt(t, a, t2.Add(pace.Delay-time.Millisecond), one); c.Lease != nil {
		t.Fatalf("Claim before a Delay from the hand-back = %v, want nothing: a request may have been under way", c.Lease)
	}
	l := claimAt(t, a, t2.Add(pace.Delay), one).Lease
	if l == nil || l.URL != "http://k/1" {
		t.Fatalf("Claim a Delay after the hand-back = %v, want k/1 handed out again", l)
	}
	if err := a.Done(ctx, l, t2.Add(pace.Delay), frontier.Outcome{Pace: pace}); err != nil {
		t.Fatal(err)
	}
	if err := a.Done(ctx, lj, t2.Add(pace.Delay), frontier.Outcome{Pace: pace}); err != nil {
		t.Errorf("Done of a lease held across the restart: %v, want it kept", err)
	}
}
