package gate_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/heedcrawl/heed/robots/gate"
)

// A crawler's loop over the URLs its scheduler hands out: each is checked
// under the turn the scheduler gave it for the URL's host (here a Pacer
// that only says what it is asked), and the verdict says what to do.
func Example() {
	sites := map[string]*gate.Response{
		"https://shop.example/robots.txt": {Status: 200, Body: []byte("User-agent: *\nDisallow: /cart\nCrawl-delay: 2\n")},
		"https://old.example/robots.txt":  {Status: 301, Header: http.Header{"Location": {"https://shop.example/robots.txt"}}},
		"https://down.example/robots.txt": {Status: 503},
	}
	g, err := gate.New(gate.Config{
		Agent: "heedbot",
		Get: func(ctx context.Context, rawURL string) (*gate.Response, error) {
			if r := sites[rawURL]; r != nil {
				return r, nil
			}
			return &gate.Response{Status: 404}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	for _, raw := range []string{
		"https://shop.example/teapot",
		"https://shop.example/cart",
		"https://old.example/cart",
		"https://down.example/",
		"https://blog.example/post",
	} {
		u, _ := url.Parse(raw)
		v, err := g.CheckWith(context.Background(), u, turn{})
		switch {
		case err != nil:
			fmt.Println(raw, "error:", err)
		case v.Allowed:
			fmt.Printf("%s: fetch (robots.txt %v, Crawl-delay %v)\n", raw, v.Entry.Outcome, v.Entry.CrawlDelay)
		case !v.RetryAt.IsZero():
			fmt.Printf("%s: put aside until robots.txt is asked again (%v)\n", raw, v.Entry.Outcome)
		default:
			fmt.Printf("%s: disallowed\n", raw)
		}
	}
	// Output:
	// turn for shop.example: 200
	// https://shop.example/teapot: fetch (robots.txt ok, Crawl-delay 2s)
	// https://shop.example/cart: disallowed
	// turn for old.example: 301
	// turn for shop.example: 200
	// https://old.example/cart: disallowed
	// turn for down.example: 503
	// https://down.example/: put aside until robots.txt is asked again (unreachable)
	// turn for blog.example: 404
	// https://blog.example/post: fetch (robots.txt unavailable, Crawl-delay 0s)
}

// turn is a Pacer that grants every request at once and says so; a
// crawler's waits until the host may be asked and reports the answer to
// its politeness state.
type turn struct{}

func (turn) Acquire(ctx context.Context, key string) (gate.Release, error) {
	return func(status int, header http.Header, rtt time.Duration, err error) time.Time {
		fmt.Printf("turn for %s: %d\n", key, status)
		return time.Time{} // no opinion on when the host may be asked again
	}, nil
}

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

	clock := &handClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	g, _ := gate.New(gate.Config{Agent: "heedbot", Get: get, Clock: clock})
	u, _ := url.Parse("https://example.com/page")

	v, _ := g.Check(context.Background(), u)
	fmt.Printf("allowed=%v outcome=%v retry in %v\n", v.Allowed, v.Entry.Outcome, v.RetryAt.Sub(clock.Now()))

	down.Store(false)
	clock.now = v.RetryAt
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

// handClock is a Clock a test moves by hand.
type handClock struct{ now time.Time }

func (c *handClock) Now() time.Time { return c.now }

// After is never called by the gate, which only reads the time.
func (c *handClock) After(time.Duration) <-chan time.Time { return nil }
