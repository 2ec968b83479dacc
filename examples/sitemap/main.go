// Command sitemap shows a sitemap-driven crawl: heed reads the Sitemap: lines
// of each robots.txt it fetches (or tries /sitemap.xml when there are none),
// follows sitemap indexes down to XML, gzip and plain-text sitemaps, and
// crawls the pages they list, including pages no link leads to.
//
//	go run ./examples/sitemap                        # crawls a local test site it starts itself
//	go run ./examples/sitemap https://example.com/
//	go run ./examples/sitemap -sitemap-only https://example.com/
//
// For each page it prints how the page was found: from a link on another
// page or from a sitemap (a page's Referrer is the sitemap that listed it).
// With -sitemap-only, no links are extracted from pages
// (crawler.WithExtractors("text/html") with no extractor), so only the seed
// and what the sitemaps list are fetched.
//
// Sitemaps are on by default (crawler.WithSitemaps(true)); the crawl's Stats
// count the sitemap documents read and the page URLs they listed.
//
// Each example is a program to be read, run and copied on its own: the few
// lines of flag handling and local test site that the examples share are
// repeated in each on purpose.
package main

import (
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "sitemap:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sitemap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sitemapOnly := fs.Bool("sitemap-only", false, "follow no links: fetch only the seed and the pages sitemaps list")
	maxPages := fs.Int("max-pages", 100, "stop after this many pages (-1: no limit)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sitemap [-sitemap-only] [-max-pages N] [URL]   (no URL: crawl a local test site)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}

	opts := []crawler.Option{
		crawler.WithSitemaps(true), // the default, spelled out
		crawler.WithMaxPages(*maxPages),
	}
	if *sitemapOnly {
		opts = append(opts, crawler.WithExtractors("text/html")) // no HTML extractor: no links followed
	}
	var seed string
	switch fs.NArg() {
	case 0:
		site := httptest.NewServer(testSite())
		defer site.Close()
		seed = site.URL + "/"
		opts = append(opts, crawler.WithDelay(50*time.Millisecond)) // our own server: no need to wait 1 s
		fmt.Fprintf(stderr, "sitemap: no URL given, crawling a local test site at %s\n", site.URL)
	case 1:
		seed = fs.Arg(0)
	default:
		fs.Usage()
		return errors.New("want at most one URL")
	}

	c, err := crawler.New(opts...)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		how := "seed"
		switch {
		case p.Referrer == "":
		case p.Depth == 0:
			// Sitemap entries count as depth 0; their referrer is the
			// sitemap that listed them.
			how = "sitemap " + p.Referrer
		default:
			how = "link on " + p.Referrer
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, "%d %-40s found by %s\n", p.Status, p.URL, how)
	})
	c.OnError(func(ctx context.Context, u *url.URL, err error) {
		if e, ok := errors.AsType[*crawler.Error](err); ok && e.Skipped == crawler.SkippedMaxPages {
			return // a URL past -max-pages: not an error
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "sitemap: %s: %v\n", u, err)
	})

	runErr := c.Run(ctx, seed)

	s, statsErr := c.Stats(ctx) // after Run: the summary, asked of no Store
	fmt.Fprintf(stdout, "%d pages; %d sitemaps read, listing %d page URLs; robots.txt refused %d\n",
		s.Pages, s.Sitemaps, s.SitemapURLs, s.Disallowed)
	return errors.Join(runErr, statsErr)
}

// testSite is a site whose robots.txt names a sitemap index. The index points
// to an XML sitemap and a gzip-compressed plain-text one, which list pages
// that no page links to.
func testSite() http.Handler {
	pages := map[string]string{
		"/":               `<title>Home</title> <a href="/about">About</a>`,
		"/about":          `<title>About</title> <a href="/">Home</a>`,
		"/archive/2023":   `<title>2023</title>`,
		"/archive/2024":   `<title>2024</title>`,
		"/offers/spring":  `<title>Spring offers</title>`,
		"/private/drafts": `<title>Drafts</title>`,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /robots.txt", func(w http.ResponseWriter, r *http.Request) {
		// Sitemap: lines take absolute URLs.
		fmt.Fprintf(w, "User-agent: *\nDisallow: /private/\n\nSitemap: http://%s/sitemap-index.xml\n", r.Host)
	})
	mux.HandleFunc("GET /sitemap-index.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>http://%[1]s/sitemap-archive.xml</loc></sitemap>
  <sitemap><loc>http://%[1]s/sitemap-offers.txt.gz</loc></sitemap>
</sitemapindex>
`, r.Host)
	})
	mux.HandleFunc("GET /sitemap-archive.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://%[1]s/</loc></url>
  <url><loc>http://%[1]s/archive/2023</loc><lastmod>2023-12-31</lastmod></url>
  <url><loc>http://%[1]s/archive/2024</loc><lastmod>2024-12-31</lastmod></url>
  <url><loc>http://%[1]s/private/drafts</loc></url>
</urlset>
`, r.Host)
	})
	mux.HandleFunc("GET /sitemap-offers.txt.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, "http://%s/offers/spring\n", r.Host)
		zw.Close()
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html>"+strings.TrimSpace(body))
	})
	return mux
}
