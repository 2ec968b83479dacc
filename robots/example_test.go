package robots_test

import (
	"fmt"

	"github.com/heedcrawl/heed/robots"
)

func Example() {
	r := robots.Parse([]byte(`
User-agent: *
Disallow: /private/
Allow: /private/press/
Crawl-delay: 0.5

User-agent: FooBot
Disallow: /*.pdf$

Sitemap: https://example.com/sitemap.xml
`))
	fmt.Println(r.Allowed("heedbot/1.0", "https://example.com/private/plans"))
	fmt.Println(r.Allowed("heedbot/1.0", "https://example.com/private/press/today"))
	fmt.Println(r.Allowed("FooBot", "https://example.com/private/plans"))
	fmt.Println(r.Allowed("FooBot", "https://example.com/report.pdf"))
	fmt.Println(r.CrawlDelay("heedbot"))
	fmt.Println(r.Sitemaps())
	// Output:
	// false
	// true
	// true
	// false
	// 500ms true
	// [https://example.com/sitemap.xml]
}

// A crawler checks many URLs of one site: choose the group once, then ask
// it. Match tells which rule decided.
func ExampleGroup_Match() {
	r := robots.Parse([]byte("User-agent: heedbot\nDisallow: /search\nAllow: /search/about\n"))
	g := r.Group("heedbot")
	fmt.Println(g.Agents())
	for _, path := range []string{"/search?q=go", "/search/about", "/news"} {
		rule, ok := g.Match(path)
		fmt.Println(path, g.Allowed(path), rule, ok)
	}
	// Output:
	// [heedbot]
	// /search?q=go false {false /search 2} true
	// /search/about true {true /search/about 3} true
	// /news true {false  0} false
}

func ExampleDisallowAll() {
	// A 5xx answer for /robots.txt means: fetch nothing but robots.txt.
	r := robots.DisallowAll()
	fmt.Println(r.Allowed("heedbot", "https://example.com/"))
	fmt.Println(r.Allowed("heedbot", "https://example.com/robots.txt"))
	// Output:
	// false
	// true
}
