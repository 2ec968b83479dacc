package crawler_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heedcrawl/heed/crawler"
)

// TestMain fails the package's tests if any goroutine outlives them: Run
// promises to start none that outlives it, and every test closes its
// servers.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
	os.Exit(0) // not reached: VerifyTestMain exits
}

// testSite is a loopback web site for the library tests: a robots.txt,
// pages by request target, and a log of the requests it received.
type testSite struct {
	*httptest.Server
	mu     sync.Mutex
	log    []siteRequest
	routes map[string]http.HandlerFunc
}

type siteRequest struct {
	target string // path and query as received
	at     time.Time
}

// defaultRobots disallows /private/ to everyone.
const defaultRobots = "User-agent: *\nDisallow: /private/\n"

// newSite serves robots (when not empty) at /robots.txt and routes by
// request target; anything else is 404. The server closes when the test
// ends.
func newSite(t *testing.T, robots string, routes map[string]http.HandlerFunc) *testSite {
	t.Helper()
	s := &testSite{routes: routes}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.URL.RequestURI()
		s.mu.Lock()
		s.log = append(s.log, siteRequest{target, time.Now()})
		h := s.routes[target]
		s.mu.Unlock()
		switch {
		case target == "/robots.txt" && robots != "":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, robots)
		case h != nil:
			h(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// count returns how often target was requested.
func (s *testSite) count(target string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.log {
		if r.target == target {
			n++
		}
	}
	return n
}

// requests returns the times target was requested, in order.
func (s *testSite) requests(target string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var at []time.Time
	for _, r := range s.log {
		if r.target == target {
			at = append(at, r.at)
		}
	}
	return at
}

// targets returns every request target received, in order.
func (s *testSite) targets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.log))
	for i, r := range s.log {
		out[i] = r.target
	}
	return out
}

// htmlPage serves an HTML page with a title and links to hrefs.
func htmlPage(title string, hrefs ...string) http.HandlerFunc {
	return rawHTML(title, "", hrefs...)
}

// rawHTML serves an HTML page with extra markup in its head.
func rawHTML(title, head string, hrefs ...string) http.HandlerFunc {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><title>%s</title>%s</head><body>\n", html.EscapeString(title), head)
	for _, h := range hrefs {
		if strings.HasPrefix(h, "<") { // markup given whole
			b.WriteString(h + "\n")
			continue
		}
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a>\n", html.EscapeString(h), html.EscapeString(h))
	}
	b.WriteString("</body></html>\n")
	body := b.String()
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
}

func redirectTo(code int, to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to, code)
	}
}

// testOptions make crawls of loopback sites fast: no delay, no sitemap
// probes unless a test asks for them.
func testOptions(opts ...crawler.Option) []crawler.Option {
	return append([]crawler.Option{crawler.WithDelay(0), crawler.WithSitemaps(false)}, opts...)
}

func newCrawler(t *testing.T, opts ...crawler.Option) *crawler.Crawler {
	t.Helper()
	c, err := crawler.New(testOptions(opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runCrawl runs c and fails the test if it does not end on its own. The
// deadline is only a guard against a hanging crawler.
func runCrawl(t *testing.T, c *crawler.Crawler, seeds ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Run(ctx, seeds...); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// statsOf returns c's Stats, reporting (not stopping on, so that it may be
// called from a handler) an error of the Store's.
func statsOf(t testing.TB, c *crawler.Crawler) crawler.Stats {
	t.Helper()
	st, err := c.Stats(context.Background())
	if err != nil {
		t.Errorf("Stats: %v", err)
	}
	return st
}

// pageLog records what OnPage saw, safely for concurrent handlers.
type pageLog struct {
	mu     sync.Mutex
	pages  map[string]*crawler.Page // by path and query, the last reported
	counts map[string]int           // reports by path and query
}

func recordPages(c *crawler.Crawler) *pageLog {
	l := &pageLog{pages: map[string]*crawler.Page{}, counts: map[string]int{}}
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		l.mu.Lock()
		l.pages[p.URL.RequestURI()] = p
		l.counts[p.URL.RequestURI()]++
		l.mu.Unlock()
	})
	return l
}

// count returns how many times the page at target was reported.
func (l *pageLog) count(target string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[target]
}

func (l *pageLog) get(target string) *crawler.Page {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pages[target]
}

func (l *pageLog) targets() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k := range l.pages {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// errorLog records what OnError saw.
type errorLog struct {
	mu   sync.Mutex
	errs map[string][]error
}

func recordErrors(c *crawler.Crawler) *errorLog {
	l := &errorLog{errs: map[string][]error{}}
	c.OnError(func(ctx context.Context, u *url.URL, err error) {
		l.mu.Lock()
		l.errs[u.String()] = append(l.errs[u.String()], err)
		l.mu.Unlock()
	})
	return l
}

// find returns the errors reported for URLs ending in suffix.
func (l *errorLog) find(suffix string) []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []error
	for u, es := range l.errs {
		if strings.HasSuffix(u, suffix) {
			out = append(out, es...)
		}
	}
	return out
}

func (l *errorLog) all() map[string][]error {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]error{}
	for u, es := range l.errs {
		out[u] = slices.Clone(es)
	}
	return out
}

// waitFor waits for ch to close, failing the test after a long time: the
// guard keeps a broken crawler from hanging the test run.
func waitFor(t *testing.T, ch <-chan struct{}, what string) bool {
	t.Helper()
	select {
	case <-ch:
		return true
	case <-time.After(30 * time.Second):
		t.Errorf("timed out waiting for %s", what)
		return false
	}
}
