// Command shop shows custom link extractors: instead of following every link,
// it follows only pagination and product links chosen by a CSS selector, and
// reads product links from a JSON API; then it prints the products it found.
//
//	go run ./examples/shop                       # crawls a local test shop it starts itself
//	go run ./examples/shop https://shop.example/catalog/ [https://shop.example/api/products ...]
//	go run ./examples/shop -links 'nav.pages a, li.item a' https://shop.example/catalog/
//
// Product pages are recognised by their schema.org Product microdata
// (itemprop="name" and "price"), which many shops publish for search engines.
//
// Two extractors do the work:
//
//   - crawler.WithExtractors("text/html", sel) replaces the default HTML
//     extractor (every <a href>, <link>, <iframe>…) with a
//     fetch.SelectorExtractor, so navigation, blog, cart and login links are
//     never even scheduled;
//   - crawler.WithExtractor("application/json", apiLinks) adds an extractor
//     for JSON responses, which takes the product URLs and the next page from
//     the shop's API.
//
// Sitemaps are turned off: a shop's sitemap lists every page, which would
// undo the choice of links made here.
//
// Each example is a program to be read, run and copied on its own: the few
// lines of flag handling and local test site that the examples share are
// repeated in each on purpose.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	}
}

// defaultLinks selects pagination and product links on catalogue pages.
const defaultLinks = `a[rel~="next"], .pagination a, .product a`

// product is what a product page says about itself.
type product struct {
	Name, Price, URL string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	links := fs.String("links", defaultLinks, "CSS selector of the links to follow on HTML pages")
	maxPages := fs.Int("max-pages", 200, "stop after this many pages (-1: no limit)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: shop [-links CSS] [-max-pages N] [URL ...]   (no URL: crawl a local test shop)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}

	// A typo in the selector is an error here, not an empty crawl.
	sel, err := fetch.SelectorExtractor(*links)
	if err != nil {
		return fmt.Errorf("-links: %w", err)
	}
	opts := []crawler.Option{
		crawler.WithExtractors("text/html", sel),
		crawler.WithExtractor("application/json", fetch.ExtractorFunc(apiLinks)),
		crawler.WithSitemaps(false),
		crawler.WithMaxPages(*maxPages),
	}
	seeds := fs.Args()
	if len(seeds) == 0 {
		site := httptest.NewServer(testShop())
		defer site.Close()
		seeds = []string{site.URL + "/catalog/", site.URL + "/api/products?page=1"}
		opts = append(opts, crawler.WithDelay(50*time.Millisecond)) // our own server: no need to wait 1 s
		fmt.Fprintf(stderr, "shop: no URL given, crawling a local test shop at %s\n", site.URL)
	}

	c, err := crawler.New(opts...)
	if err != nil {
		return err
	}
	var found findings
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		if pr, ok := productOf(p); ok {
			found.addProduct(pr)
		}
	})
	c.OnError(func(ctx context.Context, u *url.URL, err error) {
		if e, ok := errors.AsType[*crawler.Error](err); ok && e.Skipped == crawler.SkippedMaxPages {
			return // a URL past -max-pages: not an error
		}
		fmt.Fprintf(stderr, "shop: %s: %v\n", u, err)
	})
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		found.addRefused(u.RequestURI())
	})

	runErr := c.Run(ctx, seeds...)
	// Run has returned, so no handler runs any more.
	s, statsErr := c.Stats(ctx) // after Run: the summary, asked of no Store
	found.print(stdout, stderr, s)
	return errors.Join(runErr, statsErr)
}

// productOf reads the schema.org Product microdata of a product page; ok
// is false for any other page.
func productOf(p *crawler.Page) (pr product, ok bool) {
	if !p.IsHTML() || p.Status != http.StatusOK {
		return product{}, false
	}
	doc, err := p.Document()
	if err != nil {
		return product{}, false
	}
	item := doc.Find(`[itemtype$="schema.org/Product"]`).First()
	name := strings.TrimSpace(item.Find(`[itemprop="name"]`).First().Text())
	if name == "" {
		return product{}, false // not a product page
	}
	price := item.Find(`[itemprop="price"]`).First()
	amount, ok := price.Attr("content")
	if !ok {
		amount = strings.TrimSpace(price.Text())
	}
	currency, _ := item.Find(`[itemprop="priceCurrency"]`).First().Attr("content")
	return product{Name: name, Price: strings.TrimSpace(amount + " " + currency), URL: p.URL.String()}, true
}

// findings are the products the crawl found and the paths robots.txt
// refused, gathered by handlers that may run concurrently.
type findings struct {
	mu       sync.Mutex
	products []product
	refused  []string
}

func (f *findings) addProduct(p product) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.products = append(f.products, p)
}

func (f *findings) addRefused(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused = append(f.refused, path)
}

// print writes the products, sorted by name, to stdout, and a summary of
// the crawl to stderr.
func (f *findings) print(stdout, stderr io.Writer, s crawler.Stats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	slices.SortFunc(f.products, func(a, b product) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range f.products {
		fmt.Fprintf(stdout, "%-24s %-10s %s\n", p.Name, p.Price, p.URL)
	}
	slices.Sort(f.refused)
	fmt.Fprintf(stderr, "shop: %d products on %d pages fetched in %v; robots.txt refused %d: %s\n",
		len(f.products), s.Pages, s.Elapsed.Round(time.Millisecond), len(f.refused), strings.Join(f.refused, " "))
}

// apiLinks is an extractor for the shop's JSON API: it follows the product
// URLs of a page of results and the link to the next page. It resolves them
// against the response's URL itself, to keep only http(s) ones; a relative
// link it returned would be resolved against that URL all the same.
func apiLinks(ctx context.Context, p *fetch.Page) ([]fetch.Link, error) {
	var page struct {
		Products []struct {
			URL string `json:"url"`
		} `json:"products"`
		Next string `json:"next"`
	}
	if err := json.Unmarshal(p.Body, &page); err != nil {
		return nil, fmt.Errorf("not an API page: %w", err)
	}
	var links []fetch.Link
	add := func(ref, rel string) {
		if ref == "" {
			return
		}
		u, err := p.URL.Parse(ref)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return
		}
		u.Fragment = ""
		links = append(links, fetch.Link{URL: u.String(), Tag: "json", Rel: rel})
	}
	for _, pr := range page.Products {
		add(pr.URL, "")
	}
	add(page.Next, "next")
	return links, nil
}

// shopItem is a product of the test shop.
type shopItem struct{ slug, name, price string }

// shopNav is the test shop's navigation, on every HTML page: links a
// product crawler should leave alone.
const shopNav = `<nav><a href="/">Home</a> <a href="/blog/">Blog</a> <a href="/cart">Cart</a> <a href="/login">Log in</a></nav>`

// testShop is a small shop: a paginated catalogue with sort links that
// robots.txt forbids, a JSON API listing the clearance items, product pages
// with microdata, and plenty of links the crawler should leave alone.
func testShop() http.Handler {
	catalogue := [][]shopItem{
		{{"blue-mug", "Blue mug", "8.50"}, {"green-mug", "Green mug", "8.50"}},
		{{"teapot", "Teapot", "24.00"}, {"tea-towel", "Tea towel", "6.00"}},
		{{"kettle", "Kettle", "39.90"}},
	}
	clearance := [][]shopItem{
		{{"odd-saucer", "Odd saucer", "1.00"}, {"teapot", "Teapot", "24.00"}}, // the teapot is in both: fetched once
		{{"chipped-cup", "Chipped cup", "0.50"}},
	}
	bySlug := map[string]shopItem{}
	for _, page := range append(catalogue, clearance...) {
		for _, it := range page {
			bySlug[it.slug] = it
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /cart\nDisallow: /*sort=\n")
	})
	mux.HandleFunc("GET /catalog/", catalogueHandler(catalogue))
	mux.HandleFunc("GET /api/products", apiHandler(clearance))
	mux.HandleFunc("GET /product/{slug}", productHandler(bySlug))
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title>%s<p>Nothing for a product crawler here.", r.URL.Path, shopNav)
	})
	return mux
}

// catalogueHandler serves the catalogue's pages (?page=N): product links,
// pagination, a sort link robots.txt forbids, and links to leave alone.
func catalogueHandler(catalogue [][]shopItem) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n := pageNumber(r, len(catalogue))
		if n == 0 {
			http.NotFound(w, r)
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html><title>Catalogue, page %d</title>%s<ul>", n, shopNav)
		for _, it := range catalogue[n-1] {
			fmt.Fprintf(&b, `<li class="product"><a href="/product/%s">%s</a></li>`, it.slug, it.name)
		}
		b.WriteString(`</ul><div class="pagination"><a href="?page=1&sort=price">Sort by price</a>`)
		if n > 1 {
			fmt.Fprintf(&b, ` <a href="?page=%d" rel="prev">Previous</a>`, n-1)
		}
		if n < len(catalogue) {
			fmt.Fprintf(&b, ` <a href="?page=%d" rel="next">Next</a>`, n+1)
		}
		b.WriteString(`</div><footer><a href="/about">About</a> <a href="https://social.example/shop">Follow us</a></footer>`)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, b.String())
	}
}

// apiHandler serves the JSON API's pages of clearance items (?page=N),
// each with a link to the next.
func apiHandler(clearance [][]shopItem) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n := pageNumber(r, len(clearance))
		if n == 0 {
			http.NotFound(w, r)
			return
		}
		type apiProduct struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		}
		var out struct {
			Products []apiProduct `json:"products"`
			Next     string       `json:"next,omitempty"`
		}
		for _, it := range clearance[n-1] {
			out.Products = append(out.Products, apiProduct{it.name, "/product/" + it.slug})
		}
		if n < len(clearance) {
			out.Next = fmt.Sprintf("/api/products?page=%d", n+1)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}
}

// productHandler serves the product pages, with schema.org microdata.
func productHandler(bySlug map[string]shopItem) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		it, ok := bySlug[r.PathValue("slug")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>%[1]s</title>%[3]s
			<div itemscope itemtype="https://schema.org/Product">
			<h1 itemprop="name">%[1]s</h1>
			<p itemprop="offers" itemscope itemtype="https://schema.org/Offer">
			<span itemprop="price" content="%[2]s">€%[2]s</span><meta itemprop="priceCurrency" content="EUR"></p>
			<a href="/cart?add=%[4]s">Add to cart</a> <a href="/reviews/%[4]s">Reviews</a></div>`,
			it.name, it.price, shopNav, it.slug)
	}
}

// pageNumber returns the page query parameter (1 when absent) if it is
// between 1 and last, else 0.
func pageNumber(r *http.Request, last int) int {
	q := r.URL.Query().Get("page")
	if q == "" {
		return 1
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 || n > last {
		return 0
	}
	return n
}
