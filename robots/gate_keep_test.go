package robots_test

import (
	"context"
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
	if v.Allowed || v.Fetched || v.Entry.Outcome != robots.OutcomeOK || v.Entry.CrawlDelay != 3*time.Second {
		t.Fatalf("restarted gate: verdict %+v entry %+v: want the kept rules, not a fetch", v, v.Entry)
	}
	if !gateCheck(t, g2, s.url(t, "/public")).Allowed {
		t.Fatal("kept rules disallow /public")
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
