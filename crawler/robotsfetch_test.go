package crawler

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/internal/hostid"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots/gate"
)

const robotsFetchRules = "User-agent: *\nDisallow: /private\n"

func robotsSite(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func robotsEntry(t *testing.T, srv *httptest.Server, opts ...Option) *gate.Entry {
	t.Helper()
	c, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.RobotsEntry(context.Background(), srv.URL+"/page")
	if err != nil {
		t.Fatalf("RobotsEntry: %v", err)
	}
	return e
}

func wantPrivateDisallowed(t *testing.T, e *gate.Entry) {
	t.Helper()
	if e.Outcome != gate.OutcomeOK || e.Group.Allowed("/private/x") || !e.Group.Allowed("/public") {
		t.Fatalf("entry %+v: want the file's rules (outcome ok, /private disallowed)", e)
	}
}

func gzipBytes(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(text))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRobotsEntryGzip(t *testing.T) {
	body := gzipBytes(t, robotsFetchRules)
	srv := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		// Sent whatever the request asked for.
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(body)
	})
	wantPrivateDisallowed(t, robotsEntry(t, srv))
}

func TestRobotsEntryUTF16WithBOM(t *testing.T) {
	body := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(robotsFetchRules)) {
		body = append(body, byte(u), byte(u>>8))
	}
	for _, ctype := range []string{"text/plain", "text/plain; charset=utf-16", "", "application/octet-stream"} {
		t.Run(ctype, func(t *testing.T) {
			srv := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{ctype}
				if ctype == "" {
					w.Header()["Content-Type"] = nil // sniffed
				}
				w.Write(body)
			})
			wantPrivateDisallowed(t, robotsEntry(t, srv))
		})
	}
}

func TestRobotsEntryFollowsRedirect(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/robots.txt", http.RedirectHandler("/robots-real.txt", http.StatusMovedPermanently))
	mux.HandleFunc("/robots-real.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(robotsFetchRules))
	})
	srv := robotsSite(t, mux.ServeHTTP)
	e := robotsEntry(t, srv)
	wantPrivateDisallowed(t, e)
	if e.URL != srv.URL+"/robots.txt" || e.Authority != srv.URL {
		t.Fatalf("URL = %q, authority %q: want the robots.txt asked for, under the site's authority", e.URL, e.Authority)
	}
}

func TestRobotsEntryHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		select { // headers never come
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	start := time.Now()
	e := robotsEntry(t, srv, WithHeaderTimeout(100*time.Millisecond), WithFetchTimeout(time.Minute))
	if e.Outcome != gate.OutcomeUnreachable || !errors.Is(e.Err, fetch.ErrHeaderTimeout) {
		t.Fatalf("entry %+v, want unreachable after the header timeout", e)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("took %v: the header timeout did not cut the wait", d)
	}
}

func TestRobotsEntryRejectsNonHTTP(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RobotsEntry(context.Background(), "ftp://example.com/"); err == nil {
		t.Fatal("ftp URL accepted")
	}
}

// policyPacer paces the robots gate the way the crawler's lease pacer
// does, with a ratelimit.Policy over a ratelimit.HostState per key (kept
// here rather than in a frontier): Acquire waits, on the real clock, until
// the key's NextAllowed, and the release records the answer and returns
// when the key may be asked again.
type policyPacer struct {
	pol *ratelimit.Policy
	now func() time.Time

	mu    sync.Mutex
	hosts map[string]*ratelimit.HostState
}

func newPolicyPacer(t *testing.T, cfg ratelimit.Config, now func() time.Time) *policyPacer {
	t.Helper()
	pol, err := ratelimit.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &policyPacer{pol: pol, now: now, hosts: map[string]*ratelimit.HostState{}}
}

func (p *policyPacer) host(key string) *ratelimit.HostState {
	h := p.hosts[key]
	if h == nil {
		h = &ratelimit.HostState{}
		p.hosts[key] = h
	}
	return h
}

func (p *policyPacer) readyAt(key string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.host(key).NextAllowed
}

func (p *policyPacer) Acquire(ctx context.Context, key string) (gate.Release, error) {
	if wait := p.readyAt(key).Sub(p.now()); wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
	return func(status int, header http.Header, rtt time.Duration, err error) time.Time {
		p.mu.Lock()
		defer p.mu.Unlock()
		h, now := p.host(key), p.now()
		h.NextAllowed = now.Add(p.pol.Observe(key, h, now, answer(status, header, rtt, err)))
		return h.NextAllowed
	}, nil
}

// A host paced 600 ms apart whose robots.txt redirects on the same host,
// with a 300 ms timeout: the wait for the second hop is pacing, not part of
// the request (crawl -delay 1.5s -timeout 1s once read such a site as
// unreachable, so disallowed).
func TestRobotsGatePacingIsNotTimedOut(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/robots.txt", http.RedirectHandler("/robots-real.txt", http.StatusMovedPermanently))
	mux.HandleFunc("/robots-real.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(robotsFetchRules))
	})
	srv := robotsSite(t, mux.ServeHTTP)
	c, err := New(WithFetchTimeout(300 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	pacer := newPolicyPacer(t, ratelimit.Config{MinDelay: 600 * time.Millisecond}, time.Now)
	g, err := newRobotsGate(&c.cfg, crawlFetcher(&c.cfg, &fetch.AddressPolicy{AllowAll: true}), pacer, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL + "/private/x")
	start := time.Now()
	v, err := g.Check(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	if v.Allowed || v.Entry.Outcome != gate.OutcomeOK || v.Entry.Err != nil {
		t.Fatalf("verdict %+v entry %+v", v, v.Entry)
	}
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Fatalf("took %v: the second hop was not paced", d)
	}
}

// A 503 with Retry-After on robots.txt pauses the host through the pacer,
// pages included, even while the stale copy still allows them; the gate
// retries robots.txt a back-off after the pause ends.
func TestRobotsGateRetryAfterRestsHost(t *testing.T) {
	down := make(chan struct{})
	srv := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-down:
			w.Header().Set("Retry-After", "1200")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.Write([]byte(robotsFetchRules))
		}
	})
	clock := fakeclock.New(time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC))
	c, err := New(WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	pacer := newPolicyPacer(t, ratelimit.Config{MinDelay: time.Second}, clock.Now)
	g, err := newRobotsGate(&c.cfg, crawlFetcher(&c.cfg, &fetch.AddressPolicy{AllowAll: true}), pacer, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL + "/public")
	if v, err := g.Check(context.Background(), u); err != nil || !v.Allowed {
		t.Fatalf("first fetch: %+v, %v", v, err)
	}
	close(down)
	clock.Advance(gate.DefaultTTL)
	v, err := g.Check(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Allowed || v.Entry.Outcome != gate.OutcomeStale {
		t.Fatalf("verdict %+v entry %+v: want the stale copy", v, v.Entry)
	}
	want := clock.Now().Add(20 * time.Minute)
	if at := pacer.readyAt(hostid.Key(u)); at.Before(want) {
		t.Fatalf("host ready at %v, want it paused until %v by Retry-After", at, want)
	}
	// Its pages go first, under the stale copy; robots.txt is asked again
	// a back-off after the pause.
	if want := pacer.readyAt(hostid.Key(u)).Add(gate.DefaultRetryMin); !v.Entry.Expires.Equal(want) {
		t.Fatalf("robots.txt due again at %v, want a back-off after the pause ends (%v)", v.Entry.Expires, want)
	}
}

// A robots.txt that redirects to another host: the request to the item's
// own host is made at once under the item's lease (a crawl that waited for
// a second lease of a key it holds would never end), and the hop to the
// other host under a lease of that host's key, so it keeps that host's
// pace with the host's own requests. The rules found apply to the first.
func TestRobotsRedirectHopIsPacedAsItsOwnHost(t *testing.T) {
	const delay = 300 * time.Millisecond
	var mu sync.Mutex
	var asked []time.Time
	var paths []string
	other := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked, paths = append(asked, time.Now()), append(paths, r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/robots.txt":
			w.Write([]byte("User-agent: *\nAllow: /\n"))
		case "/shared/robots.txt":
			w.Write([]byte(robotsFetchRules))
		default:
			w.Write([]byte("<html><body>other</body></html>"))
		}
	})
	var firstAsked []string
	first := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		firstAsked = append(firstAsked, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, other.URL+"/shared/robots.txt", http.StatusMovedPermanently)
			return
		}
		w.Write([]byte("<html><body>first</body></html>"))
	})
	c, err := New(WithDelay(delay), WithSitemaps(false))
	if err != nil {
		t.Fatal(err)
	}
	var disallowed []string
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why DisallowReason) {
		mu.Lock()
		disallowed = append(disallowed, u.String())
		mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Run(ctx, first.URL+"/private/x", first.URL+"/", other.URL+"/", other.URL+"/a", other.URL+"/b"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(disallowed) != "["+first.URL+"/private/x]" || slices.Contains(firstAsked, "/private/x") {
		t.Fatalf("disallowed %q, first host asked %q: want the other host's rules applied to the first", disallowed, firstAsked)
	}
	if n := strings.Count(strings.Join(paths, " "), "/shared/robots.txt"); n != 1 || len(paths) != 5 {
		t.Fatalf("other host asked %q, want its robots.txt, the hop and its three pages", paths)
	}
	for i := 1; i < len(asked); i++ {
		if gap := asked[i].Sub(asked[i-1]); gap < delay*9/10 {
			t.Errorf("other host: %s %v after %s, want at least the delay %v: the hop was not paced as that host's request", paths[i], gap.Round(time.Millisecond), paths[i-1], delay)
		}
	}
}
