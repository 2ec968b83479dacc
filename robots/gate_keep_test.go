package robots_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/robots"
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
func TestGateKeeperAcrossRestarts(t *testing.T) {
	s := newGateSite(t, gateBody("User-agent: *\nDisallow: /private\nCrawl-delay: 3\n"))
	keep := &mapKeeper{}
	clock := fakeclock.New(gateT0)
	g1, _ := newGateForTest(t, robots.GateConfig{Keeper: keep, Clock: clock})
	if v := gateCheck(t, g1, s.url(t, "/private/x")); v.Allowed || !v.Fetched {
		t.Fatalf("first gate: %+v", v)
	}
	gateWantHits(t, s, 1)

	clock.Advance(time.Hour)
	g2, _ := newGateForTest(t, robots.GateConfig{Keeper: keep, Clock: clock})
	v := gateCheck(t, g2, s.url(t, "/private/x"))
	if v.Allowed || v.Fetched || !v.Restored || v.Entry.Outcome != robots.OutcomeOK || v.Entry.CrawlDelay != 3*time.Second {
		t.Fatalf("restarted gate: verdict %+v entry %+v: want the kept rules, not a fetch", v, v.Entry)
	}
	if v := gateCheck(t, g2, s.url(t, "/public")); !v.Allowed || v.Restored {
		t.Fatalf("second check after restoring: %+v; want allowed, from memory", v)
	}
	gateWantHits(t, s, 1)

	// A day later the kept entry has expired; robots.txt now answers 503:
	// the kept copy serves as stale.
	s.set(gateStatus(503))
	clock.Advance(robots.DefaultGateTTL)
	g3, _ := newGateForTest(t, robots.GateConfig{Keeper: keep, Clock: clock})
	v = gateCheck(t, g3, s.url(t, "/private/x"))
	if v.Allowed || !v.Fetched || v.Entry.Outcome != robots.OutcomeStale {
		t.Fatalf("after expiry: verdict %+v entry %+v: want a fetch and the stale copy", v, v.Entry)
	}
	gateWantHits(t, s, 2)

	// The stale entry is kept too, with its rules.
	g4, _ := newGateForTest(t, robots.GateConfig{Keeper: keep, Clock: clock})
	v = gateCheck(t, g4, s.url(t, "/private/x"))
	if v.Allowed || v.Fetched || v.Entry.Outcome != robots.OutcomeStale {
		t.Fatalf("stale entry read back: verdict %+v entry %+v", v, v.Entry)
	}
	gateWantHits(t, s, 2)
}

func TestGateKeeperIgnoresGarbage(t *testing.T) {
	s := newGateSite(t, gateBody("User-agent: *\nDisallow: /private\n"))
	keep := &mapKeeper{m: map[string][]byte{}}
	keep.m[s.url(t, "/").Scheme+"://"+s.url(t, "/").Host] = []byte("{not json")
	g, _ := newGateForTest(t, robots.GateConfig{Keeper: keep})
	if v := gateCheck(t, g, s.url(t, "/private/x")); v.Allowed || !v.Fetched {
		t.Fatalf("with an unreadable kept entry: %+v, want a fetch", v)
	}
}

// A robots.txt request an earlier run started and did not see answered
// (it crashed) is followed by the next only ResumeWait later: the answer
// may have carried a Crawl-delay the crashed run could not keep.
func TestGateKeeperWaitsAfterAnUnansweredRequest(t *testing.T) {
	var mu sync.Mutex
	var hit time.Time
	body := gateBody("User-agent: *\nDisallow: /private\n")
	s := newGateSite(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hit = time.Now()
		mu.Unlock()
		body(w, r)
	})
	keep := &mapKeeper{}
	var asked time.Time
	ctx, die := context.WithCancel(context.Background())
	g1, err := robots.NewGate(robots.GateConfig{Agent: "heedbot", Keeper: keep, Get: func(ctx context.Context, u string) (*robots.Response, error) {
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
	g2, err := robots.NewGate(robots.GateConfig{Agent: "heedbot", Keeper: keep, ResumeWait: wait, Get: gateGet})
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
