package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// `crawl -` starts crawling as lines arrive on standard input: the first
// page is fetched while the input is still open, before the second line is
// written.
func TestSeedsStreamFromStdin(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	first := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = true
		mu.Unlock()
		if r.URL.Path == "/one" {
			defer close(first)
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<a href="/linked">not followed</a>`)
	}))
	defer srv.Close()
	pr, pw := io.Pipe()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runCrawl(context.Background(), []string{"-delay", "0s", "-progress", "off", "-follow=false", "-"}, pr, &stdout, &stderr)
	}()
	io.WriteString(pw, srv.URL+"/one\nnot a url\n")
	select {
	case <-first:
	case code := <-done:
		t.Fatalf("crawl ended (%d) before the input did; stderr:\n%s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the first seed was not fetched while standard input stayed open")
	}
	io.WriteString(pw, srv.URL+"/two\n")
	pw.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if !seen["/one"] || !seen["/two"] || seen["/linked"] {
		t.Errorf("server saw %v; want /one and /two, not /linked (-follow=false)", seen)
	}
	if !strings.Contains(stderr.String(), `crawl: -: skipped line 2`) {
		t.Errorf("the bad line was not reported:\n%s", stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 2 {
		t.Errorf("%d records, want 2:\n%s", n, stdout.String())
	}
}
