package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/redistest"
)

// TestRevisitSitemapLastmods: with -state (pebble) and with -redis, a
// revisiting crawl that reads a sitemap again hands the <lastmod> it gives
// each page held to the page's queued revisit, through the Store, and the
// summary counts them.
func TestRevisitSitemapLastmods(t *testing.T) {
	bin := buildCrawl(t)
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) []string
	}{
		{"state", func(t *testing.T) []string { return []string{"-state", t.TempDir()} }},
		{"redis", func(t *testing.T) []string { return []string{"-redis", redistest.Start(t).URL(), "-job", "lastmod"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			reads := 0
			var s *site
			s = newSite(t, map[string]http.HandlerFunc{
				"/":  page(`<title>Home</title><a href="/a">a</a> <a href="/b">b</a>`),
				"/a": page("<title>A</title>"),
				"/b": page("<title>B</title>"),
				"/sitemap.xml": func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					reads++
					lastmod := time.Now().UTC().Add(time.Duration(reads) * time.Second) // a claim of a change at every read
					mu.Unlock()
					w.Header().Set("Content-Type", "application/xml")
					fmt.Fprint(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
					for _, p := range []string{"/a", "/b"} {
						fmt.Fprintf(w, `<url><loc>%s%s</loc><lastmod>%s</lastmod></url>`, s.URL, p, lastmod.Format(time.RFC3339))
					}
					fmt.Fprint(w, `</urlset>`)
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := append(tc.store(t), "-revisit", "-min-revisit", "50ms", "-max-revisit", "300ms", "-delay", "5ms", "-progress", "off", writeSeeds(t, s.URL+"/"))
			r := startCrawl(t, ctx, bin, args...)
			untilTrue(t, "three sitemap reads and a fetch of each page after them", []*crawlRun{r}, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return reads >= 3 && s.requested("/a") >= 3 && s.requested("/b") >= 3
			})
			r.signal(t, os.Interrupt)
			if err := <-r.exited; exitCode(err) != 130 {
				t.Fatalf("exit %v, want 130; stderr:\n%s", err, r.stderr)
			}
			m := regexp.MustCompile(`; (\d+) sitemap lastmods of pages held`).FindStringSubmatch(r.stderr.String())
			if m == nil {
				t.Fatalf("no count of sitemap lastmods in the summary:\n%s", r.stderr)
			}
			if n, _ := strconv.Atoi(m[1]); n < 2 {
				t.Errorf("%d sitemap lastmods taken after %d sitemap reads of 2 pages held, want at least 2", n, reads)
			}
		})
	}
}
