package frontier_test

import (
	"context"
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
	ctx := context.Background()
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
		err := fr.Add(ctx, frontier.Item{URL: tc.url})
		if got := errors.Is(err, frontier.ErrPathological); got != tc.trap {
			t.Errorf("Add(%q) = %v, want pathological %v", tc.url, err, tc.trap)
		}
	}
	// Negative limits turn the check off.
	off := frontier.New(frontier.Config{Scope: frontier.ScopeAny, MaxPathSegments: -1, MaxSegmentRepeats: -1})
	for _, u := range []string{"http://a/a/a/a", deep} {
		if err := off.Add(ctx, frontier.Item{URL: u}); err != nil {
			t.Errorf("with checks off, Add(%q) = %v", u, err)
		}
	}
}

func TestSitemapBudgets(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, MaxSitemapsPerHost: 2, MaxSitemapURLsPerHost: 3, MaxPages: 10})
	ctx := context.Background()
	for i := range 3 {
		err := fr.Add(ctx, frontier.Item{URL: fmt.Sprintf("http://a/sm%d.xml", i), Kind: frontier.KindSitemap})
		if want := i >= 2; errors.Is(err, frontier.ErrSitemapLimit) != want {
			t.Errorf("sitemap %d: %v, want limit %v", i, err, want)
		}
	}
	// Another host has its own budget.
	mustAdd(t, fr, frontier.Item{URL: "http://b/sm.xml", Kind: frontier.KindSitemap})
	for i := range 4 {
		err := fr.Add(ctx, frontier.Item{URL: fmt.Sprintf("http://a/p%d", i), FromSitemap: true})
		if want := i >= 3; errors.Is(err, frontier.ErrSitemapLimit) != want {
			t.Errorf("sitemap URL %d: %v, want limit %v", i, err, want)
		}
	}
	// Pages found by links are not sitemap URLs.
	mustAdd(t, fr, frontier.Item{URL: "http://a/linked", Depth: 1})
	// Drain everything: the counts outlive the queue.
	for range 6 {
		done(t, fr, next(t, fr))
	}
	if err := fr.Add(ctx, frontier.Item{URL: "http://a/sm9.xml", Kind: frontier.KindSitemap}); !errors.Is(err, frontier.ErrSitemapLimit) {
		t.Errorf("after draining, a third sitemap: %v, want ErrSitemapLimit", err)
	}
	if fr.LimitReached() {
		t.Error("LimitReached with 4 of 10 pages")
	}
}

func TestLimitReached(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, MaxPages: 2})
	mustAdd(t, fr, frontier.Item{URL: "http://a/sm.xml", Kind: frontier.KindSitemap})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	if fr.LimitReached() {
		t.Fatal("LimitReached after one page")
	}
	mustAdd(t, fr, frontier.Item{URL: "http://a/2"})
	if !fr.LimitReached() {
		t.Fatal("LimitReached false after two pages of two")
	}
}

func TestGiveUp(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	ctx := context.Background()
	for i := range 4 {
		mustAdd(t, fr, frontier.Item{URL: fmt.Sprintf("http://dead/%d", i)})
	}
	mustAdd(t, fr, frontier.Item{URL: "http://live/1"})
	first := next(t, fr) // dead/0 in flight
	var dropped []string
	if err := fr.GiveUp("dead", func(it frontier.Item) { dropped = append(dropped, it.URL) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://dead/1", "http://dead/2", "http://dead/3"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	if err := fr.Add(ctx, frontier.Item{URL: "http://dead/new"}); !errors.Is(err, frontier.ErrGivenUp) {
		t.Errorf("Add to a given-up host: %v", err)
	}
	if err := fr.Defer(first, time.Time{}); !errors.Is(err, frontier.ErrGivenUp) {
		t.Errorf("Defer on a given-up host: %v", err)
	}
	done(t, fr, next(t, fr)) // live/1
	if _, err := fr.Next(ctx); !errors.Is(err, frontier.ErrExhausted) {
		t.Errorf("Next after the live host: %v, want ErrExhausted", err)
	}
	if s := fr.Stats(); s.Queued != 0 || s.InFlight != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestAddScope(t *testing.T) {
	fr := frontier.New(frontier.Config{})
	ctx := context.Background()
	mustSeed(t, fr, "http://example.com/")
	if err := fr.Add(ctx, frontier.Item{URL: "https://www.example.com/a"}); !errors.Is(err, frontier.ErrScope) {
		t.Fatalf("www before AddScope: %v", err)
	}
	if err := fr.AddScope("https://www.example.com/"); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, fr, frontier.Item{URL: "https://www.example.com/a"})
}

func TestDeferKeepsHistory(t *testing.T) {
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1", Redirects: []string{"http://a/0"}})
	it := next(t, fr)
	it.Retries = 2
	it.BlockedSince = time.Unix(100, 0)
	if err := fr.Defer(it, time.Time{}); err != nil {
		t.Fatal(err)
	}
	got := next(t, fr)
	if got.Retries != 2 || !got.BlockedSince.Equal(time.Unix(100, 0)) || !slices.Equal(got.Redirects, []string{"http://a/0"}) {
		t.Errorf("deferred item came back as %+v", got)
	}
}
