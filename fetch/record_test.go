package fetch_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/internal/rawserver"
)

// exchanges is a Recorder that keeps what it is given.
type exchanges struct {
	mu  sync.Mutex
	xs  []*fetch.Exchange
	err error
}

func (r *exchanges) Record(_ context.Context, x *fetch.Exchange) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.xs = append(r.xs, x)
	return r.err
}

func (r *exchanges) all() []*fetch.Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*fetch.Exchange(nil), r.xs...)
}

func recordingFetcher(t *testing.T, rec fetch.Recorder) *fetch.Fetcher {
	t.Helper()
	return newFetcher(t, &fetch.Fetcher{Recorder: rec})
}

func TestRecordExactBytes(t *testing.T) {
	const gz = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\xf2\x48\xcd\xc9\xc9\x07\x04\x00\x00\xff\xff\x82\x89\xd1\xf7\x05\x00\x00\x00" // "Hello"
	responses := map[string]string{
		"/plain":   "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
		"/chunked": "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\nX-Trailer: t\r\n\r\n",
		"/gzip":    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nContent-Length: " + fmt.Sprint(len(gz)) + "\r\n\r\n" + gz,
		"/moved":   "HTTP/1.1 301 Moved Permanently\r\nLocation: /plain\r\nContent-Length: 5\r\n\r\nmoved",
		"/missing": "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\ngone",
		"/early":   "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/close":   "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nuntil the end",
	}
	srv := rawserver.New(t, rawserver.Canned(responses))
	rec := &exchanges{}
	f := recordingFetcher(t, rec)
	paths := []string{"/plain", "/chunked", "/gzip", "/moved", "/missing", "/early", "/close"}
	for _, p := range paths {
		page := mustFetch(t, f, srv.URL+p)
		if p == "/gzip" && string(page.Body) != "Hello" {
			t.Errorf("%s: body %q, want it decoded as without a recorder", p, page.Body)
		}
	}
	xs := rec.all()
	if len(xs) != len(paths) {
		t.Fatalf("%d exchanges recorded, want %d", len(xs), len(paths))
	}
	for i, x := range xs {
		p := paths[i]
		if x.URL != srv.URL+p {
			t.Errorf("exchange %d: URL %q, want %q", i, x.URL, srv.URL+p)
		}
		if got, want := string(x.Response), responses[p]; got != want {
			t.Errorf("%s: response\n%q\nwant\n%q", p, got, want)
		}
		if !strings.HasPrefix(string(x.Request), "GET "+p+" HTTP/1.1\r\n") || !strings.HasSuffix(string(x.Request), "\r\n\r\n") ||
			!strings.Contains(string(x.Request), "\r\nUser-Agent: "+fetch.DefaultUserAgent+"\r\n") {
			t.Errorf("%s: request %q", p, x.Request)
		}
		if x.Truncated != "" {
			t.Errorf("%s: Truncated %q for a whole response", p, x.Truncated)
		}
		if x.RemoteAddr != netip.MustParseAddr("127.0.0.1") {
			t.Errorf("%s: RemoteAddr %v", p, x.RemoteAddr)
		}
		if x.Start.IsZero() || time.Since(x.Start) > time.Minute {
			t.Errorf("%s: Start %v", p, x.Start)
		}
	}
}

// Responses on one kept-alive connection are each recorded with their
// own bytes only.
func TestRecordKeepAlive(t *testing.T) {
	srv := rawserver.New(t, func(path string, w *bufio.Writer) bool {
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(path), path)
		return true
	})
	rec := &exchanges{}
	f := recordingFetcher(t, rec)
	for i := range 5 {
		mustFetch(t, f, fmt.Sprintf("%s/page%d", srv.URL, i))
	}
	if n := srv.Connections(); n != 1 {
		t.Errorf("%d connections, want 1 kept alive", n)
	}
	for i, x := range rec.all() {
		path := fmt.Sprintf("/page%d", i)
		if want := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(path), path); string(x.Response) != want {
			t.Errorf("exchange %d: response %q, want %q", i, x.Response, want)
		}
		if !bytes.HasPrefix(x.Request, []byte("GET "+path+" ")) || bytes.Count(x.Request, []byte("GET ")) != 1 {
			t.Errorf("exchange %d: request %q", i, x.Request)
		}
	}
}

func TestRecordTruncated(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	srv := rawserver.New(t, rawserver.Canned(map[string]string{
		"/big": "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + fmt.Sprint(len(big)) + "\r\n\r\n" + big,
	}))
	rec := &exchanges{}
	f := recordingFetcher(t, rec)
	f.MaxBodySize = 1000
	p := mustFetch(t, f, srv.URL+"/big")
	if !p.Truncated {
		t.Fatal("page not truncated")
	}
	xs := rec.all()
	if len(xs) != 1 {
		t.Fatalf("%d exchanges", len(xs))
	}
	x := xs[0]
	if x.Truncated != fetch.TruncatedLength {
		t.Errorf("Truncated %q, want %q", x.Truncated, fetch.TruncatedLength)
	}
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1048576\r\n\r\n"
	if !strings.HasPrefix(string(x.Response), head) || len(x.Response) < len(head)+1000 || len(x.Response) >= len(head)+len(big) ||
		strings.Trim(string(x.Response[len(head):]), "x") != "" {
		t.Errorf("response of %d bytes is not a prefix of what was sent beyond the limit", len(x.Response))
	}
}

func TestRecordTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := rawserver.New(t, func(path string, w *bufio.Writer) bool {
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nstart")
		w.Flush()
		<-release
		return false
	})
	defer close(release)
	rec := &exchanges{}
	f := recordingFetcher(t, rec)
	f.Timeout = 200 * time.Millisecond
	_, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/"})
	if !errors.Is(err, fetch.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	xs := rec.all()
	if len(xs) != 1 {
		t.Fatalf("%d exchanges", len(xs))
	}
	if xs[0].Truncated != fetch.TruncatedTime || !strings.HasSuffix(string(xs[0].Response), "\r\n\r\nstart") {
		t.Errorf("Truncated %q, response %q", xs[0].Truncated, xs[0].Response)
	}
}

// Over TLS the plaintext is recorded, HTTP/2 is not spoken, and the
// remote address is the TCP peer's.
func TestRecordTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "8")
		fmt.Fprint(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	rec := &exchanges{}
	f := &fetch.Fetcher{Recorder: rec}
	tr := f.CrawlTransport()
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	f.Transport = tr
	newFetcher(t, f)
	p := mustFetch(t, f, srv.URL+"/tls")
	if p.Proto != "HTTP/1.1" || string(p.Body) != "HTTP/1.1" {
		t.Errorf("proto %q, server saw %q; want HTTP/1.1 when recording", p.Proto, p.Body)
	}
	xs := rec.all()
	if len(xs) != 1 {
		t.Fatalf("%d exchanges", len(xs))
	}
	x := xs[0]
	if !bytes.HasPrefix(x.Request, []byte("GET /tls HTTP/1.1\r\nHost: ")) {
		t.Errorf("request %q is not the plaintext", x.Request)
	}
	if !bytes.HasPrefix(x.Response, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.HasSuffix(x.Response, []byte("\r\n\r\nHTTP/1.1")) {
		t.Errorf("response %q is not the plaintext", x.Response)
	}
	if x.RemoteAddr != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("RemoteAddr %v", x.RemoteAddr)
	}
}

// The address policy's dialer stays in force under the capture.
func TestRecordKeepsAddressPolicy(t *testing.T) {
	srv := rawserver.New(t, rawserver.Canned(map[string]string{"/": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}))
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	res := fakeResolver{"site.test": addrs("127.0.0.1")}

	rec := &exchanges{}
	refused := newFetcher(t, &fetch.Fetcher{Recorder: rec, Addresses: &fetch.AddressPolicy{}, Resolver: res})
	loopbackOnly(t, refused)
	_, err := refused.Fetch(context.Background(), fetch.Request{URL: "http://site.test:" + port + "/"})
	if !errors.Is(err, fetch.ErrForbiddenAddress) {
		t.Errorf("err = %v, want ErrForbiddenAddress", err)
	}

	allowed := newFetcher(t, &fetch.Fetcher{Recorder: rec, Resolver: res,
		Addresses: &fetch.AddressPolicy{Allow: []fetch.AddressClass{fetch.ClassLoopback}}})
	dialled := loopbackOnly(t, allowed)
	mustFetch(t, allowed, "http://site.test:"+port+"/")
	if len(*dialled) != 1 {
		t.Errorf("dialled %v", *dialled)
	}
	if xs := rec.all(); len(xs) != 1 || string(xs[0].Response) != "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" {
		t.Errorf("recorded %d exchanges", len(xs))
	}
}

func TestRecordErrors(t *testing.T) {
	srv := rawserver.New(t, rawserver.Canned(map[string]string{
		"/":      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/moved": "HTTP/1.1 302 Found\r\nLocation: /\r\nContent-Length: 0\r\n\r\n",
	}))
	failing := errors.New("disk full")
	f := recordingFetcher(t, &exchanges{err: failing})
	for _, p := range []string{"/", "/moved"} {
		_, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL + p})
		if !errors.Is(err, fetch.ErrRecord) || !errors.Is(err, failing) {
			t.Errorf("%s: err = %v, want ErrRecord wrapping the recorder's error", p, err)
		}
	}

	// A transport that does not capture cannot feed a Recorder.
	custom := newFetcher(t, &fetch.Fetcher{Recorder: &exchanges{}, Transport: &http.Transport{}})
	t.Cleanup(custom.CloseIdleConnections)
	if _, err := custom.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/"}); !errors.Is(err, fetch.ErrRecord) {
		t.Errorf("custom transport: err = %v, want ErrRecord", err)
	}
}

// Many fetches at once through one Fetcher: each exchange holds its own
// request and response.
func TestRecordConcurrent(t *testing.T) {
	srv := rawserver.New(t, func(path string, w *bufio.Writer) bool {
		body := strings.Repeat(path, 500)
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		return true
	})
	rec := &exchanges{}
	f := recordingFetcher(t, rec)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if _, err := f.Fetch(context.Background(), fetch.Request{URL: fmt.Sprintf("%s/p%d", srv.URL, i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	xs := rec.all()
	if len(xs) != 40 {
		t.Fatalf("%d exchanges", len(xs))
	}
	for _, x := range xs {
		path := x.URL[len(srv.URL):]
		body := strings.Repeat(path, 500)
		if want := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body); string(x.Response) != want {
			t.Errorf("%s: response of %d bytes is not its own", path, len(x.Response))
		}
		if !bytes.HasPrefix(x.Request, []byte("GET "+path+" ")) {
			t.Errorf("%s: request %q", path, x.Request)
		}
	}
}
