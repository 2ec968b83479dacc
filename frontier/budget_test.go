package frontier_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

func TestPathologicalPaths(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	deep := "http://a/" + strings.Repeat("s/", 40)
	for _, tc := range []struct {
		url  string
		trap bool
	}{
		{"http://a/a/a/a", true},                       // one segment three times in a row
		{"http://a/x/y/x/y/x/y/", true},                // a run of two, three times
		{"http://a/p/a/a/q/a/a/a/z", true},             // anywhere in the path
		{"http://a//////x", true},                      // empty segments repeated
		{deep, true},                                   // more than 32 segments
		{"http://a/a/a/b", false},                      // twice is allowed
		{"http://a/2024/01/01/post", false},            // dates repeat once
		{"http://a/x/y/x/y/z", false},                  // a run twice
		{"http://a/cal/2025/01?a/a/a/a", false},        // the query is not the path
		{"http://a/" + strings.Repeat("s/", 20), true}, // 20 identical segments
		{"http://a/" + strings.Repeat("s%d/", 1), false},
	} {
		err := fr.Add(bg, frontier.Item{URL: tc.url})
		if got := errors.Is(err, frontier.ErrPathological); got != tc.trap {
			t.Errorf("Add(%q) = %v, want pathological %v", tc.url, err, tc.trap)
		}
	}
	// Negative limits turn the check off.
	off := frontier.New(frontier.Config{Scope: frontier.ScopeAny, MaxPathSegments: -1, MaxSegmentRepeats: -1})
	for _, u := range []string{"http://a/a/a/a", deep} {
		if err := off.Add(bg, frontier.Item{URL: u}); err != nil {
			t.Errorf("with checks off, Add(%q) = %v", u, err)
		}
	}
}

func TestSitemapBudgets(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny,
		Limits: frontier.Limits{MaxSitemapsPerHost: 2, MaxSitemapURLsPerHost: 3, MaxPages: 10}})
	for i := range 3 {
		err := fr.Add(bg, frontier.Item{URL: fmt.Sprintf("http://a/sm%d.xml", i), Kind: frontier.KindSitemap})
		if want := i >= 2; errors.Is(err, frontier.ErrSitemapLimit) != want {
			t.Errorf("sitemap %d: %v, want limit %v", i, err, want)
		}
	}
	// Another host has its own budget.
	mustAdd(t, fr, frontier.Item{URL: "http://b/sm.xml", Kind: frontier.KindSitemap})
	for i := range 4 {
		err := fr.Add(bg, frontier.Item{URL: fmt.Sprintf("http://a/p%d", i), FromSitemap: true})
		if want := i >= 3; errors.Is(err, frontier.ErrSitemapLimit) != want {
			t.Errorf("sitemap URL %d: %v, want limit %v", i, err, want)
		}
	}
	// Pages found by links are not sitemap URLs.
	mustAdd(t, fr, frontier.Item{URL: "http://a/linked", Depth: 1})
	// Drain everything: the counts outlive the queue.
	for range 7 {
		done(t, fr, next(t, fr))
	}
	if s := stats(t, fr); s.Queued != 0 || s.Scheduled != 4 {
		t.Errorf("Stats = %+v after draining, want nothing queued and 4 pages scheduled", s)
	}
	if err := fr.Add(bg, frontier.Item{URL: "http://a/sm9.xml", Kind: frontier.KindSitemap}); !errors.Is(err, frontier.ErrSitemapLimit) {
		t.Errorf("after draining, a third sitemap: %v, want ErrSitemapLimit", err)
	}
	if err := fr.Add(bg, frontier.Item{URL: "http://a/p9", FromSitemap: true}); !errors.Is(err, frontier.ErrSitemapLimit) {
		t.Errorf("after draining, a fourth sitemap URL: %v, want ErrSitemapLimit", err)
	}
	if fr.LimitReached() {
		t.Error("LimitReached with 4 of 10 pages")
	}
}

func TestLimitReached(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, Limits: frontier.Limits{MaxPages: 2}})
	mustAdd(t, fr, frontier.Item{URL: "http://a/sm.xml", Kind: frontier.KindSitemap})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/2"})
	// Reported once the Store has refused a page for the limit: until then
	// a page could still be added.
	if fr.LimitReached() {
		t.Fatal("LimitReached before any page was refused")
	}
	if err := fr.Add(bg, frontier.Item{URL: "http://a/3"}); !errors.Is(err, frontier.ErrLimit) {
		t.Fatalf("third page of two: %v, want ErrLimit", err)
	}
	if !fr.LimitReached() {
		t.Fatal("LimitReached false after a page was refused for MaxPages")
	}
}

func TestGiveUp(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	for i := range 4 {
		mustAdd(t, fr, frontier.Item{URL: fmt.Sprintf("http://dead/%d", i)})
	}
	mustAdd(t, fr, frontier.Item{URL: "http://live/1"})
	first := next(t, fr) // dead/0 leased
	if err := fr.GiveUp(bg, "dead"); err != nil {
		t.Fatal(err)
	}
	if err := fr.Add(bg, frontier.Item{URL: "http://dead/new"}); err != nil {
		t.Errorf("Add to a given-up host: %v, want it queued, to be reported", err)
	}
	// The lease under way goes back, resting the host for an hour: its
	// items are handed out all the same, to be reported.
	if err := fr.Requeue(bg, first, frontier.Outcome{Pace: first.Pace, Rest: time.Hour}); err != nil {
		t.Errorf("Requeue on a given-up host: %v", err)
	}
	var reported []string
	for range 5 {
		l := next(t, fr)
		if !l.GivenUp {
			t.Fatalf("%s handed out without GivenUp", l.URL)
		}
		reported = append(reported, l.URL)
		done(t, fr, l)
	}
	if want := []string{"http://dead/0", "http://dead/1", "http://dead/2", "http://dead/3", "http://dead/new"}; !slices.Equal(reported, want) {
		t.Errorf("given-up items handed out %v, want %v", reported, want)
	}
	if l := next(t, fr); l.URL != "http://live/1" || l.GivenUp {
		t.Errorf("then %s (GivenUp %v), want live/1", l.URL, l.GivenUp)
	} else {
		done(t, fr, l)
	}
	if _, err := fr.Next(bg); !errors.Is(err, frontier.ErrExhausted) {
		t.Errorf("Next after the live host: %v, want ErrExhausted", err)
	}
	if s := stats(t, fr); s.Queued != 0 || s.Leased != 0 {
		t.Errorf("stats %+v", s)
	}
}

// Giving a key up wakes a Next that waits only because of that key's
// lease, as soon as the lease ends: its items are handed out to be
// reported, and the crawl can end.
func TestGiveUpEndsTheCrawl(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://dead/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://dead/2"})
	first := next(t, fr)
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	if err := fr.GiveUp(bg, "dead"); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, res, blocked) // first is still leased
	if err := fr.Done(bg, first, frontier.Outcome{Pace: first.Pace, Rest: time.Hour}); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil || r.l.URL != "http://dead/2" || !r.l.GivenUp {
		t.Fatalf("Next = %+v, %v; want dead/2 given up, at once", r.l, r.err)
	}
	done(t, fr, r.l)
	if _, err := fr.Next(bg); !errors.Is(err, frontier.ErrExhausted) {
		t.Errorf("Next = %v; want ErrExhausted", err)
	}
}

func TestAddScope(t *testing.T) {
	fr := frontier.New(frontier.Config{})
	mustSeed(t, fr, "http://example.com/")
	if err := fr.Add(bg, frontier.Item{URL: "https://www.example.com/a"}); !errors.Is(err, frontier.ErrScope) {
		t.Fatalf("www before AddScope: %v", err)
	}
	if err := fr.AddScope(bg, "https://www.example.com/"); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, fr, frontier.Item{URL: "https://www.example.com/a"})
	if err := fr.AddScope(bg, "mailto:x@example.com"); !errors.Is(err, frontier.ErrScheme) {
		t.Errorf("AddScope(mailto:) = %v, want ErrScheme", err)
	}
	// Nothing was scheduled by AddScope.
	if s := stats(t, fr); s.Scheduled != 2 {
		t.Errorf("Scheduled = %d, want the seed and www/a", s.Scheduled)
	}
}

func TestDeferKeepsHistory(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1", Redirects: []string{"http://a/0"}, Kind: frontier.KindSitemap, SitemapDepth: 2,
		Meta: map[string]string{"campaign": "x"}})
	l := next(t, fr)
	l.Retries = 2
	if err := fr.Requeue(bg, l, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	got := next(t, fr)
	if got.Retries != 2 || !slices.Equal(got.Redirects, []string{"http://a/0"}) ||
		got.SitemapDepth != 2 || got.Kind != frontier.KindSitemap || got.Meta["campaign"] != "x" {
		t.Errorf("deferred item came back as %+v", got.Item)
	}
}
