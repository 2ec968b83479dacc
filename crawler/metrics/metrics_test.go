package metrics_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/crawler/metrics"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
	os.Exit(0) // not reached: VerifyTestMain exits
}

// serve starts a loopback server for routes (by path and query; anything
// else is 404) with a robots.txt disallowing /private/. It closes when the
// test ends.
func serve(t *testing.T, routes map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		if h := routes[r.URL.RequestURI()]; h != nil {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// page serves an HTML page linking to hrefs, padded with filler bytes so
// that sizes differ from page to page.
func page(filler int, hrefs ...string) http.HandlerFunc {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><head><title>t</title></head><body>\n")
	for _, h := range hrefs {
		fmt.Fprintf(&b, "<a href=\"%s\">link</a>\n", h)
	}
	fmt.Fprintf(&b, "<p>%s</p></body></html>\n", strings.Repeat("x", filler))
	body := b.String()
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
}

// gzipped serves what h writes compressed with gzip.
func gzipped(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h(rec, r)
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(rec.Body.Bytes())
		zw.Close()
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(b.Bytes())
	}
}

func newCrawler(t *testing.T, opts ...crawler.Option) *crawler.Crawler {
	t.Helper()
	c, err := crawler.New(append([]crawler.Option{crawler.WithDelay(0), crawler.WithSitemaps(false), crawler.WithRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// statsOf returns c's Stats, failing the test on a Store error.
func statsOf(t *testing.T, c *crawler.Crawler) crawler.Stats {
	t.Helper()
	st, err := c.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

func newMetrics(t *testing.T, c *crawler.Crawler, opts ...metrics.Option) *metrics.Metrics {
	t.Helper()
	m, err := metrics.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// scraper fetches /metrics over HTTP, as Prometheus would.
type scraper struct {
	url    string
	client *http.Client
}

func newScraper(t *testing.T, m *metrics.Metrics) *scraper {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := httptest.NewServer(mux)
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return &scraper{url: srv.URL + "/metrics", client: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// scrape returns the parsed exposition. It is safe to call from any
// goroutine; it reports problems with t.Errorf and returns nil then.
func (s *scraper) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := s.client.Get(s.url)
	if err != nil {
		t.Errorf("scrape: %v", err)
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("scrape: status %d", resp.StatusCode)
		return nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("scrape: Content-Type %q, want the text exposition format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Errorf("scrape: parsing: %v", err)
		return nil
	}
	return fams
}

// flatten maps "name{label="value"}" to the sample value of every counter
// and gauge in fams, and "name_count" and "name_sum" of every histogram.
func flatten(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := name
			if len(m.GetLabel()) > 0 {
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				slices.Sort(ls)
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
				out[key+"_sum"] = m.GetHistogram().GetSampleSum()
			default:
				out[key] = math.NaN()
			}
		}
	}
	return out
}

// want is what the exposition must say for s, the mapping written out a
// second time, independently of the package's table.
func want(s crawler.Stats) map[string]float64 {
	w := map[string]float64{
		"heed_crawl_elapsed_seconds":     s.Elapsed.Seconds(),
		"heed_page_bytes_total":          float64(s.Bytes),
		"heed_retries_total":             float64(s.Retries),
		"heed_disallowed_urls_total":     float64(s.Disallowed),
		"heed_nofollow_pages_total":      float64(s.Nofollow),
		"heed_noindex_pages_total":       float64(s.Noindex),
		"heed_sitemaps_total":            float64(s.Sitemaps),
		"heed_sitemap_urls_total":        float64(s.SitemapURLs),
		"heed_crawl_delay_hosts_total":   float64(s.CrawlDelayHosts),
		"heed_crawl_delay_max_seconds":   s.MaxCrawlDelay.Seconds(),
		"heed_queued_urls":               float64(s.Queued),
		"heed_urls_in_flight":            float64(s.InFlight),
		"heed_hosts_with_work":           float64(s.Hosts),
		"heed_hosts_active":              float64(s.HostsActive),
		"heed_hosts_waiting":             float64(s.HostsWaiting),
		"heed_hosts_ready":               float64(s.HostsReady),
		"heed_hosts_resting":             float64(s.HostsResting),
		"heed_revisits_total":            float64(s.Revisits),
		"heed_revisit_changes_total":     float64(s.RevisitChanges),
		"heed_not_modified_total":        float64(s.NotModified),
		"heed_revisit_bytes_saved_total": float64(s.BytesSaved),
		"heed_revisits_dropped_total":    float64(s.RevisitsDropped),
		"heed_sitemap_lastmods_total":    float64(s.SitemapLastmods),
		"heed_rendered_pages_total":      float64(s.Rendered),
		"heed_render_failures_total":     float64(s.RenderFailed),
		"heed_render_seconds":            s.RenderTime.Seconds(),
		"heed_subrequests_total":         float64(s.Subrequests),
		"heed_subrequests_cached_total":  float64(s.SubrequestsCached),
		"heed_subrequests_refused_total": float64(s.SubrequestsRefused),
		"heed_render_skipped_total":      float64(s.RenderSkipped),
		"heed_render_checked_total":      float64(s.RenderChecked),
		"heed_render_missed_total":       float64(s.RenderMissed),
		`heed_pages_total{class="2xx"}`:  0,
		`heed_pages_total{class="3xx"}`:  0,
		`heed_pages_total{class="4xx"}`:  0,
		`heed_pages_total{class="5xx"}`:  0,
	}
	if !s.Started.IsZero() {
		w["heed_crawl_start_time_seconds"] = float64(s.Started.UnixNano()) / 1e9
	}
	for code, n := range s.Statuses {
		class := "other"
		if code >= 100 && code < 600 {
			class = fmt.Sprintf("%dxx", code/100)
		}
		w[fmt.Sprintf("heed_pages_total{class=%q}", class)] += float64(n)
	}
	for kind, n := range s.Errors {
		w[fmt.Sprintf("heed_errors_total{kind=%q}", kind)] = float64(n)
	}
	for outcome, n := range s.RobotsOutcomes {
		w[fmt.Sprintf("heed_robots_fetches_total{outcome=%q}", outcome)] = float64(n)
	}
	for reason, n := range s.SkippedLinks {
		w[fmt.Sprintf("heed_skipped_links_total{reason=%q}", reason)] = float64(n)
	}
	return w
}

// histograms are the series the page histograms add to an exposition.
var histograms = []string{
	"heed_fetch_duration_seconds_count", "heed_fetch_duration_seconds_sum",
	"heed_page_size_bytes_count", "heed_page_size_bytes_sum",
}

// checkMatches fails unless every heed_ series of got but the histograms
// and those named in skip is in w with the same value, and the other way
// round.
func checkMatches(t *testing.T, when string, got, w map[string]float64, skip ...string) {
	t.Helper()
	for k, v := range w {
		if slices.Contains(skip, k) {
			continue
		}
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: %s missing, want %v", when, k, v)
		} else if g != v {
			t.Errorf("%s: %s = %v, want %v (from Stats)", when, k, g, v)
		}
	}
	for k, g := range got {
		if !strings.HasPrefix(k, "heed_") || slices.Contains(histograms, k) || slices.Contains(skip, k) {
			continue
		}
		if _, ok := w[k]; !ok {
			t.Errorf("%s: unexpected series %s = %v", when, k, g)
		}
	}
}

// checkLint fails on any problem `promtool check metrics` would report, and
// on any label that would make a series per host or URL.
func checkLint(t *testing.T, when string, m *metrics.Metrics) {
	t.Helper()
	problems, err := testutil.CollectAndLint(m)
	if err != nil {
		t.Fatalf("%s: lint: %v", when, err)
	}
	for _, p := range problems {
		t.Errorf("%s: lint: %s: %s", when, p.Metric, p.Text)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatalf("%s: pedantic registry: %v", when, err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Errorf("%s: pedantic gather: %v", when, err)
	}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				switch strings.ToLower(l.GetName()) {
				case "host", "hostname", "authority", "domain", "url", "uri", "path", "key":
					t.Errorf("%s: %s has an unbounded label %s=%q", when, f.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// TestMetricsMatchStats crawls a site whose pages cover every status class,
// a redirect, a robots.txt disallow and skips, scrapes /metrics while the
// site holds the last page (so nothing moves) and after Run, and checks
// that the exposition says what Stats says.
func TestMetricsMatchStats(t *testing.T) {
	reached := make(chan struct{})
	release := make(chan struct{})
	// /hold is gzipped, so that its size on the wire is not its size.
	hold := gzipped(page(5000))
	var other *httptest.Server
	site := serve(t, map[string]http.HandlerFunc{
		"/": func(w http.ResponseWriter, r *http.Request) {
			// localhost is another (loopback) host: out of scope, never
			// fetched.
			page(10, "/a", "/a", "/moved", "/missing", "/broken", "/private/x", strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/")(w, r)
		},
		"/a":       page(2000, "/hold", "/"),
		"/moved":   func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/a", http.StatusMovedPermanently) },
		"/missing": http.NotFound,
		"/broken":  func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) },
		"/hold": func(w http.ResponseWriter, r *http.Request) {
			close(reached)
			<-release
			hold(w, r)
		},
	})
	other = serve(t, nil)

	c := newCrawler(t)
	m := newMetrics(t, c)
	sc := newScraper(t, m)
	checkLint(t, "before Run", m)
	before := flatten(sc.scrape(t))
	checkMatches(t, "before Run", before, want(statsOf(t, c)))

	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background(), site.URL+"/") }()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("Run ended before /hold was requested: %v", err)
	case <-time.After(time.Minute): // a guard against a hang, not a wait
		close(release)
		t.Fatal("/hold was never requested")
	}

	// With one request per host, /hold is the only URL in flight while the
	// site holds it, so nothing but Elapsed changes under the scrape.
	s0 := statsOf(t, c)
	during := flatten(sc.scrape(t))
	s1 := statsOf(t, c)
	checkLint(t, "during Run", m)
	close(release)
	checkMatches(t, "during Run", during, want(s1), "heed_crawl_elapsed_seconds")
	if e := during["heed_crawl_elapsed_seconds"]; e < s0.Elapsed.Seconds() || e > s1.Elapsed.Seconds() {
		t.Errorf("during Run: elapsed %v s, want within [%v, %v]", e, s0.Elapsed.Seconds(), s1.Elapsed.Seconds())
	}
	if during[`heed_pages_total{class="2xx"}`] < 2 || during["heed_urls_in_flight"] != 1 || during["heed_hosts_active"] != 1 {
		t.Errorf("during Run: 2xx pages %v (want ≥ 2: / and /a), URLs in flight %v and hosts active %v (want 1: /hold)",
			during[`heed_pages_total{class="2xx"}`], during["heed_urls_in_flight"], during["heed_hosts_active"])
	}

	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	final := statsOf(t, c)
	after := flatten(sc.scrape(t))
	checkMatches(t, "after Run", after, want(final))
	checkLint(t, "after Run", m)

	// The site's shape, so that the comparison above is not between two
	// empty sets.
	for k, v := range map[string]float64{
		`heed_pages_total{class="2xx"}`:             3, // /, /a, /hold
		`heed_pages_total{class="3xx"}`:             1, // /moved
		`heed_pages_total{class="4xx"}`:             1, // /missing
		`heed_pages_total{class="5xx"}`:             1, // /broken
		"heed_disallowed_urls_total":                1, // /private/x
		`heed_robots_fetches_total{outcome="ok"}`:   1,
		`heed_skipped_links_total{reason="scope"}`:  1, // the other host
		"heed_fetch_duration_seconds_count":         6,
		"heed_page_size_bytes_count":                6,
		"heed_queued_urls":                          0,
		"heed_urls_in_flight":                       0,
		"heed_hosts_active":                         0,
		`heed_errors_total{kind="handler-panic"}`:   math.NaN(), // absent
		`heed_skipped_links_total{reason="filter"}`: math.NaN(), // absent
	} {
		got, ok := after[k]
		switch {
		case math.IsNaN(v) && ok:
			t.Errorf("after Run: %s = %v, want no such series", k, got)
		case !math.IsNaN(v) && got != v:
			t.Errorf("after Run: %s = %v, want %v", k, got, v)
		}
	}
	if after[`heed_skipped_links_total{reason="seen"}`] < 1 {
		t.Errorf("after Run: no URL skipped as seen; / links /a twice")
	}
	// Every page is observed once by the histograms.
	if n := float64(final.Pages); after["heed_fetch_duration_seconds_count"] != n || after["heed_page_size_bytes_count"] != n {
		t.Errorf("after Run: histogram counts %v and %v, want Stats.Pages = %v",
			after["heed_fetch_duration_seconds_count"], after["heed_page_size_bytes_count"], n)
	}
	if got := after["heed_page_size_bytes_sum"]; got != float64(final.Bytes) || got < 2000 || got > 4000 {
		t.Errorf("after Run: page sizes sum to %v, want Stats.Bytes = %d (2000 to 4000: /a and a gzipped /hold)", got, final.Bytes)
	}
	if after["heed_fetch_duration_seconds_sum"] <= 0 {
		t.Errorf("after Run: fetch durations sum to %v, want > 0", after["heed_fetch_duration_seconds_sum"])
	}
}

// TestScrapeFromHandlers scrapes while many pages of two hosts are fetched
// and handled at once: every scrape must parse, every counter must only
// grow from one scrape to the next, and a handler must find its own page
// already counted. Run with -race, it also checks that scrapes and the
// histograms' handler share no unguarded state.
func TestScrapeFromHandlers(t *testing.T) {
	const perSite = 30
	routes := map[string]http.HandlerFunc{}
	var links []string
	for i := range perSite {
		links = append(links, fmt.Sprintf("/p%d", i))
	}
	routes["/"] = page(0, links...)
	for i, l := range links {
		routes[l] = page(100 * i)
	}
	a, b := serve(t, routes), serve(t, routes)

	c := newCrawler(t, crawler.WithPerHost(4), crawler.WithWorkers(8))
	m := newMetrics(t, c)
	sc := newScraper(t, m)

	var (
		mu      sync.Mutex
		last    = map[string]float64{}
		handled atomic.Int64
		scrapes atomic.Int64
	)
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		entered := handled.Add(1)
		// Scrapes are serialised, so each one is later than the last and
		// no counter may be lower than it was then; the crawl goes on
		// around them.
		mu.Lock()
		defer mu.Unlock()
		got := flatten(sc.scrape(t))
		scrapes.Add(1)
		var pages float64
		for k, v := range got {
			if strings.HasPrefix(k, "heed_pages_total{") {
				pages += v
			}
		}
		if pages < float64(entered) {
			t.Errorf("handler %d saw %v pages counted", entered, pages)
		}
		for k, prev := range last {
			if v, ok := got[k]; !ok || v < prev {
				t.Errorf("counter %s went from %v to %v (present: %v)", k, prev, v, ok)
			}
		}
		clear(last)
		for k, v := range got {
			if strings.HasSuffix(k, "_total") || strings.Contains(k, "_total{") || strings.HasSuffix(k, "_count") || strings.HasSuffix(k, "_sum") {
				last[k] = v
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Run(ctx, a.URL+"/", b.URL+"/"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := int64(2 * (perSite + 1)); handled.Load() != want || scrapes.Load() != want {
		t.Errorf("%d pages handled, %d scrapes; want %d", handled.Load(), scrapes.Load(), want)
	}
	checkMatches(t, "after Run", flatten(sc.scrape(t)), want(statsOf(t, c)))
	checkLint(t, "after Run", m)
}

// TestCountersStartOverWithEachRun: Stats belong to one Run, the
// histograms to the Metrics.
func TestCountersStartOverWithEachRun(t *testing.T) {
	site := serve(t, map[string]http.HandlerFunc{"/": page(10, "/x"), "/x": page(10)})
	c := newCrawler(t)
	m := newMetrics(t, c)
	sc := newScraper(t, m)
	for run := 1; run <= 2; run++ {
		if err := c.Run(context.Background(), site.URL+"/"); err != nil {
			t.Fatal(err)
		}
		got := flatten(sc.scrape(t))
		checkMatches(t, fmt.Sprintf("run %d", run), got, want(statsOf(t, c)))
		if got[`heed_pages_total{class="2xx"}`] != 2 || got["heed_fetch_duration_seconds_count"] != float64(2*run) {
			t.Errorf("run %d: 2xx pages %v (want 2), durations observed %v (want %d)",
				run, got[`heed_pages_total{class="2xx"}`], got["heed_fetch_duration_seconds_count"], 2*run)
		}
	}
}

func TestNewRejectsBadArguments(t *testing.T) {
	c := newCrawler(t)
	for name, tc := range map[string]struct {
		c    *crawler.Crawler
		opts []metrics.Option
	}{
		"nil crawler":          {nil, nil},
		"no duration bucket":   {c, []metrics.Option{metrics.WithDurationBuckets()}},
		"decreasing durations": {c, []metrics.Option{metrics.WithDurationBuckets(1, 0.5)}},
		"equal sizes":          {c, []metrics.Option{metrics.WithSizeBuckets(1024, 1024)}},
		"NaN size":             {c, []metrics.Option{metrics.WithSizeBuckets(1, math.NaN())}},
	} {
		t.Run(name, func(t *testing.T) {
			m, err := metrics.New(tc.c, tc.opts...)
			if !errors.Is(err, metrics.ErrInvalidOption) || m != nil {
				t.Errorf("New = %v, %v; want nil and an error wrapping ErrInvalidOption", m, err)
			}
		})
	}
}

func TestBuckets(t *testing.T) {
	site := serve(t, map[string]http.HandlerFunc{"/": page(3000)})
	c := newCrawler(t)
	m := newMetrics(t, c, metrics.WithDurationBuckets(60), metrics.WithSizeBuckets(100, 1e6))
	if err := c.Run(context.Background(), site.URL+"/"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	buckets := map[string][]string{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			for _, b := range s.GetHistogram().GetBucket() {
				buckets[f.GetName()] = append(buckets[f.GetName()], fmt.Sprintf("%g:%d", b.GetUpperBound(), b.GetCumulativeCount()))
			}
		}
	}
	// One page of just over 3000 bytes, fetched in under a minute.
	for name, w := range map[string][]string{
		"heed_fetch_duration_seconds": {"60:1"},
		"heed_page_size_bytes":        {"100:0", "1e+06:1"},
	} {
		if !slices.Equal(buckets[name], w) {
			t.Errorf("%s buckets %v, want %v", name, buckets[name], w)
		}
	}
}

func TestRegister(t *testing.T) {
	c := newCrawler(t)

	plain := newMetrics(t, c)
	reg := prometheus.NewRegistry()
	if err := plain.Register(reg); err != nil {
		t.Fatal(err)
	}
	var already prometheus.AlreadyRegisteredError
	if err := plain.Register(reg); !errors.As(err, &already) {
		t.Errorf("second Register = %v, want an AlreadyRegisteredError", err)
	}
	if n, err := testutil.GatherAndCount(reg, "go_goroutines"); err != nil || n != 0 {
		t.Errorf("without WithRuntimeMetrics: %d go_goroutines series (err %v), want 0", n, err)
	}

	// A registry that has the Go collector already, like the default one.
	withRuntime := newMetrics(t, c, metrics.WithRuntimeMetrics())
	reg = prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	if err := withRuntime.Register(reg); err != nil {
		t.Fatalf("Register with the Go collector present: %v", err)
	}
	for _, name := range []string{"go_goroutines", "heed_queued_urls"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 1 {
			t.Errorf("%s: %d series (err %v), want 1", name, n, err)
		}
	}

	// Handler serves the runtime metrics only when asked.
	for _, tc := range []struct {
		m    *metrics.Metrics
		want bool
	}{{plain, false}, {withRuntime, true}} {
		rec := httptest.NewRecorder()
		tc.m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body := rec.Body.String()
		if got := strings.Contains(body, "\ngo_goroutines "); got != tc.want {
			t.Errorf("Handler serves go_goroutines: %v, want %v", got, tc.want)
		}
		if !strings.Contains(body, "\nheed_queued_urls 0\n") {
			t.Errorf("Handler does not serve heed_queued_urls 0:\n%s", body)
		}
	}
}
