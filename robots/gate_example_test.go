package robots_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/robots"
)

func ExampleGate() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\nSitemap: https://example.com/sitemap.xml\n")
	}))
	defer site.Close()

	gate, err := robots.NewGate(robots.GateConfig{
		Agent:     "heedbot",
		UserAgent: "heedbot/1.0 (+https://example.com/bot)",
		// In a crawler: Pacer: limiter, Key: limiter.Key (a *ratelimit.HostLimiter).
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, path := range []string{"/index.html", "/private/report.pdf"} {
		u, _ := url.Parse(site.URL + path)
		v, err := gate.Check(ctx, u)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s allowed=%v fetched=%v outcome=%v\n", path, v.Allowed, v.Fetched, v.Entry.Outcome)
	}
	u, _ := url.Parse(site.URL)
	e, _ := gate.Entry(ctx, u)
	fmt.Println("crawl-delay:", e.CrawlDelay, "sitemaps:", e.Sitemaps)

	// Output:
	// /index.html allowed=true fetched=true outcome=ok
	// /private/report.pdf allowed=false fetched=false outcome=ok
	// crawl-delay: 2s sitemaps: [https://example.com/sitemap.xml]
}

// A robots.txt that cannot be fetched disallows everything for now; the
// verdict says when to try again, so the URL can be put aside, not dropped.
// (With a Pacer that reports when the host may be asked again, such as
// *ratelimit.HostLimiter, a Retry-After the site sends postpones the retry.)
func ExampleVerdict_retryAt() {
	var down atomic.Bool
	down.Store(true)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "User-agent: *\nAllow: /\n")
	}))
	defer site.Close()

	clock := fakeclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	gate, _ := robots.NewGate(robots.GateConfig{Agent: "heedbot", Clock: clock})
	u, _ := url.Parse(site.URL + "/page")

	v, _ := gate.Check(context.Background(), u)
	fmt.Printf("allowed=%v outcome=%v retry in %v\n", v.Allowed, v.Entry.Outcome, v.RetryAt.Sub(clock.Now()))

	down.Store(false)
	clock.Set(v.RetryAt)
	v, _ = gate.Check(context.Background(), u)
	fmt.Printf("allowed=%v outcome=%v\n", v.Allowed, v.Entry.Outcome)

	// Output:
	// allowed=false outcome=unreachable retry in 1m0s
	// allowed=true outcome=ok
}

func ExampleAuthority() {
	for _, raw := range []string{"HTTP://Example.COM:80/a?b", "https://xn--bcher-kva.example:8443/", "http://[::1]:80/"} {
		u, _ := url.Parse(raw)
		a, _ := robots.Authority(u)
		fmt.Println(a)
	}
	// Output:
	// http://example.com
	// https://xn--bcher-kva.example:8443
	// http://[::1]
}
