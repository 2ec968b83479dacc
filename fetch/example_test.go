package fetch_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/heedcrawl/heed/fetch"
)

// A crawler's fetch-and-extract step: fetch a page, note a redirect instead
// of following it, and collect the links that may be followed.
func ExampleFetcher() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/", http.StatusMovedPermanently)
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, `<html><head><link rel="next" href="/page/2"></head><body>
<a href="/about">About us</a>
<a href="/login" rel="nofollow">Log in</a>
<a href="mailto:hello@example.com">Mail</a>
</body></html>`)
		}
	}))
	defer srv.Close()

	f := &fetch.Fetcher{}
	defer f.CloseIdleConnections()
	ctx := context.Background()

	p, err := f.Fetch(ctx, fetch.Request{URL: srv.URL + "/old"})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Status, "redirect to", p.Redirect.Path)

	next, _ := p.RedirectRequest(0) // the crawler would enqueue this
	p, err = f.Fetch(ctx, next)
	if err != nil {
		panic(err)
	}
	links, _ := fetch.NewRegistry().Extract(ctx, p)
	fmt.Println(p.Status, p.ContentType, "after", len(p.RedirectChain), "redirect")
	for _, l := range links {
		fmt.Printf("%s <%s> %q\n", strings.TrimPrefix(l.URL, srv.URL), l.Tag, l.Text)
	}
	// Output:
	// 301 redirect to /
	// 200 text/html after 1 redirect
	// /page/2 <link> ""
	// /about <a> "About us"
}

func ExampleParseSitemap() {
	const sitemap = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://example.com/blog/first</loc><lastmod>2024-05-01</lastmod><priority>0.9</priority></url>
  <url><loc>https://example.com/blog/second</loc><changefreq>weekly</changefreq></url>
  <url><loc>https://example.com/shop/item</loc></url>
</urlset>`
	base, _ := url.Parse("https://example.com/blog/sitemap.xml")
	stats, err := fetch.ParseSitemap(strings.NewReader(sitemap), base, fetch.SitemapOptions{}, func(e fetch.SitemapEntry) bool {
		fmt.Println(e.Loc, e.Lastmod.Format("2006-01-02"), e.Changefreq, e.Priority)
		return true
	})
	fmt.Println("urls:", stats.URLs, "out of scope:", stats.OutOfScope, "err:", err)
	// Output:
	// https://example.com/blog/first 2024-05-01  0.9
	// https://example.com/blog/second 0001-01-01 weekly 0.5
	// urls: 2 out of scope: 1 err: <nil>
}

func ExampleSelectorExtractor() {
	next, err := fetch.SelectorExtractor("a.next, .product a")
	if err != nil {
		panic(err)
	}
	reg := &fetch.Registry{} // no default extractor: only what the selector picks
	reg.Register("text/html", next)

	u, _ := url.Parse("https://shop.example/list?page=1")
	p := &fetch.Page{URL: u, ContentType: "text/html", Body: []byte(`
<nav><a href="/">Home</a><a class="next" href="?page=2">Next</a></nav>
<div class="product"><a href="/p/1">Kettle</a></div>
<div class="product"><a href="/p/2">Teapot</a></div>`)}
	links, _ := reg.Extract(context.Background(), p)
	for _, l := range links {
		fmt.Println(l.URL)
	}
	// Output:
	// https://shop.example/list?page=2
	// https://shop.example/p/1
	// https://shop.example/p/2
}
