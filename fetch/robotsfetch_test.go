package fetch_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/andybalholm/brotli"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/robots"
	"golang.org/x/text/encoding/unicode"
)

// The robots gate fetches robots.txt through the Fetcher with a cap of
// robots.MaxSize+1, so that the parser can tell a file cut by its limit.

func robotsRequest(u string) fetch.Request {
	return fetch.Request{URL: u, MaxBodySize: robots.MaxSize + 1}
}

func compress(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "br":
		w = brotli.NewWriter(&buf)
	default:
		t.Fatalf("coding %q", coding)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRobotsTxtCompressed(t *testing.T) {
	const small = "User-agent: *\nDisallow: /private\n"
	// Decompressed it is four times the cap; compressed, a few kilobytes.
	large := []byte(strings.Repeat("Disallow: /a-long-path-that-compresses-well\n", 4*robots.MaxSize/44))
	codings := []string{"gzip", "deflate", "br"}
	bodies := map[string][]byte{}
	for _, c := range codings {
		bodies["/small/"+c] = compress(t, c, []byte(small))
		bodies["/large/"+c] = compress(t, c, large)
	}
	var acceptEncoding string
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		acceptEncoding = r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
		w.Write(bodies[r.URL.Path])
	}))
	f := newFetcher(t, nil)
	for _, c := range codings {
		p, err := f.Fetch(context.Background(), robotsRequest(srv.URL+"/small/"+c))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if string(p.Body) != small || p.Truncated {
			t.Errorf("%s: body %q, truncated %v", c, p.Body, p.Truncated)
		}
		if !strings.Contains(acceptEncoding, c) {
			t.Errorf("Accept-Encoding %q does not offer %s", acceptEncoding, c)
		}

		p, err = f.Fetch(context.Background(), robotsRequest(srv.URL+"/large/"+c))
		if err != nil {
			t.Fatalf("large %s: %v", c, err)
		}
		if len(p.Body) != robots.MaxSize+1 || !p.Truncated || !bytes.Equal(p.Body, large[:len(p.Body)]) {
			t.Errorf("large %s: %d bytes, truncated %v; want the first %d decoded bytes, truncated", c, len(p.Body), p.Truncated, robots.MaxSize+1)
		}
		if p.TransferSize >= int64(robots.MaxSize) {
			t.Errorf("large %s: %d bytes read off the wire for a %d-byte compressed body", c, p.TransferSize, len(bodies["/large/"+c]))
		}
	}
}

func TestRobotsTxtUTF16(t *testing.T) {
	const text = "User-agent: *\nDisallow: /été\n"
	le := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder()
	be := unicode.UTF16(unicode.BigEndian, unicode.UseBOM).NewEncoder()
	encode := func(e interface{ Bytes([]byte) ([]byte, error) }, s string) []byte {
		b, err := e.Bytes([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	long := text + strings.Repeat("Disallow: /x\n", robots.MaxSize/13)
	bodies := map[string][]byte{
		"/le":      encode(le, text),
		"/be":      encode(be, text),
		"/le-long": encode(le, long), // more than the cap, which is odd: the cut splits a code unit
	}
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bodies[r.URL.Path])
	}))
	f := newFetcher(t, nil)
	for _, path := range []string{"/le", "/be"} {
		p, err := f.Fetch(context.Background(), robotsRequest(srv.URL+path))
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Body) != text || !strings.HasPrefix(p.Charset, "utf-16") {
			t.Errorf("%s: body %q, charset %q", path, p.Body, p.Charset)
		}
	}
	p, err := f.Fetch(context.Background(), robotsRequest(srv.URL+"/le-long"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || !utf8.Valid(p.Body) || !strings.HasPrefix(string(p.Body), text) || p.Charset != "utf-16le" {
		t.Errorf("long UTF-16LE: truncated %v, valid UTF-8 %v, charset %q, starts %q", p.Truncated, utf8.Valid(p.Body), p.Charset, p.Body[:min(len(p.Body), 40)])
	}
	// Decoded, the text is half the bytes (ASCII) it was cut at.
	if n := len(p.Body); n < robots.MaxSize/2-4 || n > robots.MaxSize/2+4 {
		t.Errorf("long UTF-16LE: %d bytes decoded from a cut of %d", n, robots.MaxSize+1)
	}
}
