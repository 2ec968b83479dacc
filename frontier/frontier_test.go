package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/fakeclock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// watchdog bounds calls that must not block: the Frontier runs on a fake
// clock that never moves by itself, so a Next that wrongly waits can only
// end through this real-time deadline, and the test then fails.
const watchdog = 10 * time.Second

var bg = context.Background()

func mustAdd(t *testing.T, fr *frontier.Frontier, it frontier.Item) {
	t.Helper()
	if err := fr.Add(bg, it); err != nil {
		t.Fatalf("Add(%q): %v", it.URL, err)
	}
}

func mustSeed(t *testing.T, fr *frontier.Frontier, urls ...string) {
	t.Helper()
	for _, u := range urls {
		if err := fr.AddSeed(bg, u); err != nil {
			t.Fatalf("AddSeed(%q): %v", u, err)
		}
	}
}

// next calls Next, which must return a lease without the fake clock moving.
func next(t *testing.T, fr *frontier.Frontier) *frontier.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, watchdog)
	defer cancel()
	l, err := fr.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return l
}

// done ends l with no rest.
func done(t *testing.T, fr *frontier.Frontier, l *frontier.Lease) {
	t.Helper()
	rest(t, fr, l, 0)
}

// rest ends l, its key resting d.
func rest(t *testing.T, fr *frontier.Frontier, l *frontier.Lease, d time.Duration) {
	t.Helper()
	if err := fr.Done(bg, l, frontier.Outcome{Pace: l.Pace, Rest: d}); err != nil {
		t.Fatalf("Done(%q): %v", l.URL, err)
	}
}

// deferFor gives l back, its key resting d.
func deferFor(t *testing.T, fr *frontier.Frontier, l *frontier.Lease, d time.Duration) {
	t.Helper()
	if err := fr.Requeue(bg, l, frontier.Outcome{Pace: l.Pace, Rest: d}); err != nil {
		t.Fatalf("Requeue(%q): %v", l.URL, err)
	}
}

func stats(t *testing.T, fr *frontier.Frontier) frontier.Counts {
	t.Helper()
	s, err := fr.Counts(bg)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s
}

type result struct {
	l   *frontier.Lease
	err error
}

// nextAsync starts Next in a goroutine and returns its result channel and a
// channel that receives each time a Next call of fr blocks.
func nextAsync(fr *frontier.Frontier) (<-chan result, <-chan struct{}) {
	blocked := make(chan struct{}, 100)
	frontier.SetWaitHook(fr, func() { blocked <- struct{}{} })
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, watchdog)
		defer cancel()
		l, err := fr.Next(ctx)
		res <- result{l, err}
	}()
	return res, blocked
}

// waitBlocked waits until the Next call behind res blocks; it fails the
// test if that Next returns instead.
func waitBlocked(t *testing.T, res <-chan result, blocked <-chan struct{}) {
	t.Helper()
	select {
	case <-blocked:
	case r := <-res:
		t.Fatalf("Next returned %v, %v instead of blocking", r.l, r.err)
	case <-time.After(watchdog):
		t.Fatal("Next neither blocked nor returned")
	}
}

func wantURL(t *testing.T, r result, want string) *frontier.Lease {
	t.Helper()
	if r.err != nil {
		t.Fatalf("Next: %v, want %s", r.err, want)
	}
	if r.l.URL != want {
		t.Fatalf("Next = %s, want %s", r.l.URL, want)
	}
	return r.l
}

// wantDeadline checks that the earliest timer pending on clk, the one a
// blocked Next waits for, is at.
func wantDeadline(t *testing.T, clk *fakeclock.Clock, at time.Time) {
	t.Helper()
	if got, ok := clk.NextDeadline(); !ok || !got.Equal(at) {
		t.Fatalf("Next waits for %v (timer pending: %v); want %v", got, ok, at)
	}
}

// resting makes key rest until t0+d on fr (whose clock reads t0): it leases
// key's first item, url, and ends it with Rest d, leaving key's other items
// queued.
func resting(t *testing.T, fr *frontier.Frontier, url string, d time.Duration) {
	t.Helper()
	rest(t, fr, wantURL(t, result{next(t, fr), nil}, url), d)
}

func TestDedupSpellings(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	mustSeed(t, fr, "http://example.com/a/b?x=1")
	for _, dup := range []string{
		"HTTP://EXAMPLE.COM:80/a/b?x=1",
		"http://example.com/a/./c/../b?x=1#frag",
		"http://example.com/%61/b?x=%31",
		"  http://example.com/a/b?x=1\n",
	} {
		if err := fr.Add(bg, frontier.Item{URL: dup}); !errors.Is(err, frontier.ErrSeen) {
			t.Errorf("Add(%q) = %v, want ErrSeen", dup, err)
		}
	}
	// Different URL on the same host, and same path over https: new.
	mustAdd(t, fr, frontier.Item{URL: "http://example.com/a/b?x=2"})
	mustAdd(t, fr, frontier.Item{URL: "https://example.com/a/b?x=1"})
	if s := stats(t, fr); s.Queued != 3 || s.Scheduled != 3 || s.Hosts != 1 {
		t.Errorf("Stats = %+v, want 3 queued and scheduled on 1 host", s)
	}
	// Handed out, then re-added: still a duplicate.
	l := next(t, fr)
	if l.URL != "http://example.com/a/b?x=1" || l.Key != "example.com" || l.Depth != 0 {
		t.Errorf("first lease = %+v", l.Item)
	}
	done(t, fr, l)
	if err := fr.Add(bg, frontier.Item{URL: l.URL}); !errors.Is(err, frontier.ErrSeen) {
		t.Errorf("re-Add after Done = %v, want ErrSeen", err)
	}
	// Within one AddAll batch too.
	errs, err := fr.AddAll(bg, []frontier.Item{{URL: "http://example.com/new"}, {URL: "HTTP://example.com/new#x"}})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], frontier.ErrSeen) {
		t.Errorf("AddAll of two spellings = %v, %v; want nil then ErrSeen", errs, err)
	}
}

func TestFIFOAndRoundRobin(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	for i := 1; i <= 3; i++ {
		for _, h := range []string{"a", "b", "c"} {
			mustAdd(t, fr, frontier.Item{URL: fmt.Sprintf("http://%s/%d", h, i)})
		}
	}
	var got []string
	for range 9 {
		l := next(t, fr)
		got = append(got, strings.TrimPrefix(l.URL, "http://"))
		done(t, fr, l)
	}
	if want := "a/1 b/1 c/1 a/2 b/2 c/2 a/3 b/3 c/3"; strings.Join(got, " ") != want {
		t.Errorf("order = %s, want %s", strings.Join(got, " "), want)
	}
}

// A key resting for ten seconds must not hold up a worker while another
// key is ready now.
func TestNextSkipsRestingKey(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/0"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	resting(t, fr, "http://a/0", 10*time.Second)
	mustAdd(t, fr, frontier.Item{URL: "http://b/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://b/2"})

	b1 := next(t, fr)
	if b1.URL != "http://b/1" {
		t.Fatalf("Next = %s, want http://b/1 (a rests for 10s)", b1.URL)
	}
	if h, err := fr.Host(bg, "a"); err != nil || !h.NextAllowed.Equal(t0.Add(10*time.Second)) {
		t.Errorf("Host(a) = %+v, %v; want NextAllowed t0+10s", h, err)
	}
	// b is leased now, a rests: Next waits for a exactly.
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	wantDeadline(t, clk, t0.Add(10*time.Second))
	// Ending b's lease makes b/2 ready before a: Done wakes the waiter.
	done(t, fr, b1)
	done(t, fr, wantURL(t, <-res, "http://b/2"))
	if !clk.Now().Equal(t0) {
		t.Fatalf("clock moved to %v", clk.Now())
	}
}

// Workers holding keys while they fetch those hosts' robots.txt do not
// keep other workers from other keys, and the deferred items come back
// first, each at its own key's time.
func TestRobotsFetchesDoNotBlockEachOther(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	for _, h := range []string{"a", "b", "c"} {
		mustAdd(t, fr, frontier.Item{URL: "http://" + h + "/1"})
		mustAdd(t, fr, frontier.Item{URL: "http://" + h + "/2"})
	}
	// Three workers each take a key and start on its robots.txt.
	a1, b1, c1 := next(t, fr), next(t, fr), next(t, fr)
	if a1.Key != "a" || b1.Key != "b" || c1.Key != "c" {
		t.Fatalf("got keys %s %s %s", a1.Key, b1.Key, c1.Key)
	}
	// b's robots.txt arrives first; b may be fetched again in 2 s, a in 1 s.
	deferFor(t, fr, b1, 2*time.Second)
	deferFor(t, fr, a1, time.Second)
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	wantDeadline(t, clk, t0.Add(time.Second))
	clk.Advance(time.Second)
	a1 = wantURL(t, <-res, "http://a/1")
	res, blocked = nextAsync(fr)
	waitBlocked(t, res, blocked)
	clk.Advance(time.Second)
	b1 = wantURL(t, <-res, "http://b/1")
	// Each key's second item follows its first.
	for _, l := range []*frontier.Lease{c1, a1, b1} {
		done(t, fr, l)
		done(t, fr, wantURL(t, result{next(t, fr), nil}, strings.TrimSuffix(l.URL, "1")+"2"))
	}
}

func TestNextWakesExactlyAtNextAllowed(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/0"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	resting(t, fr, "http://a/0", 10*time.Second)

	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	clk.BlockUntil(1)
	clk.Advance(10*time.Second - time.Nanosecond)
	select {
	case r := <-res:
		t.Fatalf("Next returned %v, %v a nanosecond early", r.l, r.err)
	default:
	}
	if n := clk.Waiters(); n != 1 {
		t.Fatalf("%d timers pending a nanosecond before NextAllowed, want 1", n)
	}
	clk.Advance(time.Nanosecond)
	wantURL(t, <-res, "http://a/1")
	if !clk.Now().Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("returned at %v", clk.Now())
	}
}

// Add of a key ready now wakes a Next that waits for a later key.
func TestAddWakesWaiter(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/0"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	resting(t, fr, "http://a/0", time.Hour)
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	mustAdd(t, fr, frontier.Item{URL: "http://b/1"})
	wantURL(t, <-res, "http://b/1")
	if !clk.Now().Equal(t0) {
		t.Fatalf("clock moved to %v", clk.Now())
	}
}

// A waiter for key a (in 60 s) is re-armed for key b, whose lease ends with
// a rest of 5 s while the waiter waits, and returns b's next item at 5 s.
func TestEarlierKeyRearmsTimer(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/0"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	resting(t, fr, "http://a/0", 60*time.Second)
	mustAdd(t, fr, frontier.Item{URL: "http://b/0"})
	mustAdd(t, fr, frontier.Item{URL: "http://b/1"})
	b0 := wantURL(t, result{next(t, fr), nil}, "http://b/0") // another worker's
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	wantDeadline(t, clk, t0.Add(60*time.Second))
	rest(t, fr, b0, 5*time.Second)
	waitBlocked(t, res, blocked) // woken by Done, waiting again
	clk.BlockUntil(2)
	wantDeadline(t, clk, t0.Add(5*time.Second))
	clk.Advance(5 * time.Second)
	wantURL(t, <-res, "http://b/1")
}

// A rest decided while a key is already waiting on the ready-heap (with
// PerHost 2 it stays there while one lease is out) is honoured by the key's
// queued items: one worker's 429 slows the whole key.
func TestRestAppliesToQueuedItems(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny, Claim: frontier.ClaimOptions{PerHost: 2}})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/2"})
	a1 := next(t, fr) // a/2 is ready too: a has a free slot
	rest(t, fr, a1, 5*time.Second)
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	wantDeadline(t, clk, t0.Add(5*time.Second))
	clk.Advance(5 * time.Second)
	wantURL(t, <-res, "http://a/2")
}

func TestDefer(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1", Kind: frontier.KindPage, Depth: 2, Referrer: "http://r/"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/2"})
	mustAdd(t, fr, frontier.Item{URL: "http://b/1"})

	a1 := next(t, fr)
	if a1.URL != "http://a/1" {
		t.Fatalf("first = %s", a1.URL)
	}
	// The worker spent a's slot on robots.txt: a may go again in 30 s.
	deferFor(t, fr, a1, 30*time.Second)
	if err := fr.Done(bg, a1, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Done after Requeue = %v, want ErrLeaseLost", err)
	}
	// Not a duplicate, not counted again.
	if s := stats(t, fr); s.Queued != 3 || s.Leased != 0 || s.Scheduled != 3 {
		t.Errorf("after Requeue: %+v, want 3 queued, 0 leased, 3 scheduled", s)
	}
	done(t, fr, wantURL(t, result{next(t, fr), nil}, "http://b/1"))

	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	wantDeadline(t, clk, t0.Add(30*time.Second))
	clk.Advance(30 * time.Second)
	again := wantURL(t, <-res, "http://a/1") // front of the queue, before a/2
	if again.Depth != 2 || again.Referrer != "http://r/" || again.Key != "a" {
		t.Errorf("deferred item came back as %+v", again.Item)
	}
	done(t, fr, again)
	done(t, fr, wantURL(t, result{next(t, fr), nil}, "http://a/2"))
	if _, err := fr.Next(bg); !errors.Is(err, frontier.ErrExhausted) {
		t.Errorf("Next = %v, want ErrExhausted", err)
	}
	if s := stats(t, fr); s.Scheduled != 3 {
		t.Errorf("Scheduled = %d after the crawl, want 3", s.Scheduled)
	}
}

// With one lease per key, a key rests what the worker says when its lease
// ends (Outcome.Rest), counted from then: its Delay adds nothing.
func TestRestCountsFromTheEnd(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/2"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/3"})
	a1 := next(t, fr)
	h := a1.Pace
	h.Delay = 20 * time.Second
	clk.Advance(time.Minute) // a long fetch
	if err := fr.Done(bg, a1, frontier.Outcome{Pace: h, Rest: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	got, _ := fr.Host(bg, "a")
	if got.Delay != 20*time.Second || !got.NextAllowed.Equal(t0.Add(80*time.Second)) {
		t.Errorf("Host(a) = %+v, want the Outcome's Delay 20s and NextAllowed t0+80s", got)
	}
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	wantDeadline(t, clk, t0.Add(80*time.Second))
	clk.Advance(20 * time.Second)
	a2 := wantURL(t, <-res, "http://a/2")
	if a2.Pace.Delay != 20*time.Second {
		t.Errorf("lease carries Host %+v, want Delay 20s", a2.Pace)
	}
	done(t, fr, a2) // no rest asked: a/3 at once, whatever the Delay
	done(t, fr, wantURL(t, result{next(t, fr), nil}, "http://a/3"))
}

// With several leases per key, the key's Delay spaces the starts of its
// requests (each claim moves NextAllowed a Delay on) and Rest counts from
// the end of a lease: the later of the two wins.
func TestDelayAndRest(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny, Claim: frontier.ClaimOptions{PerHost: 2}})
	for i := 1; i <= 3; i++ {
		mustAdd(t, fr, frontier.Item{URL: fmt.Sprintf("http://a/%d", i)})
	}
	a1 := next(t, fr)
	h := a1.Pace
	h.Delay = 20 * time.Second
	if err := fr.Done(bg, a1, frontier.Outcome{Pace: h}); err != nil {
		t.Fatal(err)
	}
	a2 := next(t, fr) // no rest: claimed at t0, and a/3 may start at t0+20s
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	wantDeadline(t, clk, t0.Add(20*time.Second))
	// A shorter rest does not bring the Delay forward.
	deferFor(t, fr, a2, 10*time.Second)
	waitBlocked(t, res, blocked)
	clk.BlockUntil(1)
	wantDeadline(t, clk, t0.Add(20*time.Second))
	clk.Advance(20 * time.Second)
	a2 = wantURL(t, <-res, "http://a/2") // deferred: first again
	// A longer rest than the Delay from this claim (t0+40s) wins.
	rest(t, fr, a2, 30*time.Second)
	res, blocked = nextAsync(fr)
	waitBlocked(t, res, blocked)
	wantDeadline(t, clk, t0.Add(50*time.Second))
	clk.Advance(30 * time.Second)
	wantURL(t, <-res, "http://a/3")
}

func TestPerHost(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, Claim: frontier.ClaimOptions{PerHost: 2}})
	for i := 1; i <= 3; i++ {
		mustAdd(t, fr, frontier.Item{URL: fmt.Sprintf("http://a/%d", i)})
	}
	a1, a2 := next(t, fr), next(t, fr)
	if a1.URL != "http://a/1" || a2.URL != "http://a/2" {
		t.Fatalf("got %s, %s", a1.URL, a2.URL)
	}
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked) // two leased: a is full
	if s := stats(t, fr); s.Leased != 2 || s.Queued != 1 || s.Busy != 1 || s.Ready != 0 {
		t.Errorf("Stats = %+v, want 2 leased on 1 busy key, 1 queued, none ready", s)
	}
	done(t, fr, a2)
	a3 := wantURL(t, <-res, "http://a/3")
	done(t, fr, a1)
	done(t, fr, a3)
	if s := stats(t, fr); s.Leased != 0 || s.Busy != 0 {
		t.Errorf("Stats = %+v, want nothing leased", s)
	}
}

func TestExhaustedOnlyWhenNothingLeased(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	mustSeed(t, fr, "http://a/")
	page := next(t, fr)

	// The queue is empty but page is leased: Next waits, and gets the link
	// page adds (on another key: a is busy until page is done).
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	mustAdd(t, fr, page.Child("http://b/child"))
	child := wantURL(t, <-res, "http://b/child")
	if child.Depth != 1 || child.Referrer != "http://a/" {
		t.Errorf("child = %+v", child.Item)
	}

	// Two waiters; the last Done makes both return ErrExhausted.
	done(t, fr, page)
	var rs []<-chan result
	for range 2 {
		res, blocked := nextAsync(fr)
		waitBlocked(t, res, blocked)
		rs = append(rs, res)
	}
	done(t, fr, child)
	for _, res := range rs {
		if r := <-res; !errors.Is(r.err, frontier.ErrExhausted) {
			t.Errorf("Next = %v, %v; want ErrExhausted", r.l, r.err)
		}
	}
	// Not sticky: new work revives the frontier.
	mustSeed(t, fr, "http://c/")
	done(t, fr, wantURL(t, result{next(t, fr), nil}, "http://c/"))
}

// A key resting with nothing leased is not the end of the crawl: its queued
// item is still to come.
func TestNotExhaustedWhileKeyRests(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/0"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	resting(t, fr, "http://a/0", time.Minute)
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	if s := stats(t, fr); s.Resting != 1 || s.Leased != 0 || s.Queued != 1 {
		t.Errorf("Stats = %+v, want 1 resting key, nothing leased, 1 queued", s)
	}
	clk.Advance(time.Minute)
	done(t, fr, wantURL(t, <-res, "http://a/1"))
}

func TestCloseAndCancelUnblock(t *testing.T) {
	fr := frontier.New(frontier.Config{})
	mustSeed(t, fr, "http://a/")
	l := next(t, fr)

	ctx, cancel := context.WithCancel(bg)
	ctxRes := make(chan error, 1)
	blocked := make(chan struct{}, 10)
	frontier.SetWaitHook(fr, func() { blocked <- struct{}{} })
	go func() {
		_, err := fr.Next(ctx)
		ctxRes <- err
	}()
	select {
	case <-blocked:
	case err := <-ctxRes:
		t.Fatalf("Next returned %v instead of blocking", err)
	}
	cancel()
	if err := <-ctxRes; !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v, want context.Canceled", err)
	}

	res, blocked2 := nextAsync(fr)
	waitBlocked(t, res, blocked2)
	fr.Close()
	if r := <-res; !errors.Is(r.err, frontier.ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", r.err)
	}
	if _, err := fr.Next(bg); !errors.Is(err, frontier.ErrClosed) {
		t.Errorf("Next on closed = %v", err)
	}
	// Links of pages still in flight are kept, for a crawl that resumes.
	if err := fr.Add(bg, frontier.Item{URL: "http://a/x"}); err != nil {
		t.Errorf("Add after Close = %v, want it kept", err)
	}
	if _, err := fr.NextKey(bg, "a"); !errors.Is(err, frontier.ErrClosed) {
		t.Errorf("NextKey on closed = %v", err)
	}
	done(t, fr, l) // leases can still end
}

func TestNextCanceledContext(t *testing.T) {
	fr := frontier.New(frontier.Config{})
	mustSeed(t, fr, "http://a/")
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := fr.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next = %v, want context.Canceled", err)
	}
	if err := fr.Add(ctx, frontier.Item{URL: "http://a/b"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Add = %v, want context.Canceled", err)
	}
	next(t, fr) // the seed was not lost
	if s := stats(t, fr); s.Scheduled != 1 {
		t.Errorf("Scheduled = %d, want 1: the cancelled Add scheduled nothing", s.Scheduled)
	}
}

func TestEndLeaseMisuse(t *testing.T) {
	fr := frontier.New(frontier.Config{})
	mustSeed(t, fr, "http://a/", "http://a/2")
	l := next(t, fr)
	for name, bad := range map[string]*frontier.Lease{
		"nil":              nil,
		"never handed out": {Item: frontier.Item{URL: "http://a/", Key: "a"}},
		"another key":      {Item: frontier.Item{URL: "http://b/", Key: "b"}, Token: l.Token},
	} {
		if err := fr.Done(bg, bad, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
			t.Errorf("Done(%s) = %v, want ErrLeaseLost", name, err)
		}
		if err := fr.Requeue(bg, bad, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
			t.Errorf("Requeue(%s) = %v, want ErrLeaseLost", name, err)
		}
	}
	done(t, fr, l)
	if err := fr.Done(bg, l, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("second Done = %v, want ErrLeaseLost", err)
	}
	if err := fr.Requeue(bg, l, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Requeue after Done = %v, want ErrLeaseLost", err)
	}
	// The item was not put back by the Requeue of an ended lease.
	if s := stats(t, fr); s.Leased != 0 || s.Queued != 1 {
		t.Errorf("Stats = %+v after misuse, want nothing leased and a/2 queued", s)
	}
	done(t, fr, wantURL(t, result{next(t, fr), nil}, "http://a/2"))
	if _, err := fr.Next(bg); !errors.Is(err, frontier.ErrExhausted) {
		t.Errorf("Next = %v, want ErrExhausted", err)
	}
}

// A lease of one Frontier is not another's: ending it there must not end
// the other Frontier's own lease that happens to share its token.
func TestLeaseOfAnotherFrontier(t *testing.T) {
	fr := frontier.New(frontier.Config{})
	other := frontier.New(frontier.Config{})
	mustSeed(t, fr, "http://a/")
	mustSeed(t, other, "http://a/")
	l, foreign := next(t, fr), next(t, other)
	if err := fr.Done(bg, foreign, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Done(lease of another frontier) = %v, want ErrLeaseLost", err)
	}
	done(t, fr, l)
}

func TestLimits(t *testing.T) {
	t.Run("MaxDepth", func(t *testing.T) {
		fr := frontier.New(frontier.Config{MaxDepth: 1})
		mustSeed(t, fr, "http://a/")
		seed := next(t, fr)
		c1 := seed.Child("http://a/1")
		mustAdd(t, fr, c1)
		c1.URL = "http://a/1" // as handed out later
		if err := fr.Add(bg, c1.Child("http://a/2")); !errors.Is(err, frontier.ErrDepth) {
			t.Errorf("depth 2 with MaxDepth 1: %v, want ErrDepth", err)
		}
		if err := fr.Add(bg, frontier.Item{URL: "http://a/neg", Depth: -1}); !errors.Is(err, frontier.ErrDepth) {
			t.Errorf("negative depth: %v, want ErrDepth", err)
		}
		if err := fr.Add(bg, frontier.Item{URL: "http://a/deep", Depth: 1 << 19}); !errors.Is(err, frontier.ErrDepth) {
			t.Errorf("depth 2^19, beyond what the store holds: %v, want ErrDepth", err)
		}
	})
	t.Run("MaxPages", func(t *testing.T) {
		fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, Limits: frontier.Limits{MaxPages: 3}})
		for i := range 3 {
			mustAdd(t, fr, frontier.Item{URL: fmt.Sprintf("http://h%d/", i)})
		}
		if err := fr.Add(bg, frontier.Item{URL: "http://h9/"}); !errors.Is(err, frontier.ErrLimit) {
			t.Errorf("4th page: %v, want ErrLimit", err)
		}
		// Sitemaps do not count against page limits.
		mustAdd(t, fr, frontier.Item{URL: "http://h9/sitemap.xml", Kind: frontier.KindSitemap})
		// Handing out and finishing items frees nothing: limits count
		// scheduled items.
		done(t, fr, next(t, fr))
		if err := fr.Add(bg, frontier.Item{URL: "http://h8/"}); !errors.Is(err, frontier.ErrLimit) || !errors.Is(err, frontier.ErrReported) {
			t.Errorf("after Done: %v, want ErrLimit, queued to be reported", err)
		}
		// A page refused is marked seen, to be reported once.
		if err := fr.Add(bg, frontier.Item{URL: "http://h9/"}); !errors.Is(err, frontier.ErrSeen) {
			t.Errorf("4th page again: %v, want ErrSeen", err)
		}
		if s := stats(t, fr); s.Scheduled != 3 {
			t.Errorf("Scheduled = %d, want 3", s.Scheduled)
		}
	})
	t.Run("MaxPagesPerHost", func(t *testing.T) {
		fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, Limits: frontier.Limits{MaxPagesPerHost: 2}})
		mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
		mustAdd(t, fr, frontier.Item{URL: "http://a/2"})
		if err := fr.Add(bg, frontier.Item{URL: "http://a/3"}); !errors.Is(err, frontier.ErrHostLimit) {
			t.Errorf("3rd on a: %v, want ErrHostLimit", err)
		}
		mustAdd(t, fr, frontier.Item{URL: "http://b/1"})
		// Drain a completely, a/3's report included: the count survives.
		for range 4 {
			done(t, fr, next(t, fr))
		}
		if err := fr.Add(bg, frontier.Item{URL: "http://a/4"}); !errors.Is(err, frontier.ErrHostLimit) {
			t.Errorf("3rd on drained a: %v, want ErrHostLimit", err)
		}
	})
}

func TestScope(t *testing.T) {
	tests := []struct {
		name  string
		cfg   frontier.Config
		in    []string
		out   []string
		seeds []string
	}{
		{
			name:  "seed hosts",
			cfg:   frontier.Config{},
			seeds: []string{"http://www.example.com/"},
			in:    []string{"https://www.example.com/x", "http://WWW.example.com:8080/y"},
			out:   []string{"http://example.com/", "http://blog.example.com/", "http://other.org/"},
		},
		{
			name:  "seed domains",
			cfg:   frontier.Config{Scope: frontier.ScopeSeedDomains},
			seeds: []string{"http://www.example.co.uk/", "http://127.0.0.1:8080/", "http://localhost/"},
			in: []string{"http://example.co.uk/", "http://a.b.example.co.uk/", "http://127.0.0.1:9/",
				"http://localhost:1/", "http://www.example.co.uk./x"},
			out: []string{"http://other.co.uk/", "http://co.uk/", "http://127.0.0.2/", "http://example.com/"},
		},
		{
			name:  "unknown mode acts as seed hosts",
			cfg:   frontier.Config{Scope: frontier.Scope(99)},
			seeds: []string{"http://a/"},
			in:    []string{"http://a/x"},
			out:   []string{"http://b/"},
		},
		{
			name:  "any",
			cfg:   frontier.Config{Scope: frontier.ScopeAny},
			seeds: []string{"http://a/"},
			in:    []string{"http://b/", "https://c.example/"},
		},
		{
			name: "custom",
			cfg: frontier.Config{InScope: func(u *url.URL) bool {
				return strings.HasPrefix(u.Path, "/docs/")
			}},
			seeds: []string{"http://a/"},
			in:    []string{"http://a/docs/1", "http://zzz/docs/2"},
			out:   []string{"http://a/blog/", "http://a/docs"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := frontier.New(tt.cfg)
			mustSeed(t, fr, tt.seeds...)
			for _, u := range tt.in {
				if err := fr.Add(bg, frontier.Item{URL: u}); err != nil {
					t.Errorf("Add(%q) = %v, want in scope", u, err)
				}
			}
			for _, u := range tt.out {
				if err := fr.Add(bg, frontier.Item{URL: u}); !errors.Is(err, frontier.ErrScope) {
					t.Errorf("Add(%q) = %v, want ErrScope", u, err)
				}
			}
		})
	}
}

// A crawl resumed from its Store keeps its seeds' scope, and the scope its
// seeds' redirects added, without being given the seeds again.
func TestScopeSurvivesResume(t *testing.T) {
	for _, tc := range []struct {
		name      string
		scope     frontier.Scope
		seed, red string // a seed, and where it redirected
		in, out   []string
	}{
		{
			name: "seed hosts", scope: frontier.ScopeSeedHosts,
			seed: "http://example.com/", red: "https://www.example.com/",
			in:  []string{"http://example.com/a", "https://www.example.com/b"},
			out: []string{"http://blog.example.com/", "http://other.org/"},
		},
		{
			name: "seed domains", scope: frontier.ScopeSeedDomains,
			seed: "http://www.example.co.uk/", red: "https://example.org/",
			in:  []string{"http://a.example.co.uk/", "http://b.example.org/"},
			out: []string{"http://other.co.uk/"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := new(frontier.MemoryStore)
			first := frontier.New(frontier.Config{Store: store, Scope: tc.scope})
			mustSeed(t, first, tc.seed)
			if err := first.AddScope(bg, tc.red); err != nil {
				t.Fatal(err)
			}
			first.Close()

			again := frontier.New(frontier.Config{Store: store, Scope: tc.scope})
			if err := again.Add(bg, frontier.Item{URL: tc.in[0]}); !errors.Is(err, frontier.ErrScope) {
				t.Fatalf("before Resume, Add(%q) = %v; want ErrScope (no seeds yet)", tc.in[0], err)
			}
			if err := again.Resume(bg); err != nil {
				t.Fatal(err)
			}
			for _, u := range tc.in {
				if err := again.Add(bg, frontier.Item{URL: u}); err != nil {
					t.Errorf("after Resume, Add(%q) = %v, want in scope", u, err)
				}
			}
			for _, u := range tc.out {
				if err := again.Add(bg, frontier.Item{URL: u}); !errors.Is(err, frontier.ErrScope) {
					t.Errorf("after Resume, Add(%q) = %v, want ErrScope", u, err)
				}
			}
			// The seed itself was seen by the first run.
			if err := again.AddSeed(bg, tc.seed); !errors.Is(err, frontier.ErrSeen) {
				t.Errorf("AddSeed(%q) again = %v, want ErrSeen", tc.seed, err)
			}
			// A seed added after Resume joins the stored scope.
			mustSeed(t, again, "http://new.test/")
			third := frontier.New(frontier.Config{Store: store, Scope: tc.scope})
			if err := third.Resume(bg); err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{tc.in[0], tc.in[1], "http://new.test/x"} {
				if err := third.Add(bg, frontier.Item{URL: u}); err != nil && !errors.Is(err, frontier.ErrSeen) {
					t.Errorf("third run: Add(%q) = %v, want in scope", u, err)
				}
			}
		})
	}
	t.Run("empty store", func(t *testing.T) {
		fr := frontier.New(frontier.Config{})
		if err := fr.Resume(bg); err != nil {
			t.Fatalf("Resume on a new store: %v", err)
		}
		if err := fr.Add(bg, frontier.Item{URL: "http://a/"}); !errors.Is(err, frontier.ErrScope) {
			t.Errorf("Add with no seeds = %v, want ErrScope", err)
		}
	})
}

// heldStore is a MemoryStore whose first SetMeta call is held until
// release is closed; held is closed once it is.
type heldStore struct {
	frontier.MemoryStore
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func (s *heldStore) SetMeta(ctx context.Context, name string, value []byte) error {
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.held)
		<-s.release
	}
	return s.MemoryStore.SetMeta(ctx, name, value)
}

// Two seeds added at once both reach the stored scope, whatever order their
// writes reach the Store in.
func TestConcurrentScopeWritesBothSaved(t *testing.T) {
	store := &heldStore{held: make(chan struct{}), release: make(chan struct{})}
	fr := frontier.New(frontier.Config{Store: store})
	first := make(chan error, 1)
	go func() { first <- fr.AddScope(bg, "http://a/") }()
	<-store.held // a's snapshot, {a}, is on its way to the Store
	second := make(chan error, 1)
	go func() { second <- fr.AddScope(bg, "http://b/") }()
	// If b's write, of {a, b}, can land before a's, let it: a's then
	// overwrites it. If it waits for a's (the fix), it never lands while a's
	// is held, and the timer lets a's through; a busy machine can only make
	// this miss the bug, never fail a correct Frontier.
	select {
	case err := <-second:
		second <- err
	case <-time.After(100 * time.Millisecond):
	}
	close(store.release)
	for _, ch := range []chan error{first, second} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	again := frontier.New(frontier.Config{Store: &store.MemoryStore})
	if err := again.Resume(bg); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://a/x", "http://b/x"} {
		if err := again.Add(bg, frontier.Item{URL: u}); err != nil {
			t.Errorf("after Resume, Add(%q) = %v: its scope was lost", u, err)
		}
	}
}

func TestCustomKeyAndItemFields(t *testing.T) {
	// One politeness key per parent domain: www.a.example and
	// img.a.example share a queue.
	fr := frontier.New(frontier.Config{
		Scope: frontier.ScopeAny,
		Key:   func(u *url.URL) string { return u.Hostname()[strings.IndexByte(u.Hostname(), '.')+1:] },
	})
	lastmod := time.Date(2025, 6, 1, 12, 0, 0, 0, time.FixedZone("X", 3600))
	mustAdd(t, fr, frontier.Item{URL: "http://www.a.example/sitemap.xml", Kind: frontier.KindSitemap, SitemapDepth: 1})
	mustAdd(t, fr, frontier.Item{URL: "http://img.a.example/p", Priority: 0.8, Lastmod: lastmod, Depth: 3,
		Referrer: "http://www.a.example/sitemap.xml", FromSitemap: true})
	mustAdd(t, fr, frontier.Item{URL: "http://b.example/"})
	s := next(t, fr)
	if s.Key != "a.example" || s.Kind != frontier.KindSitemap || s.Kind.String() != "sitemap" || s.SitemapDepth != 1 {
		t.Errorf("first item = %+v", s.Item)
	}
	b := next(t, fr) // a.example is busy although img.a.example is another host
	if b.URL != "http://b.example/" {
		t.Errorf("second item = %s, want http://b.example/", b.URL)
	}
	done(t, fr, s)
	p := next(t, fr)
	if p.Key != "a.example" || p.Kind != frontier.KindPage || p.Priority != 0.8 || !p.Lastmod.Equal(lastmod) ||
		p.Depth != 3 || p.Referrer != "http://www.a.example/sitemap.xml" || !p.FromSitemap {
		t.Errorf("item fields did not survive the store: %+v", p.Item)
	}
	// A key function that gives up on a URL is an error, not a panic.
	empty := frontier.New(frontier.Config{Scope: frontier.ScopeAny, Key: func(*url.URL) string { return "" }})
	if err := empty.Add(bg, frontier.Item{URL: "http://a/"}); !errors.Is(err, frontier.ErrHost) {
		t.Errorf("Add with an empty key = %v, want ErrHost", err)
	}
}

// NextKey leases a key with no item, paced with the key's pages: for a
// robots.txt redirect hop to another host.
func TestNextKey(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	k, err := fr.NextKey(bg, "a")
	if err != nil || k.Key != "a" || k.URL != "" {
		t.Fatalf("NextKey(a) = %+v, %v", k, err)
	}
	// a/1 waits for the key lease and its rest.
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	rest(t, fr, k, 3*time.Second)
	waitBlocked(t, res, blocked)
	wantDeadline(t, clk, t0.Add(3*time.Second))
	clk.Advance(3 * time.Second)
	a1 := wantURL(t, <-res, "http://a/1")

	// And NextKey waits for the key's slot and rest in turn.
	keyRes := make(chan result, 1)
	go func() {
		l, err := fr.NextKey(bg, "a")
		keyRes <- result{l, err}
	}()
	waitBlocked(t, keyRes, blocked)
	rest(t, fr, a1, 2*time.Second)
	waitBlocked(t, keyRes, blocked)
	clk.BlockUntil(1)
	if at, ok := clk.NextDeadline(); !ok || at.After(t0.Add(5*time.Second)) {
		t.Fatalf("NextKey waits for %v, %v; want no later than t0+5s", at, ok)
	}
	clk.Set(t0.Add(5 * time.Second))
	if r := <-keyRes; r.err != nil || r.l.Key != "a" {
		t.Fatalf("NextKey = %+v, %v", r.l, r.err)
	}
	if !clk.Now().Equal(t0.Add(5 * time.Second)) {
		t.Errorf("NextKey returned at %v, want t0+5s", clk.Now())
	}
}

// Many workers and many keys under the race detector: every URL is handed
// out exactly once, no key is leased twice at once, and every worker ends
// with ErrExhausted.
func TestConcurrentCrawl(t *testing.T) {
	const hosts, perHost, workers = 20, 30, 8
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	for h := range hosts {
		mustSeed(t, fr, fmt.Sprintf("http://h%d.test/0", h))
	}
	var mu sync.Mutex
	seen := make(map[string]int)
	busy := make(map[string]bool)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(bg, watchdog)
			defer cancel()
			for {
				l, err := fr.Next(ctx)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seen[l.URL]++
				if busy[l.Key] {
					t.Errorf("key %s leased twice at once", l.Key)
				}
				busy[l.Key] = true
				mu.Unlock()
				// Each page links to the next two on its host and back to
				// the seed (a duplicate).
				var n int
				fmt.Sscanf(l.URL[strings.LastIndexByte(l.URL, '/')+1:], "%d", &n)
				base := l.URL[:strings.LastIndexByte(l.URL, '/')+1]
				var links []frontier.Item
				for _, m := range []int{n + 1, n + 2, 0} {
					if m < perHost {
						links = append(links, l.Child(fmt.Sprintf("%s%d", base, m)))
					}
				}
				refused, err := fr.AddAll(ctx, links)
				if err != nil {
					t.Errorf("AddAll: %v", err)
				}
				for _, err := range refused {
					if err != nil && !errors.Is(err, frontier.ErrSeen) {
						t.Errorf("AddAll: %v", err)
					}
				}
				mu.Lock()
				busy[l.Key] = false
				mu.Unlock()
				if err := fr.Done(ctx, l, frontier.Outcome{Pace: l.Pace}); err != nil {
					t.Errorf("Done: %v", err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, frontier.ErrExhausted) {
			t.Errorf("worker ended with %v, want ErrExhausted", err)
		}
	}
	if len(seen) != hosts*perHost {
		t.Errorf("%d URLs handed out, want %d", len(seen), hosts*perHost)
	}
	for u, n := range seen {
		if n != 1 {
			t.Errorf("%s handed out %d times", u, n)
		}
	}
	if s := stats(t, fr); s != (frontier.Counts{Scheduled: hosts * perHost}) {
		t.Errorf("final Stats = %+v", s)
	}
}

// Workers on a fake clock with paced keys: whenever a key is ready, no
// worker stays blocked, and no key is handed out before its time.
func TestPacedHostsKeepWorkersBusy(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	// Host i rests i+1 seconds after each fetch; 3 pages each.
	const hosts = 5
	for h := range hosts {
		for n := range 3 {
			mustAdd(t, fr, frontier.Item{URL: fmt.Sprintf("http://h%d/%d", h, n)})
		}
	}
	gap := func(key string) time.Duration {
		var h int
		fmt.Sscanf(key, "h%d", &h)
		return time.Duration(h+1) * time.Second
	}
	readyAt := map[string]time.Time{} // what the test told the frontier
	for range hosts * 3 {
		// Whatever is ready must come out without the clock moving; if
		// Next blocks, the clock jumps to the earliest pending timer (a
		// stale one may come first), and the item handed out must have
		// become ready exactly then.
		res, blocked := nextAsync(fr)
		var r result
		advanced := false
		for r.l == nil && r.err == nil {
			select {
			case r = <-res:
			case <-blocked:
				at, ok := clk.NextDeadline()
				if !ok {
					t.Fatal("Next blocked with no timer")
				}
				clk.Set(at)
				advanced = true
			}
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		ready := readyAt[r.l.Key]
		if ready.After(clk.Now()) {
			t.Fatalf("%s handed out at %v, ready at %v", r.l.URL, clk.Now(), ready)
		}
		if advanced && !ready.Equal(clk.Now()) {
			t.Fatalf("%s handed out at %v, ready since %v: a worker idled", r.l.URL, clk.Now(), ready)
		}
		readyAt[r.l.Key] = clk.Now().Add(gap(r.l.Key))
		rest(t, fr, r.l, gap(r.l.Key))
	}
	// h0 is fetched at 0,1,2 s; the slowest host h4 at 0,5,10 s.
	if want := t0.Add(10 * time.Second); !clk.Now().Equal(want) {
		t.Errorf("crawl ended at %v, want %v", clk.Now(), want)
	}
}

// On the real clock, a key resting a moment is handed out once its rest is
// over — not before, and not never (the Frontier's reading of the clock is
// always a little after the one its rest was counted from).
func TestRestOnRealClock(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/0"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	l := next(t, fr)
	const pause = 5 * time.Millisecond
	ended := time.Now()
	rest(t, fr, l, pause)
	l = next(t, fr)
	if l.URL != "http://a/1" {
		t.Fatalf("Next = %q", l.URL)
	}
	if waited := time.Since(ended); waited < pause {
		t.Errorf("a/1 handed out %v after a's lease ended with a %v rest", waited, pause)
	}
}

func TestAffinityKeepsAReadyKeyForARun(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny, Claim: frontier.ClaimOptions{Affinity: 2}})
	for _, u := range []string{"http://a/1", "http://b/1", "http://a/2", "http://b/2", "http://a/3", "http://a/4", "http://b/3"} {
		mustAdd(t, fr, frontier.Item{URL: u})
	}
	var got []string
	for range 7 {
		l := next(t, fr)
		got = append(got, l.URL)
		done(t, fr, l)
	}
	// a runs 1 + Affinity items, then b does, then a again.
	want := "[http://a/1 http://a/2 http://a/3 http://b/1 http://b/2 http://b/3 http://a/4]"
	if fmt.Sprint(got) != want {
		t.Fatalf("order %v\nwant  %s", got, want)
	}

	// A key that must rest is not kept at the front.
	mustAdd(t, fr, frontier.Item{URL: "http://c/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://c/2"})
	mustAdd(t, fr, frontier.Item{URL: "http://d/1"})
	l := next(t, fr)
	if l.URL != "http://c/1" {
		t.Fatalf("Next = %s", l.URL)
	}
	rest(t, fr, l, time.Second)
	if l := next(t, fr); l.URL != "http://d/1" {
		t.Fatalf("Next = %s, want http://d/1 while c rests", l.URL)
	}
}

// A run that ended because its key ran out of items does not count against
// the key's next run, even when the key's state is kept between its runs
// (a per-host limit is in force, so the Store must remember its counts).
func TestAffinityRunStartsAfresh(t *testing.T) {
	fr := frontier.New(frontier.Config{Clock: fakeclock.New(t0), Scope: frontier.ScopeAny,
		Claim: frontier.ClaimOptions{Affinity: 2}, Limits: frontier.Limits{MaxPagesPerHost: 1000}})
	order := func(n int) string {
		var got []string
		for range n {
			l := next(t, fr)
			got = append(got, strings.TrimPrefix(l.URL, "http://"))
			done(t, fr, l)
		}
		return strings.Join(got, " ")
	}
	for _, u := range []string{"http://a/1", "http://a/2", "http://b/1"} {
		mustAdd(t, fr, frontier.Item{URL: u})
	}
	if got, want := order(3), "a/1 a/2 b/1"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
	// Both keys are ready since t0; a's items were queued first.
	for _, u := range []string{"http://a/3", "http://a/4", "http://a/5", "http://b/2"} {
		mustAdd(t, fr, frontier.Item{URL: u})
	}
	if got, want := order(4), "a/3 a/4 a/5 b/2"; got != want {
		t.Errorf("order %s, want %s: a's second run was cut short", got, want)
	}
}

// pausingStore is a MemoryStore that, once armed, holds the next Claim that
// finds nothing to lease just before it returns: the moment a Next call
// has asked the Store and not yet started to wait.
type pausingStore struct {
	frontier.MemoryStore
	armed  atomic.Bool
	paused chan struct{}
	resume chan struct{}
}

func (s *pausingStore) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	c, err := s.MemoryStore.Claim(ctx, now, opt)
	if err == nil && c.Lease == nil && s.armed.CompareAndSwap(true, false) {
		s.paused <- struct{}{}
		<-s.resume
	}
	return c, err
}

// A change made between a Next call's question to the Store and its wait
// still wakes it: an Add or Done must not be lost because no Next was
// counted as waiting yet.
func TestNoLostWakeup(t *testing.T) {
	for _, change := range []string{"Add", "Done"} {
		t.Run(change, func(t *testing.T) {
			store := &pausingStore{paused: make(chan struct{}), resume: make(chan struct{})}
			fr := frontier.New(frontier.Config{Clock: fakeclock.New(t0), Store: store, Scope: frontier.ScopeAny})
			mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
			a1 := next(t, fr) // leased: the crawl is not over, and nothing else is queued
			store.armed.Store(true)
			res, _ := nextAsync(fr)
			<-store.paused // the Store said: nothing now, nothing scheduled
			want := error(frontier.ErrExhausted)
			switch change {
			case "Add":
				mustAdd(t, fr, frontier.Item{URL: "http://b/1"})
				want = nil
			case "Done":
				done(t, fr, a1)
			}
			store.resume <- struct{}{}
			r := <-res // the watchdog ends a Next that was never woken
			if !errors.Is(r.err, want) || (want == nil) != (r.err == nil) {
				t.Fatalf("Next = %v, %v; want %v", r.l, r.err, want)
			}
		})
	}
}
