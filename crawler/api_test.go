package crawler_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
)

// A zero Crawler is usable: its methods answer as a New() Crawler's do
// before Run, and it crawls with the defaults (a second between requests
// to the site: this test takes a few seconds).
func TestZeroCrawler(t *testing.T) {
	var mu sync.Mutex
	var agents []string
	home := htmlPage("home", "/private/x")
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.UserAgent())
		mu.Unlock()
		home(w, r)
	}})
	var c crawler.Crawler
	def, err := crawler.New()
	if err != nil {
		t.Fatal(err)
	}
	if c.Agent() != def.Agent() || c.UserAgent() != def.UserAgent() {
		t.Errorf("zero Crawler: agent %q, User-Agent %q; want New()'s %q, %q", c.Agent(), c.UserAgent(), def.Agent(), def.UserAgent())
	}
	ctx := context.Background()
	if st, err := c.Stats(ctx); err != nil || st.Pages != 0 {
		t.Errorf("Stats before Run = %+v, %v", st, err)
	}
	if _, err := c.Host(ctx, s.URL+"/"); !errors.Is(err, crawler.ErrNotRunning) {
		t.Errorf("Host before Run: %v, want ErrNotRunning", err)
	}
	if err := c.Enqueue(ctx, s.URL+"/", nil, nil); !errors.Is(err, crawler.ErrNotRunning) {
		t.Errorf("Enqueue before Run: %v, want ErrNotRunning", err)
	}
	var pages, disallowed []string
	c.OnPage(func(_ context.Context, p *crawler.Page) {
		mu.Lock()
		pages = append(pages, p.URL.Path)
		mu.Unlock()
	})
	c.OnDisallowed(func(_ context.Context, u *url.URL, _ crawler.DisallowReason) {
		mu.Lock()
		disallowed = append(disallowed, u.Path)
		mu.Unlock()
	})
	runCrawl(t, &c, s.URL+"/")
	if !slices.Equal(pages, []string{"/"}) || !slices.Equal(disallowed, []string{"/private/x"}) {
		t.Errorf("pages %v, disallowed %v; want [/] and [/private/x]", pages, disallowed)
	}
	if !slices.Equal(agents, []string{def.UserAgent()}) {
		t.Errorf("User-Agents sent %q, want %q", agents, def.UserAgent())
	}
}

// Hooks registered during Run take effect for the URLs handled after
// them; none is dropped. With one request per host at a time, the
// links of / are fetched only once /'s handlers have returned.
func TestHooksRegisteredDuringRun(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  htmlPage("home", "/a", "/b"),
		"/a": htmlPage("a", "/x", "/gone"),
		"/b": htmlPage("b", "/y", "/z"),
		"/z": func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }, // a connection cut: an error
		"/x": htmlPage("x"),
		"/y": htmlPage("y"),
	})
	c := newCrawler(t, crawler.WithRetries(0))
	var mu sync.Mutex
	var late, titles []string
	var errs []string
	register := sync.OnceFunc(func() {
		c.OnPage(func(_ context.Context, p *crawler.Page) {
			mu.Lock()
			late = append(late, p.URL.Path)
			mu.Unlock()
		})
		c.OnHTML(selector(t, "title"), func(_ context.Context, e *crawler.Element) {
			mu.Lock()
			titles = append(titles, e.Text)
			mu.Unlock()
		})
		c.OnError(func(_ context.Context, u *url.URL, err error) {
			mu.Lock()
			errs = append(errs, u.Path)
			mu.Unlock()
		})
		c.Filter(func(u, _ *url.URL, _ int) bool { return u.Path != "/x" })
	})
	c.OnPage(func(_ context.Context, p *crawler.Page) {
		if p.URL.Path == "/" {
			register()
		}
	})
	runCrawl(t, c, s.URL+"/")
	slices.Sort(late)
	slices.Sort(titles)
	if want := []string{"/a", "/b", "/gone", "/y"}; !slices.Equal(late, want) {
		t.Errorf("OnPage registered during Run saw %v, want %v", late, want)
	}
	// OnHTML handlers run after a page's OnPage handlers: /'s too.
	if want := []string{"a", "b", "home", "y"}; !slices.Equal(titles, want) {
		t.Errorf("OnHTML registered during Run saw titles %v, want %v", titles, want)
	}
	if s.count("/x") != 0 || statsOf(t, c).SkippedLinks["filter"] != 1 {
		t.Errorf("Filter registered during Run: /x requested %d times, Skipped[filter] = %d; want 0 and 1", s.count("/x"), statsOf(t, c).SkippedLinks["filter"])
	}
	if !slices.Equal(errs, []string{"/z"}) {
		t.Errorf("OnError registered during Run saw %v, want [/z]", errs)
	}
}

// The zero Canonicalizer is the default one: URLs that differ only in
// their query's order are one URL, fetched once.
func TestZeroCanonicalizerSortsQuery(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":          htmlPage("home", "/q?b=2&a=1", "/q?a=1&b=2"),
		"/q?a=1&b=2": htmlPage("q"),
	})
	c := newCrawler(t, crawler.WithCanonicalizer(frontier.Canonicalizer{}))
	runCrawl(t, c, s.URL+"/")
	var q []string
	for _, target := range s.targets() {
		if strings.HasPrefix(target, "/q") {
			q = append(q, target)
		}
	}
	if !slices.Equal(q, []string{"/q?a=1&b=2"}) {
		t.Errorf("requests for /q: %q, want the one sorted", q)
	}
	kept := newCrawler(t, crawler.WithCanonicalizer(frontier.Canonicalizer{KeepQueryOrder: true}))
	s2 := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": htmlPage("home", "/q?b=2&a=1", "/q?a=1&b=2")})
	runCrawl(t, kept, s2.URL+"/")
	if s2.count("/q?b=2&a=1") != 1 || s2.count("/q?a=1&b=2") != 1 {
		t.Errorf("KeepQueryOrder: server saw %q, want both orders once", s2.targets())
	}
}
