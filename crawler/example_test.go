package crawler_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/heedcrawl/heed/crawler"
)

// A crawl of a small site: collect every page's title, and the URLs
// robots.txt kept the crawler away from.
func Example() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages := map[string]string{
			"/":      `<title>Home</title><a href="/about">About</a> <a href="/private/admin">Admin</a>`,
			"/about": `<title>About us</title><a href="/">Home</a> <a href="/team">Team</a>`,
			"/team":  `<title>The team</title>`,
		}
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	defer site.Close()

	// A loopback test site may be crawled without pause; the default
	// delay is one second between requests to a host.
	c, err := crawler.New(crawler.WithDelay(0), crawler.WithSitemaps(false))
	if err != nil {
		log.Fatal(err)
	}
	// Handlers of different pages run concurrently.
	var mu sync.Mutex
	var lines []string
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		title := ""
		if doc, err := p.Document(); err == nil {
			title = strings.TrimSpace(doc.Find("title").Text())
		}
		mu.Lock()
		lines = append(lines, fmt.Sprintf("%d %-7s %q", p.Status, p.URL.Path, title))
		mu.Unlock()
	})
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		mu.Lock()
		lines = append(lines, fmt.Sprintf("robots.txt: %s (%s)", u.Path, why))
		mu.Unlock()
	})
	if err := c.Run(context.Background(), site.URL+"/"); err != nil {
		log.Fatal(err)
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	st, err := c.Stats(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d pages, %d disallowed\n", st.Pages, st.Disallowed)
	// Output:
	// 200 /       "Home"
	// 200 /about  "About us"
	// 200 /team   "The team"
	// robots.txt: /private/admin (rules)
	// 3 pages, 1 disallowed
}

// Scrape with CSS selectors: the products of a paged catalogue, following
// its "next" links and nothing else.
func ExampleCrawler_OnHTML() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages := map[string]string{
			"/": `<div class="product"><h2>Teapot</h2><span class="price">12 €</span></div>
				<div class="product"><h2>Cup</h2><span class="price">3 €</span></div>
				<a href="/about">About us</a> <a class="next" href="/page/2">next</a>`,
			"/page/2": `<div class="product"><h2>Saucer</h2><span class="price">2 €</span></div>`,
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r) // robots.txt too: everything is allowed
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	defer site.Close()

	// A selector is compiled once, before the crawl: a typo is an error
	// here, not a handler that never runs.
	product, err := crawler.CompileSelector("div.product")
	if err != nil {
		log.Fatal(err)
	}
	next, err := crawler.CompileSelector("a.next")
	if err != nil {
		log.Fatal(err)
	}

	// No link extractor for HTML: only what OnHTML follows is crawled.
	c, err := crawler.New(crawler.WithDelay(0), crawler.WithSitemaps(false), crawler.WithExtractors("text/html"))
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	c.OnHTML(product, func(ctx context.Context, e *crawler.Element) {
		line := fmt.Sprintf("%-7s %-7s %s", e.Page.URL.Path, e.Selection.Find("h2").Text(), e.Selection.Find(".price").Text())
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
	})
	c.OnHTML(next, func(ctx context.Context, e *crawler.Element) {
		if err := e.Follow(ctx, e.Attr("href"), nil); err != nil {
			log.Print(err)
		}
	})
	if err := c.Run(context.Background(), site.URL+"/"); err != nil {
		log.Fatal(err)
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// /       Cup     3 €
	// /       Teapot  12 €
	// /page/2 Saucer  2 €
}

// Count, per page, the elements a selector matches: OnHTML counts them one
// by one, OnScraped reports each page's count once its OnHTML callbacks
// are all done.
func ExampleCrawler_OnScraped() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages := map[string]string{
			"/": `<title>Library</title><a href="/os">os</a> <a href="/io">io</a>`,
			"/os": `<title>os</title><dl class="py function"><dt>os.getcwd()</dt></dl>
				<dl class="py function"><dt>os.listdir()</dt></dl><dl class="py class"><dt>os.DirEntry</dt></dl>`,
			"/io": `<title>io</title><dl class="py function"><dt>io.open()</dt></dl>`,
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r) // robots.txt too: everything is allowed
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	defer site.Close()

	function, err := crawler.CompileSelector("dl.py.function")
	if err != nil {
		log.Fatal(err)
	}
	c, err := crawler.New(crawler.WithDelay(0), crawler.WithSitemaps(false))
	if err != nil {
		log.Fatal(err)
	}
	// Pages are handled concurrently; one page's callbacks one after the
	// other, OnScraped last.
	var mu sync.Mutex
	counts := map[*crawler.Page]int{}
	var lines []string
	c.OnHTML(function, func(ctx context.Context, e *crawler.Element) {
		mu.Lock()
		counts[e.Page]++
		mu.Unlock()
	})
	c.OnScraped(func(ctx context.Context, p *crawler.Page) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf("%-4s %d functions", p.URL.Path, counts[p]))
		delete(counts, p)
	})
	if err := c.Run(context.Background(), site.URL+"/"); err != nil {
		log.Fatal(err)
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// /    0 functions
	// /io  1 functions
	// /os  2 functions
}
