package crawler_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// lastmodPolicy revisits every page a few milliseconds after each fetch,
// makes a page due at once when a sitemap claims it changed, and records
// what it is told.
type lastmodPolicy struct {
	mu      sync.Mutex
	claims  []lastmodClaim
	fetches []revisit.Fetch // of fetches told of a sitemap's claim
	done    func()
}

type lastmodClaim struct{ prev, due, lastmod, read time.Time }

func (p *lastmodPolicy) Schedule(h *revisit.Host, pg *revisit.Page, f revisit.Fetch) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !f.Lastmod.IsZero() {
		p.fetches = append(p.fetches, f)
		if len(p.fetches) == 2 {
			p.done()
		}
	}
	return f.At.Add(5 * time.Millisecond)
}

func (p *lastmodPolicy) Claim(h revisit.Host, pg revisit.Page, prev, due, lastmod, read time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claims = append(p.claims, lastmodClaim{prev, due, lastmod, read})
	return read
}

// TestRevisitSitemapLastmod: when a revisiting crawl reads a sitemap again,
// the <lastmod> it lists for a page held reaches the policy twice: Claim,
// with the page's last fetch and due time, whose answer becomes the page's
// due time, then Schedule at the page's next fetch, as Fetch.Lastmod read
// at Fetch.LastmodRead — after the fetch before it, and only once per
// sitemap read.
func TestRevisitSitemapLastmod(t *testing.T) {
	var s *testSite
	start := time.Now().UTC().Truncate(time.Second)
	var mu sync.Mutex
	reads := 0
	s = newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "User-agent: *\nSitemap: %s/sitemap.xml\n", s.URL)
		},
		"/sitemap.xml": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			reads++
			lastmod := start.Add(time.Duration(reads) * time.Hour) // a new claim at every read
			mu.Unlock()
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/a</loc><lastmod>%s</lastmod></url></urlset>`,
				s.URL, lastmod.Format(time.RFC3339))
		},
		"/a": htmlPage("a"),
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pol := &lastmodPolicy{done: cancel}
	c := newCrawler(t, crawler.WithSitemaps(true),
		crawler.WithRevisit(crawler.Revisit{Min: time.Millisecond, Max: 20 * time.Millisecond, Policy: pol}))
	runRevisiting(t, ctx, c, s.URL+"/a")

	pol.mu.Lock()
	defer pol.mu.Unlock()
	if len(pol.fetches) < 2 {
		t.Fatalf("%d fetches were told of a sitemap's <lastmod> (%d Claims, %d sitemap reads), want 2", len(pol.fetches), len(pol.claims), reads)
	}
	claimed := map[time.Time]lastmodClaim{}
	for _, cl := range pol.claims {
		if !cl.read.After(cl.prev) || cl.lastmod.Before(start) {
			t.Errorf("Claim(prev %v, lastmod %v, read %v): read not after the fetch, or a <lastmod> the sitemap never said", cl.prev, cl.lastmod, cl.read)
		}
		claimed[cl.lastmod] = cl
	}
	seen := map[time.Time]bool{}
	for _, f := range pol.fetches {
		cl, ok := claimed[f.Lastmod]
		due := cl.read // Claim's answer, kept within Min (1ms) of the fetch
		if lo := cl.prev.Add(time.Millisecond); due.Before(lo) {
			due = lo
		}
		switch {
		case !ok:
			t.Errorf("a fetch was told <lastmod> %v, which no Claim saw", f.Lastmod)
		case f.LastmodRead.Before(cl.read) || f.LastmodRead.Sub(cl.read) >= time.Millisecond || !f.Prev.Equal(cl.prev): // MemoryStore keeps it to the ms, rounded up
			t.Errorf("fetch told <lastmod> %v read at %v after a fetch at %v; its Claim had read %v, fetch %v", f.Lastmod, f.LastmodRead, f.Prev, cl.read, cl.prev)
		case !f.Due.Equal(due):
			t.Errorf("fetch due %v, want the due time Claim gave, %v", f.Due, due)
		}
		if seen[f.Lastmod] {
			t.Errorf("<lastmod> %v told to two fetches: a claim is spent on the fetch after it", f.Lastmod)
		}
		seen[f.Lastmod] = true
	}
	if st := statsOf(t, c); st.SitemapLastmods < 2 {
		t.Errorf("Stats.SitemapLastmods = %d, want at least 2", st.SitemapLastmods)
	}
}
