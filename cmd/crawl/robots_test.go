package main

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

const robotsCmdRules = "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n"

// robotsCmd runs "crawl robots" against srv and checks that the rules
// were read.
func robotsCmd(t *testing.T, srv *httptest.Server, flags ...string) string {
	t.Helper()
	args := append([]string{"robots"}, flags...)
	args = append(args, srv.URL+"/", "heed", "/private/x", "/public")
	code, out, stderr := runCmd(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	return out
}

func wantRulesRead(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{"outcome:    ok (status 200)", "DISALLOWED /private/x", "allowed    /public", "crawl-delay: 2s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not contain %q:\n%s", want, out)
		}
	}
}

func TestRobotsCommandGzip(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(robotsCmdRules))
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Compressed whatever the request asked for.
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(b.Bytes())
	}))
	defer srv.Close()
	wantRulesRead(t, robotsCmd(t, srv))
}

func TestRobotsCommandUTF16(t *testing.T) {
	body := []byte{0xfe, 0xff} // UTF-16BE with a byte order mark
	for _, u := range utf16.Encode([]rune(robotsCmdRules)) {
		body = append(body, byte(u>>8), byte(u))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	}))
	defer srv.Close()
	wantRulesRead(t, robotsCmd(t, srv))
}

func TestRobotsCommandRedirect(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/robots.txt", http.RedirectHandler("/robots-real.txt", http.StatusMovedPermanently))
	mux.HandleFunc("/robots-real.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(robotsCmdRules))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	wantRulesRead(t, robotsCmd(t, srv))
}

func TestRobotsCommandHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // headers never come
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	out := robotsCmd(t, srv, "-header-timeout", "100ms", "-timeout", "1m")
	if !strings.Contains(out, "unreachable") || !strings.Contains(out, "DISALLOWED /public") {
		t.Errorf("output:\n%s", out)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("took %v: -header-timeout did not cut the wait", d)
	}
}
