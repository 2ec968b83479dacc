package runner

import (
	"context"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// crawlVirtual runs one crawler in-process on a small virtual web and
// judges it from the server's log.
func crawlVirtual(t *testing.T, crawl func(context.Context, Options) (Result, error)) (*testweb.Truth, *testweb.Report, Result) {
	t.Helper()
	v, err := testweb.NewVirtual(testweb.Config{Hosts: 6, PagesPerHost: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The web's robots.txt that never answers costs each crawl a header
	// timeout.
	res, err := crawl(ctx, Options{Seeds: v.Web.Seeds(), Agent: "heedbench", UserAgent: "heedbench/1.0", Transport: v.Transport(), HeaderTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	truth, err := v.Truth()
	if err != nil {
		t.Fatal(err)
	}
	return truth, truth.Analyze(v.Log.Entries(), testweb.AnalyzeOptions{}), res
}

// hungRobots returns the requests for the never-answering robots.txt in
// the log: each must have ended with the header timeout, not held the crawl.
func hungRobots(t *testing.T, v *testweb.Virtual) []testweb.Entry {
	t.Helper()
	h, ok := v.Web.HostOfKind(testweb.HostRobotsHang)
	if !ok {
		t.Fatal("the web has no host whose robots.txt hangs")
	}
	var out []testweb.Entry
	for _, e := range v.Log.Entries() {
		if e.Host == h.Authority && e.Target == "/robots.txt" {
			out = append(out, e)
		}
	}
	return out
}

// TestHeaderTimeout: a crawler given a HeaderTimeout gives up on a
// robots.txt that never answers after it, and the crawl ends.
func TestHeaderTimeout(t *testing.T) {
	for name, crawl := range map[string]func(context.Context, Options) (Result, error){"colly": Colly, "gocrawl": Gocrawl} {
		t.Run(name, func(t *testing.T) {
			v, err := testweb.NewVirtual(testweb.Config{Hosts: 4, PagesPerHost: 3, Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			h, _ := v.Web.HostOfKind(testweb.HostRobotsHang)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			const timeout = 300 * time.Millisecond
			if _, err := crawl(ctx, Options{Seeds: []string{"http://" + h.Authority + "/"}, Agent: "a", UserAgent: "a",
				Transport: v.Transport(), HeaderTimeout: timeout}); err != nil {
				t.Fatal(err)
			}
			// The server logs a request when it sees the client gone;
			// Close waits for that.
			v.Close()
			hung := hungRobots(t, v)
			if len(hung) == 0 {
				t.Fatal("robots.txt of the hanging host never requested")
			}
			for _, e := range hung {
				if d := e.End.Sub(e.Start); d > timeout+2*time.Second {
					t.Errorf("robots.txt held %v, header timeout %v", d.Round(time.Millisecond), timeout)
				}
			}
		})
	}
}

// The analysis must see what is known about colly v2.3.0: it fetches every
// fragment spelling of a URL, ignores the 503 robots.txt (temoto's
// FindGroup drops its disallow-all), reads no sitemaps and follows nofollow.
func TestCollyFaultsAreDetected(t *testing.T) {
	truth, r, res := crawlVirtual(t, Colly)
	if res.Visited == 0 || r.ReachableFetched == 0 {
		t.Fatalf("colly fetched nothing: %+v\n%s", res, r)
	}
	for what, n := range map[string]int{
		"duplicate fetches":       len(r.Duplicates),
		"fetches on the 503 host": len(r.UnavailableHostFetches),
		"nofollow-only fetches":   len(r.NofollowOnlyFetched),
	} {
		if n == 0 {
			t.Errorf("no %s detected:\n%s", what, r)
		}
	}
	if r.SitemapOnlyFetched != 0 || len(truth.SitemapOnly) == 0 {
		t.Errorf("sitemap-only pages fetched %d of %d; colly reads no sitemaps", r.SitemapOnlyFetched, len(truth.SitemapOnly))
	}
	if r.Check() == nil {
		t.Errorf("Check() passed colly's crawl:\n%s", r)
	}
}

// gocrawl v1.1.0 matches robots rules against the path only, so
// "Disallow: /*?sort=" never applies; and it fetches the 503 host.
func TestGocrawlFaultsAreDetected(t *testing.T) {
	_, r, res := crawlVirtual(t, Gocrawl)
	if res.Visited == 0 || r.ReachableFetched == 0 {
		t.Fatalf("gocrawl fetched nothing: %+v\n%s", res, r)
	}
	if len(r.RobotsViolations) == 0 || len(r.UnavailableHostFetches) == 0 {
		t.Errorf("robots violations %d, 503-host fetches %d; want both > 0:\n%s", len(r.RobotsViolations), len(r.UnavailableHostFetches), r)
	}
	if r.SitemapOnlyFetched != 0 {
		t.Errorf("gocrawl fetched %d sitemap-only pages; it reads no sitemaps", r.SitemapOnlyFetched)
	}
}

func TestCancel(t *testing.T) {
	v, err := testweb.NewVirtual(testweb.Config{Hosts: 4, PagesPerHost: 50, Latency: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for name, crawl := range map[string]func(context.Context, Options) (Result, error){"colly": Colly, "gocrawl": Gocrawl} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := crawl(ctx, Options{Seeds: v.Web.Seeds(), Agent: "a", UserAgent: "a", Transport: v.Transport()})
		if err == nil {
			t.Errorf("%s: cancelled crawl returned nil error", name)
		}
	}
}
