package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// runRevisits runs the cases of revisits: items queued again by a Done's
// Outcome.Revisit, with a Visit, due later.
func runRevisits(t *testing.T, h Harness, open func(t *testing.T) frontier.Store) {
	t.Run("AddDue", func(t *testing.T) { testAddDue(t, open(t)) })
	t.Run("RevisitOrder", func(t *testing.T) { testRevisitOrder(t, open(t)) })
	t.Run("RevisitSeen", func(t *testing.T) { testRevisitSeen(t, open(t)) })
	t.Run("RevisitAtomic", func(t *testing.T) { testRevisitAtomic(t, open(t)) })
	t.Run("RevisitAndNew", func(t *testing.T) { testRevisitAndNew(t, open(t)) })
	t.Run("RevisitClosed", func(t *testing.T) { testRevisitClosed(t, open(t)) })
	t.Run("RevisitRequeue", func(t *testing.T) { testRevisitRequeue(t, open(t)) })
	t.Run("Revisiting", func(t *testing.T) { testRevisiting(t, h, open(t)) })
	if h.Reopen != nil {
		t.Run("RevisitReopen", func(t *testing.T) { testRevisitPersist(t, h.Reopen, open(t)) })
	}
	if h.Crash != nil {
		t.Run("RevisitCrash", func(t *testing.T) { testRevisitPersist(t, h.Crash, open(t)) })
		t.Run("RevisitCrashAtomic", func(t *testing.T) { testRevisitCrashAtomic(t, h, open(t)) })
	}
}

// visitOf returns a Visit of a fetch of url at now, every field set to a
// value every Store keeps exactly (LastModified in whole seconds).
func visitOf(url string, now time.Time) *frontier.Visit {
	var p revisit.Page
	_ = p.Observe(revisit.Obs{Interval: time.Hour, Changed: true})
	_ = p.Observe(revisit.Obs{Interval: 2 * time.Hour})
	return &frontier.Visit{
		Fetched:      now,
		Changed:      now.Add(-time.Minute),
		ETag:         `W/"` + url + `"`,
		LastModified: now.Add(-time.Hour).Truncate(time.Second),
		Digest:       0xfeed_beef_0000_0001,
		Status:       200,
		Gone:         1,
		Size:         12345,
		LastmodRead:  now.Add(90 * time.Second),
		Estimator:    p,
	}
}

// revisitOf returns l's item to queue again, due at due, with a Visit of a
// fetch at now.
func revisitOf(l *frontier.Lease, now, due time.Time) *frontier.Item {
	it := l.Item
	it.Due = due
	it.Visit = visitOf(l.URL, now)
	return &it
}

// doneRevisit ends l at now with no rest, queuing its item again due at
// due, and returns the item queued.
func doneRevisit(t *testing.T, s frontier.Store, l *frontier.Lease, now, due time.Time) *frontier.Item {
	t.Helper()
	rv := revisitOf(l, now, due)
	if err := s.Done(ctx, l, now, frontier.Outcome{Pace: l.Pace, Revisit: rv}); err != nil {
		t.Fatalf("Done(%s) with a revisit: %v", l.URL, err)
	}
	return rv
}

// checkRevisit fails t unless l hands out want, every field as it was
// queued.
func checkRevisit(t *testing.T, when string, l *frontier.Lease, want *frontier.Item) {
	t.Helper()
	if l == nil {
		t.Fatalf("%s: no lease, want %s", when, want.URL)
	}
	if l.Visit == nil {
		t.Fatalf("%s: %s came back without its Visit", when, l.URL)
	}
	for _, d := range Diff(*want, l.Item, nil) {
		t.Errorf("%s: %s", when, d)
	}
}

// fetchOnce adds items, then claims and ends each at now with a revisit due
// at dues[url], and returns the revisits queued by URL.
func fetchOnce(t *testing.T, s frontier.Store, now time.Time, dues map[string]time.Time, items ...frontier.Item) map[string]*frontier.Item {
	t.Helper()
	mustAdd(t, s, items...)
	queued := map[string]*frontier.Item{}
	for range items {
		c := claim(t, s, now, opt)
		if c.Lease == nil {
			t.Fatalf("fetchOnce: nothing to claim at t0+%v (next %v)", now.Sub(t0), c.Next)
		}
		due, ok := dues[c.Lease.URL]
		if !ok {
			t.Fatalf("fetchOnce: %s claimed, which has no due time", c.Lease.URL)
		}
		queued[c.Lease.URL] = doneRevisit(t, s, c.Lease, now, due)
	}
	return queued
}

// testAddDue: items added with a Due are handed out by it, none before
// it, and Claim's Next says when the first is due.
func testAddDue(t *testing.T, s frontier.Store) {
	a1, a2, b1 := item("a", "/1"), item("a", "/2"), item("b", "/1")
	a1.Due, a2.Due, b1.Due = t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(90*time.Second)
	mustAdd(t, s, a1, a2, b1)
	c := claim(t, s, t0, opt)
	if c.Lease != nil || c.Idle || !c.Next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Claim at t0 = %+v, want nothing until t0+1m", c)
	}
	at := t0.Add(time.Minute)
	l := mustClaim(t, s, at, "http://a/1")
	if !l.Due.Equal(a1.Due) {
		t.Errorf("a/1 came back due %v, want %v", l.Due, a1.Due)
	}
	ack(t, s, l, at, 0)
	if c := claim(t, s, at, opt); c.Lease != nil {
		t.Errorf("Claim at t0+1m = %s, due at t0+%v", c.Lease.URL, c.Lease.Due.Sub(t0))
	}
	at = t0.Add(5 * time.Minute)
	ack(t, s, mustClaim(t, s, at, "http://b/1"), at, 0)
	ack(t, s, mustClaim(t, s, at, "http://a/2"), at, 0)
}

// testRevisitOrder: revisits are handed out by Due, within a key and across
// keys, none before its Due; while they wait Claim's Next is the first Due,
// the Store is not idle and counts them queued and their keys resting.
func testRevisitOrder(t *testing.T, s frontier.Store) {
	dues := map[string]time.Time{
		"http://a/1": t0.Add(3 * time.Hour),
		"http://a/2": t0.Add(time.Hour),
		"http://a/3": t0.Add(2 * time.Hour),
		"http://b/1": t0.Add(90 * time.Minute),
	}
	queued := fetchOnce(t, s, t0, dues, item("a", "/1"), item("a", "/2"), item("a", "/3"), item("b", "/1"))
	at := t0.Add(30 * time.Minute)
	c := claim(t, s, at, opt)
	if c.Lease != nil {
		t.Fatalf("Claim at t0+30m = %s, due at t0+%v", c.Lease.URL, c.Lease.Due.Sub(t0))
	}
	if c.Idle {
		t.Error("a Store holding revisits due later is idle")
	}
	if !c.Next.Equal(t0.Add(time.Hour)) {
		t.Errorf("Claim.Next = t0+%v, want the first Due, t0+1h", c.Next.Sub(t0))
	}
	counts, err := s.Counts(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Queued != 4 || counts.Leased != 0 || counts.Resting != 2 || counts.Ready != 0 || counts.Hosts != 2 || counts.Scheduled != 4 {
		t.Errorf("Counts with four revisits due later = %+v, want 4 queued on 2 resting hosts, 4 scheduled", counts)
	}
	if c := claim(t, s, t0.Add(time.Hour-time.Millisecond), opt); c.Lease != nil {
		t.Errorf("%s claimed a millisecond before its Due", c.Lease.URL)
	}
	later := t0.Add(4 * time.Hour)
	for _, want := range []string{"http://a/2", "http://b/1", "http://a/3", "http://a/1"} {
		l := mustClaim(t, s, later, want)
		checkRevisit(t, "revisit "+want, l, queued[want])
		ack(t, s, l, later, 0)
	}
	if c := claim(t, s, later, opt); !c.Idle {
		t.Errorf("every revisit done for good: Claim = %+v, want idle", c)
	}
}

// testRevisitSeen: a URL queued again by a revisit stays seen, is not
// counted again against the limits, and is refused by neither.
func testRevisitSeen(t *testing.T, s frontier.Store) {
	lim := frontier.Limits{MaxPages: 2, MaxPagesPerHost: 1}
	if r := add(t, s, lim, item("a", "/1")); r[0] != nil {
		t.Fatalf("Add(a/1): %v", r[0])
	}
	now := t0
	for i := range 3 {
		l := mustClaim(t, s, now, "http://a/1")
		doneRevisit(t, s, l, now, now.Add(time.Minute))
		if r := add(t, s, frontier.Limits{}, item("a", "/1")); !errors.Is(r[0], frontier.ErrSeen) {
			t.Errorf("Add of a URL queued as a revisit (%d): %v, want ErrSeen", i, r[0])
		}
		now = now.Add(time.Minute)
	}
	c, err := s.Counts(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Scheduled != 1 || c.Queued != 1 {
		t.Errorf("Counts after three revisits of one URL = %+v, want 1 scheduled, 1 queued", c)
	}
	// The host limit is spent by a/1 alone, the page limit is not.
	if r := add(t, s, lim, item("a", "/2"), item("b", "/1")); !errors.Is(r[0], frontier.ErrHostLimit) || r[1] != nil {
		t.Errorf("Add(a/2, b/1) = %v, want [ErrHostLimit nil]", r)
	}
	for range 2 { // b/1, and a/2 to be reported: due at once, ahead of a/1's revisit
		c := claim(t, s, now, opt)
		if c.Lease == nil || c.Lease.URL != "http://b/1" && c.Lease.URL != "http://a/2" {
			t.Fatalf("Claim = %+v, want b/1 or a/2", c)
		}
		ack(t, s, c.Lease, now, 0)
	}
	aa, ok := s.(frontier.DoneAdder)
	if !ok {
		return
	}
	// DoneAdding queues the revisit as Done does; the page's link to
	// itself is seen.
	l := mustClaim(t, s, now, "http://a/1")
	rv := revisitOf(l, now, now.Add(time.Hour))
	refused, err := aa.DoneAdding(ctx, l, now, frontier.Outcome{Pace: l.Pace, Revisit: rv}, []frontier.Item{item("a", "/1"), item("b", "/2")}, frontier.Limits{})
	if err != nil || len(refused) != 2 || !errors.Is(refused[0], frontier.ErrSeen) || refused[1] != nil {
		t.Fatalf("DoneAdding with a revisit = %v, %v; want [ErrSeen nil]", refused, err)
	}
	ack(t, s, mustClaim(t, s, now, "http://b/2"), now, 0)
	if c := claim(t, s, now, opt); c.Lease != nil || !c.Next.Equal(now.Add(time.Hour)) {
		t.Errorf("after DoneAdding: Claim = %+v, want nothing until the revisit's Due", c)
	}
	checkRevisit(t, "revisit by DoneAdding", claim(t, s, now.Add(time.Hour), opt).Lease, rv)
}

// testRevisitAtomic: a Done's revisit and checkpoint are applied together
// or not at all: a lost lease or a revisit of another URL applies neither.
func testRevisitAtomic(t *testing.T, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("a", "/2"))
	l := mustClaim(t, s, t0, "http://a/1")
	other := revisitOf(l, t0, t0.Add(time.Minute))
	other.URL = "http://a/2"
	err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Revisit: other, Checkpoint: []byte("cp0")})
	if !errors.Is(err, frontier.ErrRevisit) {
		t.Errorf("Done with a revisit of another URL: %v, want ErrRevisit", err)
	}
	rv := revisitOf(l, t0, t0.Add(time.Minute))
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Revisit: rv, Checkpoint: []byte("cp1")}); err != nil {
		t.Fatalf("Done with a revisit, after one refused: %v", err)
	}
	if cp, err := s.Checkpoint(ctx); err != nil || string(cp) != "cp1" {
		t.Errorf("Checkpoint = %q, %v; want cp1", cp, err)
	}
	stale := *l
	err = s.Done(ctx, &stale, t0, frontier.Outcome{Pace: l.Pace, Revisit: revisitOf(l, t0, t0), Checkpoint: []byte("cp2")})
	if !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Done with a revisit on an ended lease: %v, want ErrLeaseLost", err)
	}
	if cp, _ := s.Checkpoint(ctx); string(cp) != "cp1" {
		t.Errorf("Checkpoint after a refused Done = %q, want cp1", cp)
	}
	c, err := s.Counts(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Queued != 2 {
		t.Errorf("Counts = %+v, want 2 queued: a/2 and a/1's one revisit", c)
	}
	ack(t, s, mustClaim(t, s, t0, "http://a/2"), t0, 0)
	checkRevisit(t, "the revisit", claim(t, s, t0.Add(time.Minute), opt).Lease, rv)
}

// testRevisitAndNew: a key's new URLs and due revisits are handed out in
// the order of their Due, neither kind starving the other.
func testRevisitAndNew(t *testing.T, s frontier.Store) {
	dues := map[string]time.Time{}
	var items []frontier.Item
	for i := range 5 {
		it := item("a", fmt.Sprintf("/r%d", i))
		items = append(items, it)
		dues[it.URL] = t0.Add(time.Duration(i+1) * time.Minute)
	}
	fetchOnce(t, s, t0, dues, items...)
	news := []frontier.Item{item("a", "/n1"), item("a", "/n2"), item("a", "/n3")}
	news[0].Due = t0.Add(150 * time.Second)
	news[1].Due = t0.Add(150 * time.Second)
	news[2].Due = t0.Add(5 * time.Minute) // as r4; queued after it
	mustAdd(t, s, news...)
	got := drain(t, s, t0.Add(10*time.Minute))
	want := []string{"http://a/r0", "http://a/r1", "http://a/n1", "http://a/n2", "http://a/r2", "http://a/r3", "http://a/r4", "http://a/n3"}
	if !slices.Equal(got, want) {
		t.Errorf("claimed %v, want %v", got, want)
	}
}

// testRevisitClosed: a closed key hands out its revisits at once, whatever
// their Due, with their Visit.
func testRevisitClosed(t *testing.T, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("b", "/1"))
	l := mustClaim(t, s, t0, "http://a/1")
	rv := revisitOf(l, t0, t0.Add(time.Hour))
	hs := l.Pace
	hs.ClosedUntil = t0.Add(10 * time.Minute)
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: hs, Rest: time.Minute, Revisit: rv}); err != nil {
		t.Fatal(err)
	}
	closed, open := closedDrain(t, s, t0)
	if !slices.Equal(closed, []string{"http://a/2", "http://a/1"}) || !slices.Equal(open, []string{"http://b/1"}) {
		t.Errorf("closed key: handed out %v closed and %v open, want [a/2 a/1] closed, [b/1] open", closed, open)
	}

	// Given up: the same, and its revisit comes with its Visit.
	mustAdd(t, s, item("g", "/1"))
	l = mustClaim(t, s, t0, "http://g/1")
	rv = doneRevisit(t, s, l, t0, t0.Add(time.Hour))
	if err := s.GiveUp(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	l = claim(t, s, t0, opt).Lease
	checkRevisit(t, "revisit of a key given up", l, rv)
	if l != nil && !l.GivenUp {
		t.Errorf("revisit of a key given up: GivenUp not set")
	}
}

// testRevisitRequeue: a revisit requeued comes back first, with its Visit
// and Due.
func testRevisitRequeue(t *testing.T, s frontier.Store) {
	queued := fetchOnce(t, s, t0, map[string]time.Time{"http://a/1": t0.Add(time.Minute)}, item("a", "/1"))
	n := item("a", "/2")
	n.Due = t0.Add(2 * time.Minute)
	mustAdd(t, s, n)
	at := t0.Add(5 * time.Minute)
	l := mustClaim(t, s, at, "http://a/1")
	if err := s.Requeue(ctx, l, at, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	l = mustClaim(t, s, at, "http://a/1")
	checkRevisit(t, "requeued revisit", l, queued["http://a/1"])
	ack(t, s, l, at, 0)
	mustClaim(t, s, at, "http://a/2")
}

// testRevisitPersist: revisits survive reopen (a clean stop, or a crash
// after their Dones were durable), with their Visit and Due, in order.
func testRevisitPersist(t *testing.T, reopen func(*testing.T, frontier.Store) frontier.Store, s frontier.Store) {
	dues := map[string]time.Time{
		"http://a/1": t0.Add(2 * time.Hour),
		"http://a/2": t0.Add(time.Hour),
		"http://b/1": t0.Add(90 * time.Minute),
	}
	queued := fetchOnce(t, s, t0, dues, item("a", "/1"), item("a", "/2"), item("b", "/1"))
	s = reopen(t, s)
	t.Cleanup(func() { s.Close() })
	if r := add(t, s, frontier.Limits{}, item("a", "/1")); !errors.Is(r[0], frontier.ErrSeen) {
		t.Errorf("Add of a revisit's URL after reopening: %v, want ErrSeen", r[0])
	}
	if c := claim(t, s, t0.Add(30*time.Minute), opt); c.Lease != nil || c.Idle {
		t.Errorf("after reopening, Claim before the first Due = %+v, want nothing and not idle", c)
	}
	later := t0.Add(3 * time.Hour) // past every Due and the Delay of a reopening
	for _, want := range []string{"http://a/2", "http://b/1", "http://a/1"} {
		l := mustClaim(t, s, later, want)
		checkRevisit(t, "after reopening, "+want, l, queued[want])
		ack(t, s, l, later, 0)
	}
}

// testRevisitCrashAtomic: after a crash, each Done that queued a revisit
// was applied whole or not at all, in order: the checkpoint names the last
// one applied, every revisit up to it is queued with its Visit, and every
// item after it is handed out again as it was before its Done.
func testRevisitCrashAtomic(t *testing.T, h Harness, s frontier.Store) {
	var urls []string
	for i := range 10 {
		it := item("a", fmt.Sprintf("/%d", i))
		mustAdd(t, s, it)
		urls = append(urls, it.URL)
	}
	queued := map[string]*frontier.Item{}
	for _, u := range urls {
		l := mustClaim(t, s, t0, u)
		rv := revisitOf(l, t0, t0.Add(time.Minute))
		if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Revisit: rv, Checkpoint: []byte(u)}); err != nil {
			t.Fatal(err)
		}
		queued[u] = rv
	}
	s = h.Crash(t, s)
	t.Cleanup(func() { s.Close() })
	cp, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := slices.Index(urls, string(cp)) // -1: no Done survived
	if cp != nil && last < 0 {
		t.Fatalf("Checkpoint after the crash is %q, which no Done carried", cp)
	}
	now := time.Now().Add(time.Hour) // past every Due and the Delay of a reopening
	back := map[string]*frontier.Lease{}
	for range urls {
		c := claim(t, s, now, opt)
		if c.Lease == nil {
			break
		}
		back[c.Lease.URL] = c.Lease
		ack(t, s, c.Lease, now, 0)
	}
	for i, u := range urls {
		l := back[u]
		switch {
		case l == nil:
			t.Errorf("%s lost in the crash (checkpoint %q)", u, cp)
		case i <= last:
			checkRevisit(t, fmt.Sprintf("revisit %d, its Done before the checkpoint", i), l, queued[u])
		case l.Visit != nil:
			t.Errorf("%s came back with a Visit, its Done after the checkpoint %q", u, cp)
		}
	}
}
