package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds.txt")
	if err := os.WriteFile(seeds, []byte("https://example.invalid/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // the whole of stderr
	}{
		{"no seeds", nil, "crawl: want a URL or a seeds file to start from (- for standard input); see crawl -h"},
		{"URL without scheme", []string{"example.com"}, "crawl: seeds: open example.com: no such file or directory (a URL needs its scheme: https://example.com/)"},
		{"host and path without scheme", []string{"docs.python.org/3/library/"}, "crawl: seeds: open docs.python.org/3/library/: no such file or directory (a URL needs its scheme: https://docs.python.org/3/library/)"},
		{"missing seeds file named like one", []string{"seeds.txt"}, "crawl: seeds: open seeds.txt: no such file or directory"},
		{"subcommand out of place", []string{"-delay", "0s", "status"}, "crawl: seeds: open status: no such file or directory (crawl status must come first: see crawl status -h)"},
		{"URL not crawlable", []string{"ftp://example.com/x", seeds}, "crawl: ftp://example.com/x: scheme ftp is not crawlable (want http or https)"},
		{"URL without host", []string{"http://"}, "crawl: http://: no host"},
		{"standard input twice", []string{"-", seeds, "-"}, "crawl: - (standard input) given twice"},
		{"missing file among several", []string{seeds, filepath.Join(dir, "nope.txt")}, "crawl: seeds: open " + filepath.Join(dir, "nope.txt") + ": no such file or directory"},
		{"bad flag after the seeds", []string{seeds, "-delay", "5"}, `crawl: invalid value "5" for -delay: missing unit, e.g. 5s; see crawl -h`},
		{"missing file", []string{filepath.Join(dir, "nope.txt")}, "crawl: seeds: open " + filepath.Join(dir, "nope.txt") + ": no such file or directory"},
		{"directory", []string{dir}, "crawl: seeds: " + dir + " is a directory"},
		{"unknown flag", []string{"-no-such-flag", seeds}, "crawl: unknown flag -no-such-flag; see crawl -h"},
		{"duration without unit", []string{"-delay", "5", seeds}, `crawl: invalid value "5" for -delay: missing unit, e.g. 5s; see crawl -h`},
		{"not a duration", []string{"-timeout", "soon", seeds}, `crawl: invalid value "soon" for -timeout: want a duration such as 500ms, 2s or 1m; see crawl -h`},
		{"not a number", []string{"-workers", "many", seeds}, `crawl: invalid value "many" for -workers: want a whole number; see crawl -h`},
		{"huge number", []string{"-max-pages", "99999999999999999999", seeds}, `crawl: invalid value "99999999999999999999" for -max-pages: out of range; see crawl -h`},
		{"not a boolean", []string{"-sitemaps=maybe", seeds}, `crawl: invalid boolean value "maybe" for -sitemaps: want true or false; see crawl -h`},
		{"missing value", []string{seeds, "-delay"}, "crawl: flag needs an argument: -delay; see crawl -h"},
		{"flag without its value", []string{"-delay"}, "crawl: flag needs an argument: -delay; see crawl -h"},
		{"bad scope", []string{"-scope", "planet", seeds}, `crawl: invalid value "planet" for -scope: want seeds, domain or any; see crawl -h`},
		{"bad key", []string{"-key", "mac", seeds}, `crawl: invalid value "mac" for -key: want host, domain or ip; see crawl -h`},
		{"bad progress", []string{"-progress", "loud", seeds}, `crawl: invalid value "loud" for -progress: want auto, on or off; see crawl -h`},
		{"negative delay", []string{"-delay", "-1s", seeds}, "crawl: invalid -delay: must not be negative, got -1s; see crawl -h"},
		{"zero workers", []string{"-workers", "0", seeds}, "crawl: invalid -workers: must be at least 1, got 0; see crawl -h"},
		{"zero timeout", []string{"-timeout", "0s", seeds}, "crawl: invalid -timeout: must be positive, got 0s; see crawl -h"},
		{"zero limit", []string{"-max-pages", "0", seeds}, `crawl: invalid value "0" for -max-pages: want a positive whole number, or none for no limit; see crawl -h`},
		{"negative limit", []string{"-max-path-segments", "-1", seeds}, `crawl: invalid value "-1" for -max-path-segments: want a positive whole number, or none for no limit; see crawl -h`},
		{"bad size", []string{"-max-body", "lots", seeds}, `crawl: invalid value "lots" for -max-body: want a positive size such as 1048576, 512KiB or 10MiB; see crawl -h`},
		{"bad agent", []string{"-agent", "my bot/1.0", seeds}, `crawl: invalid -agent: "my bot/1.0": only letters, '_' and '-' may appear in a product token; see crawl -h`},
		{"max below min", []string{"-delay", "2s", "-max-delay", "1s", seeds}, "crawl: invalid -max-delay: 1s is below the minimum delay 2s; see crawl -h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "", tc.args...)
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

func TestHelpOnStdout(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		code, stdout, stderr := runCmd(t, "", arg)
		if code != 0 || stderr != "" {
			t.Errorf("%s: exit %d, stderr %q; want 0 and nothing on stderr", arg, code, stderr)
		}
		for _, want := range []string{"Usage:", "Politeness:", "Scope and limits:", "-delay DURATION", "-max-delay DURATION", "-workers N", "-per-host N", "-max-pages N", "-max-depth N", "-scope seeds|domain|any", "-sitemaps=true|false", "-agent NAME", "-ua STRING", "-o FILE", "-max-body SIZE", "(default 10MiB)"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: help does not mention %q", arg, want)
			}
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
	web, truth := loopbackWeb(t, testweb.Config{Hosts: 5, PagesPerHost: 12, Seed: 3})
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
