package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// -warc archives every exchange of the crawl — robots.txt and pages — and
// the warcinfo record names the crawl's settings as the command shows them,
// and the User-Agent the server saw.
func TestWARCFlag(t *testing.T) {
	bin := buildCrawl(t)
	var mu sync.Mutex
	agents := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents[r.UserAgent()] = true
		mu.Unlock()
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
	code, stderr := runBin(t, bin, "-delay", "0s", "-sitemaps=false", "-progress", "off", "-warc", dir, "-o", filepath.Join(t.TempDir(), "out"), srv.URL+"/")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(agents) != 1 {
		t.Fatalf("the server saw the User-Agents %v, want one", agents)
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
	if !strings.HasPrefix(text, "WARC/1.1\r\nWARC-Type: warcinfo\r\n") {
		t.Fatalf("the file does not open with a warcinfo record:\n%.400s", text)
	}
	info, _, _ := strings.Cut(text, "\r\n\r\n\r\n") // the record's end
	info += "\r\n"
	for ua := range agents {
		for _, want := range []string{"scope: seeds\r\n", "max-depth: none\r\n", "max-pages: none\r\n", "http-header-user-agent: " + ua + "\r\n"} {
			if !strings.Contains(info, want) {
				t.Errorf("the warcinfo record lacks %q:\n%s", want, info)
			}
		}
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
