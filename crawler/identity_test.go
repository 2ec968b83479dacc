package crawler_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

// Pacing of the identity test. identityTolerance absorbs the gap between
// the crawler sending a request and the server reading it, as e2eTolerance
// does; an unpaced request arrives a whole delay early and is still caught.
const (
	identityDelay     = 200 * time.Millisecond
	identityTolerance = 15 * time.Millisecond
)

// identityHosts are the names the identity test serves, in canonical form;
// the second is "bücher.test".
var identityHosts = []string{"h.test", "xn--bcher-kva.test"}

// identityPages are the links every page carries: the same few URLs of
// each host, spelled every way a host can be spelled.
var identityPages = []string{
	"http://h.test/", "http://H.TEST:80/", "http://h.test./", "http://h.test:80/",
	"http://h.test/a", "http://H.TEST:80/a", "http://h.test./b", "http://H.Test.:080/b",
	"http://h.test:80/c", "http://h.test.:80/c",
	"http://bücher.test/", "http://xn--bcher-kva.test/", "http://BÜCHER.test.:80/",
	"http://bücher.test/x", "http://XN--BCHER-KVA.TEST./x",
}

// identityRequest is one request as the server saw it.
type identityRequest struct {
	host, path string
	at         time.Time
}

// identityServer serves identityHosts from one loopback listener and logs
// every request under its host's canonical name.
type identityServer struct {
	srv *httptest.Server

	mu  sync.Mutex
	log []identityRequest
}

func newIdentityServer(t *testing.T) *identityServer {
	s := &identityServer{}
	var links strings.Builder
	for _, l := range identityPages {
		fmt.Fprintf(&links, "<a href=%q>link</a>\n", l)
	}
	page := "<!doctype html><html><head><title>t</title></head><body>\n" + links.String() + "</body></html>"
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.TrimSuffix(strings.ToLower(r.Host), ":80")
		host = strings.TrimSuffix(host, ".")
		s.mu.Lock()
		s.log = append(s.log, identityRequest{host: host, path: r.URL.Path, at: time.Now()})
		s.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// dial sends any spelling of a served host on port 80 to the server and
// refuses everything else, so the test never reaches past loopback.
func (s *identityServer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "80" || !slices.Contains(identityHosts, strings.TrimSuffix(strings.ToLower(host), ".")) {
		return nil, fmt.Errorf("identity test: %s is not a served host", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", s.srv.Listener.Addr().String())
}

func (s *identityServer) requests() []identityRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// TestOneHostOneBudget: a host spelled any way (case, default port, a
// trailing dot, Unicode or punycode) is one host with one politeness
// budget. Seeds and links use every spelling; the server must see each
// URL once and no two requests to one host closer than the delay.
func TestOneHostOneBudget(t *testing.T) {
	s := newIdentityServer(t)
	c, err := crawler.New(
		crawler.WithTransport(&http.Transport{DialContext: s.dial}),
		crawler.WithDelay(identityDelay),
		crawler.WithWorkers(8),
		crawler.WithSitemaps(false),
	)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		keys     = map[string][]string{} // Crawler.Host's key per spelling
		errs     []string
		hostErrs []error
	)
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		mu.Lock()
		defer mu.Unlock()
		if len(keys) > 0 {
			return
		}
		for _, l := range identityPages {
			info, err := c.Host(ctx, l)
			if err != nil {
				hostErrs = append(hostErrs, fmt.Errorf("Host(%q): %w", l, err))
				continue
			}
			keys[info.Key] = append(keys[info.Key], l)
		}
	})
	c.OnError(func(ctx context.Context, u *url.URL, err error) {
		mu.Lock()
		errs = append(errs, u.String()+": "+err.Error())
		mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := []string{
		"http://h.test/", "http://H.TEST:80/", "http://h.test./", "http://h.test:80/",
		"http://bücher.test/", "http://xn--bcher-kva.test/", "http://BÜCHER.test.:80/",
	}
	if err := c.Run(ctx, seeds...); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range errs {
		t.Errorf("crawl error: %s", e)
	}
	for _, e := range hostErrs {
		t.Errorf("%v", e)
	}
	if len(keys) != len(identityHosts) {
		t.Errorf("Crawler.Host gives %d keys for %d hosts: %v", len(keys), len(identityHosts), keys)
	}

	reqs := s.requests()
	byHost := map[string][]identityRequest{}
	for _, r := range reqs {
		byHost[r.host] = append(byHost[r.host], r)
	}
	want := map[string][]string{
		"h.test":             {"/", "/a", "/b", "/c", "/robots.txt"},
		"xn--bcher-kva.test": {"/", "/robots.txt", "/x"},
	}
	for host, paths := range want {
		var got []string
		for _, r := range byHost[host] {
			got = append(got, r.path)
		}
		slices.Sort(got)
		if !slices.Equal(got, paths) {
			t.Errorf("%s: requests for %q, want each of %q once", host, got, paths)
		}
	}
	if len(byHost) != len(want) {
		t.Errorf("requests for hosts %v, want %d hosts", slices.Collect(maps.Keys(byHost)), len(want))
	}
	for host, rs := range byHost {
		slices.SortFunc(rs, func(a, b identityRequest) int { return a.at.Compare(b.at) })
		for i := 1; i < len(rs); i++ {
			if gap := rs[i].at.Sub(rs[i-1].at); gap < identityDelay-identityTolerance {
				t.Errorf("%s: %s then %s only %v apart, want at least %v", host, rs[i-1].path, rs[i].path, gap, identityDelay)
			}
		}
	}
}
