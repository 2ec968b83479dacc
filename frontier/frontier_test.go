package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
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

// fakePacer answers ReadyAt from a table; unknown keys are ready at once.
type fakePacer struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (p *fakePacer) ReadyAt(key string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.at[key]
}

func (p *fakePacer) set(key string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.at == nil {
		p.at = make(map[string]time.Time)
	}
	p.at[key] = at
}

func mustAdd(t *testing.T, fr *frontier.Frontier, it frontier.Item) {
	t.Helper()
	if err := fr.Add(context.Background(), it); err != nil {
		t.Fatalf("Add(%q): %v", it.URL, err)
	}
}

func mustSeed(t *testing.T, fr *frontier.Frontier, urls ...string) {
	t.Helper()
	for _, u := range urls {
		if err := fr.AddSeed(context.Background(), u); err != nil {
			t.Fatalf("AddSeed(%q): %v", u, err)
		}
	}
}

// next calls Next, which must return an item without the fake clock moving.
func next(t *testing.T, fr *frontier.Frontier) *frontier.Item {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	it, err := fr.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return it
}

func done(t *testing.T, fr *frontier.Frontier, it *frontier.Item) {
	t.Helper()
	if err := fr.Done(it); err != nil {
		t.Fatalf("Done(%q): %v", it.URL, err)
	}
}

type result struct {
	it  *frontier.Item
	err error
}

// nextAsync starts Next in a goroutine and returns its result channel and a
// channel that receives once that Next call has blocked.
func nextAsync(fr *frontier.Frontier) (<-chan result, <-chan struct{}) {
	blocked := make(chan struct{}, 100)
	frontier.SetWaitHook(fr, func() { blocked <- struct{}{} })
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), watchdog)
		defer cancel()
		it, err := fr.Next(ctx)
		res <- result{it, err}
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
		t.Fatalf("Next returned %v, %v instead of blocking", r.it, r.err)
	case <-time.After(watchdog):
		t.Fatal("Next neither blocked nor returned")
	}
}

func wantURL(t *testing.T, r result, want string) *frontier.Item {
	t.Helper()
	if r.err != nil {
		t.Fatalf("Next: %v, want %s", r.err, want)
	}
	if r.it.URL != want {
		t.Fatalf("Next = %s, want %s", r.it.URL, want)
	}
	return r.it
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
		if err := fr.Add(context.Background(), frontier.Item{URL: dup}); !errors.Is(err, frontier.ErrSeen) {
			t.Errorf("Add(%q) = %v, want ErrSeen", dup, err)
		}
	}
	// Different URL on the same host, and same path over https: new.
	mustAdd(t, fr, frontier.Item{URL: "http://example.com/a/b?x=2"})
	mustAdd(t, fr, frontier.Item{URL: "https://example.com/a/b?x=1"})
	if s := fr.Stats(); s.Queued != 3 || s.Scheduled != 3 || s.Hosts != 1 {
		t.Errorf("Stats = %+v, want 3 queued and scheduled on 1 host", s)
	}
	// Handed out, then re-added: still a duplicate.
	it := next(t, fr)
	if it.URL != "http://example.com/a/b?x=1" || it.Key != "example.com" || it.Depth != 0 {
		t.Errorf("first item = %+v", *it)
	}
	done(t, fr, it)
	if err := fr.Add(context.Background(), frontier.Item{URL: it.URL}); !errors.Is(err, frontier.ErrSeen) {
		t.Errorf("re-Add after Done = %v, want ErrSeen", err)
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
		it := next(t, fr)
		got = append(got, strings.TrimPrefix(it.URL, "http://"))
		done(t, fr, it)
	}
	if want := "a/1 b/1 c/1 a/2 b/2 c/2 a/3 b/3 c/3"; strings.Join(got, " ") != want {
		t.Errorf("order = %s, want %s", strings.Join(got, " "), want)
	}
}

// A host ready in ten seconds must not hold up a worker while another host
// is ready now.
func TestNextSkipsWaitingHost(t *testing.T) {
	clk := fakeclock.New(t0)
	p := &fakePacer{}
	p.set("a", t0.Add(10*time.Second))
	fr := frontier.New(frontier.Config{Clock: clk, Pacer: p, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://b/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://b/2"})

	b1 := next(t, fr)
	if b1.URL != "http://b/1" {
		t.Fatalf("Next = %s, want http://b/1 (a is not ready for 10s)", b1.URL)
	}
	// b is busy now, a not ready: Next waits for a exactly.
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	if at, ok := clk.NextDeadline(); !ok || !at.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("Next waits for %v, %v; want %v", at, ok, t0.Add(10*time.Second))
	}
	// Releasing b makes b/2 ready before a: Done wakes the waiter.
	done(t, fr, b1)
	b2 := wantURL(t, <-res, "http://b/2")
	if !clk.Now().Equal(t0) {
		t.Fatalf("clock moved to %v", clk.Now())
	}
	done(t, fr, b2)
}

// Workers holding hosts while they fetch those hosts' robots.txt do not
// keep other workers from other hosts, and the deferred items come back
// first, each at its own host's time.
func TestRobotsFetchesDoNotBlockEachOther(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	for _, h := range []string{"a", "b", "c"} {
		mustAdd(t, fr, frontier.Item{URL: "http://" + h + "/1"})
		mustAdd(t, fr, frontier.Item{URL: "http://" + h + "/2"})
	}
	// Three workers each take a host and start on its robots.txt.
	a1, b1, c1 := next(t, fr), next(t, fr), next(t, fr)
	if a1.Key != "a" || b1.Key != "b" || c1.Key != "c" {
		t.Fatalf("got keys %s %s %s", a1.Key, b1.Key, c1.Key)
	}
	// b's robots.txt arrives first; b may be fetched again in 2 s, a in 1 s.
	if err := fr.Defer(b1, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := fr.Defer(a1, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	clk.Advance(time.Second)
	a1 = wantURL(t, <-res, "http://a/1")
	res, blocked = nextAsync(fr)
	waitBlocked(t, res, blocked)
	clk.Advance(time.Second)
	b1 = wantURL(t, <-res, "http://b/1")
	// Each host's second item follows its first.
	for _, it := range []*frontier.Item{c1, a1, b1} {
		done(t, fr, it)
		done(t, fr, wantURL(t, result{next(t, fr), nil}, it.URL[:len(it.URL)-1]+"2"))
	}
}

func TestNextWakesExactlyAtReadyAt(t *testing.T) {
	clk := fakeclock.New(t0)
	p := &fakePacer{}
	p.set("a", t0.Add(10*time.Second))
	fr := frontier.New(frontier.Config{Clock: clk, Pacer: p, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})

	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	clk.BlockUntil(1)
	clk.Advance(10*time.Second - time.Nanosecond)
	select {
	case r := <-res:
		t.Fatalf("Next returned %v, %v a nanosecond early", r.it, r.err)
	default:
	}
	if n := clk.Waiters(); n != 1 {
		t.Fatalf("%d timers pending a nanosecond before ReadyAt, want 1", n)
	}
	clk.Advance(time.Nanosecond)
	wantURL(t, <-res, "http://a/1")
	if !clk.Now().Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("returned at %v", clk.Now())
	}
}

// Add of a host ready now wakes a Next that waits for a later host.
func TestAddWakesWaiter(t *testing.T) {
	clk := fakeclock.New(t0)
	p := &fakePacer{}
	p.set("a", t0.Add(time.Hour))
	fr := frontier.New(frontier.Config{Clock: clk, Pacer: p, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	mustAdd(t, fr, frontier.Item{URL: "http://b/1"})
	wantURL(t, <-res, "http://b/1")
	if !clk.Now().Equal(t0) {
		t.Fatalf("clock moved to %v", clk.Now())
	}
}

// A waiter for host a (in 60 s) is re-armed for host b added to be ready
// in 5 s, and returns b at 5 s.
func TestEarlierHostRearmsTimer(t *testing.T) {
	clk := fakeclock.New(t0)
	p := &fakePacer{}
	p.set("a", t0.Add(60*time.Second))
	p.set("b", t0.Add(5*time.Second))
	fr := frontier.New(frontier.Config{Clock: clk, Pacer: p, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	mustAdd(t, fr, frontier.Item{URL: "http://b/1"})
	waitBlocked(t, res, blocked) // woken by Add, waiting again
	clk.BlockUntil(2)
	if at, _ := clk.NextDeadline(); !at.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("earliest timer at %v, want %v", at, t0.Add(5*time.Second))
	}
	clk.Advance(5 * time.Second)
	wantURL(t, <-res, "http://b/1")
}

// The pacer is asked again when a host reaches the top: a back-off decided
// after the host was scheduled is honoured.
func TestPacerRecheckedOnPop(t *testing.T) {
	clk := fakeclock.New(t0)
	p := &fakePacer{}
	fr := frontier.New(frontier.Config{Clock: clk, Pacer: p, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	p.set("a", t0.Add(5*time.Second)) // e.g. a 429 seen by another worker
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	if at, ok := clk.NextDeadline(); !ok || !at.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("Next waits for %v, %v; want %v", at, ok, t0.Add(5*time.Second))
	}
	clk.Advance(5 * time.Second)
	wantURL(t, <-res, "http://a/1")
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
	if err := fr.Defer(a1, t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := fr.Done(a1); !errors.Is(err, frontier.ErrNotInFlight) {
		t.Errorf("Done after Defer = %v, want ErrNotInFlight", err)
	}
	if s := fr.Stats(); s.Queued != 3 || s.InFlight != 0 || s.Scheduled != 3 {
		t.Errorf("after Defer: %+v, want 3 queued, 0 in flight, 3 scheduled", s)
	}
	done(t, fr, wantURL(t, result{next(t, fr), nil}, "http://b/1"))

	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	if at, ok := clk.NextDeadline(); !ok || !at.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("Next waits for %v, %v; want %v", at, ok, t0.Add(30*time.Second))
	}
	clk.Advance(30 * time.Second)
	again := wantURL(t, <-res, "http://a/1") // front of the queue, before a/2
	if again.Depth != 2 || again.Referrer != "http://r/" || again.Key != "a" {
		t.Errorf("deferred item came back as %+v", *again)
	}
	done(t, fr, again)
	done(t, fr, wantURL(t, result{next(t, fr), nil}, "http://a/2"))
	if _, err := fr.Next(context.Background()); !errors.Is(err, frontier.ErrExhausted) {
		t.Errorf("Next = %v, want ErrExhausted", err)
	}
}

// Defer's time and the pacer's combine: the later wins.
func TestDeferAndPacer(t *testing.T) {
	clk := fakeclock.New(t0)
	p := &fakePacer{}
	fr := frontier.New(frontier.Config{Clock: clk, Pacer: p, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	it := next(t, fr)
	p.set("a", t0.Add(20*time.Second))
	if err := fr.Defer(it, t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	if at, _ := clk.NextDeadline(); !at.Equal(t0.Add(20 * time.Second)) {
		t.Fatalf("Next waits for %v, want %v", at, t0.Add(20*time.Second))
	}
	clk.Advance(20 * time.Second)
	wantURL(t, <-res, "http://a/1")
}

func TestPerHost(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, PerHost: 2})
	for i := 1; i <= 3; i++ {
		mustAdd(t, fr, frontier.Item{URL: fmt.Sprintf("http://a/%d", i)})
	}
	a1, a2 := next(t, fr), next(t, fr)
	if a1.URL != "http://a/1" || a2.URL != "http://a/2" {
		t.Fatalf("got %s, %s", a1.URL, a2.URL)
	}
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked) // two in flight: a is busy
	if s := fr.Stats(); s.InFlight != 2 || s.Queued != 1 || s.Busy != 1 {
		t.Errorf("Stats = %+v, want 2 in flight on 1 busy key, 1 queued", s)
	}
	done(t, fr, a2)
	a3 := wantURL(t, <-res, "http://a/3")
	done(t, fr, a1)
	done(t, fr, a3)
	if s := fr.Stats(); s.InFlight != 0 || s.Busy != 0 {
		t.Errorf("Stats = %+v, want nothing in flight", s)
	}
}

func TestExhaustedOnlyWhenNothingInFlight(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	mustSeed(t, fr, "http://a/")
	page := next(t, fr)

	// The queue is empty but page is in flight: Next waits, and gets the
	// link page adds (on another host: a is busy until page is done).
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	mustAdd(t, fr, page.Child("http://b/child"))
	child := wantURL(t, <-res, "http://b/child")
	if child.Depth != 1 || child.Referrer != "http://a/" {
		t.Errorf("child = %+v", *child)
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
			t.Errorf("Next = %v, %v; want ErrExhausted", r.it, r.err)
		}
	}
	// Not sticky: new work revives the frontier.
	mustSeed(t, fr, "http://c/")
	done(t, fr, wantURL(t, result{next(t, fr), nil}, "http://c/"))
}

func TestCloseAndCancelUnblock(t *testing.T) {
	fr := frontier.New(frontier.Config{})
	mustSeed(t, fr, "http://a/")
	it := next(t, fr)

	ctx, cancel := context.WithCancel(context.Background())
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
	if _, err := fr.Next(context.Background()); !errors.Is(err, frontier.ErrClosed) {
		t.Errorf("Next on closed = %v", err)
	}
	if err := fr.Add(context.Background(), frontier.Item{URL: "http://a/x"}); !errors.Is(err, frontier.ErrClosed) {
		t.Errorf("Add on closed = %v", err)
	}
	done(t, fr, it) // in-flight items can still be released
}

func TestNextCanceledContext(t *testing.T) {
	fr := frontier.New(frontier.Config{})
	mustSeed(t, fr, "http://a/")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fr.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next = %v, want context.Canceled", err)
	}
	if err := fr.Add(ctx, frontier.Item{URL: "http://a/b"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Add = %v, want context.Canceled", err)
	}
	next(t, fr) // the seed was not lost
}

func TestReleaseMisuse(t *testing.T) {
	fr := frontier.New(frontier.Config{})
	other := frontier.New(frontier.Config{})
	mustSeed(t, fr, "http://a/")
	mustSeed(t, other, "http://a/")
	it, foreign := next(t, fr), next(t, other)
	for name, bad := range map[string]*frontier.Item{
		"nil": nil, "never handed out": {URL: "http://a/", Key: "a"}, "from another frontier": foreign,
	} {
		if err := fr.Done(bad); !errors.Is(err, frontier.ErrNotInFlight) {
			t.Errorf("Done(%s) = %v, want ErrNotInFlight", name, err)
		}
		if err := fr.Defer(bad, t0); !errors.Is(err, frontier.ErrNotInFlight) {
			t.Errorf("Defer(%s) = %v, want ErrNotInFlight", name, err)
		}
	}
	done(t, fr, it)
	if err := fr.Done(it); !errors.Is(err, frontier.ErrNotInFlight) {
		t.Errorf("second Done = %v, want ErrNotInFlight", err)
	}
	if s := fr.Stats(); s.InFlight != 0 {
		t.Errorf("InFlight = %d after misuse", s.InFlight)
	}
}

func TestLimits(t *testing.T) {
	ctx := context.Background()
	t.Run("MaxDepth", func(t *testing.T) {
		fr := frontier.New(frontier.Config{MaxDepth: 1})
		mustSeed(t, fr, "http://a/")
		seed := next(t, fr)
		c1 := seed.Child("http://a/1")
		mustAdd(t, fr, c1)
		c1.URL = "http://a/1" // as handed out later
		if err := fr.Add(ctx, c1.Child("http://a/2")); !errors.Is(err, frontier.ErrDepth) {
			t.Errorf("depth 2 with MaxDepth 1: %v, want ErrDepth", err)
		}
		if err := fr.Add(ctx, frontier.Item{URL: "http://a/neg", Depth: -1}); !errors.Is(err, frontier.ErrDepth) {
			t.Errorf("negative depth: %v, want ErrDepth", err)
		}
	})
	t.Run("MaxPages", func(t *testing.T) {
		fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, MaxPages: 3})
		for i := range 3 {
			mustAdd(t, fr, frontier.Item{URL: fmt.Sprintf("http://h%d/", i)})
		}
		if err := fr.Add(ctx, frontier.Item{URL: "http://h9/"}); !errors.Is(err, frontier.ErrLimit) {
			t.Errorf("4th page: %v, want ErrLimit", err)
		}
		// Sitemaps do not count against page limits.
		mustAdd(t, fr, frontier.Item{URL: "http://h9/sitemap.xml", Kind: frontier.KindSitemap})
		// Handing out and finishing items frees nothing: limits count
		// scheduled items.
		done(t, fr, next(t, fr))
		if err := fr.Add(ctx, frontier.Item{URL: "http://h9/"}); !errors.Is(err, frontier.ErrLimit) {
			t.Errorf("after Done: %v, want ErrLimit", err)
		}
		if s := fr.Stats(); s.Scheduled != 3 {
			t.Errorf("Scheduled = %d, want 3", s.Scheduled)
		}
	})
	t.Run("MaxPagesPerHost", func(t *testing.T) {
		fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, MaxPagesPerHost: 2})
		mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
		mustAdd(t, fr, frontier.Item{URL: "http://a/2"})
		if err := fr.Add(ctx, frontier.Item{URL: "http://a/3"}); !errors.Is(err, frontier.ErrHostLimit) {
			t.Errorf("3rd on a: %v, want ErrHostLimit", err)
		}
		mustAdd(t, fr, frontier.Item{URL: "http://b/1"})
		// Drain a completely: the count survives.
		for range 3 {
			done(t, fr, next(t, fr))
		}
		if err := fr.Add(ctx, frontier.Item{URL: "http://a/3"}); !errors.Is(err, frontier.ErrHostLimit) {
			t.Errorf("3rd on drained a: %v, want ErrHostLimit", err)
		}
	})
}

func TestScope(t *testing.T) {
	ctx := context.Background()
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
				if err := fr.Add(ctx, frontier.Item{URL: u}); err != nil {
					t.Errorf("Add(%q) = %v, want in scope", u, err)
				}
			}
			for _, u := range tt.out {
				if err := fr.Add(ctx, frontier.Item{URL: u}); !errors.Is(err, frontier.ErrScope) {
					t.Errorf("Add(%q) = %v, want ErrScope", u, err)
				}
			}
		})
	}
}

func TestCustomKeyAndItemFields(t *testing.T) {
	// One politeness key per registrable domain: www.a.example and
	// img.a.example share a queue.
	fr := frontier.New(frontier.Config{
		Scope: frontier.ScopeAny,
		Key:   func(u *url.URL) string { return u.Hostname()[strings.IndexByte(u.Hostname(), '.')+1:] },
	})
	lastmod := time.Date(2025, 6, 1, 12, 0, 0, 0, time.FixedZone("X", 3600))
	mustAdd(t, fr, frontier.Item{URL: "http://www.a.example/sitemap.xml", Kind: frontier.KindSitemap})
	mustAdd(t, fr, frontier.Item{URL: "http://img.a.example/p", Priority: 0.8, Lastmod: lastmod, Depth: 3, Referrer: "http://www.a.example/sitemap.xml"})
	mustAdd(t, fr, frontier.Item{URL: "http://b.example/"})
	s := next(t, fr)
	if s.Key != "a.example" || s.Kind != frontier.KindSitemap || s.Kind.String() != "sitemap" {
		t.Errorf("first item = %+v", *s)
	}
	b := next(t, fr) // a.example is busy although img.a.example is another host
	if b.URL != "http://b.example/" {
		t.Errorf("second item = %s, want http://b.example/", b.URL)
	}
	done(t, fr, s)
	p := next(t, fr)
	if p.Key != "a.example" || p.Kind != frontier.KindPage || p.Priority != 0.8 || !p.Lastmod.Equal(lastmod) ||
		p.Depth != 3 || p.Referrer != "http://www.a.example/sitemap.xml" {
		t.Errorf("item fields did not survive the store: %+v", *p)
	}
}

// Many workers and many hosts under the race detector: every URL is handed
// out exactly once and every worker ends with ErrExhausted.
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
			ctx, cancel := context.WithTimeout(context.Background(), watchdog)
			defer cancel()
			for {
				it, err := fr.Next(ctx)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seen[it.URL]++
				if busy[it.Key] {
					t.Errorf("key %s handed out twice at once", it.Key)
				}
				busy[it.Key] = true
				mu.Unlock()
				// Each page links to the next two on its host and back to
				// the seed (a duplicate).
				var n int
				fmt.Sscanf(it.URL[strings.LastIndexByte(it.URL, '/')+1:], "%d", &n)
				base := it.URL[:strings.LastIndexByte(it.URL, '/')+1]
				for _, m := range []int{n + 1, n + 2, 0} {
					if m < perHost {
						err := fr.Add(ctx, it.Child(fmt.Sprintf("%s%d", base, m)))
						if err != nil && !errors.Is(err, frontier.ErrSeen) {
							t.Errorf("Add: %v", err)
						}
					}
				}
				mu.Lock()
				busy[it.Key] = false
				mu.Unlock()
				if err := fr.Done(it); err != nil {
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
	if s := fr.Stats(); s != (frontier.Stats{Scheduled: hosts * perHost}) {
		t.Errorf("final Stats = %+v", s)
	}
}

// Workers on a fake clock with paced hosts: whenever a host is ready, no
// worker stays blocked, and no host is handed out before its time.
func TestPacedHostsKeepWorkersBusy(t *testing.T) {
	clk := fakeclock.New(t0)
	p := &fakePacer{}
	fr := frontier.New(frontier.Config{Clock: clk, Pacer: p, Scope: frontier.ScopeAny})
	// Host i may be fetched every i+1 seconds; 3 pages each.
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
	for range hosts * 3 {
		// Whatever is ready must come out without the clock moving; if
		// Next blocks, the clock jumps to the earliest pending timer (a
		// stale one may come first), and the item handed out must have
		// become ready exactly then.
		res, blocked := nextAsync(fr)
		var r result
		advanced := false
		for r.it == nil && r.err == nil {
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
		ready := p.ReadyAt(r.it.Key)
		if ready.After(clk.Now()) {
			t.Fatalf("%s handed out at %v, ready at %v", r.it.URL, clk.Now(), ready)
		}
		if advanced && !ready.Equal(clk.Now()) {
			t.Fatalf("%s handed out at %v, ready since %v: a worker idled", r.it.URL, clk.Now(), ready)
		}
		p.set(r.it.Key, clk.Now().Add(gap(r.it.Key)))
		done(t, fr, r.it)
	}
	// h0 is fetched at 0,1,2 s; the slowest host h4 at 0,5,10 s.
	if want := t0.Add(10 * time.Second); !clk.Now().Equal(want) {
		t.Errorf("crawl ended at %v, want %v", clk.Now(), want)
	}
}

// nowPacer says every key is ready at its own reading of the real clock, as
// ratelimit.HostLimiter does for a key with a token in its bucket. That
// reading is always a little after the Frontier's, which must not make a
// ready key look forever early.
type nowPacer struct{}

func (nowPacer) ReadyAt(string) time.Time { return time.Now() }

func TestPacerAnsweringNowOnRealClock(t *testing.T) {
	fr := frontier.New(frontier.Config{Pacer: nowPacer{}, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	it, err := fr.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v (a ready key was never handed out)", err)
	}
	if it.URL != "http://a/1" {
		t.Fatalf("Next = %q", it.URL)
	}
}

func TestAffinityKeepsAReadyKeyForARun(t *testing.T) {
	clk := fakeclock.New(t0)
	p := &fakePacer{}
	fr := frontier.New(frontier.Config{Clock: clk, Pacer: p, Scope: frontier.ScopeAny, Affinity: 2})
	for _, u := range []string{"http://a/1", "http://b/1", "http://a/2", "http://b/2", "http://a/3", "http://a/4", "http://b/3"} {
		mustAdd(t, fr, frontier.Item{URL: u})
	}
	var got []string
	for range 7 {
		it := next(t, fr)
		got = append(got, it.URL)
		if err := fr.Done(it); err != nil {
			t.Fatal(err)
		}
	}
	// a runs 1 + Affinity items, then b does, then a again.
	want := "[http://a/1 http://a/2 http://a/3 http://b/1 http://b/2 http://b/3 http://a/4]"
	if fmt.Sprint(got) != want {
		t.Fatalf("order %v\nwant  %s", got, want)
	}

	// A key the pacer holds back is not kept at the front.
	mustAdd(t, fr, frontier.Item{URL: "http://c/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://c/2"})
	mustAdd(t, fr, frontier.Item{URL: "http://d/1"})
	it := next(t, fr)
	if it.URL != "http://c/1" {
		t.Fatalf("Next = %s", it.URL)
	}
	p.set("c", t0.Add(time.Second))
	if err := fr.Done(it); err != nil {
		t.Fatal(err)
	}
	if it := next(t, fr); it.URL != "http://d/1" {
		t.Fatalf("Next = %s, want http://d/1 while c waits", it.URL)
	}
}
