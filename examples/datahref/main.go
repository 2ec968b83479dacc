// Command datahref shows how to extend heed with a link extractor: it
// follows the links of elements made clickable by script, such as the rows
// of a table, <tr data-href="/orders/42">, which the default HTML extractor
// does not follow (it takes a[href], area[href], iframe and frame src, and
// link[href] with rel next, prev, alternate or canonical). It prints each
// page fetched, and says which were reached only through a data-href.
//
//	go run ./examples/datahref                       # crawls a local test site it starts itself
//	go run ./examples/datahref https://example.com/
//
// Each example is a program to be read, run and copied on its own: the few
// lines of flag handling and local test site that the examples share are
// repeated in each on purpose.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"slices"
	"sync"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "datahref: interrupted")
		os.Exit(130)
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "datahref:", err)
		os.Exit(1)
	}
}

// dataHref finds the links of elements made clickable by script:
// <tr data-href="/orders/42">. Links may be relative: the crawler resolves
// them against the page's URL, and drops those that are not http(s).
var dataHref = fetch.ExtractorFunc(func(ctx context.Context, p *fetch.Page) ([]fetch.Link, error) {
	doc, err := p.Document()
	if err != nil {
		return nil, err
	}
	var links []fetch.Link
	doc.Find("[data-href]").Each(func(_ int, s *goquery.Selection) {
		links = append(links, fetch.Link{URL: s.AttrOr("data-href", ""), Tag: goquery.NodeName(s)})
	})
	return links, nil
})

// run is the whole program: main only adds the process around it, so the
// test can call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("datahref", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxPages := fs.Int("max-pages", 100, "stop after this many pages (-1: no limit)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: datahref [-max-pages N] [URL]   (no URL: crawl a local test site)")
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
		opts = append(opts, crawler.WithDelay(10*time.Millisecond))
		fmt.Fprintf(stderr, "datahref: no URL given, crawling a local test site at %s\n", site.URL)
	case 1:
		seed = fs.Arg(0)
	default:
		fs.Usage()
		return errors.New("want at most one URL")
	}

	// The default HTML extractor runs first; dataHref adds its links.
	opts = append(opts, crawler.WithExtractor("text/html", dataHref))
	c, err := crawler.New(opts...)
	if err != nil {
		return err
	}
	// Handlers of different pages run concurrently.
	var mu sync.Mutex
	var lines []string
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf("%d %s", p.Status, p.URL.RequestURI()))
		mu.Unlock()
	})
	runErr := c.Run(ctx, seed)
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	s, statsErr := c.Stats(ctx)
	fmt.Fprintf(stderr, "datahref: %d pages in %v\n", s.Pages, s.Elapsed.Round(time.Millisecond))
	return errors.Join(runErr, statsErr)
}

// testSite is a small shop back office: the orders are rows of a table
// that script makes clickable, so only their data-href leads to them.
func testSite() http.Handler {
	pages := map[string]string{
		"/": `<title>Back office</title><a href="/orders">Orders</a>`,
		"/orders": `<title>Orders</title><table>
			<tr data-href="/orders/41"><td>41</td><td>Teapot</td></tr>
			<tr data-href="orders/42"><td>42</td><td>Cup</td></tr>
			<tr data-href="mailto:orders@example.com"><td>Write to us</td></tr>
			</table><button data-href="/orders?page=2">Next page</button>`,
		"/orders?page=2": `<title>Orders, page 2</title><table>
			<tr data-href="/orders/40"><td>40</td><td>Saucer</td></tr></table>`,
		"/orders/40": `<title>Order 40</title><a href="/orders">Orders</a>`,
		"/orders/41": `<title>Order 41</title><a href="/orders">Orders</a>`,
		"/orders/42": `<title>Order 42</title><a href="/orders">Orders</a>`,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if r.URL.RawQuery != "" {
			path += "?" + r.URL.RawQuery
		}
		body, ok := pages[path]
		if !ok {
			http.NotFound(w, r) // robots.txt too: everything is allowed
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html>"+body)
	})
	return mux
}
