package robots_test

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
	"github.com/heedcrawl/heed/robots"
)

var gateT0 = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

// gateSite is a loopback host whose /robots.txt handler a test can swap.
type gateSite struct {
	srv  *httptest.Server
	hits atomic.Int32

	mu      sync.Mutex
	handler http.HandlerFunc
}

func newGateSite(t *testing.T, h http.HandlerFunc) *gateSite {
	t.Helper()
	s := &gateSite{handler: h}
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

func (s *gateSite) set(h http.HandlerFunc) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

func (s *gateSite) url(t *testing.T, path string) *url.URL {
	t.Helper()
	u, err := url.Parse(s.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func gateBody(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, text) }
}

func gateStatus(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

// gateClient makes gateGet's requests: it never follows a redirect, which
// is the gate's to follow.
var gateClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// gateGet is the GateConfig.Get of the tests that talk to a loopback site:
// one request, the body of a 2xx read up to MaxSize+1 bytes, a body that
// breaks off an error. It decodes nothing (a crawler's Get does: see
// crawler.RobotsEntry).
func gateGet(ctx context.Context, rawURL string) (*robots.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := gateClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := &robots.Response{Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return r, nil
	}
	r.Body, err = io.ReadAll(io.LimitReader(resp.Body, robots.MaxSize+1))
	r.Truncated = len(r.Body) > robots.MaxSize
	return r, err
}

// newGateForTest returns a gate with cfg's fields, else the agent heedbot,
// gateGet and a fake clock at gateT0.
func newGateForTest(t *testing.T, cfg robots.GateConfig) (*robots.Gate, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(gateT0)
	if cfg.Clock == nil {
		cfg.Clock = clock
	}
	if cfg.Agent == "" {
		cfg.Agent = "heedbot"
	}
	if cfg.Get == nil {
		cfg.Get = gateGet
	}
	g, err := robots.NewGate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, clock
}

func gateCheck(t *testing.T, g *robots.Gate, u *url.URL) robots.Verdict {
	t.Helper()
	v, err := g.Check(context.Background(), u)
	if err != nil {
		t.Fatalf("Check(%s): %v", u, err)
	}
	return v
}

func gateWantHits(t *testing.T, s *gateSite, n int32) {
	t.Helper()
	if got := s.hits.Load(); got != n {
		t.Fatalf("robots.txt fetched %d times, want %d", got, n)
	}
}

const gateRules = `User-agent: *
Disallow: /private
Crawl-delay: 3
Sitemap: https://example.com/sitemap.xml

User-agent: heedbot
Disallow: /nobots
Crawl-delay: 0.5
`

func TestGateOK(t *testing.T) {
	s := newGateSite(t, gateBody(gateRules))
	g, _ := newGateForTest(t, robots.GateConfig{})

	v := gateCheck(t, g, s.url(t, "/nobots/x"))
	if v.Allowed || !v.Fetched || !v.RetryAt.IsZero() {
		t.Fatalf("verdict = %+v, want disallowed by rules, fetched, no retry", v)
	}
	e := v.Entry
	if e.Outcome != robots.OutcomeOK || e.Status != 200 || e.Err != nil {
		t.Fatalf("entry = %+v", e)
	}
	if !e.HasCrawlDelay || e.CrawlDelay != 500*time.Millisecond {
		t.Fatalf("crawl delay = %v, %v; want our group's 500ms", e.CrawlDelay, e.HasCrawlDelay)
	}
	if len(e.Sitemaps) != 1 || e.Sitemaps[0] != "https://example.com/sitemap.xml" {
		t.Fatalf("sitemaps = %q", e.Sitemaps)
	}
	if !e.FetchedAt.Equal(gateT0) || !e.Expires.Equal(gateT0.Add(24*time.Hour)) {
		t.Fatalf("fetched %v, expires %v", e.FetchedAt, e.Expires)
	}
	if want := s.srv.URL + "/robots.txt"; e.URL != want || e.Authority != s.srv.URL {
		t.Fatalf("URL %q, authority %q", e.URL, e.Authority)
	}

	// Our group replaces "*": /private is allowed to heedbot.
	for path, want := range map[string]bool{"/private": true, "/nobots": false, "/": true, "/robots.txt": true} {
		v := gateCheck(t, g, s.url(t, path))
		if v.Allowed != want || v.Fetched {
			t.Errorf("%s: allowed %v fetched %v, want %v, false", path, v.Allowed, v.Fetched, want)
		}
	}
	gateWantHits(t, s, 1)
}

func TestGateMatchesEscapedPathAndQuery(t *testing.T) {
	s := newGateSite(t, gateBody("User-agent: *\nDisallow: /a%2Fb\nDisallow: /*?sid=\n"))
	g, _ := newGateForTest(t, robots.GateConfig{})
	for path, want := range map[string]bool{
		"/a%2Fb":       false,
		"/a/b":         true,
		"/page?sid=1":  false,
		"/page?x=1":    true,
		"/page#?sid=1": true,
	} {
		if v := gateCheck(t, g, s.url(t, path)); v.Allowed != want {
			t.Errorf("%s: allowed = %v, want %v", path, v.Allowed, want)
		}
	}
}

// redirector answers /robots.txt with a redirect to next.
func gateRedirector(next string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, next, http.StatusMovedPermanently)
	}
}

func TestGateRedirects(t *testing.T) {
	final := newGateSite(t, gateBody("User-agent: *\nDisallow: /x\n"))
	// A chain of n redirects across n distinct hosts ending at final.
	chain := func(n int) *gateSite {
		next := final.srv.URL + "/robots.txt"
		var first *gateSite
		for range n {
			first = newGateSite(t, gateRedirector(next))
			next = first.srv.URL + "/robots.txt"
		}
		return first
	}
	for n := 1; n <= robots.MaxRedirects; n++ {
		t.Run(fmt.Sprintf("%d hops", n), func(t *testing.T) {
			start := chain(n)
			g, _ := newGateForTest(t, robots.GateConfig{})
			v := gateCheck(t, g, start.url(t, "/x"))
			if v.Allowed || v.Entry.Outcome != robots.OutcomeOK {
				t.Fatalf("verdict = %+v, want the final host's rules applied", v)
			}
			if v.Entry.Authority != start.srv.URL {
				t.Fatalf("cached for %q, want the original authority %q", v.Entry.Authority, start.srv.URL)
			}
		})
	}
	t.Run("too many", func(t *testing.T) {
		start := chain(robots.MaxRedirects + 1)
		g, _ := newGateForTest(t, robots.GateConfig{})
		v := gateCheck(t, g, start.url(t, "/x"))
		if !v.Allowed || v.Entry.Outcome != robots.OutcomeUnavailable || !errors.Is(v.Entry.Err, robots.ErrTooManyRedirects) {
			t.Fatalf("verdict = %+v entry = %+v, want unavailable (allow all)", v, v.Entry)
		}
	})
	t.Run("loop", func(t *testing.T) {
		s := newGateSite(t, nil)
		s.set(gateRedirector(s.srv.URL + "/robots.txt"))
		g, _ := newGateForTest(t, robots.GateConfig{})
		if v := gateCheck(t, g, s.url(t, "/x")); !v.Allowed || v.Entry.Outcome != robots.OutcomeUnavailable {
			t.Fatalf("verdict = %+v", v)
		}
		gateWantHits(t, s, robots.MaxRedirects+1)
	})
	t.Run("non-http", func(t *testing.T) {
		s := newGateSite(t, gateRedirector("ftp://example.com/robots.txt"))
		g, _ := newGateForTest(t, robots.GateConfig{})
		v := gateCheck(t, g, s.url(t, "/x"))
		if !v.Allowed || v.Entry.Outcome != robots.OutcomeUnavailable || !errors.Is(v.Entry.Err, robots.ErrRedirectScheme) {
			t.Fatalf("verdict = %+v entry = %+v", v, v.Entry)
		}
	})
	t.Run("no location", func(t *testing.T) {
		s := newGateSite(t, gateStatus(http.StatusFound))
		g, _ := newGateForTest(t, robots.GateConfig{})
		if v := gateCheck(t, g, s.url(t, "/x")); !v.Allowed || v.Entry.Outcome != robots.OutcomeUnavailable || v.Entry.Status != 302 {
			t.Fatalf("verdict = %+v", v)
		}
	})
}

func TestGate4xxAllowsAll(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 410, 451} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			s := newGateSite(t, gateStatus(code))
			g, _ := newGateForTest(t, robots.GateConfig{})
			v := gateCheck(t, g, s.url(t, "/anything"))
			e := v.Entry
			if !v.Allowed || e.Outcome != robots.OutcomeUnavailable || e.Status != code || !e.Expires.Equal(gateT0.Add(24*time.Hour)) {
				t.Fatalf("verdict = %+v, entry = %+v", v, e)
			}
		})
	}
}

func TestGateUnreachableDisallowsThenRecovers(t *testing.T) {
	for _, code := range []int{429, 500, 502, 503, 504} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			s := newGateSite(t, gateStatus(code))
			g, clock := newGateForTest(t, robots.GateConfig{})
			u := s.url(t, "/page")

			v := gateCheck(t, g, u)
			if v.Allowed || v.Entry.Outcome != robots.OutcomeUnreachable || v.Entry.Status != code {
				t.Fatalf("verdict = %+v", v)
			}
			if want := gateT0.Add(robots.DefaultGateRetryMin); !v.RetryAt.Equal(want) || !v.Entry.Expires.Equal(want) {
				t.Fatalf("RetryAt = %v, want %v", v.RetryAt, want)
			}
			// Before RetryAt the gate does not ask again.
			clock.Set(v.RetryAt.Add(-time.Second))
			if v := gateCheck(t, g, u); v.Allowed || v.Fetched {
				t.Fatalf("before RetryAt: %+v", v)
			}
			gateWantHits(t, s, 1)

			// Still failing: the back-off doubles.
			clock.Set(v.RetryAt)
			v = gateCheck(t, g, u)
			if want := clock.Now().Add(2 * robots.DefaultGateRetryMin); !v.RetryAt.Equal(want) || v.Entry.Failures != 2 || !v.Entry.UnreachableSince.Equal(gateT0) {
				t.Fatalf("second failure: RetryAt %v (want %v), entry %+v", v.RetryAt, want, v.Entry)
			}

			s.set(gateBody("User-agent: *\nDisallow: /private\n"))
			clock.Set(v.RetryAt)
			v = gateCheck(t, g, u)
			if !v.Allowed || !v.Fetched || v.Entry.Outcome != robots.OutcomeOK || v.Entry.Failures != 0 || !v.RetryAt.IsZero() {
				t.Fatalf("after recovery: %+v, entry %+v", v, v.Entry)
			}
			gateWantHits(t, s, 3)
		})
	}
}

func TestGateBackoffIsCapped(t *testing.T) {
	s := newGateSite(t, gateStatus(500))
	g, clock := newGateForTest(t, robots.GateConfig{RetryMin: time.Minute, RetryMax: 10 * time.Minute})
	u := s.url(t, "/")
	var waits []time.Duration
	for range 6 {
		v := gateCheck(t, g, u)
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

func TestGateTimeoutIsUnreachable(t *testing.T) {
	s := newGateSite(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	g, _ := newGateForTest(t, robots.GateConfig{Timeout: 50 * time.Millisecond})
	v := gateCheck(t, g, s.url(t, "/"))
	if v.Allowed || v.Entry.Outcome != robots.OutcomeUnreachable || !errors.Is(v.Entry.Err, context.DeadlineExceeded) {
		t.Fatalf("verdict = %+v, entry = %+v", v, v.Entry)
	}
}

func TestGateConnectionRefusedIsUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(srv.URL + "/page")
	srv.Close()
	g, _ := newGateForTest(t, robots.GateConfig{})
	v := gateCheck(t, g, u)
	if v.Allowed || v.Entry.Outcome != robots.OutcomeUnreachable || v.Entry.Err == nil || v.Entry.Status != 0 || v.RetryAt.IsZero() {
		t.Fatalf("verdict = %+v, entry = %+v", v, v.Entry)
	}
}

func TestGateBrokenBodyIsUnreachable(t *testing.T) {
	s := newGateSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "User-agent: *\nDisallow: /\n") // then the connection drops
	})
	g, _ := newGateForTest(t, robots.GateConfig{})
	v := gateCheck(t, g, s.url(t, "/"))
	if v.Allowed || v.Entry.Outcome != robots.OutcomeUnreachable || v.Entry.Err == nil || v.Entry.Status != 200 {
		t.Fatalf("verdict = %+v, entry = %+v", v, v.Entry)
	}
}

// Retry-After is honoured through the Pacer: its Release turns it into
// a pause of the host, and the gate retries no sooner than the pause ends,
// within RetryMax. The gate does not read the header itself.
func TestGateRetryAfter(t *testing.T) {
	cases := []struct {
		name  string
		ready time.Duration // when the Pacer says the host may be asked again
		want  time.Duration
	}{
		{"pause longer than back-off", 10 * time.Minute, 10 * time.Minute},
		{"pause shorter than back-off", 5 * time.Second, robots.DefaultGateRetryMin},
		{"pause capped", 24 * time.Hour, robots.DefaultGateRetryMax},
		{"no pause", 0, robots.DefaultGateRetryMin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newGateSite(t, gateStatus(503, "Retry-After", "600"))
			p := &gateReadyPacer{ready: gateT0.Add(tc.ready)}
			g, _ := newGateForTest(t, robots.GateConfig{Pacer: p})
			v := gateCheck(t, g, s.url(t, "/"))
			if got := v.RetryAt.Sub(gateT0); got != tc.want {
				t.Fatalf("RetryAt = t0+%v, want t0+%v", got, tc.want)
			}
			if p.asked != s.url(t, "/").Host {
				t.Fatalf("ReadyAt asked for %q, want the host's key", p.asked)
			}
		})
	}
	t.Run("without a pacer", func(t *testing.T) {
		s := newGateSite(t, gateStatus(503, "Retry-After", "600"))
		g, _ := newGateForTest(t, robots.GateConfig{})
		if got := gateCheck(t, g, s.url(t, "/")).RetryAt.Sub(gateT0); got != robots.DefaultGateRetryMin {
			t.Fatalf("RetryAt = t0+%v, want the back-off alone", got)
		}
	})
	t.Run("stale copy", func(t *testing.T) {
		s := newGateSite(t, gateBody("User-agent: *\nDisallow: /private\n"))
		p := &gateReadyPacer{}
		g, clock := newGateForTest(t, robots.GateConfig{Pacer: p})
		gateCheck(t, g, s.url(t, "/"))
		s.set(gateStatus(429, "Retry-After", "1800"))
		clock.Advance(24 * time.Hour)
		p.ready = clock.Now().Add(30 * time.Minute)
		e := gateCheck(t, g, s.url(t, "/")).Entry
		// The host's next slot goes to a page under the stale copy;
		// robots.txt is due a back-off after it, not at the same moment,
		// or a site answering robots.txt with 429 would starve its pages.
		if want := p.ready.Add(robots.DefaultGateRetryMin); e.Outcome != robots.OutcomeStale || !e.Expires.Equal(want) {
			t.Fatalf("entry %+v: want the stale copy, due again a back-off after the host's pause ends (%v)", e, want)
		}
	})
}

// gateReadyPacer is a Pacer that says when a key is next ready.
type gateReadyPacer struct {
	ready time.Time
	asked string
}

func (p *gateReadyPacer) Acquire(ctx context.Context, key string) (robots.Release, error) {
	return func(int, http.Header, time.Duration, error) time.Time {
		p.asked = key
		return p.ready
	}, nil
}

// A Get that returns more than MaxSize+1 bytes: the gate parses MaxSize
// of them and nothing after.
func TestGateOversizeBody(t *testing.T) {
	head := "User-agent: *\nDisallow: /early\n"
	filler := strings.Repeat("# filler line to push the next rules past the limit\n", 2*robots.MaxSize/52)
	body := []byte(head + filler + "Disallow: /late\n")
	get := func(ctx context.Context, rawURL string) (*robots.Response, error) {
		return &robots.Response{Status: 200, Body: body}, nil
	}
	g, _ := newGateForTest(t, robots.GateConfig{Get: get})
	u, _ := url.Parse("http://a.example/early")
	if v := gateCheck(t, g, u); v.Allowed || v.Entry.Outcome != robots.OutcomeOK {
		t.Fatalf("/early: %+v", v)
	}
	u, _ = url.Parse("http://a.example/late")
	if v := gateCheck(t, g, u); !v.Allowed {
		t.Fatal("/late is past MaxSize and must not apply")
	}
}

func TestGateCacheControl(t *testing.T) {
	cases := []struct {
		header string
		want   time.Duration
	}{
		{"max-age=300", 5 * time.Minute},
		{"public, max-age=3600", time.Hour},
		{"max-age=0", robots.DefaultGateMinTTL},
		{"max-age=10", robots.DefaultGateMinTTL},
		{"max-age=864000", 24 * time.Hour},
		{"no-store", robots.DefaultGateMinTTL},
		{"no-cache", robots.DefaultGateMinTTL},
		{"max-age=bogus", 24 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.header, func(t *testing.T) {
			s := newGateSite(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", tc.header)
				io.WriteString(w, "User-agent: *\nDisallow: /x\n")
			})
			g, clock := newGateForTest(t, robots.GateConfig{})
			u := s.url(t, "/x")
			e := gateCheck(t, g, u).Entry
			if got := e.Expires.Sub(gateT0); got != tc.want {
				t.Fatalf("expires after %v, want %v", got, tc.want)
			}
			clock.Set(e.Expires.Add(-time.Nanosecond))
			gateCheck(t, g, u)
			gateWantHits(t, s, 1)
			clock.Set(e.Expires)
			if v := gateCheck(t, g, u); !v.Fetched {
				t.Fatal("expired entry was not refetched")
			}
			gateWantHits(t, s, 2)
		})
	}
}

func TestGateLRUEviction(t *testing.T) {
	a := newGateSite(t, gateBody(""))
	b := newGateSite(t, gateBody(""))
	c := newGateSite(t, gateBody(""))
	g, _ := newGateForTest(t, robots.GateConfig{CacheSize: 2})
	gateCheck(t, g, a.url(t, "/"))
	gateCheck(t, g, b.url(t, "/"))
	gateCheck(t, g, a.url(t, "/")) // a is now the most recently used
	gateCheck(t, g, c.url(t, "/")) // evicts b
	if n := g.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	gateCheck(t, g, a.url(t, "/"))
	gateWantHits(t, a, 1)
	gateCheck(t, g, b.url(t, "/"))
	gateWantHits(t, b, 2)
}

func TestGateSingleFlight(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	s := newGateSite(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "User-agent: *\nDisallow: /no\n")
	})
	g, _ := newGateForTest(t, robots.GateConfig{})
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
	gateWantHits(t, s, 1)
	if n := fetched.Load(); n != 1 {
		t.Fatalf("%d callers reported the fetch, want exactly the one that made it", n)
	}
	if waited.Load() == 0 {
		t.Fatal("no caller reported waiting for the fetch")
	}
}

func TestGateWaiterGivesUpAlone(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	s := newGateSite(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "")
	})
	g, _ := newGateForTest(t, robots.GateConfig{})
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
	gateWantHits(t, s, 1)
}

func TestGateCancelledFetchIsNotCached(t *testing.T) {
	first := make(chan struct{})
	s := newGateSite(t, nil)
	s.set(func(w http.ResponseWriter, r *http.Request) {
		select {
		case first <- struct{}{}: // the first request hangs until cancelled
			<-r.Context().Done()
		default:
			io.WriteString(w, "User-agent: *\nDisallow: /no\n")
		}
	})
	g, _ := newGateForTest(t, robots.GateConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, err := g.Check(ctx, s.url(t, "/no"))
		leader <- err
	}()
	<-first
	waiter := make(chan robots.Verdict, 1)
	go func() { waiter <- gateCheck(t, g, s.url(t, "/no")) }()
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader err = %v, want context.Canceled", err)
	}
	v := <-waiter
	if v.Allowed || v.Entry.Outcome != robots.OutcomeOK {
		t.Fatalf("waiter verdict %+v: the cancelled fetch must not count as unreachable", v)
	}
	gateWantHits(t, s, 2)
}

func TestGateStaleCopyWhileUnreachable(t *testing.T) {
	s := newGateSite(t, gateBody("User-agent: *\nDisallow: /private\n"))
	g, clock := newGateForTest(t, robots.GateConfig{})
	gateCheck(t, g, s.url(t, "/"))

	s.set(gateStatus(503))
	clock.Advance(24 * time.Hour)
	for i := 1; i <= 3; i++ {
		v := gateCheck(t, g, s.url(t, "/public"))
		e := v.Entry
		if !v.Allowed || e.Outcome != robots.OutcomeStale || !e.FetchedAt.Equal(gateT0) || e.Failures != i || !v.RetryAt.IsZero() {
			t.Fatalf("attempt %d: verdict %+v entry %+v", i, v, e)
		}
		if gateCheck(t, g, s.url(t, "/private")).Allowed {
			t.Fatalf("attempt %d: the stale copy's rules were dropped", i)
		}
		clock.Set(e.Expires)
	}
	// Long after 30 days the copy is still what the site last said.
	clock.Advance(40 * 24 * time.Hour)
	if e := gateCheck(t, g, s.url(t, "/")).Entry; e.Outcome != robots.OutcomeStale {
		t.Fatalf("outcome = %v, want stale", e.Outcome)
	}
}

func TestGateAssumesAllowAfter30Days(t *testing.T) {
	s := newGateSite(t, gateStatus(500))
	g, clock := newGateForTest(t, robots.GateConfig{RetryMax: 24 * time.Hour})
	u := s.url(t, "/page")
	for {
		v := gateCheck(t, g, u)
		elapsed := clock.Now().Sub(gateT0)
		if elapsed < robots.DefaultAssumeAllowAfter {
			if v.Allowed || v.Entry.Outcome != robots.OutcomeUnreachable {
				t.Fatalf("after %v: %+v", elapsed, v)
			}
			clock.Set(v.RetryAt)
			continue
		}
		if !v.Allowed || v.Entry.Outcome != robots.OutcomeAssumedAllow || !v.Entry.UnreachableSince.Equal(gateT0) {
			t.Fatalf("after %v: verdict %+v entry %+v", elapsed, v, v.Entry)
		}
		if !v.Entry.Expires.After(clock.Now()) {
			t.Fatal("retries must go on after assuming allow")
		}
		break
	}
	// It recovers like any other failure.
	s.set(gateBody("User-agent: *\nDisallow: /page\n"))
	e, _ := g.Entry(context.Background(), u)
	clock.Set(e.Expires)
	if v := gateCheck(t, g, u); v.Allowed || v.Entry.Outcome != robots.OutcomeOK {
		t.Fatalf("after recovery: %+v", v)
	}
}

// gateRecordingPacer records the gate's use of its Pacer.
type gateRecordingPacer struct {
	mu       sync.Mutex
	calls    []string
	err      error
	observed []int
	headers  []http.Header
	errs     []error
}

func (p *gateRecordingPacer) Acquire(ctx context.Context, key string) (robots.Release, error) {
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

func TestGatePacesFetches(t *testing.T) {
	s := newGateSite(t, gateStatus(503, "Retry-After", "120"))
	p := &gateRecordingPacer{}
	g, _ := newGateForTest(t, robots.GateConfig{Pacer: p})
	gateCheck(t, g, s.url(t, "/"))
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
func TestGatePacesAndObservesEachHop(t *testing.T) {
	cdn := newGateSite(t, gateStatus(503))
	s := newGateSite(t, gateRedirector(cdn.srv.URL+"/robots.txt"))
	p := &gateRecordingPacer{}
	g, _ := newGateForTest(t, robots.GateConfig{Pacer: p})
	if v := gateCheck(t, g, s.url(t, "/")); v.Allowed {
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

func TestGatePacerKeyFunc(t *testing.T) {
	s := newGateSite(t, gateBody(""))
	p := &gateRecordingPacer{}
	var gotURL string
	g, _ := newGateForTest(t, robots.GateConfig{Pacer: p, Key: func(u *url.URL) string {
		gotURL = u.String()
		return "custom-key"
	}})
	gateCheck(t, g, s.url(t, "/"))
	if gotURL != s.srv.URL+"/robots.txt" || p.calls[0] != "wait custom-key" {
		t.Fatalf("key func saw %q; pacer calls %q", gotURL, p.calls)
	}
}

func TestGatePacerErrorIsNotCached(t *testing.T) {
	s := newGateSite(t, gateBody(""))
	p := &gateRecordingPacer{err: context.DeadlineExceeded}
	g, _ := newGateForTest(t, robots.GateConfig{Pacer: p})
	if _, err := g.Check(context.Background(), s.url(t, "/")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if g.Len() != 0 {
		t.Fatal("a fetch that never happened was cached")
	}
	gateWantHits(t, s, 0)
	if fmt.Sprint(p.calls) != "[wait "+s.url(t, "/").Host+"]" {
		t.Fatalf("pacer calls %q: Done without a successful Wait", p.calls)
	}
}

func TestGateRejectsNonHTTP(t *testing.T) {
	g, _ := newGateForTest(t, robots.GateConfig{})
	for raw, want := range map[string]error{
		"ftp://example.com/":   robots.ErrUnsupportedScheme,
		"mailto:a@example.com": robots.ErrUnsupportedScheme,
		"/relative":            robots.ErrUnsupportedScheme,
		"http:///nohost":       robots.ErrNoHost,
	} {
		u, _ := url.Parse(raw)
		if _, err := g.Check(context.Background(), u); !errors.Is(err, want) {
			t.Errorf("Check(%q) err = %v, want %v", raw, err, want)
		}
	}
}

func TestNewGateRejectsBadConfig(t *testing.T) {
	if _, err := robots.NewGate(robots.GateConfig{Agent: "x", Get: gateGet}); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, cfg := range []robots.GateConfig{
		{},
		{Get: gateGet},
		{Agent: "x"}, // the gate has no client of its own
		{Agent: "x", Get: gateGet, TTL: -1},
		{Agent: "x", Get: gateGet, TTL: time.Minute, MinTTL: time.Hour},
		{Agent: "x", Get: gateGet, RetryMin: time.Hour, RetryMax: time.Minute},
	} {
		if _, err := robots.NewGate(cfg); !errors.Is(err, robots.ErrInvalidGateConfig) {
			t.Errorf("NewGate(%+v) err = %v", cfg, err)
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
		{"http://user:pw@example.com/", "http://example.com"},
		{"http://[::1]:8080/", "http://[::1]:8080"},
		{"http://[::1]:80/", "http://[::1]"},
		{"http://[::1]:0080/", "http://[::1]"},
		{"http://[fe80::1%25en0]/", "http://[fe80::1%25en0]"},
		// Names are lower-cased, not mapped: canonical URLs carry punycode.
		{"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example"},
		{"http://BÜCHER.example/", "http://bücher.example"},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		got, err := robots.Authority(u)
		if err != nil || got != tc.want {
			t.Errorf("Authority(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"http://example.com:0/", "http://example.com:99999/"} {
		u, _ := url.Parse(in)
		if _, err := robots.Authority(u); !errors.Is(err, robots.ErrNoHost) {
			t.Errorf("Authority(%s) err = %v, want ErrNoHost", in, err)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[robots.Outcome]string{
		robots.OutcomeOK: "ok", robots.OutcomeUnavailable: "unavailable", robots.OutcomeUnreachable: "unreachable",
		robots.OutcomeStale: "stale", robots.OutcomeAssumedAllow: "assumed-allow", 0: "Outcome(0)",
	} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", o, got, want)
		}
	}
}

func TestGateCachedNeverFetches(t *testing.T) {
	s := newGateSite(t, gateBody("User-agent: *\nDisallow: /x\n"))
	g, _ := newGateForTest(t, robots.GateConfig{})
	u := s.url(t, "/x")
	if e, ok := g.Cached(u); ok || e != nil {
		t.Fatalf("Cached before any Check = %v, %v", e, ok)
	}
	gateWantHits(t, s, 0)
	gateCheck(t, g, u)
	e, ok := g.Cached(u)
	if !ok || e.Outcome != robots.OutcomeOK || e.Group.Allowed("/x") {
		t.Fatalf("Cached after Check = %+v, %v", e, ok)
	}
	gateWantHits(t, s, 1)
}
