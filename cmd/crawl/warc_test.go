package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -warc archives every exchange of the crawl — robots.txt and pages — and
// the warcinfo record names the crawl's settings.
func TestWARCFlag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
		case "/":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<a href="/a">a</a><a href="/private/x">x</a>`)
		case "/a":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<title>a</title>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "warc")
	code, _, stderr := runCmd(t, srv.URL+"/\n", "-delay", "0s", "-sitemaps=false", "-progress", "off", "-warc", dir, "-")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "heed-*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("WARC files %v, want one", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	text := string(all)
	if !strings.HasPrefix(text, "WARC/1.1\r\nWARC-Type: warcinfo\r\n") || !strings.Contains(text, "scope: seeds") {
		t.Errorf("the file does not open with a warcinfo record naming the scope:\n%.400s", text)
	}
	for _, path := range []string{"/robots.txt", "/", "/a"} {
		if !strings.Contains(text, "WARC-Target-URI: "+srv.URL+path+"\r\n") {
			t.Errorf("no record for %s", path)
		}
	}
	if strings.Contains(text, srv.URL+"/private/x") {
		t.Error("a record for a URL robots.txt disallows")
	}
}
