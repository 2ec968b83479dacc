package gate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/internal/hostid"
	"github.com/heedcrawl/heed/robots"
	"github.com/heedcrawl/heed/robots/gate"
)

var t0 = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

// site is a loopback host whose /robots.txt handler a test can swap.
type site struct {
	srv  *httptest.Server
	hits atomic.Int32

	mu      sync.Mutex
	handler http.HandlerFunc
}

func newSite(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{handler: h}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		s.hits.Add(1)
		s.mu.Lock()
		h := s.handler
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) set(h http.HandlerFunc) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

func (s *site) url(t *testing.T, path string) *url.URL {
	t.Helper()
	u, err := url.Parse(s.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func serveText(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, text) }
}

func serveStatus(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

// client makes httpGet's requests: it never follows a redirect, which
// is the gate's to follow.
var client = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// httpGet is the Config.Get of the tests that talk to a loopback site:
// one request, the body of a 2xx read up to MaxSize+1 bytes, a body that
// breaks off an error. It decodes nothing (a crawler's Get does: see
// crawler.RobotsEntry).
func httpGet(ctx context.Context, rawURL string) (*gate.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := &gate.Response{Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return r, nil
	}
	r.Body, err = io.ReadAll(io.LimitReader(resp.Body, robots.MaxSize+1))
	r.Truncated = len(r.Body) > robots.MaxSize
	return r, err
}

// newForTest returns a gate with cfg's fields, else the agent heedbot,
// httpGet and a fake clock at t0.
func newForTest(t *testing.T, cfg gate.Config) (*gate.Gate, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(t0)
	if cfg.Clock == nil {
		cfg.Clock = clock
	}
	if cfg.Agent == "" {
		cfg.Agent = "heedbot"
	}
	if cfg.Get == nil {
		cfg.Get = httpGet
	}
	g, err := gate.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, clock
}

func check(t *testing.T, g *gate.Gate, u *url.URL) gate.Verdict {
	t.Helper()
	v, err := g.Check(context.Background(), u)
	if err != nil {
		t.Fatalf("Check(%s): %v", u, err)
	}
	return v
}

func wantHits(t *testing.T, s *site, n int32) {
	t.Helper()
	if got := s.hits.Load(); got != n {
		t.Fatalf("robots.txt fetched %d times, want %d", got, n)
	}
}

const rules = `User-agent: *
Disallow: /private
Crawl-delay: 3
Sitemap: https://example.com/sitemap.xml

User-agent: heedbot
Disallow: /nobots
Crawl-delay: 0.5
`

func TestOK(t *testing.T) {
	s := newSite(t, serveText(rules))
	g, _ := newForTest(t, gate.Config{})

	v := check(t, g, s.url(t, "/nobots/x"))
	if v.Allowed || !v.Fetched || !v.RetryAt.IsZero() {
		t.Fatalf("verdict = %+v, want disallowed by rules, fetched, no retry", v)
	}
	e := v.Entry
	if e.Outcome != gate.OutcomeOK || e.Status != 200 || e.Err != nil {
		t.Fatalf("entry = %+v", e)
	}
	if !e.HasCrawlDelay || e.CrawlDelay != 500*time.Millisecond {
		t.Fatalf("crawl delay = %v, %v; want our group's 500ms", e.CrawlDelay, e.HasCrawlDelay)
	}
	if len(e.Sitemaps) != 1 || e.Sitemaps[0] != "https://example.com/sitemap.xml" {
		t.Fatalf("sitemaps = %q", e.Sitemaps)
	}
	if !e.FetchedAt.Equal(t0) || !e.Expires.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("fetched %v, expires %v", e.FetchedAt, e.Expires)
	}
	if want := s.srv.URL + "/robots.txt"; e.URL != want || e.Authority != s.srv.URL {
		t.Fatalf("URL %q, authority %q", e.URL, e.Authority)
	}

	// Our group replaces "*": /private is allowed to heedbot.
	for path, want := range map[string]bool{"/private": true, "/nobots": false, "/": true, "/robots.txt": true} {
		v := check(t, g, s.url(t, path))
		if v.Allowed != want || v.Fetched {
			t.Errorf("%s: allowed %v fetched %v, want %v, false", path, v.Allowed, v.Fetched, want)
		}
	}
	wantHits(t, s, 1)
}

func TestMatchesEscapedPathAndQuery(t *testing.T) {
	s := newSite(t, serveText("User-agent: *\nDisallow: /a%2Fb\nDisallow: /*?sid=\n"))
	g, _ := newForTest(t, gate.Config{})
	for path, want := range map[string]bool{
		"/a%2Fb":       false,
		"/a/b":         true,
		"/page?sid=1":  false,
		"/page?x=1":    true,
		"/page#?sid=1": true,
	} {
		if v := check(t, g, s.url(t, path)); v.Allowed != want {
			t.Errorf("%s: allowed = %v, want %v", path, v.Allowed, want)
		}
	}
}

// redirector answers /robots.txt with a redirect to next.
func redirector(next string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, next, http.StatusMovedPermanently)
	}
}

func TestRedirects(t *testing.T) {
	final := newSite(t, serveText("User-agent: *\nDisallow: /x\n"))
	// A chain of n redirects across n distinct hosts ending at final.
	chain := func(n int) *site {
		next := final.srv.URL + "/robots.txt"
		var first *site
		for range n {
			first = newSite(t, redirector(next))
			next = first.srv.URL + "/robots.txt"
		}
		return first
	}
	for n := 1; n <= gate.MaxRedirects; n++ {
		t.Run(fmt.Sprintf("%d hops", n), func(t *testing.T) {
			start := chain(n)
			g, _ := newForTest(t, gate.Config{})
			v := check(t, g, start.url(t, "/x"))
			if v.Allowed || v.Entry.Outcome != gate.OutcomeOK {
				t.Fatalf("verdict = %+v, want the final host's rules applied", v)
			}
			if v.Entry.Authority != start.srv.URL {
				t.Fatalf("cached for %q, want the original authority %q", v.Entry.Authority, start.srv.URL)
			}
		})
	}
	t.Run("too many", func(t *testing.T) {
		start := chain(gate.MaxRedirects + 1)
		g, _ := newForTest(t, gate.Config{})
		v := check(t, g, start.url(t, "/x"))
		if !v.Allowed || v.Entry.Outcome != gate.OutcomeUnavailable || !errors.Is(v.Entry.Err, gate.ErrTooManyRedirects) {
			t.Fatalf("verdict = %+v entry = %+v, want unavailable (allow all)", v, v.Entry)
		}
	})
	t.Run("loop", func(t *testing.T) {
		s := newSite(t, nil)
		s.set(redirector(s.srv.URL + "/robots.txt"))
		g, _ := newForTest(t, gate.Config{})
		if v := check(t, g, s.url(t, "/x")); !v.Allowed || v.Entry.Outcome != gate.OutcomeUnavailable {
			t.Fatalf("verdict = %+v", v)
		}
		wantHits(t, s, gate.MaxRedirects+1)
	})
	t.Run("non-http", func(t *testing.T) {
		s := newSite(t, redirector("ftp://example.com/robots.txt"))
		g, _ := newForTest(t, gate.Config{})
		v := check(t, g, s.url(t, "/x"))
		if !v.Allowed || v.Entry.Outcome != gate.OutcomeUnavailable || !errors.Is(v.Entry.Err, gate.ErrRedirectScheme) {
			t.Fatalf("verdict = %+v entry = %+v", v, v.Entry)
		}
	})
	t.Run("no location", func(t *testing.T) {
		s := newSite(t, serveStatus(http.StatusFound))
		g, _ := newForTest(t, gate.Config{})
		if v := check(t, g, s.url(t, "/x")); !v.Allowed || v.Entry.Outcome != gate.OutcomeUnavailable || v.Entry.Status != 302 {
			t.Fatalf("verdict = %+v", v)
		}
	})
}

func Test4xxAllowsAll(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 410, 451} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			s := newSite(t, serveStatus(code))
			g, _ := newForTest(t, gate.Config{})
			v := check(t, g, s.url(t, "/anything"))
			e := v.Entry
			if !v.Allowed || e.Outcome != gate.OutcomeUnavailable || e.Status != code || !e.Expires.Equal(t0.Add(24*time.Hour)) {
				t.Fatalf("verdict = %+v, entry = %+v", v, e)
			}
		})
	}
}

func TestUnreachableDisallowsThenRecovers(t *testing.T) {
	for _, code := range []int{429, 500, 502, 503, 504} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			s := newSite(t, serveStatus(code))
			g, clock := newForTest(t, gate.Config{})
			u := s.url(t, "/page")

			v := check(t, g, u)
			if v.Allowed || v.Entry.Outcome != gate.OutcomeUnreachable || v.Entry.Status != code {
				t.Fatalf("verdict = %+v", v)
			}
			if want := t0.Add(gate.DefaultRetryMin); !v.RetryAt.Equal(want) || !v.Entry.Expires.Equal(want) {
				t.Fatalf("RetryAt = %v, want %v", v.RetryAt, want)
			}
			// Before RetryAt the gate does not ask again.
			clock.Set(v.RetryAt.Add(-time.Second))
			if v := check(t, g, u); v.Allowed || v.Fetched {
				t.Fatalf("before RetryAt: %+v", v)
			}
			wantHits(t, s, 1)

			// Still failing: the back-off doubles.
			clock.Set(v.RetryAt)
			v = check(t, g, u)
			if want := clock.Now().Add(2 * gate.DefaultRetryMin); !v.RetryAt.Equal(want) || v.Entry.Failures != 2 || !v.Entry.UnreachableSince.Equal(t0) {
				t.Fatalf("second failure: RetryAt %v (want %v), entry %+v", v.RetryAt, want, v.Entry)
			}

			s.set(serveText("User-agent: *\nDisallow: /private\n"))
			clock.Set(v.RetryAt)
			v = check(t, g, u)
			if !v.Allowed || !v.Fetched || v.Entry.Outcome != gate.OutcomeOK || v.Entry.Failures != 0 || !v.RetryAt.IsZero() {
				t.Fatalf("after recovery: %+v, entry %+v", v, v.Entry)
			}
			wantHits(t, s, 3)
		})
	}
}

func TestBackoffIsCapped(t *testing.T) {
	s := newSite(t, serveStatus(500))
	g, clock := newForTest(t, gate.Config{RetryMin: time.Minute, RetryMax: 10 * time.Minute})
	u := s.url(t, "/")
	var waits []time.Duration
	for range 6 {
		v := check(t, g, u)
		waits = append(waits, v.RetryAt.Sub(clock.Now()))
		clock.Set(v.RetryAt)
	}
	want := []time.Duration{1, 2, 4, 8, 10, 10}
	for i := range want {
		if waits[i] != want[i]*time.Minute {
			t.Fatalf("back-off = %v, want %v minutes", waits, want)
		}
	}
}

func TestTimeoutIsUnreachable(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	g, _ := newForTest(t, gate.Config{Timeout: 50 * time.Millisecond})
	v := check(t, g, s.url(t, "/"))
	if v.Allowed || v.Entry.Outcome != gate.OutcomeUnreachable || !errors.Is(v.Entry.Err, context.DeadlineExceeded) {
		t.Fatalf("verdict = %+v, entry = %+v", v, v.Entry)
	}
}

func TestConnectionRefusedIsUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(srv.URL + "/page")
	srv.Close()
	g, _ := newForTest(t, gate.Config{})
	v := check(t, g, u)
	if v.Allowed || v.Entry.Outcome != gate.OutcomeUnreachable || v.Entry.Err == nil || v.Entry.Status != 0 || v.RetryAt.IsZero() {
		t.Fatalf("verdict = %+v, entry = %+v", v, v.Entry)
	}
}

func TestBrokenBodyIsUnreachable(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "User-agent: *\nDisallow: /\n") // then the connection drops
	})
	g, _ := newForTest(t, gate.Config{})
	v := check(t, g, s.url(t, "/"))
	if v.Allowed || v.Entry.Outcome != gate.OutcomeUnreachable || v.Entry.Err == nil || v.Entry.Status != 200 {
		t.Fatalf("verdict = %+v, entry = %+v", v, v.Entry)
	}
}

// Retry-After is honoured through the Pacer: its Release turns it into
// a pause of the host, and the gate retries no sooner than the pause ends,
// within RetryMax. The gate does not read the header itself.
func TestRetryAfter(t *testing.T) {
	cases := []struct {
		name  string
		ready time.Duration // when the Pacer says the host may be asked again
		want  time.Duration
	}{
		{"pause longer than back-off", 10 * time.Minute, 10 * time.Minute},
		{"pause shorter than back-off", 5 * time.Second, gate.DefaultRetryMin},
		{"pause capped", 24 * time.Hour, gate.DefaultRetryMax},
		{"no pause", 0, gate.DefaultRetryMin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, serveStatus(503, "Retry-After", "600"))
			p := &readyPacer{ready: t0.Add(tc.ready)}
			g, _ := newForTest(t, gate.Config{Pacer: p})
			v := check(t, g, s.url(t, "/"))
			if got := v.RetryAt.Sub(t0); got != tc.want {
				t.Fatalf("RetryAt = t0+%v, want t0+%v", got, tc.want)
			}
			if p.asked != s.url(t, "/").Host {
				t.Fatalf("ReadyAt asked for %q, want the host's key", p.asked)
			}
		})
	}
	t.Run("without a pacer", func(t *testing.T) {
		s := newSite(t, serveStatus(503, "Retry-After", "600"))
		g, _ := newForTest(t, gate.Config{})
		if got := check(t, g, s.url(t, "/")).RetryAt.Sub(t0); got != gate.DefaultRetryMin {
			t.Fatalf("RetryAt = t0+%v, want the back-off alone", got)
		}
	})
	t.Run("stale copy", func(t *testing.T) {
		s := newSite(t, serveText("User-agent: *\nDisallow: /private\n"))
		p := &readyPacer{}
		g, clock := newForTest(t, gate.Config{Pacer: p})
		check(t, g, s.url(t, "/"))
		s.set(serveStatus(429, "Retry-After", "1800"))
		clock.Advance(24 * time.Hour)
		p.ready = clock.Now().Add(30 * time.Minute)
		e := check(t, g, s.url(t, "/")).Entry
		// The host's next slot goes to a page under the stale copy;
		// robots.txt is due a back-off after it, not at the same moment,
		// or a site answering robots.txt with 429 would starve its pages.
		if want := p.ready.Add(gate.DefaultRetryMin); e.Outcome != gate.OutcomeStale || !e.Expires.Equal(want) {
			t.Fatalf("entry %+v: want the stale copy, due again a back-off after the host's pause ends (%v)", e, want)
		}
	})
}

// readyPacer is a Pacer that says when a key is next ready.
type readyPacer struct {
	ready time.Time
	asked string
}

func (p *readyPacer) Acquire(ctx context.Context, key string) (gate.Release, error) {
	return func(int, http.Header, time.Duration, error) time.Time {
		p.asked = key
		return p.ready
	}, nil
}

// A Get that returns more than MaxSize+1 bytes: the gate parses MaxSize
// of them and nothing after.
func TestOversizeBody(t *testing.T) {
	head := "User-agent: *\nDisallow: /early\n"
	filler := strings.Repeat("# filler line to push the next rules past the limit\n", 2*robots.MaxSize/52)
	body := []byte(head + filler + "Disallow: /late\n")
	get := func(ctx context.Context, rawURL string) (*gate.Response, error) {
		return &gate.Response{Status: 200, Body: body}, nil
	}
	g, _ := newForTest(t, gate.Config{Get: get})
	u, _ := url.Parse("http://a.example/early")
	if v := check(t, g, u); v.Allowed || v.Entry.Outcome != gate.OutcomeOK {
		t.Fatalf("/early: %+v", v)
	}
	u, _ = url.Parse("http://a.example/late")
	if v := check(t, g, u); !v.Allowed {
		t.Fatal("/late is past MaxSize and must not apply")
	}
}

func TestCacheControl(t *testing.T) {
	cases := []struct {
		header string
		want   time.Duration
	}{
		{"max-age=300", 5 * time.Minute},
		{"public, max-age=3600", time.Hour},
		{"max-age=0", gate.DefaultMinTTL},
		{"max-age=10", gate.DefaultMinTTL},
		{"max-age=864000", 24 * time.Hour},
		{"no-store", gate.DefaultMinTTL},
		{"no-cache", gate.DefaultMinTTL},
		{"max-age=bogus", 24 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.header, func(t *testing.T) {
			s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", tc.header)
				io.WriteString(w, "User-agent: *\nDisallow: /x\n")
			})
			g, clock := newForTest(t, gate.Config{})
			u := s.url(t, "/x")
			e := check(t, g, u).Entry
			if got := e.Expires.Sub(t0); got != tc.want {
				t.Fatalf("expires after %v, want %v", got, tc.want)
			}
			clock.Set(e.Expires.Add(-time.Nanosecond))
			check(t, g, u)
			wantHits(t, s, 1)
			clock.Set(e.Expires)
			if v := check(t, g, u); !v.Fetched {
				t.Fatal("expired entry was not refetched")
			}
			wantHits(t, s, 2)
		})
	}
}

func TestLRUEviction(t *testing.T) {
	a := newSite(t, serveText(""))
	b := newSite(t, serveText(""))
	c := newSite(t, serveText(""))
	g, _ := newForTest(t, gate.Config{CacheSize: 2})
	check(t, g, a.url(t, "/"))
	check(t, g, b.url(t, "/"))
	check(t, g, a.url(t, "/")) // a is now the most recently used
	check(t, g, c.url(t, "/")) // evicts b
	if n := g.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	check(t, g, a.url(t, "/"))
	wantHits(t, a, 1)
	check(t, g, b.url(t, "/"))
	wantHits(t, b, 2)
}

func TestSingleFlight(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "User-agent: *\nDisallow: /no\n")
	})
	g, _ := newForTest(t, gate.Config{})
	const n = 100
	var (
		wg      sync.WaitGroup
		started sync.WaitGroup
		fetched atomic.Int32
		waited  atomic.Int32
	)
	started.Add(n)
	for i := range n {
		wg.Go(func() {
			started.Done()
			v, err := g.Check(context.Background(), s.url(t, fmt.Sprintf("/no/%d", i)))
			if err != nil || v.Allowed {
				t.Errorf("Check: %+v, %v", v, err)
			}
			if v.Fetched {
				fetched.Add(1)
			}
			if v.Waited {
				if v.Fetched {
					t.Error("Fetched and Waited both set")
				}
				waited.Add(1)
			}
		})
	}
	started.Wait()
	<-arrived // the one fetch is in flight, holding the others
	close(release)
	wg.Wait()
	wantHits(t, s, 1)
	if n := fetched.Load(); n != 1 {
		t.Fatalf("%d callers reported the fetch, want exactly the one that made it", n)
	}
	if waited.Load() == 0 {
		t.Fatal("no caller reported waiting for the fetch")
	}
}

func TestWaiterGivesUpAlone(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "")
	})
	g, _ := newForTest(t, gate.Config{})
	leader := make(chan error, 1)
	go func() {
		_, err := g.Check(context.Background(), s.url(t, "/"))
		leader <- err
	}()
	<-arrived
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Check(ctx, s.url(t, "/")); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter err = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-leader; err != nil {
		t.Fatalf("leader: %v", err)
	}
	wantHits(t, s, 1)
}

func TestCancelledFetchIsNotCached(t *testing.T) {
	first := make(chan struct{})
	var requests atomic.Int32
	s := newSite(t, nil)
	s.set(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 { // the first request hangs until cancelled
			close(first)
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "User-agent: *\nDisallow: /no\n")
	})
	g, _ := newForTest(t, gate.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, err := g.Check(ctx, s.url(t, "/no"))
		leader <- err
	}()
	<-first
	waiter := make(chan gate.Verdict, 1)
	go func() { waiter <- check(t, g, s.url(t, "/no")) }()
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader err = %v, want context.Canceled", err)
	}
	v := <-waiter
	if v.Allowed || v.Entry.Outcome != gate.OutcomeOK {
		t.Fatalf("waiter verdict %+v: the cancelled fetch must not count as unreachable", v)
	}
	wantHits(t, s, 2)
}

func TestStaleCopyWhileUnreachable(t *testing.T) {
	s := newSite(t, serveText("User-agent: *\nDisallow: /private\n"))
	g, clock := newForTest(t, gate.Config{})
	check(t, g, s.url(t, "/"))

	s.set(serveStatus(503))
	clock.Advance(24 * time.Hour)
	for i := 1; i <= 3; i++ {
		v := check(t, g, s.url(t, "/public"))
		e := v.Entry
		if !v.Allowed || e.Outcome != gate.OutcomeStale || !e.FetchedAt.Equal(t0) || e.Failures != i || !v.RetryAt.IsZero() {
			t.Fatalf("attempt %d: verdict %+v entry %+v", i, v, e)
		}
		if check(t, g, s.url(t, "/private")).Allowed {
			t.Fatalf("attempt %d: the stale copy's rules were dropped", i)
		}
		clock.Set(e.Expires)
	}
	// Long after 30 days the copy is still what the site last said.
	clock.Advance(40 * 24 * time.Hour)
	if e := check(t, g, s.url(t, "/")).Entry; e.Outcome != gate.OutcomeStale {
		t.Fatalf("outcome = %v, want stale", e.Outcome)
	}
}

func TestAssumesAllowAfter30Days(t *testing.T) {
	s := newSite(t, serveStatus(500))
	g, clock := newForTest(t, gate.Config{RetryMax: 24 * time.Hour})
	u := s.url(t, "/page")
	for {
		v := check(t, g, u)
		elapsed := clock.Now().Sub(t0)
		if elapsed < gate.DefaultAssumeAllowAfter {
			if v.Allowed || v.Entry.Outcome != gate.OutcomeUnreachable {
				t.Fatalf("after %v: %+v", elapsed, v)
			}
			clock.Set(v.RetryAt)
			continue
		}
		if !v.Allowed || v.Entry.Outcome != gate.OutcomeAssumedAllow || !v.Entry.UnreachableSince.Equal(t0) {
			t.Fatalf("after %v: verdict %+v entry %+v", elapsed, v, v.Entry)
		}
		if !v.Entry.Expires.After(clock.Now()) {
			t.Fatal("retries must go on after assuming allow")
		}
		break
	}
	// It recovers like any other failure.
	s.set(serveText("User-agent: *\nDisallow: /page\n"))
	e, _ := g.Entry(context.Background(), u)
	clock.Set(e.Expires)
	if v := check(t, g, u); v.Allowed || v.Entry.Outcome != gate.OutcomeOK {
		t.Fatalf("after recovery: %+v", v)
	}
}

// recordingPacer records the gate's use of its Pacer.
type recordingPacer struct {
	mu       sync.Mutex
	calls    []string
	err      error
	observed []int
	headers  []http.Header
	errs     []error
}

func (p *recordingPacer) Acquire(ctx context.Context, key string) (gate.Release, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "wait "+key)
	if p.err != nil {
		return nil, p.err
	}
	return func(status int, header http.Header, rtt time.Duration, err error) time.Time {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.calls = append(p.calls, "observe "+key, "done "+key)
		p.observed = append(p.observed, status)
		p.headers = append(p.headers, header)
		p.errs = append(p.errs, err)
		return time.Time{}
	}, nil
}

func TestPacesFetches(t *testing.T) {
	s := newSite(t, serveStatus(503, "Retry-After", "120"))
	p := &recordingPacer{}
	g, _ := newForTest(t, gate.Config{Pacer: p})
	check(t, g, s.url(t, "/"))
	key := s.url(t, "/").Host // the default key: host and port
	want := []string{"wait " + key, "observe " + key, "done " + key}
	if fmt.Sprint(p.calls) != fmt.Sprint(want) {
		t.Fatalf("pacer calls %q, want %q", p.calls, want)
	}
	if p.observed[0] != 503 || p.headers[0].Get("Retry-After") != "120" {
		t.Fatalf("observed %v %v", p.observed, p.headers)
	}
}

// Each redirect hop of a robots.txt fetch is a request to its own host:
// paced under that host's key and reported to it, so another host's 503
// slows that host, not this one.
func TestPacesAndObservesEachHop(t *testing.T) {
	cdn := newSite(t, serveStatus(503))
	s := newSite(t, redirector(cdn.srv.URL+"/robots.txt"))
	p := &recordingPacer{}
	g, _ := newForTest(t, gate.Config{Pacer: p})
	if v := check(t, g, s.url(t, "/")); v.Allowed {
		t.Fatalf("verdict %+v", v)
	}
	own, other := s.url(t, "/").Host, cdn.url(t, "/").Host
	want := []string{"wait " + own, "observe " + own, "done " + own, "wait " + other, "observe " + other, "done " + other}
	if fmt.Sprint(p.calls) != fmt.Sprint(want) {
		t.Fatalf("pacer calls\n%q\nwant\n%q", p.calls, want)
	}
	if fmt.Sprint(p.observed) != "[301 503]" {
		t.Fatalf("observed %v, want the 301 for this host and the 503 for the other", p.observed)
	}
}

// Without Config.Key a request is paced under the canonical host of the
// URL asked, as the crawler's pacing keys it, however a redirect spells it.
func TestDefaultPacerKeyIsTheCanonicalHost(t *testing.T) {
	f := &fakeGet{answers: map[string]*gate.Response{
		"http://a.example/robots.txt":           redirectTo(301, "HTTPS://CDN.Example.:0443/r.txt"),
		"https://CDN.Example.:0443/r.txt":       redirectTo(301, "http://BÜCHER.example:8080/r.txt"),
		"http://B%C3%9CCHER.example:8080/r.txt": {Status: 200, Body: []byte("User-agent: *\nDisallow: /x\n")},
	}}
	p := &recordingPacer{}
	g, _ := newForTest(t, gate.Config{Get: f.get, Pacer: p})
	u, _ := url.Parse("http://A.Example:80/x")
	if v := check(t, g, u); v.Allowed || v.Entry.Authority != "http://a.example" {
		t.Fatalf("verdict %+v entry %+v; asked %q", v, v.Entry, f.asked)
	}
	want := "[wait a.example observe a.example done a.example wait cdn.example observe cdn.example done cdn.example " +
		"wait xn--bcher-kva.example:8080 observe xn--bcher-kva.example:8080 done xn--bcher-kva.example:8080]"
	if fmt.Sprint(p.calls) != want {
		t.Fatalf("pacer calls\n%q\nwant\n%q", p.calls, want)
	}
}

func TestPacerKeyFunc(t *testing.T) {
	s := newSite(t, serveText(""))
	p := &recordingPacer{}
	var gotURL string
	g, _ := newForTest(t, gate.Config{Pacer: p, Key: func(u *url.URL) string {
		gotURL = u.String()
		return "custom-key"
	}})
	check(t, g, s.url(t, "/"))
	if gotURL != s.srv.URL+"/robots.txt" || p.calls[0] != "wait custom-key" {
		t.Fatalf("key func saw %q; pacer calls %q", gotURL, p.calls)
	}
}

func TestPacerErrorIsNotCached(t *testing.T) {
	s := newSite(t, serveText(""))
	p := &recordingPacer{err: context.DeadlineExceeded}
	g, _ := newForTest(t, gate.Config{Pacer: p})
	if _, err := g.Check(context.Background(), s.url(t, "/")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if g.Len() != 0 {
		t.Fatal("a fetch that never happened was cached")
	}
	wantHits(t, s, 0)
	if fmt.Sprint(p.calls) != "[wait "+s.url(t, "/").Host+"]" {
		t.Fatalf("pacer calls %q: Done without a successful Wait", p.calls)
	}
}

func TestRejectsNonHTTP(t *testing.T) {
	g, _ := newForTest(t, gate.Config{})
	for raw, want := range map[string]error{
		"ftp://example.com/":   gate.ErrUnsupportedScheme,
		"mailto:a@example.com": gate.ErrUnsupportedScheme,
		"/relative":            gate.ErrUnsupportedScheme,
		"http:///nohost":       gate.ErrNoHost,
	} {
		u, _ := url.Parse(raw)
		if _, err := g.Check(context.Background(), u); !errors.Is(err, want) {
			t.Errorf("Check(%q) err = %v, want %v", raw, err, want)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := gate.New(gate.Config{Agent: "x", Get: httpGet}); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, cfg := range []gate.Config{
		{},
		{Get: httpGet},
		{Agent: "x"}, // the gate has no client of its own
		{Agent: "x", Get: httpGet, TTL: -1},
		{Agent: "x", Get: httpGet, TTL: time.Minute, MinTTL: time.Hour},
		{Agent: "x", Get: httpGet, RetryMin: time.Hour, RetryMax: time.Minute},
	} {
		if _, err := gate.New(cfg); !errors.Is(err, gate.ErrInvalidConfig) {
			t.Errorf("New(%+v) err = %v", cfg, err)
		}
	}
}

func TestAuthority(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://example.com/a", "http://example.com"},
		{"HTTP://Example.COM:80/a", "http://example.com"},
		{"https://example.com:443/", "https://example.com"},
		{"https://example.com:80/", "https://example.com:80"},
		{"http://example.com:443/", "http://example.com:443"},
		{"http://example.com:080/", "http://example.com"},
		{"http://example.com:8080", "http://example.com:8080"},
		{"http://example.com:/", "http://example.com"},
		{"http://example.com./", "http://example.com"},
		{"http://user:pw@example.com/", "http://example.com"},
		{"http://[::1]:8080/", "http://[::1]:8080"},
		{"http://[::1]:80/", "http://[::1]"},
		{"http://[::1]:0080/", "http://[::1]"},
		{"http://[0:0:0:0:0:0:0:1]/", "http://[::1]"},
		// Names are mapped as the crawler maps them: one host, one
		// robots.txt, however the URL spells it.
		{"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example"},
		{"http://BÜCHER.example/", "http://xn--bcher-kva.example"},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		got, err := gate.Authority(u)
		if err != nil || got != tc.want {
			t.Errorf("Authority(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for in, want := range map[string]error{
		"http://example.com:0/":     gate.ErrNoHost,
		"http://example.com:99999/": gate.ErrNoHost,
		"http://[fe80::1%25en0]/":   gate.ErrNoHost, // a zone names an interface, not a host
		"http:///a":                 gate.ErrNoHost,
		"ftp://example.com/":        gate.ErrUnsupportedScheme,
		"/relative":                 gate.ErrUnsupportedScheme,
	} {
		u, _ := url.Parse(in)
		if _, err := gate.Authority(u); !errors.Is(err, want) {
			t.Errorf("Authority(%s) err = %v, want %v", in, err, want)
		}
	}
}

// A gate given no Host function keys its cache as the crawler's gate does,
// which is given hostid.Key: one spelling of a host, and of an authority,
// across heed.
func TestDefaultHostIsTheCrawlers(t *testing.T) {
	f := &fakeGet{answers: map[string]*gate.Response{}}
	plain, _ := newForTest(t, gate.Config{Get: f.get})
	crawlers, _ := newForTest(t, gate.Config{Get: f.get, Host: hostid.Key})
	for _, raw := range []string{
		"http://example.com/a", "HTTP://Example.COM:80/a", "https://example.com:8443/", "http://example.com.:080/",
		"http://BÜCHER.example/", "http://[0:0:0:0:0:0:0:1]:8080/", "http://127.0.0.1/", "http://user@a.example/",
		"http://example.com:0/", "http://[fe80::1%25en0]/", "http://a..b/", "http://example.com:99999/",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		want, werr := hostid.Authority(u)
		a, aerr := gate.Authority(u)
		e, perr := plain.Entry(context.Background(), u)
		c, cerr := crawlers.Entry(context.Background(), u)
		if werr != nil {
			if aerr == nil || perr == nil || cerr == nil {
				t.Errorf("%s: hostid refuses it (%v), but Authority %q, %v; default gate %v; crawler's %v", raw, werr, a, aerr, perr, cerr)
			}
			continue
		}
		if aerr != nil || perr != nil || cerr != nil {
			t.Fatalf("%s: Authority %v; default gate %v; crawler's %v", raw, aerr, perr, cerr)
		}
		if a != want || e.Authority != want || c.Authority != want || e.URL != want+"/robots.txt" {
			t.Errorf("%s: Authority %q, default gate %q (%s), crawler's %q; want hostid's %q", raw, a, e.Authority, e.URL, c.Authority, want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[gate.Outcome]string{
		gate.OutcomeOK: "ok", gate.OutcomeUnavailable: "unavailable", gate.OutcomeUnreachable: "unreachable",
		gate.OutcomeStale: "stale", gate.OutcomeAssumedAllow: "assumed-allow", 0: "Outcome(0)",
	} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", o, got, want)
		}
	}
}

func TestCachedNeverFetches(t *testing.T) {
	s := newSite(t, serveText("User-agent: *\nDisallow: /x\n"))
	g, _ := newForTest(t, gate.Config{})
	u := s.url(t, "/x")
	if e, ok := g.Cached(u); ok || e != nil {
		t.Fatalf("Cached before any Check = %v, %v", e, ok)
	}
	wantHits(t, s, 0)
	check(t, g, u)
	e, ok := g.Cached(u)
	if !ok || e.Outcome != gate.OutcomeOK || e.Group.Allowed("/x") {
		t.Fatalf("Cached after Check = %+v, %v", e, ok)
	}
	wantHits(t, s, 1)
}

// Disallows answers from a fresh copy of robots.txt read successfully,
// never fetching: false before a Check, after the copy expired, and for a
// robots.txt that could not be read.
func TestDisallowsNeverFetches(t *testing.T) {
	s := newSite(t, serveText("User-agent: *\nDisallow: /x\n"))
	down := newSite(t, serveStatus(http.StatusServiceUnavailable))
	g, clock := newForTest(t, gate.Config{})
	x, y := s.url(t, "/x"), s.url(t, "/y")
	if g.Disallows(x) {
		t.Error("Disallows before any Check")
	}
	wantHits(t, s, 0)
	check(t, g, y)
	if !g.Disallows(x) || g.Disallows(y) {
		t.Errorf("after Check: Disallows(/x) %v, Disallows(/y) %v; want true, false", g.Disallows(x), g.Disallows(y))
	}
	check(t, g, down.url(t, "/x"))
	if g.Disallows(down.url(t, "/x")) {
		t.Error("Disallows for an unreachable robots.txt: Check decides, with its retry")
	}
	clock.Advance(gate.DefaultTTL)
	if g.Disallows(x) {
		t.Error("Disallows from an expired copy")
	}
	wantHits(t, s, 1)
}

// Disallows is a look, not a use: the entry it reads keeps its place in
// the LRU cache, and goes first when the cache is full.
func TestDisallowsLeavesLRU(t *testing.T) {
	a := newSite(t, serveText("User-agent: *\nDisallow: /x\n"))
	b := newSite(t, serveText(rules))
	c := newSite(t, serveText(rules))
	g, _ := newForTest(t, gate.Config{CacheSize: 2})
	check(t, g, a.url(t, "/"))
	check(t, g, b.url(t, "/"))
	if !g.Disallows(a.url(t, "/x")) {
		t.Fatal("Disallows(a/x) = false, want true")
	}
	check(t, g, c.url(t, "/")) // evicts the least recently used: a, not b
	if _, ok := g.Cached(b.url(t, "/")); !ok {
		t.Error("b evicted: Disallows(a/x) counted as a use of a's entry")
	}
	if g.Disallows(a.url(t, "/x")) {
		t.Error("Disallows(a/x) after a's entry was evicted = true, want false")
	}
}

// CheckWith paces its fetch with the Pacer it is given, not Config.Pacer,
// which Check, Entry and a nil Pacer use.
func TestCheckWithPacesThisCall(t *testing.T) {
	s := newSite(t, serveText(rules))
	other := newSite(t, serveText(rules))
	third := newSite(t, serveText(rules))
	configured, given := &recordingPacer{}, &recordingPacer{}
	g, _ := newForTest(t, gate.Config{Pacer: configured})

	v, err := g.CheckWith(context.Background(), s.url(t, "/nobots/x"), given)
	if err != nil || v.Allowed || !v.Fetched {
		t.Fatalf("CheckWith: %+v, %v", v, err)
	}
	key := s.url(t, "/").Host
	if want := fmt.Sprint([]string{"wait " + key, "observe " + key, "done " + key}); fmt.Sprint(given.calls) != want || len(configured.calls) != 0 {
		t.Fatalf("given pacer %q, configured %q; want %s on the given one alone", given.calls, configured.calls, want)
	}
	check(t, g, other.url(t, "/"))
	if _, err := g.CheckWith(context.Background(), third.url(t, "/"), nil); err != nil {
		t.Fatal(err)
	}
	if len(given.calls) != 3 || len(configured.calls) != 6 || configured.calls[0] != "wait "+other.url(t, "/").Host || configured.calls[3] != "wait "+third.url(t, "/").Host {
		t.Fatalf("given pacer %q, configured %q: Check and CheckWith(nil) use Config.Pacer", given.calls, configured.calls)
	}
}

// A fetch is shared: the Pacer of the caller that starts it paces it, and
// a caller that comes while it is in flight is not paced at all.
func TestFlightIsPacedByItsStarter(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	get := func(ctx context.Context, rawURL string) (*gate.Response, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
		return &gate.Response{Status: 200, Body: []byte("User-agent: *\nDisallow: /x\n")}, nil
	}
	g, _ := newForTest(t, gate.Config{Get: get, Pacer: &recordingPacer{err: errors.New("Config.Pacer used")}})
	u, _ := url.Parse("http://a.example/x")
	starter, joiner := &recordingPacer{}, &recordingPacer{}

	first := make(chan gate.Verdict, 1)
	go func() {
		v, _ := g.CheckWith(context.Background(), u, starter)
		first <- v
	}()
	<-entered
	second := make(chan gate.Verdict, 1)
	go func() {
		v, _ := g.CheckWith(context.Background(), u, joiner)
		second <- v
	}()
	close(release)
	if v := <-first; !v.Fetched || v.Allowed {
		t.Fatalf("starter: %+v", v)
	}
	if v := <-second; v.Fetched || v.Allowed {
		t.Fatalf("joiner: %+v, want the starter's fetch", v)
	}
	if fmt.Sprint(starter.calls) != "[wait a.example observe a.example done a.example]" || len(joiner.calls) != 0 || calls.Load() != 1 {
		t.Fatalf("starter's pacer %q, joiner's %q, %d requests: want one request, paced by the starter's", starter.calls, joiner.calls, calls.Load())
	}
}

// When the caller that started a fetch gives up, the one that fetches in
// its stead paces its requests with its own Pacer.
func TestAbandonedFlightIsRefetchedWithTheWaitersPacer(t *testing.T) {
	entered := make(chan struct{})
	var calls atomic.Int32
	get := func(ctx context.Context, rawURL string) (*gate.Response, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-ctx.Done() // the starter gives up with the request under way
			return nil, ctx.Err()
		}
		return &gate.Response{Status: 200, Body: []byte("User-agent: *\nDisallow: /x\n")}, nil
	}
	g, _ := newForTest(t, gate.Config{Get: get})
	u, _ := url.Parse("http://a.example/x")
	starter, waiter := &recordingPacer{}, &recordingPacer{}

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := g.CheckWith(ctx, u, starter)
		first <- err
	}()
	<-entered
	second := make(chan gate.Verdict, 1)
	go func() { second <- checkWith(t, g, u, waiter) }()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("starter: %v, want context.Canceled", err)
	}
	if v := <-second; !v.Fetched || v.Allowed || v.Entry.Outcome != gate.OutcomeOK {
		t.Fatalf("waiter: %+v, want its own fetch", v)
	}
	want := "[wait a.example observe a.example done a.example]"
	if fmt.Sprint(starter.calls) != want || fmt.Sprint(waiter.calls) != want || !errors.Is(starter.errs[0], context.Canceled) {
		t.Fatalf("starter's pacer %q (errs %v), waiter's %q: want one request each", starter.calls, starter.errs, waiter.calls)
	}
}

func checkWith(t *testing.T, g *gate.Gate, u *url.URL, p gate.Pacer) gate.Verdict {
	t.Helper()
	v, err := g.CheckWith(context.Background(), u, p)
	if err != nil {
		t.Errorf("CheckWith(%s): %v", u, err)
	}
	return v
}
