package gate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/robots/gate"
)

// fakeGet is a Get that answers from a table and records the URLs asked.
type fakeGet struct {
	mu      sync.Mutex
	asked   []string
	answers map[string]*gate.Response
}

func (f *fakeGet) get(ctx context.Context, rawURL string) (*gate.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, rawURL)
	if r := f.answers[rawURL]; r != nil {
		return r, nil
	}
	return &gate.Response{Status: 404}, nil
}

func redirectTo(status int, loc string) *gate.Response {
	return &gate.Response{Status: status, Header: http.Header{"Location": {loc}}}
}

func TestInjectedGetFollowsRedirects(t *testing.T) {
	f := &fakeGet{answers: map[string]*gate.Response{
		"http://a.example/robots.txt":        redirectTo(301, "/robots-real.txt#frag"),
		"http://a.example/robots-real.txt":   redirectTo(308, "HTTPS://cdn.example:8443/r.txt"),
		"https://cdn.example:8443/r.txt":     {Status: 200, Body: []byte("User-agent: *\nDisallow: /x\n")},
		"http://loop.example/robots.txt":     redirectTo(302, "http://loop.example/robots.txt"),
		"http://ftp.example/robots.txt":      redirectTo(307, "ftp://ftp.example/robots.txt"),
		"http://noloc.example/robots.txt":    {Status: 302},
		"http://choices.example/robots.txt":  redirectTo(300, "http://a.example/robots.txt"),
		"http://badloc.example/robots.txt":   redirectTo(301, "http://[::1/robots.txt"),
		"http://hostless.example/robots.txt": redirectTo(301, "http:///robots.txt"),
	}}
	g, _ := newForTest(t, gate.Config{Get: f.get})
	verdict := func(raw string) gate.Verdict {
		u, _ := url.Parse(raw)
		return check(t, g, u)
	}

	v := verdict("http://a.example/x")
	if v.Allowed || v.Entry.Outcome != gate.OutcomeOK || v.Entry.Authority != "http://a.example" || v.Entry.Status != 200 {
		t.Fatalf("verdict %+v entry %+v: want the CDN's rules for a.example", v, v.Entry)
	}
	want := "[http://a.example/robots.txt http://a.example/robots-real.txt https://cdn.example:8443/r.txt]"
	if fmt.Sprint(f.asked) != want {
		t.Fatalf("asked %v, want %v", f.asked, want)
	}

	f.asked = nil
	if v := verdict("http://loop.example/"); !v.Allowed || !errors.Is(v.Entry.Err, gate.ErrTooManyRedirects) || len(f.asked) != gate.MaxRedirects+1 {
		t.Fatalf("loop: verdict %+v entry %+v after %d requests", v, v.Entry, len(f.asked))
	}
	if v := verdict("http://ftp.example/"); !v.Allowed || !errors.Is(v.Entry.Err, gate.ErrRedirectScheme) {
		t.Fatalf("ftp: entry %+v", v.Entry)
	}
	for _, host := range []string{"noloc", "choices", "badloc", "hostless"} {
		v := verdict("http://" + host + ".example/")
		if !v.Allowed || v.Entry.Outcome != gate.OutcomeUnavailable || v.Entry.Status/100 != 3 {
			t.Errorf("%s: entry %+v, want an unfollowed 3xx: unavailable", host, v.Entry)
		}
	}
}

func TestInjectedGetTruncatedBody(t *testing.T) {
	// A body that shrank in decoding: Truncated says a line was cut.
	f := &fakeGet{answers: map[string]*gate.Response{
		"http://a.example/robots.txt": {Status: 200, Body: []byte("User-agent: *\nAllow: /\nDisallow: /pri"), Truncated: true},
	}}
	g, _ := newForTest(t, gate.Config{Get: f.get})
	u, _ := url.Parse("http://a.example/private")
	if v := check(t, g, u); !v.Allowed {
		t.Fatal("the cut Disallow line applied")
	}
}

// slowPacer takes its time before every request but the first: a host
// paced seconds apart.
type slowPacer struct {
	delay time.Duration
	calls atomic.Int32
}

func (p *slowPacer) Acquire(ctx context.Context, key string) (gate.Release, error) {
	release := func(int, http.Header, time.Duration, error) time.Time { return time.Time{} }
	if p.calls.Add(1) == 1 {
		return release, nil
	}
	t := time.NewTimer(p.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// The Timeout is for each request; the pacer's wait before the next
// redirect hop is not part of it (crawl -delay 1.5s -timeout 1s, robots.txt
// redirected on the same host, once read the site as unreachable).
func TestTimeoutExcludesPacerWait(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/robots.txt", http.RedirectHandler("/robots-real.txt", http.StatusMovedPermanently))
	mux.HandleFunc("/robots-real.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("User-agent: *\nDisallow: /x\n"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/x")
	const timeout = 500 * time.Millisecond
	p := &slowPacer{delay: 2 * timeout}
	g, _ := newForTest(t, gate.Config{Pacer: p, Timeout: timeout})
	v := check(t, g, u)
	if v.Allowed || v.Entry.Outcome != gate.OutcomeOK || v.Entry.Err != nil {
		t.Fatalf("verdict %+v entry %+v: the wait for the pacer made robots.txt time out", v, v.Entry)
	}
	if n := p.calls.Load(); n != 2 {
		t.Fatalf("pacer waited %d times, want one per request", n)
	}
}

func TestObservesEveryAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	refused, _ := url.Parse(srv.URL + "/page")
	srv.Close()
	p := &recordingPacer{}
	g, _ := newForTest(t, gate.Config{Pacer: p})
	check(t, g, refused)
	if fmt.Sprint(p.calls) != fmt.Sprint([]string{"wait " + refused.Host, "observe " + refused.Host, "done " + refused.Host}) {
		t.Fatalf("pacer calls %q: a transport error must be observed too", p.calls)
	}
	if p.observed[0] != 0 || p.errs[0] == nil {
		t.Fatalf("observed status %v err %v, want 0 and the error", p.observed, p.errs)
	}
}

func TestPanickingGetReleasesWaiters(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	get := func(ctx context.Context, rawURL string) (*gate.Response, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
			panic("bug in Get")
		}
		return &gate.Response{Status: 200, Body: []byte("User-agent: *\nDisallow: /x\n")}, nil
	}
	g, clock := newForTest(t, gate.Config{Get: get})
	u, _ := url.Parse("http://a.example/x")

	const waiters = 5
	results := make(chan gate.Verdict, waiters+1)
	go func() { results <- check(t, g, u) }()
	<-entered
	var started sync.WaitGroup
	started.Add(waiters)
	for range waiters {
		go func() {
			started.Done()
			results <- check(t, g, u)
		}()
	}
	started.Wait()
	close(release)
	for range waiters + 1 {
		v := <-results
		if v.Allowed || v.Entry.Outcome != gate.OutcomeUnreachable || !errors.Is(v.Entry.Err, gate.ErrFetchPanicked) || v.RetryAt.IsZero() {
			t.Fatalf("verdict %+v entry %+v", v, v.Entry)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("Get called %d times, want 1", n)
	}
	// The next retry fetches again.
	e, _ := g.Cached(u)
	clock.Set(e.Expires)
	if v := check(t, g, u); v.Allowed || v.Entry.Outcome != gate.OutcomeOK {
		t.Fatalf("after the retry: %+v", v.Entry)
	}
}

func TestCacheBytes(t *testing.T) {
	body := "User-agent: *\nDisallow: /x\n" + strings.Repeat("# padding\n", 1000) // ~10 KB
	f := &fakeGet{answers: map[string]*gate.Response{}}
	for _, h := range []string{"a", "b", "c"} {
		f.answers["http://"+h+".example/robots.txt"] = &gate.Response{Status: 200, Body: []byte(body)}
	}
	g, _ := newForTest(t, gate.Config{Get: f.get, CacheBytes: int64(2*len(body) + 2000)})
	at := func(h string) *url.URL {
		u, _ := url.Parse("http://" + h + ".example/x")
		return u
	}
	check(t, g, at("a"))
	check(t, g, at("b"))
	check(t, g, at("a")) // a is the most recently used
	check(t, g, at("c")) // b no longer fits
	if n := g.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2: three bodies do not fit", n)
	}
	if _, ok := g.Cached(at("b")); ok {
		t.Fatal("b, the least recently used, was kept")
	}
	if _, ok := g.Cached(at("a")); !ok {
		t.Fatal("a was evicted")
	}

	// An entry larger than the whole budget still stays, alone.
	small, _ := newForTest(t, gate.Config{Get: f.get, CacheBytes: 100})
	check(t, small, at("a"))
	check(t, small, at("b"))
	if _, ok := small.Cached(at("b")); !ok || small.Len() != 1 {
		t.Fatalf("Len = %d: want the entry just fetched, alone", small.Len())
	}
}

func TestHostIdentity(t *testing.T) {
	f := &fakeGet{answers: map[string]*gate.Response{
		"http://xn--bcher-kva.example/robots.txt": {Status: 200, Body: []byte("User-agent: *\nDisallow: /x\n")},
	}}
	var seen []string
	host := func(u *url.URL) string {
		seen = append(seen, u.Host)
		return strings.ReplaceAll(strings.ToLower(u.Host), "bücher", "xn--bcher-kva")
	}
	g, _ := newForTest(t, gate.Config{Get: f.get, Host: host})
	for _, raw := range []string{"http://BÜCHER.example/x", "http://xn--bcher-kva.example/x"} {
		u, _ := url.Parse(raw)
		v := check(t, g, u)
		if v.Allowed || v.Entry.Authority != "http://xn--bcher-kva.example" {
			t.Fatalf("%s: verdict %+v entry %+v", raw, v, v.Entry)
		}
	}
	if len(f.asked) != 1 || len(seen) != 2 {
		t.Fatalf("asked %v, Host saw %v: one identity, one fetch", f.asked, seen)
	}
	u, _ := url.Parse("http://nohost.example/")
	empty, _ := newForTest(t, gate.Config{Get: f.get, Host: func(*url.URL) string { return "" }})
	if _, err := empty.Check(context.Background(), u); !errors.Is(err, gate.ErrNoHost) {
		t.Fatalf("err = %v, want ErrNoHost", err)
	}
}

func TestNewRejectsNegativeCacheBytes(t *testing.T) {
	if _, err := gate.New(gate.Config{Agent: "x", Get: httpGet, CacheBytes: -1}); !errors.Is(err, gate.ErrInvalidConfig) {
		t.Errorf("New with CacheBytes -1: err = %v", err)
	}
}
