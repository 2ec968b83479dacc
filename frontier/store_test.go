package frontier_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

var _ frontier.Store = (*frontier.MemoryStore)(nil)

// TestMemoryStoreQueue drives one key's queue through Add (to the back),
// Claim (from the front) and Requeue (back to the front), in a random but
// fixed order that makes the ring wrap, grow while wrapped and shrink, and
// compares it with a plain slice.
func TestMemoryStoreQueue(t *testing.T) {
	var s frontier.MemoryStore
	opt := frontier.ClaimOptions{PerHost: 1 << 20}
	rng := rand.New(rand.NewPCG(1, 2))
	var model []string
	var leased []*frontier.Lease
	n := 0
	check := func() {
		t.Helper()
		if s.Len("a") != len(model) {
			t.Fatalf("Len = %d, want %d", s.Len("a"), len(model))
		}
	}
	for round := range 2000 {
		switch op := rng.IntN(10); {
		case op < 4 || round < 200 && op < 6: // grow early, then hover
			batch := make([]frontier.Item, rng.IntN(8)+1)
			for i := range batch {
				batch[i] = frontier.Item{URL: fmt.Sprintf("http://a/%d", n), Key: "a"}
				model = append(model, batch[i].URL)
				n++
			}
			refused, err := s.Add(bg, batch, frontier.Limits{})
			if err != nil || slices.ContainsFunc(refused, func(e error) bool { return e != nil }) {
				t.Fatalf("Add: %v, %v", refused, err)
			}
		case op < 8:
			for range rng.IntN(6) + 1 {
				c, err := s.Claim(bg, t0, opt)
				if err != nil {
					t.Fatal(err)
				}
				if len(model) == 0 {
					if c.Lease != nil {
						t.Fatalf("Claim of an empty queue = %s", c.Lease.URL)
					}
					break
				}
				if c.Lease == nil || c.Lease.URL != model[0] || c.Lease.Key != "a" {
					t.Fatalf("Claim = %+v, want %s", c.Lease, model[0])
				}
				model = model[1:]
				leased = append(leased, c.Lease)
			}
		default:
			// End a few leases, most back to the front of the queue.
			for range min(len(leased), rng.IntN(4)+1) {
				i := rng.IntN(len(leased))
				l := leased[i]
				leased = slices.Delete(leased, i, i+1)
				if rng.IntN(3) == 0 {
					if err := s.Done(bg, l, t0, frontier.Outcome{}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := s.Requeue(bg, l, t0, frontier.Outcome{}); err != nil {
					t.Fatal(err)
				}
				model = append([]string{l.URL}, model...)
			}
		}
		check()
	}
	// Drain: the ring shrinks on the way and the queue disappears.
	for _, l := range leased {
		if err := s.Done(bg, l, t0, frontier.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	for len(model) > 0 {
		c, err := s.Claim(bg, t0, opt)
		if err != nil || c.Lease == nil || c.Lease.URL != model[0] {
			t.Fatalf("drain: Claim = %+v, %v; want %s", c.Lease, err, model[0])
		}
		model = model[1:]
		if err := s.Done(bg, c.Lease, t0, frontier.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := s.Claim(bg, t0, opt); c.Lease != nil || !c.Idle || s.Len("a") != 0 {
		t.Errorf("after drain: Claim = %+v, Len %d; want idle and empty", c, s.Len("a"))
	}
	// A Requeue into a full ring: release at every length up to 200.
	mustAddStore(t, &s, frontier.Item{URL: "http://a/r", Key: "a"})
	c, _ := s.Claim(bg, t0, opt)
	for i := range 200 {
		mustAddStore(t, &s, frontier.Item{URL: fmt.Sprintf("http://a/r%d", i), Key: "a"})
		if err := s.Requeue(bg, c.Lease, t0, frontier.Outcome{}); err != nil {
			t.Fatal(err)
		}
		if c, _ = s.Claim(bg, t0, opt); c.Lease == nil || c.Lease.URL != "http://a/r" {
			t.Fatalf("released item came back as %+v", c.Lease)
		}
	}
	if s.Len("a") != 200 {
		t.Fatalf("Len = %d, want 200", s.Len("a"))
	}
	for i := range 200 {
		if c, _ = s.Claim(bg, t0, opt); c.Lease == nil || c.Lease.URL != fmt.Sprintf("http://a/r%d", i) {
			t.Fatalf("Claim %d = %+v", i, c.Lease)
		}
	}
	// Queues are independent.
	s.Add(bg, []frontier.Item{{URL: "http://b/", Key: "b"}, {URL: "http://c/", Key: "c"}}, frontier.Limits{})
	if s.Len("b") != 1 || s.Len("c") != 1 {
		t.Errorf("Len(b), Len(c) = %d, %d; want 1, 1", s.Len("b"), s.Len("c"))
	}
}

func mustAddStore(t *testing.T, s frontier.Store, items ...frontier.Item) {
	t.Helper()
	refused, err := s.Add(bg, items, frontier.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range refused {
		if r != nil {
			t.Fatalf("Add(%s): %v", items[i].URL, r)
		}
	}
}

// What MemoryStore keeps of an item, packed: Lastmod to the second in UTC,
// Priority to 0.001 within [0, 1]; history and Meta exactly.
func TestMemoryStoreFields(t *testing.T) {
	var s frontier.MemoryStore
	lastmod := time.Date(2024, 2, 29, 23, 59, 58, 999, time.FixedZone("Y", -7200))
	in := []frontier.Item{
		{URL: "http://a/1", Key: "k", Referrer: "http://r/", Depth: 1<<19 - 1, Kind: frontier.KindSitemap, Priority: 0.8, Lastmod: lastmod,
			SitemapDepth: 3, Retries: 2, Redirects: []string{"http://a/0", "http://a/00"}},
		{URL: "http://a/2", Key: "k", Priority: 1.5, Meta: map[string]string{"from": "seed list"}}, // clamped to 1
		{URL: "http://a/3", Key: "k", Priority: float32(math.NaN())},                               // dropped
		{URL: "http://a/4", Key: "k", Lastmod: time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC)},        // dropped
		{URL: "http://a/5", Key: "k", Priority: 0.123456, FromSitemap: true},
	}
	if _, err := s.Add(bg, in, frontier.Limits{}); err != nil {
		t.Fatal(err)
	}
	want := []frontier.Item{
		{URL: "http://a/1", Key: "k", Referrer: "http://r/", Depth: 1<<19 - 1, Kind: frontier.KindSitemap, Priority: 0.8,
			Lastmod: lastmod.Truncate(time.Second).UTC(), SitemapDepth: 3, Retries: 2,
			Redirects: []string{"http://a/0", "http://a/00"}},
		{URL: "http://a/2", Key: "k", Priority: 1, Meta: map[string]string{"from": "seed list"}},
		{URL: "http://a/3", Key: "k"},
		{URL: "http://a/4", Key: "k"},
		{URL: "http://a/5", Key: "k", Priority: 0.123, FromSitemap: true},
	}
	for _, w := range want {
		c, err := s.Claim(bg, t0, frontier.ClaimOptions{})
		if err != nil || c.Lease == nil {
			t.Fatalf("Claim: %+v, %v", c, err)
		}
		if !reflect.DeepEqual(c.Lease.Item, w) {
			t.Errorf("Claim = %+v\n want %+v", c.Lease.Item, w)
		}
		if err := s.Done(bg, c.Lease, t0, frontier.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	// What the store cannot hold is an error for the whole batch.
	for _, bad := range []frontier.Item{
		{URL: "http://a/deep", Key: "k", Depth: 1 << 19},
		{URL: "http://a/kind", Key: "k", Kind: 4},
	} {
		if _, err := s.Add(bg, []frontier.Item{{URL: "http://a/ok", Key: "k"}, bad}, frontier.Limits{}); err == nil {
			t.Errorf("%s accepted", bad.URL)
		}
	}
	if s.Len("k") != 0 {
		t.Errorf("a refused batch left %d items queued", s.Len("k"))
	}
	if r, _ := s.Add(bg, []frontier.Item{{URL: "http://a/ok", Key: "k"}}, frontier.Limits{}); r[0] != nil {
		t.Errorf("http://a/ok was marked seen by a refused batch: %v", r[0])
	}
}

func TestMemoryStoreSeen(t *testing.T) {
	for _, exact := range []bool{false, true} {
		s := &frontier.MemoryStore{ExactSeen: exact}
		batch := make([]frontier.Item, 1000)
		for i := range batch {
			batch[i] = frontier.Item{URL: fmt.Sprintf("http://a/%d", i), Key: "a"}
		}
		for pass, want := range []error{nil, frontier.ErrSeen} {
			refused, err := s.Add(bg, batch, frontier.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range refused {
				if !errors.Is(r, want) || (want == nil) != (r == nil) {
					t.Fatalf("exact=%v: pass %d, Add(%q) = %v, want %v", exact, pass, batch[i].URL, r, want)
				}
			}
		}
	}
}
