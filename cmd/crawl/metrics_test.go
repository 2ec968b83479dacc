package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestMetricsDuringCrawl scrapes -metrics while a page is in flight: the
// site answers /slow only once the test has read the metrics.
func TestMetricsDuringCrawl(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":     page(`<title>Home</title><a href="/slow">slow</a>`),
		"/slow": blockingPage(entered, release, `<title>Slow</title>`),
	})
	stderr := newWatchWriter("/metrics\n")
	var stdout bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(context.Background(), []string{"-delay", "0s", "-sitemaps=false", "-progress", "off", "-metrics", "127.0.0.1:0", "-"}, strings.NewReader(s.URL+"/\n"), &stdout, stderr)
	}()
	released := false
	defer func() {
		if !released {
			close(release)
			<-done
		}
	}()
	waitOrFail(t, stderr.seen, "the metrics address on stderr")
	m := regexp.MustCompile(`(?m)^crawl: metrics on (http://127\.0\.0\.1:[0-9]+/metrics)$`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stderr does not say where the metrics are:\n%s", stderr)
	}
	endpoint := m[1]
	waitOrFail(t, entered, "the fetch of /slow")

	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", endpoint, resp.Status, body)
	}
	text := string(body)
	// / has been fetched and its link taken; /slow is in flight.
	for _, want := range []string{
		"\nheed_pages_total{class=\"2xx\"} 1\n",
		"\nheed_queued_urls 0\n",
		"\nheed_fetch_duration_seconds_count ",
		"\ngo_goroutines ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", strings.TrimSpace(want), text)
		}
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "heed_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}

	close(release)
	released = true
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if recs := readRecords(t, stdout.Bytes()); recs[s.URL+"/slow"].Title != "Slow" {
		t.Errorf("records %v, want /slow's after the scrape", recs)
	}
	// The endpoint lives as long as the crawl.
	if resp, err := client.Get(endpoint); err == nil {
		resp.Body.Close()
		t.Errorf("GET %s after the crawl: %s, want no server", endpoint, resp.Status)
	}
}

// TestMetricsAddressInUse gives -metrics an address something else
// listens on: one line, exit 2, before anything is fetched or created.
func TestMetricsAddressInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	s := newSite(t, map[string]http.HandlerFunc{"/": page(`<title>Home</title>`)})
	dir := t.TempDir()
	out, logFile := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "log.jsonl")
	code, stdout, stderr := runCmd(t, s.URL+"/\n", "-metrics", busy.Addr().String(), "-o", out, "-log", logFile, "-")
	// The system's words for it vary ("bind: address already in use").
	want := "crawl: -metrics: listen tcp " + busy.Addr().String() + ": "
	if code != 2 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want 2 and one line starting %q", code, stderr, want)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	if n := s.requested("/robots.txt") + s.requested("/"); n != 0 {
		t.Errorf("%d requests to the site", n)
	}
	for _, f := range []string{out, logFile} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was created", f)
		}
	}
}
