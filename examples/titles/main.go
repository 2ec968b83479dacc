// Command titles shows how to embed heed in a small scraper: it crawls a site
// and writes the title of every page it fetched as CSV (url,status,title).
//
//	go run ./examples/titles                          # crawls a local test site it starts itself
//	go run ./examples/titles https://example.com/ > titles.csv
//	go run ./examples/titles -max-pages 500 https://example.com/
//
// It uses the crawler's hooks: OnPage reads each page's title from its
// goquery document (parsed on first use), OnError reports fetches that
// failed, and the final Stats make a summary on stderr. Ctrl-C stops the crawl
// gracefully: fetches in flight finish, and every row fetched so far is
// written.
//
// Each example is a program to be read, run and copied on its own: the few
// lines of flag handling and local test site that the examples share are
// repeated in each on purpose.
package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "titles: interrupted; the rows above are what was fetched")
		os.Exit(130)
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "titles:", err)
		os.Exit(1)
	}
}

// run is the whole program: main only adds the process around it, so the
// test can call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("titles", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxPages := fs.Int("max-pages", 100, "stop after this many pages (-1: no limit)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: titles [-max-pages N] [URL]   (no URL: crawl a local test site)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}

	opts := []crawler.Option{crawler.WithMaxPages(*maxPages)}
	var seed string
	switch fs.NArg() {
	case 0:
		site := httptest.NewServer(testSite())
		defer site.Close()
		seed = site.URL + "/"
		// Our own server on loopback: no need to wait a second between
		// requests. Against a real site keep the polite default (1 s).
		opts = append(opts, crawler.WithDelay(50*time.Millisecond))
		fmt.Fprintf(stderr, "titles: no URL given, crawling a local test site at %s\n", site.URL)
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

	// Handlers of different pages run concurrently, so the CSV writer,
	// which is not safe for concurrent use, is guarded by a mutex.
	var mu sync.Mutex
	w := csv.NewWriter(stdout)
	w.Write([]string{"url", "status", "title"})
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		mu.Lock()
		defer mu.Unlock()
		w.Write([]string{p.URL.String(), strconv.Itoa(p.Status), p.Title()})
	})
	c.OnError(func(ctx context.Context, u *url.URL, err error) {
		if e, ok := errors.AsType[*crawler.Error](err); ok && e.Skipped == crawler.SkippedMaxPages {
			return // a URL past -max-pages: not an error
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "titles: %s: %v\n", u, err)
	})

	runErr := c.Run(ctx, seed)

	mu.Lock()
	w.Flush()
	mu.Unlock()
	s, statsErr := c.Stats(ctx) // after Run: the summary, asked of no Store
	fmt.Fprintf(stderr, "titles: %d pages in %v, %d disallowed by robots.txt, %d errors\n",
		s.Pages, s.Elapsed.Round(time.Millisecond), s.Disallowed, s.ErrorCount())
	return errors.Join(runErr, w.Error(), statsErr)
}

// testSite is a small web site with a robots.txt, a redirect, a missing page
// and a private area the crawler must not enter.
func testSite() http.Handler {
	pages := map[string]string{
		"/": `<title>Home</title>
			<a href="/about">About us</a> <a href="/blog/">Blog</a>
			<a href="/old-contact">Contact</a> <a href="/private/admin">Admin</a>`,
		"/about": `<title>About us</title> <a href="/">Home</a>`,
		"/blog/": `<title>Blog</title>
			<a href="/blog/first-post">First post</a> <a href="/blog/second-post">Second post</a>`,
		"/blog/first-post": `<title>  Hello,
			world  </title> <a href="/blog/">Blog</a> <a href="/no-such-page">a broken link</a>`,
		"/blog/second-post": `<title>Second post</title> <a href="/blog/first-post">First post</a>`,
		"/contact":          `<title>Contact</title> <a href="mailto:hello@example.com">Write to us</a>`,
		"/private/admin":    `<title>Admin</title>`,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
	})
	mux.Handle("GET /old-contact", http.RedirectHandler("/contact", http.StatusMovedPermanently))
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html>"+body)
	})
	return mux
}
