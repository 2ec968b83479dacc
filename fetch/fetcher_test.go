package fetch_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/heedcrawl/heed/fetch"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newServer starts an httptest server that is closed when the test ends.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newFetcher returns a Fetcher whose idle connections are closed when the
// test ends, so goroutine leak checks stay meaningful.
func newFetcher(t *testing.T, f *fetch.Fetcher) *fetch.Fetcher {
	t.Helper()
	if f == nil {
		f = &fetch.Fetcher{}
	}
	t.Cleanup(f.CloseIdleConnections)
	return f
}

func mustFetch(t *testing.T, f *fetch.Fetcher, u string) *fetch.Page {
	t.Helper()
	p, err := f.Fetch(context.Background(), fetch.Request{URL: u})
	if err != nil {
		t.Fatalf("Fetch(%s): %v", u, err)
	}
	return p
}

func TestFetchHeaders(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	var methods []string
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		methods = append(methods, r.Method)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<p>hi</p>")
	}))

	f := newFetcher(t, nil)
	p, err := f.Fetch(context.Background(), fetch.Request{
		URL: srv.URL + "/x", Depth: 3, Referrer: "http://ref.example/",
		Header: http.Header{"X-Extra": {"1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	custom := newFetcher(t, &fetch.Fetcher{UserAgent: "mybot/2.0 (+https://example.org/bot)", SendReferer: true})
	if _, err := custom.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/y", Referrer: "http://ref.example/"}); err != nil {
		t.Fatal(err)
	}

	if ua := got[0].Get("User-Agent"); ua != fetch.DefaultUserAgent {
		t.Errorf("default User-Agent = %q, want %q", ua, fetch.DefaultUserAgent)
	}
	if !strings.HasPrefix(fetch.DefaultUserAgent, "heed/") || !strings.Contains(fetch.DefaultUserAgent, "+https://") {
		t.Errorf("DefaultUserAgent %q lacks product token or contact URL", fetch.DefaultUserAgent)
	}
	if ae := got[0].Get("Accept-Encoding"); ae != "gzip, deflate, br" {
		t.Errorf("Accept-Encoding = %q", ae)
	}
	if got[0].Get("X-Extra") != "1" {
		t.Errorf("request header not sent: %v", got[0])
	}
	if got[0].Get("Referer") != "" {
		t.Errorf("Referer sent without SendReferer: %q", got[0].Get("Referer"))
	}
	if ua := got[1].Get("User-Agent"); ua != "mybot/2.0 (+https://example.org/bot)" {
		t.Errorf("custom User-Agent = %q", ua)
	}
	if got[1].Get("Referer") != "http://ref.example/" {
		t.Errorf("Referer = %q with SendReferer", got[1].Get("Referer"))
	}
	for _, m := range methods {
		if m != http.MethodGet {
			t.Errorf("method %s used; only GET expected", m)
		}
	}

	if p.Status != 200 || p.ContentType != "text/html" || string(p.Body) != "<p>hi</p>" {
		t.Errorf("page = %d %q %q", p.Status, p.ContentType, p.Body)
	}
	if p.URL.String() != srv.URL+"/x" || p.Depth != 3 || p.Referrer != "http://ref.example/" {
		t.Errorf("page identity = %s depth %d referrer %q", p.URL, p.Depth, p.Referrer)
	}
	if p.Charset != "utf-8" || p.Truncated || p.Filtered || p.Redirect != nil {
		t.Errorf("page flags: charset %q truncated %v filtered %v redirect %v", p.Charset, p.Truncated, p.Filtered, p.Redirect)
	}
	if p.Timings.Start.IsZero() || p.Timings.Headers <= 0 || p.Timings.Total < p.Timings.Headers {
		t.Errorf("timings = %+v", p.Timings)
	}
	if p.TransferSize != int64(len("<p>hi</p>")) {
		t.Errorf("TransferSize = %d", p.TransferSize)
	}
	if p.Proto != "HTTP/1.1" {
		t.Errorf("Proto = %q", p.Proto)
	}
}

func TestFetchInvalidURL(t *testing.T) {
	f := newFetcher(t, nil)
	for _, u := range []string{"ftp://example.com/x", "/relative", "http://", "::nope", "mailto:a@b"} {
		if _, err := f.Fetch(context.Background(), fetch.Request{URL: u}); !errors.Is(err, fetch.ErrInvalidURL) {
			t.Errorf("Fetch(%q) error = %v, want ErrInvalidURL", u, err)
		}
	}
}

// redirectServer answers /r/<n> with a redirect described by routes and
// counts every path it serves.
type hitCounter struct {
	mu   sync.Mutex
	hits map[string]int
}

func (h *hitCounter) add(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hits == nil {
		h.hits = make(map[string]int)
	}
	h.hits[path]++
}

func (h *hitCounter) get(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[path]
}

func redirectServer(t *testing.T, routes map[string]string, hits *hitCounter) *httptest.Server {
	return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.add(r.URL.Path)
		if to, ok := routes[r.URL.Path]; ok {
			w.Header().Set("Location", to)
			w.WriteHeader(http.StatusFound)
			io.WriteString(w, "moved")
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title>", r.URL.Path)
	}))
}

func TestRedirectNotFollowed(t *testing.T) {
	hits := &hitCounter{}
	srv := redirectServer(t, map[string]string{"/a": "/b?x=1#frag", "/abs": "https://other.example/z"}, hits)
	f := newFetcher(t, nil)

	p, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/a", Depth: 2, Referrer: "http://r/"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != http.StatusFound || p.Redirect == nil || p.Redirect.String() != srv.URL+"/b?x=1" {
		t.Fatalf("page = %d redirect %v, want 302 to %s/b?x=1", p.Status, p.Redirect, srv.URL)
	}
	if len(p.Body) != 0 {
		t.Errorf("redirect body delivered: %q", p.Body)
	}
	if hits.get("/b") != 0 {
		t.Errorf("redirect target fetched %d times inside the client", hits.get("/b"))
	}

	p = mustFetch(t, f, srv.URL+"/abs")
	if p.Redirect.String() != "https://other.example/z" {
		t.Errorf("absolute Location = %v", p.Redirect)
	}

	next, err := (&fetch.Page{URL: p.URL, Redirect: p.Redirect, Depth: 2, Referrer: "http://r/"}).RedirectRequest(0)
	if err != nil {
		t.Fatal(err)
	}
	if next.URL != "https://other.example/z" || next.Depth != 2 || next.Referrer != "http://r/" ||
		len(next.RedirectChain) != 1 || next.RedirectChain[0] != srv.URL+"/abs" {
		t.Errorf("RedirectRequest = %+v", next)
	}
}

func TestRedirectWithoutLocationIsAPage(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.Header().Set("Location", "javascript:alert(1)")
		}
		w.WriteHeader(http.StatusMovedPermanently)
		io.WriteString(w, "no place to go")
	}))
	f := newFetcher(t, nil)
	for _, path := range []string{"/none", "/bad"} {
		p := mustFetch(t, f, srv.URL+path)
		if p.Redirect != nil || string(p.Body) != "no place to go" {
			t.Errorf("%s: redirect %v body %q; want an ordinary page", path, p.Redirect, p.Body)
		}
	}
}

func TestRedirectRequestBounds(t *testing.T) {
	u := func(s string) *fetch.Page {
		p := &fetch.Page{}
		var err error
		if p.URL, err = p.URL.Parse(s); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := u("http://a.example/1")
	if _, err := p.RedirectRequest(0); !errors.Is(err, fetch.ErrNotRedirect) {
		t.Errorf("non-redirect: err = %v", err)
	}

	// Self-redirect, and a loop through case and default-port variants.
	p = u("http://a.example/1")
	p.Redirect = u("HTTP://A.EXAMPLE:80/1#x").URL
	if _, err := p.RedirectRequest(0); !errors.Is(err, fetch.ErrRedirectLoop) {
		t.Errorf("self redirect: err = %v", err)
	}
	p = u("http://a.example/2")
	p.RedirectChain = []string{"http://a.example/1"}
	p.Redirect = u("http://a.example/1").URL
	if _, err := p.RedirectRequest(0); !errors.Is(err, fetch.ErrRedirectLoop) {
		t.Errorf("loop: err = %v", err)
	}
	// Different query is a different resource.
	p.Redirect = u("http://a.example/1?page=2").URL
	if _, err := p.RedirectRequest(0); err != nil {
		t.Errorf("not a loop: err = %v", err)
	}

	p = u("http://a.example/3")
	p.RedirectChain = []string{"http://a.example/1", "http://a.example/2"}
	p.Redirect = u("http://a.example/4").URL
	if _, err := p.RedirectRequest(3); err != nil {
		t.Errorf("third hop with max 3: %v", err)
	}
	p.RedirectChain = append(p.RedirectChain, "http://a.example/0")
	if _, err := p.RedirectRequest(3); !errors.Is(err, fetch.ErrTooManyRedirects) {
		t.Errorf("fourth hop with max 3: err = %v", err)
	}
}

// errDisallowed stands in for the robots gate's refusal.
var errDisallowed = errors.New("disallowed by robots.txt")

func TestFollowRoutesEveryHopThroughCheck(t *testing.T) {
	hits := &hitCounter{}
	srv := redirectServer(t, map[string]string{
		"/start":  "/public",
		"/public": "/private/secret",
		"/loop1":  "/loop2",
		"/loop2":  "/loop1",
		"/r0":     "/r1", "/r1": "/r2", "/r2": "/r3", "/r3": "/r4", "/r4": "/r5",
	}, hits)
	f := newFetcher(t, &fetch.Fetcher{MaxRedirects: 3})
	var checked []string
	gate := func(ctx context.Context, next fetch.Request) error {
		checked = append(checked, next.URL)
		if strings.Contains(next.URL, "/private/") {
			return errDisallowed
		}
		return nil
	}

	p, err := f.Follow(context.Background(), fetch.Request{URL: srv.URL + "/start"}, gate)
	if !errors.Is(err, errDisallowed) {
		t.Fatalf("Follow into disallowed path: err = %v", err)
	}
	if hits.get("/private/secret") != 0 {
		t.Errorf("disallowed redirect target was fetched")
	}
	if p == nil || p.URL.Path != "/public" || p.Redirect.Path != "/private/secret" {
		t.Errorf("last page = %+v", p)
	}
	if want := []string{srv.URL + "/public", srv.URL + "/private/secret"}; strings.Join(checked, " ") != strings.Join(want, " ") {
		t.Errorf("checked %v, want %v", checked, want)
	}

	if _, err := f.Follow(context.Background(), fetch.Request{URL: srv.URL + "/loop1"}, nil); !errors.Is(err, fetch.ErrRedirectLoop) {
		t.Errorf("loop: err = %v", err)
	}
	if hits.get("/loop1") != 1 || hits.get("/loop2") != 1 {
		t.Errorf("loop fetched /loop1 %d and /loop2 %d times, want once each", hits.get("/loop1"), hits.get("/loop2"))
	}

	if _, err := f.Follow(context.Background(), fetch.Request{URL: srv.URL + "/r0"}, nil); !errors.Is(err, fetch.ErrTooManyRedirects) {
		t.Errorf("long chain: err = %v", err)
	}
	if hits.get("/r3") != 1 || hits.get("/r4") != 0 {
		t.Errorf("with MaxRedirects 3: /r3 hit %d, /r4 hit %d; want 1 and 0", hits.get("/r3"), hits.get("/r4"))
	}

	p, err = f.Follow(context.Background(), fetch.Request{URL: srv.URL + "/r2"}, gate)
	if err != nil || p.URL.Path != "/r5" || len(p.RedirectChain) != 3 {
		t.Errorf("three hops: page %v chain %v err %v", p.URL, p.RedirectChain, err)
	}
}

func TestBodyLimit(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		switch r.URL.Path {
		case "/exact":
			w.Write(bytes.Repeat([]byte("a"), 1000))
		case "/over":
			w.Write(bytes.Repeat([]byte("b"), 5000))
		case "/huge":
			// Streams until the client goes away.
			chunk := bytes.Repeat([]byte("c"), 32<<10)
			for i := 0; i < 2048; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}))
	f := newFetcher(t, &fetch.Fetcher{MaxBodySize: 1000})

	p := mustFetch(t, f, srv.URL+"/exact")
	if p.Truncated || len(p.Body) != 1000 {
		t.Errorf("exact: truncated %v len %d", p.Truncated, len(p.Body))
	}
	p = mustFetch(t, f, srv.URL+"/over")
	if !p.Truncated || len(p.Body) != 1000 || p.TransferSize > 1001 {
		t.Errorf("over: truncated %v len %d transfer %d", p.Truncated, len(p.Body), p.TransferSize)
	}

	def := newFetcher(t, nil)
	p = mustFetch(t, def, srv.URL+"/huge")
	if !p.Truncated || len(p.Body) != fetch.DefaultMaxBodySize {
		t.Errorf("huge: truncated %v len %d, want %d", p.Truncated, len(p.Body), fetch.DefaultMaxBodySize)
	}
	if p.TransferSize > fetch.DefaultMaxBodySize+1 {
		t.Errorf("huge: %d bytes read off the wire, limit %d", p.TransferSize, fetch.DefaultMaxBodySize)
	}

	// A per-request limit overrides the Fetcher's.
	p, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/over", MaxBodySize: 4000})
	if err != nil || !p.Truncated || len(p.Body) != 4000 {
		t.Errorf("request limit: len %d truncated %v err %v", len(p.Body), p.Truncated, err)
	}
}

// bombs are compressed bodies of zeros far larger than any body limit.
type bomb struct {
	coding string
	data   []byte
	size   int64 // uncompressed
}

func makeBombs(t *testing.T) []bomb {
	t.Helper()
	mib := make([]byte, 1<<20)
	var out []bomb

	// 1 GiB of zeros as gzip: one compressed MiB repeated as 1024 gzip
	// members, which a gzip reader decodes as one 1 GiB stream.
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(mib)
	zw.Close()
	out = append(out, bomb{"gzip", bytes.Repeat(member.Bytes(), 1024), 1 << 30})

	const n = 16 // MiB, for the codings without multi-member streams
	var zl, raw, br bytes.Buffer
	zlw, _ := zlib.NewWriterLevel(&zl, zlib.BestSpeed)
	fw, _ := flate.NewWriter(&raw, flate.BestSpeed)
	bw := brotli.NewWriterLevel(&br, 1)
	for range n {
		zlw.Write(mib)
		fw.Write(mib)
		bw.Write(mib)
	}
	zlw.Close()
	fw.Close()
	bw.Close()
	out = append(out,
		bomb{"deflate", zl.Bytes(), n << 20},
		bomb{"deflate-raw", raw.Bytes(), n << 20},
		bomb{"br", br.Bytes(), n << 20})
	return out
}

func TestCompressionBombIsCapped(t *testing.T) {
	for _, b := range makeBombs(t) {
		t.Run(b.coding, func(t *testing.T) {
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Content-Encoding", strings.TrimSuffix(b.coding, "-raw"))
				w.Write(b.data)
			}))
			f := newFetcher(t, &fetch.Fetcher{MaxBodySize: 1 << 20})
			p := mustFetch(t, f, srv.URL)
			if !p.Truncated || len(p.Body) != 1<<20 {
				t.Fatalf("truncated %v, %d bytes; want the 1 MiB limit", p.Truncated, len(p.Body))
			}
			if !bytes.Equal(p.Body, make([]byte, 1<<20)) {
				t.Errorf("decoded body is not the zeros that were sent")
			}
			// Reading 1 MiB of output needs about 1/1000 of it from the
			// wire; allow generous buffering, far below the bomb.
			if p.TransferSize > 256<<10 {
				t.Errorf("read %d compressed bytes of %d for a %d-byte bomb", p.TransferSize, len(b.data), b.size)
			}
		})
	}
}

func TestDecompression(t *testing.T) {
	const text = "<p>compressed hello</p>"
	var gz, zl, br bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	zlw := zlib.NewWriter(&zl)
	zlw.Write([]byte(text))
	zlw.Close()
	bw := brotli.NewWriter(&br)
	bw.Write([]byte(text))
	bw.Close()
	bodies := map[string][]byte{"gzip": gz.Bytes(), "deflate": zl.Bytes(), "br": br.Bytes(), "x-gzip": gz.Bytes()}
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		coding := strings.TrimPrefix(r.URL.Path, "/")
		w.Header().Set("Content-Type", "text/html")
		switch coding {
		case "compress":
			w.Header().Set("Content-Encoding", "compress")
			w.Write([]byte("whatever"))
		case "corrupt":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gz.Bytes()[:10])
			w.Write(bytes.Repeat([]byte{0xff}, 100))
		case "empty":
			w.Header().Set("Content-Encoding", "gzip")
		default:
			w.Header().Set("Content-Encoding", coding)
			w.Write(bodies[coding])
		}
	}))
	f := newFetcher(t, nil)
	for coding := range bodies {
		p := mustFetch(t, f, srv.URL+"/"+coding)
		if string(p.Body) != text {
			t.Errorf("%s: body %q", coding, p.Body)
		}
	}
	if p := mustFetch(t, f, srv.URL+"/empty"); len(p.Body) != 0 {
		t.Errorf("empty gzip body: %q", p.Body)
	}
	for _, bad := range []string{"compress", "corrupt"} {
		if _, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/" + bad}); !errors.Is(err, fetch.ErrContentEncoding) {
			t.Errorf("%s: err = %v, want ErrContentEncoding", bad, err)
		}
	}
}

func TestAcceptFilterSkipsBody(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/doc.pdf":
			w.Header().Set("Content-Type", "application/pdf")
			w.Write(bytes.Repeat([]byte("%PDF"), 1<<20))
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<a href=/x>x</a>")
		case "/moved":
			http.Redirect(w, r, "/doc.pdf", http.StatusMovedPermanently)
		}
	}))
	f := newFetcher(t, &fetch.Fetcher{Accept: fetch.AcceptMediaTypes("text/html", "application/xhtml+xml")})
	p := mustFetch(t, f, srv.URL+"/doc.pdf")
	if !p.Filtered || p.Body != nil || p.TransferSize != 0 {
		t.Errorf("pdf: filtered %v, %d body bytes, %d read off the wire", p.Filtered, len(p.Body), p.TransferSize)
	}
	if p.Status != 200 || p.ContentType != "application/pdf" {
		t.Errorf("filtered page lost its headers: %d %q", p.Status, p.ContentType)
	}
	if p := mustFetch(t, f, srv.URL+"/page"); p.Filtered || string(p.Body) != "<a href=/x>x</a>" {
		t.Errorf("html: filtered %v body %q", p.Filtered, p.Body)
	}
	// Redirects are never filtered: their target may be wanted.
	if p := mustFetch(t, f, srv.URL+"/moved"); p.Filtered || p.Redirect == nil {
		t.Errorf("redirect: filtered %v redirect %v", p.Filtered, p.Redirect)
	}

	for _, c := range []struct {
		pattern, mt string
		want        bool
	}{
		{"text/*", "text/plain", true},
		{"TEXT/HTML", "text/html", true},
		{"*/*", "image/png", true},
		{"text/*", "application/json", false},
		{"text/html", "text/htmlx", false},
	} {
		if got := fetch.AcceptMediaTypes(c.pattern)(&fetch.Page{ContentType: c.mt}); got != c.want {
			t.Errorf("AcceptMediaTypes(%q)(%q) = %v", c.pattern, c.mt, got)
		}
	}
}

func TestContentTypeSniffedWhenAbsent(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // stop net/http from sniffing for us
		io.WriteString(w, "<!DOCTYPE html><html><body><a href='/next'>next</a></body></html>")
	}))
	f := newFetcher(t, nil)
	p := mustFetch(t, f, srv.URL)
	if p.Header.Get("Content-Type") != "" {
		t.Fatalf("server sent Content-Type %q; test is void", p.Header.Get("Content-Type"))
	}
	if p.ContentType != "text/html" || !p.IsHTML() {
		t.Errorf("sniffed %q", p.ContentType)
	}
	if !strings.Contains(string(p.Body), "<a href='/next'>") {
		t.Errorf("body damaged by sniffing: %q", p.Body)
	}
}

func TestHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release) }) // runs before srv.Close

	f := newFetcher(t, &fetch.Fetcher{HeaderTimeout: 50 * time.Millisecond, Timeout: time.Minute})
	if _, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/slow-headers"}); !errors.Is(err, fetch.ErrHeaderTimeout) {
		t.Errorf("slow headers: err = %v, want ErrHeaderTimeout", err)
	}
	f = newFetcher(t, &fetch.Fetcher{HeaderTimeout: time.Minute, Timeout: 100 * time.Millisecond})
	if _, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/slow-body"}); !errors.Is(err, fetch.ErrTimeout) {
		t.Errorf("slow body: err = %v, want ErrTimeout", err)
	}
	// The caller's own cancellation is reported as such.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Fetch(ctx, fetch.Request{URL: srv.URL + "/slow-headers"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestCookieJar(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "abc", Path: "/"})
			return
		}
		c, err := r.Cookie("session")
		if err != nil {
			io.WriteString(w, "none")
			return
		}
		io.WriteString(w, c.Value)
	}))
	jar, _ := cookiejar.New(nil)
	withJar := newFetcher(t, &fetch.Fetcher{Jar: jar})
	mustFetch(t, withJar, srv.URL+"/set")
	if p := mustFetch(t, withJar, srv.URL+"/get"); string(p.Body) != "abc" {
		t.Errorf("with jar: cookie %q", p.Body)
	}
	without := newFetcher(t, nil)
	mustFetch(t, without, srv.URL+"/set")
	if p := mustFetch(t, without, srv.URL+"/get"); string(p.Body) != "none" {
		t.Errorf("without jar: cookie %q", p.Body)
	}
}

func TestHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	f := &fetch.Fetcher{}
	tr := f.CrawlTransport()
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	f.Transport = tr
	newFetcher(t, f)
	p := mustFetch(t, f, srv.URL)
	if p.Proto != "HTTP/2.0" || string(p.Body) != "HTTP/2.0" {
		t.Errorf("proto %q, server saw %q; want HTTP/2.0", p.Proto, p.Body)
	}
}

func TestCrawlTransportConfig(t *testing.T) {
	tr := (&fetch.Fetcher{MaxIdleConnsPerHost: 7, MaxConnsPerHost: 3, ConnectTimeout: 2 * time.Second}).CrawlTransport()
	if tr.MaxIdleConnsPerHost != 7 || tr.MaxConnsPerHost != 3 || tr.TLSHandshakeTimeout != 2*time.Second {
		t.Errorf("transport = idle %d max %d tls %v", tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost, tr.TLSHandshakeTimeout)
	}
	if !tr.ForceAttemptHTTP2 || !tr.DisableCompression || tr.Proxy == nil {
		t.Errorf("transport: h2 %v, own decompression %v, proxy %v", tr.ForceAttemptHTTP2, tr.DisableCompression, tr.Proxy != nil)
	}
	def := (&fetch.Fetcher{}).CrawlTransport()
	if def.MaxIdleConnsPerHost != fetch.DefaultMaxIdleConnsPerHost || def.TLSHandshakeTimeout != fetch.DefaultConnectTimeout {
		t.Errorf("default transport = idle %d tls %v", def.MaxIdleConnsPerHost, def.TLSHandshakeTimeout)
	}
}

func TestMaxConnsPerHost(t *testing.T) {
	var conns atomic.Int32
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	f := newFetcher(t, &fetch.Fetcher{MaxConnsPerHost: 1})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL}); err != nil {
				t.Error(err)
			}
		})
	}
	<-arrived
	close(release)
	wg.Wait()
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections opened with MaxConnsPerHost 1", n)
	}
}

func TestUserClientStillReturnsRedirects(t *testing.T) {
	hits := &hitCounter{}
	srv := redirectServer(t, map[string]string{"/a": "/b"}, hits)
	client := &http.Client{Timeout: time.Minute}
	f := newFetcher(t, &fetch.Fetcher{Client: client})
	p := mustFetch(t, f, srv.URL+"/a")
	if p.Redirect == nil || hits.get("/b") != 0 {
		t.Errorf("user client followed the redirect: redirect %v, /b hit %d", p.Redirect, hits.get("/b"))
	}
	if client.CheckRedirect != nil {
		t.Errorf("user's client was modified")
	}
	client.CloseIdleConnections()
}

// TestProxyFromEnvironment runs a child test process with HTTP_PROXY set,
// because net/http reads the proxy variables once per process.
func TestProxyFromEnvironment(t *testing.T) {
	if os.Getenv("HEED_PROXY_CHILD") == "1" {
		f := &fetch.Fetcher{}
		defer f.CloseIdleConnections()
		p, err := f.Fetch(context.Background(), fetch.Request{URL: "http://through-proxy.invalid/page"})
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Body) != "proxied http://through-proxy.invalid/page" {
			t.Fatalf("body %q", p.Body)
		}
		return
	}
	proxy := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "proxied "+r.URL.String())
	}))
	cmd := exec.Command(os.Args[0], "-test.run=^TestProxyFromEnvironment$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HEED_PROXY_CHILD=1", "HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child with HTTP_PROXY failed: %v\n%s", err, out)
	}
}
