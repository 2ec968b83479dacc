package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler/live"
)

// crawl -ui serves the live page, its JSON and /metrics while a page is in
// flight, on loopback, with the token printed on stderr; its stop control
// refuses a request without the token and, with it, ends the crawl as
// SIGTERM would (exit 143).
func TestUIDuringCrawl(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":     page(`<title>Home</title><a href="/slow">slow</a>`),
		"/slow": blockingPage(entered, release, `<title>Slow</title>`),
	})
	stderr := newWatchWriter("#token=")
	var stdout bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(context.Background(), []string{"-delay", "0s", "-sitemaps=false", "-progress", "off", "-ui", ":0", "-"}, strings.NewReader(s.URL+"/\n"), &stdout, stderr)
	}()
	released := false
	defer func() {
		if !released {
			close(release)
			<-done
		}
	}()
	waitOrFail(t, stderr.seen, "the live page's address on stderr")
	m := regexp.MustCompile(`(?m)^crawl: live page on (http://127\.0\.0\.1:[0-9]+)/#token=([0-9a-f]{32})$`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stderr does not say where the page is, on loopback, with a token:\n%s", stderr)
	}
	base, token := m[1], m[2]
	waitOrFail(t, entered, "the fetch of /slow")

	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) string {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return string(b)
	}
	if !strings.Contains(get("/"), "<title>heed") {
		t.Error("GET / is not the live page")
	}
	if !strings.Contains(get("/metrics"), "heed_pages_total") {
		t.Error("GET /metrics has no heed_pages_total")
	}
	var st live.Status
	if err := json.Unmarshal([]byte(get("/api/status")), &st); err != nil || st.State != "running" || st.Pages != 1 || st.InFlight != 1 {
		t.Errorf("status during the crawl: %+v, %v", st, err)
	}
	stop := func(tok string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/stop", nil)
		if tok != "" {
			req.Header.Set(live.TokenHeader, tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := stop(""); code != http.StatusForbidden {
		t.Fatalf("stop without token: %d", code)
	}
	if code := stop(token); code != http.StatusNoContent {
		t.Fatalf("stop with token: %d", code)
	}
	close(release)
	released = true
	if code := <-done; code != 143 {
		t.Errorf("exit %d after the page's stop, want 143 as for SIGTERM; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "stop asked on the live page") {
		t.Errorf("stderr does not say the page stopped the crawl:\n%s", stderr)
	}
}
