package warc_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/warc"
)

// Archiving every fetch: the Writer is the Fetcher's Recorder, so each
// request it makes, redirects and robots.txt included, lands in the WARC
// file as a request and a response record.
func ExampleNewWriter() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			io.WriteString(w, "User-agent: *\nAllow: /\n")
		case "/old":
			http.Redirect(w, r, "/", http.StatusMovedPermanently)
		default:
			io.WriteString(w, "<title>home</title>")
		}
	}))
	defer srv.Close()

	dir, err := os.MkdirTemp("", "warc-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	w, err := warc.NewWriter(dir, warc.Options{
		Info: []warc.Field{{"robots", "classic"}, {"isPartOf", "example-crawl"}},
	})
	if err != nil {
		panic(err)
	}
	f := &fetch.Fetcher{Recorder: w}
	defer f.CloseIdleConnections()
	for _, path := range []string{"/robots.txt", "/old", "/"} {
		if _, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL + path}); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	// List the records: a .warc.gz is an ordinary gzip stream.
	file, err := os.Open(w.Files()[0])
	if err != nil {
		panic(err)
	}
	defer file.Close()
	zr, err := gzip.NewReader(file)
	if err != nil {
		panic(err)
	}
	sc := bufio.NewScanner(zr)
	typ := ""
	for sc.Scan() {
		line := sc.Text()
		if t, ok := strings.CutPrefix(line, "WARC-Type: "); ok {
			typ = t
			if typ == "warcinfo" {
				fmt.Println(typ)
			}
		}
		if u, ok := strings.CutPrefix(line, "WARC-Target-URI: "); ok {
			fmt.Println(typ, strings.TrimPrefix(u, srv.URL))
		}
	}
	// Output:
	// warcinfo
	// request /robots.txt
	// response /robots.txt
	// request /old
	// response /old
	// request /
	// response /
}
