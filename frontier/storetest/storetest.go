// Package storetest is the contract every frontier.Store must meet, as a
// test suite: MemoryStore, pebblestore and redisstore each run it from their
// own tests with a Harness that opens (and, for stores that persist,
// crashes and reopens) an instance.
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, storetest.Harness{
//			Open: func(t *testing.T) frontier.Store { return new(frontier.MemoryStore) },
//		})
//	}
package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

// Harness tells Run how to get stores.
type Harness struct {
	// Open returns a new, empty Store. Run closes it.
	Open func(t *testing.T) frontier.Store
	// Crash, if not nil, simulates the death of s's process at once — no
	// Close, nothing flushed beyond what s had made durable — and returns
	// a Store reopened on what survived. Stores that keep nothing leave it
	// nil, and the persistence tests are skipped for them.
	Crash func(t *testing.T, s frontier.Store) frontier.Store
	// Reopen, if not nil, closes s cleanly and returns a Store reopened on
	// its state.
	Reopen func(t *testing.T, s frontier.Store) frontier.Store
}

// t0 is the tests' clock: stores take the time they are given (a Store
// with a clock of its own, like Redis's, must still order keys as these
// times say, and a reopened Store paces its keys from the real time of its
// reopening), so each case starts t0 at the real clock's now (see Run): a
// slow suite on a loaded machine must not leave a late case's t0 minutes
// behind the stores' clocks. Cases run one at a time.
var t0 time.Time

var ctx = context.Background()

var opt = frontier.ClaimOptions{PerHost: 1, Lease: time.Minute}

// Run runs the contract suite on stores from h.
func Run(t *testing.T, h Harness) {
	open := func(t *testing.T) frontier.Store {
		t0 = time.Now().Truncate(time.Millisecond)
		s := h.Open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("AddIfNew", func(t *testing.T) { testAddIfNew(t, open(t)) })
	t.Run("SeenOnly", func(t *testing.T) { testSeenOnly(t, open(t)) })
	t.Run("Fields", func(t *testing.T) { testFields(t, h, open(t)) })
	t.Run("ConcurrentAdd", func(t *testing.T) { testConcurrentAdd(t, open(t)) })
	t.Run("FIFOAndRoundRobin", func(t *testing.T) { testFIFOAndRoundRobin(t, open(t)) })
	t.Run("LeaseAckRelease", func(t *testing.T) { testLeaseAckRelease(t, open(t)) })
	t.Run("Pacing", func(t *testing.T) { testPacing(t, open(t)) })
	t.Run("PerHost", func(t *testing.T) { testPerHost(t, open(t)) })
	t.Run("ClaimKey", func(t *testing.T) { testClaimKey(t, open(t)) })
	t.Run("Limits", func(t *testing.T) { testLimits(t, open(t)) })
	t.Run("LimitReports", func(t *testing.T) { testLimitReports(t, h, open(t)) })
	t.Run("GiveUp", func(t *testing.T) { testGiveUp(t, h, open(t)) })
	t.Run("ClosedKey", func(t *testing.T) { testClosedKey(t, h, open(t)) })
	t.Run("CountsAndMeta", func(t *testing.T) { testCountsAndMeta(t, open(t)) })
	t.Run("ContextCancelled", func(t *testing.T) { testContextCancelled(t, open(t)) })
	t.Run("DoneAdding", func(t *testing.T) { testDoneAdding(t, h, open(t)) })
	t.Run("QueuedFor", func(t *testing.T) { testQueuedFor(t, open(t)) })
	t.Run("DueCounts", func(t *testing.T) { testDueCounts(t, open(t)) })
	runRevisits(t, h, open)
	runEdits(t, h, open)
	if h.Reopen != nil {
		t.Run("Reopen", func(t *testing.T) { testReopen(t, h, open(t)) })
		t.Run("ReopenNoBurst", func(t *testing.T) { testReopenNoBurst(t, h, open(t)) })
	}
	if h.Crash != nil {
		t.Run("Crash", func(t *testing.T) { testCrash(t, h, open(t)) })
	}
}

func item(key, path string) frontier.Item {
	return frontier.Item{URL: "http://" + key + path, Key: key}
}

func add(t *testing.T, s frontier.Store, lim frontier.Limits, items ...frontier.Item) []error {
	t.Helper()
	refused, err := s.Add(ctx, items, lim)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	if len(refused) != len(items) {
		t.Fatalf("Add returned %d results for %d items", len(refused), len(items))
	}
	return refused
}

func mustAdd(t *testing.T, s frontier.Store, items ...frontier.Item) {
	t.Helper()
	for i, err := range add(t, s, frontier.Limits{}, items...) {
		if err != nil {
			t.Fatalf("Add(%s): %v", items[i].URL, err)
		}
	}
}

func claim(t *testing.T, s frontier.Store, now time.Time, o frontier.ClaimOptions) frontier.Claim {
	t.Helper()
	c, err := s.Claim(ctx, now, o)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return c
}

// mustClaim claims at now and wants url.
func mustClaim(t *testing.T, s frontier.Store, now time.Time, url string) *frontier.Lease {
	t.Helper()
	c := claim(t, s, now, opt)
	if c.Lease == nil {
		t.Fatalf("Claim at t0+%v = none (next %v, idle %v), want %s", now.Sub(t0), c.Next, c.Idle, url)
	}
	if c.Lease.URL != url {
		t.Fatalf("Claim = %s, want %s", c.Lease.URL, url)
	}
	return c.Lease
}

func ack(t *testing.T, s frontier.Store, l *frontier.Lease, now time.Time, rest time.Duration) {
	t.Helper()
	if err := s.Done(ctx, l, now, frontier.Outcome{Pace: l.Pace, Rest: rest}); err != nil {
		t.Fatalf("Done(%s): %v", l.URL, err)
	}
}

// drain claims and acks everything, with no rest, returning the URLs in
// the order they were claimed.
func drain(t *testing.T, s frontier.Store, now time.Time) []string {
	t.Helper()
	var urls []string
	for range 100_000 {
		c := claim(t, s, now, opt)
		if c.Lease == nil {
			if !c.Next.IsZero() && c.Next.After(now) {
				now = c.Next
				continue
			}
			return urls
		}
		urls = append(urls, c.Lease.URL)
		ack(t, s, c.Lease, now, 0)
	}
	t.Fatal("drain: no end")
	return nil
}

func testAddIfNew(t *testing.T, s frontier.Store) {
	refused := add(t, s, frontier.Limits{}, item("a", "/1"), item("a", "/2"), item("a", "/1"), item("b", "/1"))
	want := []error{nil, nil, frontier.ErrSeen, nil}
	for i := range want {
		if !errors.Is(refused[i], want[i]) || (want[i] == nil) != (refused[i] == nil) {
			t.Errorf("item %d: %v, want %v", i, refused[i], want[i])
		}
	}
	// Seen for good, even after the item was handed out and done.
	if got := drain(t, s, t0); len(got) != 3 {
		t.Fatalf("drained %v, want 3 items", got)
	}
	if r := add(t, s, frontier.Limits{}, item("a", "/1")); !errors.Is(r[0], frontier.ErrSeen) {
		t.Errorf("re-adding a done URL: %v, want ErrSeen", r[0])
	}
}

// testSeenOnly checks Item.SeenOnly: the URL joins the seen-set and
// nothing is queued; no limit and no given-up key refuses it; only a
// duplicate does, either way round.
func testSeenOnly(t *testing.T, s frontier.Store) {
	seenOnly := func(key, path string) frontier.Item {
		it := item(key, path)
		it.SeenOnly = true
		return it
	}
	if err := s.GiveUp(ctx, "dead"); err != nil {
		t.Fatal(err)
	}
	lim := frontier.Limits{MaxPages: 1, MaxPagesPerHost: 1}
	refused := add(t, s, lim, seenOnly("a", "/1"), seenOnly("a", "/2"), seenOnly("dead", "/1"), item("a", "/3"), seenOnly("a", "/1"))
	want := []error{nil, nil, nil, nil, frontier.ErrSeen}
	for i := range want {
		if (want[i] == nil) != (refused[i] == nil) || want[i] != nil && !errors.Is(refused[i], want[i]) {
			t.Errorf("item %d: %v, want %v", i, refused[i], want[i])
		}
	}
	refused = add(t, s, frontier.Limits{}, item("a", "/1"), seenOnly("a", "/3"))
	for i, err := range refused {
		if !errors.Is(err, frontier.ErrSeen) {
			t.Errorf("second add, item %d: %v, want ErrSeen", i, err)
		}
	}
	c, err := s.Counts(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Queued != 1 || c.Scheduled != 1 {
		t.Errorf("Counts = %+v, want the one page queued and scheduled", c)
	}
	if got := drain(t, s, t0); !slices.Equal(got, []string{"http://a/3"}) {
		t.Errorf("drained %v, want only http://a/3", got)
	}
}

func testConcurrentAdd(t *testing.T, s frontier.Store) {
	const workers, urls = 8, 200
	var wg sync.WaitGroup
	accepted := make([][]string, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range urls {
				it := item(fmt.Sprintf("h%d", i%7), fmt.Sprintf("/%d", i))
				refused, err := s.Add(ctx, []frontier.Item{it}, frontier.Limits{})
				if err != nil {
					t.Errorf("Add: %v", err)
					return
				}
				if refused[0] == nil {
					accepted[w] = append(accepted[w], it.URL)
				}
			}
		})
	}
	wg.Wait()
	all := slices.Concat(accepted...)
	slices.Sort(all)
	if len(all) != urls || len(slices.Compact(all)) != urls {
		t.Fatalf("%d URLs accepted over %d workers, want each of %d exactly once", len(all), workers, urls)
	}
	got := drain(t, s, t0)
	slices.Sort(got)
	if !slices.Equal(got, all) {
		t.Errorf("drained %d items, want the %d accepted", len(got), len(all))
	}
}

func testFIFOAndRoundRobin(t *testing.T, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("b", "/1"))
	mustAdd(t, s, item("c", "/1"), item("b", "/2"))
	got := drain(t, s, t0)
	want := []string{"http://a/1", "http://b/1", "http://c/1", "http://a/2", "http://b/2"}
	if !slices.Equal(got, want) {
		t.Errorf("claimed %v, want %v", got, want)
	}
	if c := claim(t, s, t0, opt); c.Lease != nil || !c.Idle {
		t.Errorf("empty store: Claim = %+v, want idle", c)
	}
}

func testLeaseAckRelease(t *testing.T, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("a", "/2"))
	l := mustClaim(t, s, t0, "http://a/1")
	if c := claim(t, s, t0, opt); c.Lease != nil || c.Idle {
		t.Fatalf("with a/1 leased (per host 1): Claim = %+v, want nothing and not idle", c)
	}
	// Released with what it went through: back at the front.
	l.Retries = 2
	l.Redirects = []string{"http://a/0"}
	l.Meta = map[string]string{"category": "books"}
	if err := s.Requeue(ctx, l, t0, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	if err := s.Requeue(ctx, l, t0, frontier.Outcome{Pace: l.Pace}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("second Requeue of one lease: %v, want ErrLeaseLost", err)
	}
	l = mustClaim(t, s, t0, "http://a/1")
	if l.Retries != 2 || !slices.Equal(l.Redirects, []string{"http://a/0"}) || l.Meta["category"] != "books" {
		t.Errorf("released item came back as %+v", l.Item)
	}
	stale := *l
	stale.Token++
	if err := s.Done(ctx, &stale, t0, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Done with a token not granted: %v, want ErrLeaseLost", err)
	}
	ack(t, s, l, t0, 0)
	if err := s.Done(ctx, l, t0, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("second Done: %v, want ErrLeaseLost", err)
	}
	ack(t, s, mustClaim(t, s, t0, "http://a/2"), t0, 0)
	if c := claim(t, s, t0, opt); !c.Idle {
		t.Errorf("all done: Claim = %+v, want idle", c)
	}
}

func testPacing(t *testing.T, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("b", "/1"))
	l := mustClaim(t, s, t0, "http://a/1")
	host := l.Pace
	host.Delay, host.CrawlDelay, host.HasCrawlDelay, host.Failures = 2*time.Second, 2*time.Second, true, 1
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: host, Rest: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Host(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Delay != host.Delay || got.CrawlDelay != host.CrawlDelay || !got.HasCrawlDelay || got.Failures != 1 {
		t.Errorf("Host(a) = %+v, want what the Done gave", got)
	}
	if got.NextAllowed.Before(t0.Add(2 * time.Second)) {
		t.Errorf("Host(a).NextAllowed = t0+%v, want at least t0+2s", got.NextAllowed.Sub(t0))
	}
	// b is ready, a rests.
	ack(t, s, mustClaim(t, s, t0, "http://b/1"), t0, 0)
	c := claim(t, s, t0.Add(time.Second), opt)
	if c.Lease != nil {
		t.Fatalf("a claimed at t0+1s, resting until t0+2s")
	}
	if c.Next.IsZero() || c.Next.After(t0.Add(3*time.Second)) || c.Next.Before(t0.Add(2*time.Second)) {
		t.Errorf("Claim.Next = %v, want about t0+2s", c.Next.Sub(t0))
	}
	mustClaim(t, s, t0.Add(3*time.Second), "http://a/2")
}

func testPerHost(t *testing.T, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("a", "/3"))
	two := frontier.ClaimOptions{PerHost: 2, Lease: time.Minute}
	var leases []*frontier.Lease
	for range 2 {
		c := claim(t, s, t0, two)
		if c.Lease == nil {
			t.Fatalf("per host 2: lease %d refused", len(leases)+1)
		}
		leases = append(leases, c.Lease)
	}
	if c := claim(t, s, t0, two); c.Lease != nil {
		t.Fatalf("a third lease of a with per host 2: %s", c.Lease.URL)
	}
	ack(t, s, leases[0], t0, 0)
	if c := claim(t, s, t0, two); c.Lease == nil || c.Lease.URL != "http://a/3" {
		t.Errorf("after one Done: Claim = %+v, want a/3", c)
	}

	// With a Delay, two leases of one key start that far apart.
	mustAdd(t, s, item("d", "/1"), item("d", "/2"))
	c := claim(t, s, t0, two)
	if c.Lease == nil {
		t.Fatal("d/1 not claimed")
	}
	h := c.Lease.Pace
	h.Delay = time.Second
	if err := s.Requeue(ctx, c.Lease, t0, frontier.Outcome{Pace: h}); err != nil {
		t.Fatal(err)
	}
	l := claim(t, s, t0.Add(2*time.Second), two).Lease
	if l == nil || l.URL != "http://d/1" {
		t.Fatalf("d/1 again: %+v", l)
	}
	if c := claim(t, s, t0.Add(2*time.Second+time.Millisecond), two); c.Lease != nil {
		t.Errorf("d/2 claimed 1 ms after d/1 with a 1 s Delay")
	}
	if c := claim(t, s, t0.Add(3*time.Second), two); c.Lease == nil || c.Lease.URL != "http://d/2" {
		t.Errorf("d/2 not claimable a Delay after d/1: %+v", c)
	}
}

func testClaimKey(t *testing.T, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"))
	l, _, err := s.ClaimKey(ctx, "other", t0, opt)
	if err != nil || l == nil {
		t.Fatalf("ClaimKey(other) = %v, %v", l, err)
	}
	if l2, next, err := s.ClaimKey(ctx, "other", t0, opt); err != nil || l2 != nil || next.IsZero() {
		t.Errorf("second ClaimKey(other) while leased = %v, %v, %v; want none and a time to ask again", l2, next, err)
	}
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Rest: time.Second}); err != nil {
		t.Fatal(err)
	}
	if l2, next, _ := s.ClaimKey(ctx, "other", t0.Add(time.Millisecond), opt); l2 != nil || next.Before(t0.Add(time.Second)) {
		t.Errorf("ClaimKey(other) while resting = %v, next t0+%v", l2, next.Sub(t0))
	}
	// A key lease paces the key's items too.
	l, _, _ = s.ClaimKey(ctx, "a", t0, opt)
	if l == nil {
		t.Fatal("ClaimKey(a) refused")
	}
	if c := claim(t, s, t0, opt); c.Lease != nil {
		t.Errorf("a/1 claimed while key a is leased")
	}
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Rest: time.Second}); err != nil {
		t.Fatal(err)
	}
	if c := claim(t, s, t0.Add(500*time.Millisecond), opt); c.Lease != nil {
		t.Errorf("a/1 claimed during the rest after a key lease")
	}
	mustClaim(t, s, t0.Add(time.Second), "http://a/1")
}

func testLimits(t *testing.T, s frontier.Store) {
	lim := frontier.Limits{MaxPages: 5, MaxPagesPerHost: 3, MaxSitemapsPerHost: 1, MaxSitemapURLsPerHost: 1}
	sm := func(key, path string) frontier.Item {
		it := item(key, path)
		it.Kind = frontier.KindSitemap
		return it
	}
	fromSM := func(key, path string) frontier.Item {
		it := item(key, path)
		it.FromSitemap = true
		return it
	}
	refused := add(t, s, lim,
		item("a", "/1"), item("a", "/2"), item("a", "/3"), item("a", "/4"), // the fourth over the host limit
		sm("a", "/s1"), sm("a", "/s2"), // sitemaps do not count as pages
		fromSM("b", "/1"), fromSM("b", "/2"),
		item("c", "/1"), item("c", "/2"), // the second over the page limit
	)
	want := []error{nil, nil, nil, frontier.ErrHostLimit, nil, frontier.ErrSitemapLimit, nil, frontier.ErrSitemapLimit, nil, frontier.ErrLimit}
	for i := range want {
		if (want[i] == nil) != (refused[i] == nil) || want[i] != nil && !errors.Is(refused[i], want[i]) {
			t.Errorf("item %d: %v, want %v", i, refused[i], want[i])
		}
	}
	// A page refused by a page limit was marked seen and queued to be
	// reported (testLimitReports); one a sitemap budget refused was not
	// marked seen: as a link, with room, it is accepted.
	if r := add(t, s, frontier.Limits{}, item("a", "/4"), item("b", "/2")); !errors.Is(r[0], frontier.ErrSeen) || r[1] != nil {
		t.Errorf("a/4 (refused by the host limit) and b/2 (by the sitemap budget) again: %v, want [ErrSeen nil]", r)
	}
	c, err := s.Counts(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Scheduled != 6 || c.Queued != 9 {
		t.Errorf("Counts = %+v, want 6 pages scheduled and 9 items queued (2 to be reported)", c)
	}
}

func testCountsAndMeta(t *testing.T, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("b", "/1"), item("c", "/1"))
	l := mustClaim(t, s, t0, "http://a/1")
	lb := mustClaim(t, s, t0, "http://b/1")
	if err := s.Done(ctx, lb, t0, frontier.Outcome{Pace: lb.Pace, Rest: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Counts(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	// a: one queued, one leased (busy, no free slot); c: one queued, ready.
	if c.Queued != 2 || c.Leased != 1 || c.Busy != 1 || c.Scheduled != 4 || c.Ready != 1 || c.Hosts != 2 {
		t.Errorf("Counts = %+v", c)
	}
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Checkpoint: []byte("offset 42")}); err != nil {
		t.Fatal(err)
	}
	if cp, err := s.Checkpoint(ctx); err != nil || string(cp) != "offset 42" {
		t.Errorf("Checkpoint = %q, %v", cp, err)
	}
	if v, err := s.Meta(ctx, "missing"); err != nil || v != nil {
		t.Errorf("Meta(missing) = %q, %v; want nil", v, err)
	}
	if err := s.SetMeta(ctx, "settings", []byte("scope=seeds")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Meta(ctx, "settings"); err != nil || string(v) != "scope=seeds" {
		t.Errorf("Meta(settings) = %q, %v", v, err)
	}
}

func testContextCancelled(t *testing.T, s frontier.Store) {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Add(cctx, []frontier.Item{item("a", "/1")}, frontier.Limits{}); err == nil {
		t.Error("Add with a cancelled context succeeded")
	}
	// Nothing was applied.
	mustAdd(t, s, item("a", "/1"))
}

// testReopen: a clean stop keeps everything.
func testReopen(t *testing.T, h Harness, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("b", "/1"))
	l := mustClaim(t, s, t0, "http://a/1")
	host := l.Pace
	host.Delay = time.Second
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: host, Rest: time.Second, Checkpoint: []byte("cp1")}); err != nil {
		t.Fatal(err)
	}
	lb := mustClaim(t, s, t0, "http://b/1") // in flight at the stop
	lb.Retries = 1
	s = h.Reopen(t, s)
	t.Cleanup(func() { s.Close() })
	if cp, _ := s.Checkpoint(ctx); string(cp) != "cp1" {
		t.Errorf("Checkpoint after reopening = %q, want cp1", cp)
	}
	if r := add(t, s, frontier.Limits{}, item("a", "/1"), item("a", "/2")); !errors.Is(r[0], frontier.ErrSeen) || !errors.Is(r[1], frontier.ErrSeen) {
		t.Errorf("seen-set lost: %v", r)
	}
	// a waits a full Delay from the reopening; b, in flight, is queued again.
	got := drain(t, s, time.Now())
	slices.Sort(got)
	if !slices.Equal(got, []string{"http://a/2", "http://b/1"}) {
		t.Errorf("after reopening, drained %v, want a/2 and b/1", got)
	}
}

// testReopenNoBurst: a Store that reopens keeps each key's pace, its
// token bucket: a key paused before the stop stays paused, and a key with
// several lease slots whose bucket was full gets one request at once, the
// next a Delay later — never a burst.
func testReopenNoBurst(t *testing.T, h Harness, s frontier.Store) {
	two := frontier.ClaimOptions{PerHost: 2, Lease: time.Minute}
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("b", "/1"), item("b", "/2"), item("b", "/3"))
	for range 2 {
		c := claim(t, s, t0, two)
		if c.Lease == nil {
			t.Fatal("nothing to claim")
		}
		pace := c.Lease.Pace
		pace.Delay = time.Second
		rest := time.Duration(0)
		if c.Lease.Key == "a" { // a Retry-After of an hour
			pace.PausedUntil, rest = t0.Add(time.Hour), time.Hour
		}
		if err := s.Done(ctx, c.Lease, t0, frontier.Outcome{Pace: pace, Rest: rest}); err != nil {
			t.Fatal(err)
		}
	}
	s = h.Reopen(t, s)
	t.Cleanup(func() { s.Close() })
	now := time.Now().Add(2 * time.Second) // past the Delay a reopened Store may impose
	l := claim(t, s, now, two).Lease
	if l == nil || l.Key != "b" {
		t.Fatalf("after reopening: Claim = %+v, want b's next item (a is paused)", l)
	}
	if c := claim(t, s, now, two); c.Lease != nil {
		t.Errorf("after reopening: %s claimed at once after %s, within the key's Delay: a burst", c.Lease.URL, l.URL)
	}
	ack(t, s, l, now, 0)
	if c := claim(t, s, now.Add(time.Second), two); c.Lease == nil || c.Lease.Key != "b" {
		t.Errorf("after reopening: Claim a Delay after b's = %+v, want b's last item", c.Lease)
	} else {
		ack(t, s, c.Lease, now.Add(time.Second), 0)
	}
	if c := claim(t, s, now.Add(2*time.Second), two); c.Lease != nil {
		t.Errorf("after reopening: %s claimed within its hour's pause", c.Lease.URL)
	}
	mustClaim(t, s, t0.Add(time.Hour+time.Second), "http://a/2")
}

// testCrash: after a crash no URL is lost — every URL the store says it has
// seen is either done (its Done was made durable) or handed out again — and
// every key waits a full Delay from the reopening.
func testCrash(t *testing.T, h Harness, s frontier.Store) {
	var urls []string
	for k := range 5 {
		for i := range 20 {
			it := item(fmt.Sprintf("h%d", k), fmt.Sprintf("/%d", i))
			mustAdd(t, s, it)
			urls = append(urls, it.URL)
		}
	}
	done := map[string]bool{}
	now := t0
	for range 30 {
		c := claim(t, s, now, opt)
		if c.Lease == nil {
			t.Fatal("nothing to claim")
		}
		host := c.Lease.Pace
		host.Delay = time.Hour
		if err := s.Done(ctx, c.Lease, now, frontier.Outcome{Pace: host, Checkpoint: []byte(c.Lease.URL)}); err != nil {
			t.Fatal(err)
		}
		done[c.Lease.URL] = true
	}
	for range 3 {
		if c := claim(t, s, now, opt); c.Lease == nil {
			t.Fatal("nothing to claim")
		} // leased at the crash
	}
	s = h.Crash(t, s)
	t.Cleanup(func() { s.Close() })
	reopened := time.Now()
	again := map[string]bool{}
	if c := claim(t, s, reopened, opt); c.Lease != nil {
		if c.Lease.Pace.Delay > 0 {
			t.Errorf("%s claimed at once after the crash; its key's Delay is %v", c.Lease.URL, c.Lease.Pace.Delay)
		}
		// Its key's Done was lost with the crash: the item is handed out
		// again, which is what the suite checks below.
		again[c.Lease.URL] = true
		ack(t, s, c.Lease, reopened, 0)
	}
	for _, u := range drain(t, s, reopened.Add(2*time.Hour)) {
		again[u] = true
	}
	cp, _ := s.Checkpoint(ctx)
	if cp != nil && !done[string(cp)] {
		t.Errorf("Checkpoint after the crash is %q, which no Done carried", cp)
	}
	for _, u := range urls {
		it := frontier.Item{URL: u, Key: u[len("http://"):len("http://h0")]}
		r := add(t, s, frontier.Limits{}, it)
		switch {
		case r[0] == nil:
			// Its Add was not durable: not seen, so not lost either.
		case !errors.Is(r[0], frontier.ErrSeen):
			t.Errorf("%s: %v", u, r[0])
		case !again[u] && !done[u]:
			t.Errorf("%s is marked seen but was neither done nor handed out after the crash: lost", u)
		}
	}
}

// notKept lists the fields of Item and HostState a Store does not give back
// as they were set, with why. testFields checks every other field. (A
// Lease's own fields — Token, Expires, GivenUp — are the Store's answer,
// not something it keeps; Item.Key is the queue's name, and checked.)
var notKept = map[string]string{
	"HostState.NextAllowed": "the Store computes it: at least the Outcome's Rest after the Done",
}

// notKeptReopen lists the fields a Store that reopens need not give back as
// they were before, with why (and checks what it gives instead).
var notKeptReopen = map[string]string{
	"HostState.Interrupted": "a Store that reopens after a stop sets it to the reopening (Schedule.Restore)",
}

// testFields: every field of an Item comes back from Claim as it was added,
// and every field of a HostState from Host and the next Claim as it was
// done, but for those notKept lists; for a Store that reopens, after it
// reopens too. The values are ones every Store keeps exactly (see Fill):
// MemoryStore keeps Lastmod to the second and Priority to 0.001.
func testFields(t *testing.T, h Harness, s frontier.Store) {
	var in frontier.Item
	Fill(t, &in, t0)
	in.Key = "fields"
	in.SeenOnly = false // an instruction to Add, never queued (testSeenOnly)
	due := in.Due       // hours after t0: claimed then, or when the key is closed
	first, second := in, in
	first.URL, second.URL = "http://fields/1", "http://fields/2"
	var host ratelimit.HostState
	Fill(t, &host, t0) // ClosedUntil hours ahead: both items are handed out at once
	mustAdd(t, s, first, second)

	checkItem := func(when string, l *frontier.Lease, want frontier.Item) {
		t.Helper()
		if l == nil {
			t.Fatalf("%s: no lease", when)
		}
		for _, d := range Diff(want, l.Item, nil) {
			t.Errorf("%s: %s", when, d)
		}
	}
	checkHost := func(when string, got ratelimit.HostState, skip map[string]string) {
		t.Helper()
		for _, d := range Diff(host, got, skip) {
			t.Errorf("%s: %s", when, d)
		}
	}
	l := claim(t, s, due, opt).Lease
	checkItem("Add, then Claim", l, first)
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: host}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Host(ctx, in.Key)
	if err != nil {
		t.Fatal(err)
	}
	checkHost("Done, then Host", got, notKept)
	l = claim(t, s, t0, opt).Lease
	checkItem("Claim of the second item", l, second)
	if l != nil {
		checkHost("Done, then the next lease's Host", l.Pace, notKept)
	}
	if h.Reopen == nil {
		return
	}
	if err := s.Requeue(ctx, l, t0, frontier.Outcome{Pace: host}); err != nil {
		t.Fatal(err)
	}
	reopened := time.Now()
	s = h.Reopen(t, s)
	t.Cleanup(func() { s.Close() })
	skip := maps.Clone(notKept)
	maps.Copy(skip, notKeptReopen)
	got, err = s.Host(ctx, in.Key)
	if err != nil {
		t.Fatal(err)
	}
	checkHost("Requeue, reopen, then Host", got, skip)
	if !got.Interrupted.Equal(host.Interrupted) && got.Interrupted.Before(reopened.Truncate(time.Millisecond)) {
		t.Errorf("Requeue, reopen, then Host: Interrupted = %v, want %v or the reopening (%v)", got.Interrupted, host.Interrupted, reopened)
	}
	l = claim(t, s, time.Now().Add(time.Minute), opt).Lease // past the Delay from the reopening
	checkItem("Requeue, reopen, then Claim", l, second)
	if l != nil {
		checkHost("Requeue, reopen, then the lease's Host", l.Pace, skip)
	}
}

// testAckAdd: a Store that is a frontier.DoneAdder adds as Add does and acks
// as Done does, in one call; a lost lease refuses the ack but not the links.
func testDoneAdding(t *testing.T, h Harness, s frontier.Store) {
	aa, ok := s.(frontier.DoneAdder)
	if !ok {
		t.Skip("not a frontier.DoneAdder")
	}
	mustAdd(t, s, item("a", "/1"), item("a", "/2"))
	l := mustClaim(t, s, t0, "http://a/1")
	host := l.Pace
	host.Delay = 2 * time.Second
	links := []frontier.Item{item("a", "/3"), item("a", "/2"), item("b", "/1"), item("a", "/3")}
	refused, err := aa.DoneAdding(ctx, l, t0, frontier.Outcome{Pace: host, Rest: 2 * time.Second, Checkpoint: []byte("cp1")}, links, frontier.Limits{})
	if err != nil {
		t.Fatalf("DoneAdding: %v", err)
	}
	if len(refused) != len(links) || refused[0] != nil || !errors.Is(refused[1], frontier.ErrSeen) || refused[2] != nil || !errors.Is(refused[3], frontier.ErrSeen) {
		t.Fatalf("DoneAdding refused %v, want [nil ErrSeen nil ErrSeen]", refused)
	}
	if err := s.Done(ctx, l, t0, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Done after DoneAdding: %v, want ErrLeaseLost (the lease ended)", err)
	}
	if got, err := s.Host(ctx, "a"); err != nil || got.Delay != 2*time.Second || got.NextAllowed.Before(t0.Add(2*time.Second)) {
		t.Errorf("Host(a) = %+v, %v: want the DoneAdding's state, resting until t0+2s", got, err)
	}
	if cp, err := s.Checkpoint(ctx); err != nil || string(cp) != "cp1" {
		t.Errorf("Checkpoint = %q, %v, want cp1", cp, err)
	}
	// b is ready; a rests.
	lb := mustClaim(t, s, t0, "http://b/1")
	refused, err = aa.DoneAdding(ctx, lb, t0, frontier.Outcome{Pace: lb.Pace}, []frontier.Item{item("b", "/2")}, frontier.Limits{MaxPages: 5})
	if err != nil || len(refused) != 1 || refused[0] != nil {
		t.Fatalf("DoneAdding(b/2) = %v, %v", refused, err)
	}
	// A stale lease: the links are added all the same, the ack refused.
	stale := *lb
	refused, err = aa.DoneAdding(ctx, &stale, t0, frontier.Outcome{Pace: lb.Pace}, []frontier.Item{item("b", "/3"), item("b", "/4")}, frontier.Limits{MaxPages: 6})
	if !errors.Is(err, frontier.ErrLeaseLost) || len(refused) != 2 || refused[0] != nil || !errors.Is(refused[1], frontier.ErrLimit) || !errors.Is(refused[1], frontier.ErrReported) {
		t.Fatalf("DoneAdding with an ended lease = %v, %v; want [nil ErrLimit, queued to be reported] and ErrLeaseLost", refused, err)
	}
	if h.Reopen != nil {
		s = h.Reopen(t, s)
		t.Cleanup(func() { s.Close() })
	}
	got := drain(t, s, time.Now().Add(3*time.Second))
	slices.Sort(got)
	if want := []string{"http://a/2", "http://a/3", "http://b/2", "http://b/3", "http://b/4"}; !slices.Equal(got, want) { // b/4 to be reported
		t.Errorf("drained %v, want %v", got, want)
	}
}
