package crawler_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
)

// callCountingStore is a MemoryStore, made a frontier.DoneAdder, that
// counts the calls that schedule URLs: each is a round trip to a shared
// Store.
type callCountingStore struct {
	frontier.MemoryStore
	adds, ackAdds, acks atomic.Int32
}

func (s *callCountingStore) Add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	s.adds.Add(1)
	return s.MemoryStore.Add(ctx, batch, lim)
}

func (s *callCountingStore) Done(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	s.acks.Add(1)
	return s.MemoryStore.Done(ctx, l, now, o)
}

func (s *callCountingStore) DoneAdding(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	s.ackAdds.Add(1)
	refused, err := s.MemoryStore.Add(ctx, batch, lim)
	if err != nil {
		return nil, err
	}
	return refused, s.MemoryStore.Done(ctx, l, now, o)
}

// A page's links and a redirect's target are scheduled with the end of
// the fetch's lease, and a sitemap's entries in batches: a crawl on a
// shared Store makes one round trip per fetch to end it, not one more per
// page or per sitemap entry.
func TestSchedulingStoreCalls(t *testing.T) {
	const entries = 1200
	var s *testSite
	s = newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "User-agent: *\nSitemap: %s/sitemap.xml\n", s.URL)
		},
		"/sitemap.xml": func(w http.ResponseWriter, r *http.Request) {
			var b strings.Builder
			b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for i := range entries {
				fmt.Fprintf(&b, "<url><loc>%s/s/%d</loc></url>", s.URL, i)
			}
			b.WriteString("</urlset>")
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, b.String())
		},
		"/":   htmlPage("home", "/a", "/go"),
		"/a":  htmlPage("a", "/"),
		"/go": redirectTo(http.StatusFound, "/b"),
		"/b":  htmlPage("b"),
	})
	store := new(callCountingStore)
	c := newCrawler(t, crawler.WithStore(store), crawler.WithSitemaps(true))
	runCrawl(t, c, s.URL+"/")
	for _, target := range []string{"/", "/a", "/go", "/b", "/s/0", fmt.Sprintf("/s/%d", entries-1)} {
		if s.count(target) != 1 {
			t.Errorf("%s fetched %d times, want once", target, s.count(target))
		}
	}
	// Adds: the seed, and the sitemap's entries in three batches of at
	// most 500 (and the sitemap itself, found in robots.txt).
	if n := store.adds.Load(); n > 5 {
		t.Errorf("%d Add calls for a seed, a sitemap and its %d entries, want at most 5", n, entries)
	}
	if n := store.ackAdds.Load(); n < 3 {
		t.Errorf("%d DoneAdding calls, want one for each of /, /a and /go at least", n)
	}
}
