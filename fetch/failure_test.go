package fetch_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/ratelimit"
)

// asFetched wraps cause as Stream does a failed round trip's.
func asFetched(cause error) error {
	const u = "http://example.com/p"
	return &fetch.Error{URL: u, Err: &url.Error{Op: "Get", URL: u, Err: cause}}
}

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}
	noHost := &net.DNSError{Err: "no such host", Name: "nowhere.example", IsNotFound: true}
	dnsTimeout := &net.DNSError{Err: "i/o timeout", Name: "slow.example", IsTimeout: true}
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	forbidden := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("%w: 10.0.0.1 (private)", fetch.ErrForbiddenAddress)}
	for _, tc := range []struct {
		name   string
		status int
		err    error
		want   ratelimit.Failure
	}{
		{"200", 200, nil, ratelimit.FailureNone},
		{"301", 301, nil, ratelimit.FailureNone},
		{"404", 404, nil, ratelimit.FailureNone},
		{"429", 429, nil, ratelimit.FailureThrottled},
		{"503", 503, nil, ratelimit.FailureThrottled},
		{"500", 500, nil, ratelimit.FailureServerError},
		{"502", 502, nil, ratelimit.FailureServerError},
		{"the error decides over a status", 503, fmt.Errorf("%w: gzip: invalid header", fetch.ErrContentEncoding), ratelimit.FailureEncoding},

		{"canceled", 0, context.Canceled, ratelimit.FailureCanceled},
		{"canceled in a round trip", 0, asFetched(context.Canceled), ratelimit.FailureCanceled},
		{"a lookup canceled while checking an address", 0, fmt.Errorf("%w: cannot check: %w", fetch.ErrForbiddenAddress, context.Canceled), ratelimit.FailureCanceled},
		{"deadline", 0, context.DeadlineExceeded, ratelimit.FailureTimeout},
		{"header timeout", 0, &fetch.Error{URL: "http://a/", Err: fetch.ErrHeaderTimeout}, ratelimit.FailureTimeout},
		{"total timeout", 0, &fetch.Error{URL: "http://a/", Err: fetch.ErrTimeout}, ratelimit.FailureTimeout},
		{"reading body timed out", 0, &fetch.Error{URL: "http://a/", Err: fmt.Errorf("reading body: %w", fetch.ErrTimeout)}, ratelimit.FailureTimeout},
		{"socket deadline", 0, asFetched(readTimeout), ratelimit.FailureTimeout},
		{"no such host", 0, asFetched(&net.OpError{Op: "dial", Net: "tcp", Err: noHost}), ratelimit.FailureDNS},
		{"lookup timed out is DNS", 0, asFetched(dnsTimeout), ratelimit.FailureDNS},
		{"no such host, bare", 0, noHost, ratelimit.FailureDNS},
		{"refused", 0, asFetched(refused), ratelimit.FailureConnection},
		{"reset", 0, &fetch.Error{URL: "http://a/", Err: fmt.Errorf("reading body: %w", reset)}, ratelimit.FailureConnection},
		{"forbidden at dial", 0, asFetched(forbidden), ratelimit.FailureForbidden},
		{"forbidden before the request", 0, &fetch.Error{URL: "http://10.0.0.1/", Err: &fetch.AddressError{Host: "10.0.0.1", Class: fetch.ClassPrivate}}, ratelimit.FailureForbidden},
		{"invalid URL", 0, fmt.Errorf("%w: %q is not an absolute http(s) URL", fetch.ErrInvalidURL, "ftp://x/"), ratelimit.FailureInvalidURL},
		{"undecodable body", 0, &fetch.Error{URL: "http://a/", Err: fmt.Errorf("%w: unsupported coding %q", fetch.ErrContentEncoding, "zstd")}, ratelimit.FailureEncoding},
		{"too many redirects", 0, fmt.Errorf("%w: 11 hops", fetch.ErrTooManyRedirects), ratelimit.FailureRedirect},
		{"redirect loop", 0, fmt.Errorf("%w: http://a/", fetch.ErrRedirectLoop), ratelimit.FailureRedirect},
		{"unknown authority", 0, asFetched(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), ratelimit.FailureTLS},
		{"bad hostname", 0, asFetched(x509.HostnameError{Host: "a"}), ratelimit.FailureTLS},
		{"not TLS", 0, asFetched(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), ratelimit.FailureTLS},
		{"connection closed before an answer", 0, asFetched(io.EOF), ratelimit.FailureOther},
		{"recording failed", 0, &fetch.Error{URL: "http://a/", Err: fetch.ErrRecord}, ratelimit.FailureOther},
		{"anything else", 0, errors.New("something"), ratelimit.FailureOther},
	} {
		if got := fetch.Classify(tc.status, tc.err); got != tc.want {
			t.Errorf("%s: Classify(%d, %v) = %v, want %v", tc.name, tc.status, tc.err, got, tc.want)
		}
	}
}

// TestClassifyFetchErrors classifies what Fetch returns for real failures,
// each behind a *fetch.Error naming the URL asked for.
func TestClassifyFetchErrors(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String() + "/"
	closed.Close() // nothing listens there now

	release := make(chan struct{})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/bad-gzip":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bytes.Repeat([]byte("not gzip "), 20))
		case "/cut":
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		case "/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)

	plain := newFetcher(t, nil)
	hasty := newFetcher(t, &fetch.Fetcher{HeaderTimeout: 100 * time.Millisecond})
	resolving := newFetcher(t, &fetch.Fetcher{
		Addresses: &fetch.AddressPolicy{Allow: []fetch.AddressClass{fetch.ClassLoopback}},
		Resolver:  fakeResolver{}, // every name fails to resolve
	})
	loopbackOnly(t, resolving)
	strict := newFetcher(t, &fetch.Fetcher{Addresses: &fetch.AddressPolicy{}})
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	for _, tc := range []struct {
		name string
		f    *fetch.Fetcher
		ctx  context.Context
		url  string
		want ratelimit.Failure
	}{
		{"refused", plain, context.Background(), refusedURL, ratelimit.FailureConnection},
		{"headers too slow", hasty, context.Background(), srv.URL + "/hang", ratelimit.FailureTimeout},
		{"undecodable", plain, context.Background(), srv.URL + "/bad-gzip", ratelimit.FailureEncoding},
		{"closed before an answer", plain, context.Background(), srv.URL + "/cut", ratelimit.FailureOther},
		{"untrusted certificate", plain, context.Background(), tlsSrv.URL + "/", ratelimit.FailureTLS},
		{"canceled", plain, canceled, srv.URL + "/hang", ratelimit.FailureCanceled},
		{"no such host", resolving, context.Background(), "http://nowhere.test/", ratelimit.FailureDNS},
		{"loopback not allowed", strict, context.Background(), srv.URL + "/", ratelimit.FailureForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.f.Fetch(tc.ctx, fetch.Request{URL: tc.url})
			if err == nil {
				t.Fatalf("Fetch(%s) = %d, no error", tc.url, p.Status)
			}
			if got := fetch.Classify(0, err); got != tc.want {
				t.Errorf("Classify(%v) = %v, want %v", err, got, tc.want)
			}
			var fe *fetch.Error
			if !errors.As(err, &fe) || fe.URL != tc.url || fe.Error() != "fetch "+tc.url+": "+fe.Err.Error() {
				t.Errorf("Fetch(%s) = %v, want a *fetch.Error naming the URL apart from its cause", tc.url, err)
			}
		})
	}

	p, err := plain.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/busy"})
	if err != nil || fetch.Classify(p.Status, nil) != ratelimit.FailureThrottled {
		t.Errorf("a 503: %v, %v; want a page classified throttled", p, err)
	}
	if _, err := plain.Fetch(context.Background(), fetch.Request{URL: "ftp://example.com/"}); fetch.Classify(0, err) != ratelimit.FailureInvalidURL {
		t.Errorf("an ftp URL: %v, want it classified invalid-url", err)
	}
}
