package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/crawler/metrics"
)

// Metrics for a crawl, served at /metrics. Here the crawl ends before the
// endpoint is read; a real program serves it during the crawl, e.g. with
// http.ListenAndServe(addr, mux) in a goroutine, and Prometheus scrapes it.
func ExampleNew() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<a href="/about">About</a> <a href="/gone">Gone</a> <a href="/private/x">Admin</a>`)
		case "/about":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<a href="/">Home</a>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()

	c, err := crawler.New(crawler.WithDelay(0), crawler.WithSitemaps(false))
	if err != nil {
		log.Fatal(err)
	}
	// Before Run, so that the histograms see every page.
	m, err := metrics.New(c, metrics.WithRuntimeMetrics())
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())

	if err := c.Run(context.Background(), site.URL+"/"); err != nil {
		log.Fatal(err)
	}

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	lines := bufio.NewScanner(rec.Body)
	for lines.Scan() {
		l := lines.Text()
		for _, name := range []string{"heed_pages_total", "heed_disallowed_urls_total", "heed_fetch_duration_seconds_count"} {
			if strings.HasPrefix(l, name) {
				fmt.Println(l)
			}
		}
	}
	// Output:
	// heed_disallowed_urls_total 1
	// heed_fetch_duration_seconds_count 3
	// heed_pages_total{class="2xx"} 2
	// heed_pages_total{class="3xx"} 0
	// heed_pages_total{class="4xx"} 1
	// heed_pages_total{class="5xx"} 0
}
