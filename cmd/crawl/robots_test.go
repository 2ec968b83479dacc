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

func TestRobotsUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // the whole of stderr
	}{
		{"no arguments", nil, "crawl robots: want a URL or a robots.txt file; see crawl robots -h"},
		{"flags only", []string{"-timeout", "5s"}, "crawl robots: want a URL or a robots.txt file; see crawl robots -h"},
		{"unknown flag", []string{"-no-such-flag", "robots.txt"}, "crawl robots: unknown flag -no-such-flag; see crawl robots -h"},
		{"duration without unit", []string{"-timeout", "5", "robots.txt"}, `crawl robots: invalid value "5" for -timeout: missing unit, e.g. 5s; see crawl robots -h`},
		{"not a duration", []string{"-header-timeout", "soon", "robots.txt"}, `crawl robots: invalid value "soon" for -header-timeout: want a duration such as 500ms, 2s or 1m; see crawl robots -h`},
		{"flag without its value", []string{"-ua"}, "crawl robots: flag needs an argument: -ua; see crawl robots -h"},
		{"neither file nor URL", []string{"no-such-file.txt"}, `crawl robots: "no-such-file.txt" is neither a readable file nor an http(s) URL; see crawl robots -h`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "", append([]string{"robots"}, tc.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr: %s", code, stderr)
			}
			if stderr != tc.want+"\n" {
				t.Errorf("stderr:\n%s\nwant the one line:\n%s", stderr, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

func TestRobotsHelpOnStdout(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		code, stdout, stderr := runCmd(t, "", "robots", arg)
		if code != 0 || stderr != "" {
			t.Errorf("%s: exit %d, stderr %q; want 0 and nothing on stderr", arg, code, stderr)
		}
		for _, want := range []string{"Usage: crawl robots [flags] URL|FILE [agent] [path ...]", "-timeout DURATION", "(default 30s)", "-header-timeout DURATION", "(default 15s)", "-ua STRING"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: help does not mention %q:\n%s", arg, want, stdout)
			}
		}
	}
}
