package redisstore

import (
	"errors"
	"testing"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// TestSeenCache: a URL the Store added, or was told seen, is refused as
// seen without a script; Redis still answers for a URL a limit applies to
// (it reports the limit first), for a key this Store gave up, and with
// ExactSeen (no cache).
func TestSeenCache(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	hook := new(countingHook)
	c.AddHook(hook)
	job := newJob(t)
	a, err := New(c, job, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := mustNew(t, srv, job, Options{})
	mustAdd(t, a, item("x", "/1"))
	mustAdd(t, b, item("y", "/1"))
	scripts := func() int64 { return hook.scripts.Load() }
	addOne := func(s *Store, it frontier.Item, lim frontier.Limits) error {
		t.Helper()
		refused, err := s.Add(ctx, []frontier.Item{it}, lim)
		if err != nil {
			t.Fatal(err)
		}
		return refused[0]
	}

	before := scripts()
	if err := addOne(a, item("x", "/1"), frontier.Limits{}); !errors.Is(err, frontier.ErrSeen) {
		t.Errorf("x/1 again: %v, want ErrSeen", err)
	}
	if n := scripts() - before; n != 0 {
		t.Errorf("x/1 again, added by this Store: %d scripts, want none", n)
	}
	// Added by another Store: Redis tells, once.
	for i, want := range []int64{1, 0} {
		before = scripts()
		if err := addOne(a, item("y", "/1"), frontier.Limits{}); !errors.Is(err, frontier.ErrSeen) {
			t.Errorf("y/1 from a, time %d: %v, want ErrSeen", i+1, err)
		}
		if n := scripts() - before; n != want {
			t.Errorf("y/1 from a, time %d: %d scripts, want %d", i+1, n, want)
		}
	}
	// A page seen is seen whatever the page limits: Redis would say so too
	// (a page they refuse is marked seen, to be reported once).
	before = scripts()
	if err := addOne(a, item("x", "/1"), frontier.Limits{MaxPagesPerHost: 1}); !errors.Is(err, frontier.ErrSeen) {
		t.Errorf("x/1 over its host's limit: %v, want ErrSeen, as Redis answers", err)
	}
	if n := scripts() - before; n != 0 {
		t.Errorf("x/1, seen, under a page limit: %d scripts, want none", n)
	}
	// A sitemap's page may be refused by its budget before the seen-set
	// is asked: Redis answers.
	before = scripts()
	fromSM := item("x", "/1")
	fromSM.FromSitemap = true
	if err := addOne(a, fromSM, frontier.Limits{MaxSitemapURLsPerHost: 1}); !errors.Is(err, frontier.ErrSeen) {
		t.Errorf("x/1 from a sitemap, the budget not spent: %v, want ErrSeen", err)
	}
	if n := scripts() - before; n == 0 {
		t.Error("x/1 under a sitemap budget was answered without Redis")
	}
	if err := a.GiveUp(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	// A key given up takes new URLs, to be reported; one seen is seen.
	if err := addOne(a, item("x", "/1"), frontier.Limits{}); !errors.Is(err, frontier.ErrSeen) {
		t.Errorf("x/1 after GiveUp: %v, want ErrSeen", err)
	}
	if err := addOne(a, item("x", "/2"), frontier.Limits{MaxPagesPerHost: 1}); err != nil {
		t.Errorf("x/2, new, after GiveUp: %v, want it queued", err)
	}

	exact := mustNew(t, srv, newJob(t), Options{ExactSeen: true})
	if exact.seenCache != nil {
		t.Error("ExactSeen: a seen cache of fingerprints")
	}
}
