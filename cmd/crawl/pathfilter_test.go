package main

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestIncludeExclude runs the built command on a documentation site kept to
// /library/, without its PDFs: the links elsewhere are neither fetched nor
// recorded, and the summary counts them as filtered; the seed itself is
// crawled, though outside /library/.
func TestIncludeExclude(t *testing.T) {
	bin := buildCrawl(t)
	links := `<a href="/library/a">a</a><a href="/library/b?x=1">b</a><a href="/library/c.pdf">pdf</a><a href="/whatsnew/1">new</a><a href="/other">other</a>`
	s := newSite(t, map[string]http.HandlerFunc{
		"/":              page(`<title>Home</title>` + links),
		"/library/a":     page(`<title>A</title>` + links),
		"/library/b":     page(`<title>B</title>`),
		"/library/c.pdf": page(`pdf`),
		"/whatsnew/1":    page(`<title>New</title>`),
		"/other":         page(`<title>Other</title>`),
	})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code, stderr := runBin(t, bin, s.URL+"/", "-include", "/library/", "-exclude", `^/.*\.pdf$`, "-include", "^/nothing-else/",
		"-delay", "0s", "-sitemaps=false", "-progress", "off", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	checkOnce(t, out, s.URL+"/", s.URL+"/library/a", s.URL+"/library/b?x=1")
	for _, target := range []string{"/library/c.pdf", "/whatsnew/1", "/other"} {
		if n := s.requested(target); n != 0 {
			t.Errorf("%s requested %d times; -include and -exclude keep it out", target, n)
		}
	}
	// Two pages link to each of the three: six links filtered.
	if !strings.Contains(stderr, "filter 6") {
		t.Errorf("the summary does not count the six filtered links:\n%s", stderr)
	}
}

func TestPathFilter(t *testing.T) {
	var include, exclude pathPatterns
	for _, s := range []string{"/docs/", `^/(en|fr)/guide/`} {
		if err := include.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := exclude.Set(`^/docs/.*\?print=1$`); err != nil {
		t.Fatal(err)
	}
	f := pathFilter(include, exclude)
	for target, want := range map[string]bool{
		"/docs/a":           true,
		"/docs/a?print=1":   false,
		"/docs":             false, // not under /docs/
		"/fr/guide/x":       true,
		"/de/guide/x":       false,
		"/x/docs/":          false, // a prefix is of the whole path
		"/docs/caf%C3%A9?q": true,
	} {
		u, err := url.Parse("http://h.example" + target)
		if err != nil {
			t.Fatal(err)
		}
		if got := f(u, nil, 1); got != want {
			t.Errorf("%s: followed %v, want %v", target, got, want)
		}
	}
	if pathFilter(nil, nil) != nil {
		t.Error("no patterns, yet a filter")
	}
	if got := include.String(); got != `/docs/, ^/(en|fr)/guide/` {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"docs/", "", "^(", "*.pdf"} {
		var p pathPatterns
		if err := p.Set(bad); err == nil {
			t.Errorf("Set(%q) took it", bad)
		}
	}
}

// TestIncludeBoundToState: -include and -exclude decide what is crawled,
// so a -state crawl resumed with others is refused, naming the difference.
func TestIncludeBoundToState(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": page(`<title>Home</title>`)})
	state := filepath.Join(t.TempDir(), "state")
	args := []string{"-state", state, "-delay", "0s", "-sitemaps=false", "-progress", "off", s.URL + "/"}
	if code, _, stderr := runCmd(t, "", append(args, "-include", "/a/")...); code != 0 {
		t.Fatalf("first run: exit %d; stderr:\n%s", code, stderr)
	}
	code, _, stderr := runCmd(t, "", append(args, "-include", "/b/")...)
	if code != 2 || !strings.Contains(stderr, "-include /a/ (now /b/)") {
		t.Errorf("rerun with another -include: exit %d, stderr:\n%s\nwant 2 and the difference named", code, stderr)
	}
}
