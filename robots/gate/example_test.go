package gate_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/robots/gate"
)

func ExampleGate() {
	g, err := gate.New(gate.Config{
		Agent: "heedbot",
		// Get makes the requests; a crawler passes its page fetcher, which
		// decompresses and decodes the body (see crawler.RobotsEntry).
		Get: func(ctx context.Context, rawURL string) (*gate.Response, error) {
			fmt.Println("GET", rawURL)
			body := "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\nSitemap: https://example.com/sitemap.xml\n"
			return &gate.Response{Status: http.StatusOK, Body: []byte(body)}, nil
		},
		// In a crawler: Pacer, and Key, the crawl's politeness key function.
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, path := range []string{"/index.html", "/private/report.pdf"} {
		u, _ := url.Parse("https://example.com" + path)
		v, err := g.Check(ctx, u)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s allowed=%v fetched=%v outcome=%v\n", path, v.Allowed, v.Fetched, v.Entry.Outcome)
	}
	u, _ := url.Parse("https://example.com/")
	e, _ := g.Entry(ctx, u)
	fmt.Println("crawl-delay:", e.CrawlDelay, "sitemaps:", e.Sitemaps)

	// Output:
	// GET https://example.com/robots.txt
	// /index.html allowed=true fetched=true outcome=ok
	// /private/report.pdf allowed=false fetched=false outcome=ok
	// crawl-delay: 2s sitemaps: [https://example.com/sitemap.xml]
}

// A robots.txt that cannot be fetched disallows everything for now; the
// verdict says when to try again, so the URL can be put aside, not dropped.
// (With a Pacer that reports when the host may be asked again, a
// Retry-After the site sends postpones the retry.)
func ExampleVerdict_retryAt() {
	var down atomic.Bool
	down.Store(true)
	get := func(ctx context.Context, rawURL string) (*gate.Response, error) {
		if down.Load() {
			return &gate.Response{Status: http.StatusServiceUnavailable}, nil
		}
		return &gate.Response{Status: http.StatusOK, Body: []byte("User-agent: *\nAllow: /\n")}, nil
	}

	clock := fakeclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	g, _ := gate.New(gate.Config{Agent: "heedbot", Get: get, Clock: clock})
	u, _ := url.Parse("https://example.com/page")

	v, _ := g.Check(context.Background(), u)
	fmt.Printf("allowed=%v outcome=%v retry in %v\n", v.Allowed, v.Entry.Outcome, v.RetryAt.Sub(clock.Now()))

	down.Store(false)
	clock.Set(v.RetryAt)
	v, _ = g.Check(context.Background(), u)
	fmt.Printf("allowed=%v outcome=%v\n", v.Allowed, v.Entry.Outcome)

	// Output:
	// allowed=false outcome=unreachable retry in 1m0s
	// allowed=true outcome=ok
}

func ExampleAuthority() {
	for _, raw := range []string{"HTTP://Example.COM:80/a?b", "https://BÜCHER.example.:8443/", "http://[0:0::1]:80/"} {
		u, _ := url.Parse(raw)
		a, _ := gate.Authority(u)
		fmt.Println(a)
	}
	// Output:
	// http://example.com
	// https://xn--bcher-kva.example:8443
	// http://[::1]
}
