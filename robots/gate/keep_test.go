package gate_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/robots/gate"
)

// mapKeeper is an EntryKeeper in a map, standing for a crawl's Store.
type mapKeeper struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (k *mapKeeper) LoadEntry(_ context.Context, auth string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[auth], nil
}

func (k *mapKeeper) SaveEntry(_ context.Context, auth string, data []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string][]byte{}
	}
	k.m[auth] = data
	return nil
}

// A gate that starts afresh (a resumed crawl) reads the entries an earlier
// one kept instead of fetching robots.txt again while they last, and uses an
// expired one as the stale copy when robots.txt is then unreachable.
func TestKeeperAcrossRestarts(t *testing.T) {
	s := newSite(t, serveText("User-agent: *\nDisallow: /private\nCrawl-delay: 3\n"))
	keep := &mapKeeper{}
	clock := fakeclock.New(t0)
	g1, _ := newForTest(t, gate.Config{Keeper: keep, Clock: clock})
	if v := check(t, g1, s.url(t, "/private/x")); v.Allowed || !v.Fetched {
		t.Fatalf("first gate: %+v", v)
	}
	wantHits(t, s, 1)

	clock.Advance(time.Hour)
	g2, _ := newForTest(t, gate.Config{Keeper: keep, Clock: clock})
	v := check(t, g2, s.url(t, "/private/x"))
	if v.Allowed || v.Fetched || !v.Restored || v.Entry.Outcome != gate.OutcomeOK || v.Entry.CrawlDelay != 3*time.Second {
		t.Fatalf("restarted gate: verdict %+v entry %+v: want the kept rules, not a fetch", v, v.Entry)
	}
	if v := check(t, g2, s.url(t, "/public")); !v.Allowed || v.Restored {
		t.Fatalf("second check after restoring: %+v; want allowed, from memory", v)
	}
	wantHits(t, s, 1)

	// A day later the kept entry has expired; robots.txt now answers 503:
	// the kept copy serves as stale.
	s.set(serveStatus(503))
	clock.Advance(gate.DefaultTTL)
	g3, _ := newForTest(t, gate.Config{Keeper: keep, Clock: clock})
	v = check(t, g3, s.url(t, "/private/x"))
	if v.Allowed || !v.Fetched || v.Entry.Outcome != gate.OutcomeStale {
		t.Fatalf("after expiry: verdict %+v entry %+v: want a fetch and the stale copy", v, v.Entry)
	}
	wantHits(t, s, 2)

	// The stale entry is kept too, with its rules.
	g4, _ := newForTest(t, gate.Config{Keeper: keep, Clock: clock})
	v = check(t, g4, s.url(t, "/private/x"))
	if v.Allowed || v.Fetched || v.Entry.Outcome != gate.OutcomeStale {
		t.Fatalf("stale entry read back: verdict %+v entry %+v", v, v.Entry)
	}
	wantHits(t, s, 2)
}

func TestKeeperIgnoresGarbage(t *testing.T) {
	s := newSite(t, serveText("User-agent: *\nDisallow: /private\n"))
	keep := &mapKeeper{m: map[string][]byte{}}
	auth, err := gate.Authority(s.url(t, "/"))
	if err != nil {
		t.Fatal(err)
	}
	keep.m[auth] = []byte("{not json")
	g, _ := newForTest(t, gate.Config{Keeper: keep})
	if v := check(t, g, s.url(t, "/private/x")); v.Allowed || !v.Fetched {
		t.Fatalf("with an unreadable kept entry: %+v, want a fetch", v)
	}
}

// A robots.txt request an earlier run started and did not see answered
// (it crashed) is followed by the next only ResumeWait later: the answer
// may have carried a Crawl-delay the crashed run could not keep.
func TestKeeperWaitsAfterAnUnansweredRequest(t *testing.T) {
	var mu sync.Mutex
	var hit time.Time
	body := serveText("User-agent: *\nDisallow: /private\n")
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hit = time.Now()
		mu.Unlock()
		body(w, r)
	})
	keep := &mapKeeper{}
	var asked time.Time
	ctx, die := context.WithCancel(context.Background())
	g1, err := gate.New(gate.Config{Agent: "heedbot", Keeper: keep, Get: func(ctx context.Context, u string) (*gate.Response, error) {
		asked = time.Now()
		die() // the process dies with the request under way
		return nil, ctx.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	g1.Check(ctx, s.url(t, "/x"))
	if asked.IsZero() {
		t.Fatal("the first gate made no request")
	}
	const wait = 300 * time.Millisecond
	g2, err := gate.New(gate.Config{Agent: "heedbot", Keeper: keep, ResumeWait: wait, Get: httpGet})
	if err != nil {
		t.Fatal(err)
	}
	v, err := g2.Check(context.Background(), s.url(t, "/private/x"))
	if err != nil || v.Allowed || !v.Fetched {
		t.Fatalf("second gate: %+v, %v", v, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if gap := hit.Sub(asked); gap < wait-20*time.Millisecond {
		t.Errorf("robots.txt asked again %v after the unanswered request, want at least %v", gap, wait)
	}
}

// errRefused is refusingPacer's refusal.
var errRefused = errors.New("lease expired")

// refusingPacer refuses every request, as a crawler's worker whose lease
// expired at the last moment; meanwhile, if set, runs first.
type refusingPacer struct{ meanwhile func() }

func (p refusingPacer) Acquire(context.Context, string) (gate.Release, error) {
	if p.meanwhile != nil {
		p.meanwhile()
	}
	return nil, errRefused
}

// A robots.txt request the Pacer refuses was not made: the note that it
// was about to be is taken back, or the next asker (another process, a
// resumed run) would wait ResumeWait for an answer that never comes. What
// another process kept meanwhile is left alone.
func TestKeeperNoteTakenBackWhenNotAsked(t *testing.T) {
	s := newSite(t, serveText("User-agent: *\nDisallow: /private\n"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u := s.url(t, "/x")
	auth, err := gate.Authority(u)
	if err != nil {
		t.Fatal(err)
	}
	keep := &mapKeeper{}
	g1, err := gate.New(gate.Config{Agent: "heedbot", Keeper: keep, Get: httpGet}) // on the clock of g2
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g1.CheckWith(ctx, u, refusingPacer{}); !errors.Is(err, errRefused) {
		t.Fatalf("check under a refusing pacer: %v, want its refusal", err)
	}
	// An hour's ResumeWait: a note left behind holds this gate back past
	// its ten seconds.
	g2, err := gate.New(gate.Config{Agent: "heedbot", Keeper: keep, ResumeWait: time.Hour, Get: httpGet})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	v, err := g2.Check(ctx2, s.url(t, "/private/x"))
	if err != nil || v.Allowed || !v.Fetched {
		t.Fatalf("the next gate: %+v, %v; want robots.txt fetched at once", v, err)
	}

	other := []byte(`{"url":"` + auth + `/robots.txt","outcome":1}`)
	keep2 := &mapKeeper{}
	g3, _ := newForTest(t, gate.Config{Keeper: keep2})
	g3.CheckWith(ctx, u, refusingPacer{meanwhile: func() { keep2.SaveEntry(ctx, auth, other) }})
	if got, _ := keep2.LoadEntry(ctx, auth); string(got) != string(other) {
		t.Errorf("the entry another process kept meanwhile became %s", got)
	}
}
