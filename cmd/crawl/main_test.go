package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(seeds, []byte("https://example.invalid/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no seeds file", nil, "exactly one seeds file"},
		{"missing file", []string{filepath.Join(dir, "nope.txt")}, "no such file"},
		{"directory", []string{dir}, "is a directory"},
		{"bad flag", []string{"-no-such-flag", seeds}, "flag provided but not defined"},
		{"bad scope", []string{"-scope", "planet", seeds}, "-scope"},
		{"bad key", []string{"-key", "mac", seeds}, "-key"},
		{"negative delay", []string{"-delay", "-1s", seeds}, "delay"},
		{"zero workers", []string{"-workers", "0", seeds}, "workers"},
		{"bad size", []string{"-max-body", "lots", seeds}, "positive size"},
		{"bad agent", []string{"-agent", "my bot/1.0", seeds}, "product token"},
		{"max below min", []string{"-delay", "2s", "-max-delay", "1s", seeds}, "below the minimum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, "", tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr: %s", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not mention %q", stderr, tc.want)
			}
		})
	}
}

func TestSeedsWithOnlyBadLines(t *testing.T) {
	code, _, stderr := runCmd(t, "# nothing\nftp://x/\nnot a url\n", "-")
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{"line 2", "line 3", "no seed URLs"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not mention %q", stderr, want)
		}
	}
}

func TestHelpIsGrouped(t *testing.T) {
	code, _, stderr := runCmd(t, "", "-h")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"Politeness:", "Scope and limits:", "-delay", "-max-delay", "-workers", "-per-host", "-max-pages", "-max-depth", "-scope", "-sitemaps", "-agent", "-ua", "-o "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("help does not mention %q", want)
		}
	}
}

func TestRobotsCommandOnFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "robots.txt")
	body := "User-agent: *\nDisallow: /private/\nAllow: /private/ok\n\nUser-agent: FooBot\nDisallow: /\nCrawl-delay: 2.5\n\nSitemap: https://example.com/sitemap.xml\n"
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCmd(t, "", "robots", f, "heed", "/private/x", "/private/ok", "/public")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"DISALLOWED /private/x", "allowed    /private/ok", "allowed    /public", "line 1 (*)", "https://example.com/sitemap.xml", "crawl-delay: none"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not contain %q:\n%s", want, out)
		}
	}
	code, out, _ = runCmd(t, "", "robots", f, "FooBot/2.0", "/anything")
	if code != 0 || !strings.Contains(out, "DISALLOWED /anything") || !strings.Contains(out, "crawl-delay: 2.5s") || !strings.Contains(out, "line 5 (FooBot)") {
		t.Errorf("FooBot view wrong (exit %d):\n%s", code, out)
	}
}

func TestCrawlLoopbackWeb(t *testing.T) {
	web, err := testweb.ListenLoopback(testweb.Config{Hosts: 5, PagesPerHost: 12, Seed: 3}, 0, nil)
	if err != nil {
		t.Skipf("cannot listen on loopback addresses: %v", err)
	}
	defer web.Close()
	truth, err := web.Web.Truth(testweb.TruthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds.txt")
	outFile := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(seeds, []byte("# test web\n"+strings.Join(web.Web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "", "-delay", "5ms", "-scope", "any", "-o", outFile, seeds)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "pages") {
		t.Errorf("no summary on stderr: %q", stderr)
	}
	rep := truth.Analyze(web.Log.Entries(), testweb.AnalyzeOptions{MinDelay: 5 * time.Millisecond})
	if err := rep.Check(); err != nil {
		t.Errorf("%v\n%s", err, rep)
	}
	f, err := os.Open(outFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		if rec.URL == "" || rec.FetchedAt.IsZero() {
			t.Errorf("line %d lacks url or fetched_at: %s", n+1, sc.Text())
		}
		n++
	}
	if n < rep.PageRequests {
		t.Errorf("%d output lines for %d page requests", n, rep.PageRequests)
	}
}
