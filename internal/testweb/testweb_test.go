package testweb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temoto/robotstxt"
)

func newVirtual(t *testing.T, cfg Config) *Virtual {
	t.Helper()
	v, err := NewVirtual(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

func fetchedPages(entries []Entry, w *Web) map[string]bool {
	out := make(map[string]bool)
	for _, e := range entries {
		target, _ := requestTarget(e.Target)
		h := w.byAuthority[e.Host]
		switch {
		case target == robotsPath, target == robotsMovedPath,
			h.hasSitemaps() && (target == sitemapIndexPath || target == sitemapGzipPath || target == sitemapTextPath):
			continue
		}
		out["http://"+e.Host+target] = true
	}
	return out
}

// TestTruthMatchesPoliteCrawl crawls webs with an independent polite
// crawler and checks that it fetches exactly Truth.Reachable, at exactly
// Truth.Depth, in exactly Truth.Requests requests per host, and that the
// analysis finds nothing wrong.
func TestTruthMatchesPoliteCrawl(t *testing.T) {
	for _, cfg := range []Config{
		{Hosts: 6, PagesPerHost: 40, Seed: 1},
		{Hosts: 5, PagesPerHost: 23, Seed: 7, BodyBytes: -1},
		{Hosts: 3, PagesPerHost: 30, Seed: 2}, // no special hosts
		{Hosts: 1, PagesPerHost: 1},
	} {
		t.Run(fmt.Sprintf("%dx%d", cfg.Hosts, cfg.PagesPerHost), func(t *testing.T) {
			v := newVirtual(t, cfg)
			truth, err := v.Truth()
			if err != nil {
				t.Fatal(err)
			}
			c := newNaiveCrawler(t, v.Client())
			c.crawl(v.Web.Seeds())

			entries := v.Log.Entries()
			got := slices.Sorted(maps.Keys(fetchedPages(entries, v.Web)))
			if !slices.Equal(got, truth.Reachable) {
				t.Errorf("polite crawl fetched %d pages, truth says %d reachable\nfetched: %v\ntruth:   %v", len(got), len(truth.Reachable), got, truth.Reachable)
			}
			for u, d := range c.depth {
				if truth.Depth[u] != d {
					t.Errorf("%s fetched at depth %d, truth says %d", u, d, truth.Depth[u])
				}
			}
			perHost := make(map[string]int)
			for _, e := range entries {
				perHost[e.Host]++
			}
			if !maps.Equal(perHost, truth.Requests) {
				t.Errorf("requests per host %v, truth says %v", perHost, truth.Requests)
			}
			r := truth.Analyze(entries, AnalyzeOptions{})
			if err := r.Check(); err != nil {
				t.Errorf("polite crawl judged impolite or incomplete: %v\n%s", err, r)
			}
			if r.Coverage != 1 || r.ReachableFetched != len(truth.Reachable) {
				t.Errorf("coverage %v (%d/%d)", r.Coverage, r.ReachableFetched, r.ReachableTotal)
			}
			if cfg.PagesPerHost >= 20 {
				for name, n := range map[string]int{
					"SitemapOnly": len(truth.SitemapOnly), "NofollowOnly": len(truth.NofollowOnly),
					"Disallowed": len(truth.Disallowed), "Spellings": len(truth.Spellings), "NoIndex": len(truth.NoIndex),
					"SitemapOnlyFetched": r.SitemapOnlyFetched,
				} {
					if n == 0 {
						t.Errorf("%s is empty; the web should exercise it", name)
					}
				}
			}
		})
	}
}

func TestTruthSeedHostsOnlyAndNoSitemaps(t *testing.T) {
	v := newVirtual(t, Config{Hosts: 6, PagesPerHost: 30, Seed: 3})
	seed := v.Web.Seeds()[0]
	truth, err := v.Web.Truth(TruthOptions{Seeds: []string{seed}, SeedHostsOnly: true, NoSitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(truth.SitemapOnly) != 0 {
		t.Errorf("SitemapOnly = %v without sitemaps", truth.SitemapOnly)
	}
	host := v.Web.Hosts()[0].Authority
	for _, u := range truth.Reachable {
		if !strings.HasPrefix(u, "http://"+host+"/") {
			t.Errorf("%s reachable outside the seed host", u)
		}
	}
	if got, want := truth.Requests, map[string]int{host: len(truth.Reachable) + 1}; !maps.Equal(got, want) {
		t.Errorf("Requests = %v, want %v", got, want)
	}
	c := newNaiveCrawler(t, v.Client())
	c.sitemaps = false
	c.crawl([]string{seed})
	r := truth.Analyze(v.Log.Entries(), AnalyzeOptions{})
	// The naive crawler follows cross-host links, which this truth does not:
	// coverage is still complete.
	if len(r.Missing) != 0 {
		t.Errorf("missing %v", r.Missing)
	}
	if _, err := v.Web.Truth(TruthOptions{Seeds: []string{"http://h000.test/nope"}}); !errors.Is(err, ErrNotInWeb) {
		t.Errorf("unknown seed: err = %v, want ErrNotInWeb", err)
	}
}

// TestRudeCrawlsAreCaught turns off each courtesy of the naive crawler and
// checks that the analysis reports the matching offence.
func TestRudeCrawlsAreCaught(t *testing.T) {
	cfg := Config{Hosts: 6, PagesPerHost: 40, Seed: 5}
	for _, tc := range []struct {
		name  string
		rude  func(*naiveCrawler)
		count func(*Report) int
	}{
		{"ignores robots", func(c *naiveCrawler) { c.obeyRobots = false }, func(r *Report) int { return len(r.RobotsViolations) }},
		{"ignores robots: 503 host", func(c *naiveCrawler) { c.obeyRobots = false }, func(r *Report) int { return len(r.UnavailableHostFetches) }},
		{"ignores nofollow", func(c *naiveCrawler) { c.obeyNofollow = false }, func(r *Report) int { return len(r.NofollowOnlyFetched) }},
		{"no normalisation", func(c *naiveCrawler) { c.canonical = false }, func(r *Report) int { return len(r.Duplicates) }},
		{"ignores base href", func(c *naiveCrawler) { c.useBase = false }, func(r *Report) int { return len(r.NotFound) }},
		{"no sitemaps", func(c *naiveCrawler) { c.sitemaps = false }, func(r *Report) int { return len(r.Missing) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVirtual(t, cfg)
			truth, err := v.Truth()
			if err != nil {
				t.Fatal(err)
			}
			c := newNaiveCrawler(t, v.Client())
			tc.rude(c)
			c.crawl(v.Web.Seeds())
			r := truth.Analyze(v.Log.Entries(), AnalyzeOptions{})
			if tc.count(r) == 0 {
				t.Errorf("offence not detected:\n%s", r)
			}
			if r.Check() == nil {
				t.Errorf("Check() = nil for a rude crawl:\n%s", r)
			}
		})
	}
}

func TestTrapIsBoundedByDepth(t *testing.T) {
	v := newVirtual(t, Config{Hosts: 4, PagesPerHost: 25, Trap: true, Seed: 9})
	truth, err := v.Truth()
	if err != nil {
		t.Fatal(err)
	}
	if truth.Trap != "http://h000.test/cal/2025/01" {
		t.Fatalf("Trap = %q", truth.Trap)
	}
	c := newNaiveCrawler(t, v.Client())
	c.maxDepth = truth.MaxDepth
	c.crawl(v.Web.Seeds())
	r := truth.Analyze(v.Log.Entries(), AnalyzeOptions{})
	if err := r.Check(); err != nil {
		t.Errorf("depth-limited crawl with MaxDepth %d: %v", truth.MaxDepth, err)
	}
	// The entry is at depth 1; each month further away is one deeper, in
	// both directions.
	if want := 2*(truth.MaxDepth-1) + 1; r.TrapFetches != want {
		t.Errorf("TrapFetches = %d, want %d for max depth %d", r.TrapFetches, want, truth.MaxDepth)
	}
}

// TestRobotsRulesAgreeWithTemoto checks the judge's robots matcher against
// an independent parser on every URL the web links to.
func TestRobotsRulesAgreeWithTemoto(t *testing.T) {
	v := newVirtual(t, Config{Hosts: 6, PagesPerHost: 60, Seed: 11})
	truth, err := v.Truth()
	if err != nil {
		t.Fatal(err)
	}
	urls := append(slices.Clone(truth.Reachable), truth.Disallowed...)
	urls = append(urls, truth.NofollowOnly...)
	checked := 0
	for _, u := range urls {
		e := Entry{Host: strings.Split(strings.TrimPrefix(u, "http://"), "/")[0]}
		e.Target = strings.TrimPrefix(u, "http://"+e.Host)
		status, body, _ := v.Web.Robots(e.Host)
		if status == 301 {
			status = 200
		}
		rd, err := robotstxt.FromStatusAndBytes(status, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := v.Web.Disallowed(u), !rd.TestAgent(e.Target, "somebot"); got != want {
			t.Errorf("Disallowed(%s) = %v, temoto says %v", u, got, want)
		}
		checked++
	}
	if len(truth.Disallowed) == 0 || checked < 100 {
		t.Errorf("checked only %d URLs (%d disallowed)", checked, len(truth.Disallowed))
	}
}

func TestSpecialHosts(t *testing.T) {
	v := newVirtual(t, Config{Hosts: 4, PagesPerHost: 10, CrawlDelay: 1500 * time.Millisecond})
	client := v.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct {
		kind   HostKind
		status int
		delay  time.Duration
	}{
		{HostNormal, 200, 1500 * time.Millisecond},
		{HostRobotsRedirect, 301, 1500 * time.Millisecond},
		{HostRobotsNotFound, 404, 0},
		{HostRobotsUnavailable, 503, 0},
	} {
		h, ok := v.Web.HostOfKind(tc.kind)
		if !ok {
			t.Fatalf("no %v host", tc.kind)
		}
		if h.CrawlDelay != tc.delay {
			t.Errorf("%v host: CrawlDelay = %v, want %v", tc.kind, h.CrawlDelay, tc.delay)
		}
		resp, err := client.Get("http://" + h.Authority + "/robots.txt")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%v host: robots.txt status %d, want %d", tc.kind, resp.StatusCode, tc.status)
		}
		if tc.status == 200 && !strings.Contains(string(body), "Crawl-delay: 1.5") {
			t.Errorf("%v host: robots.txt lacks the Crawl-delay:\n%s", tc.kind, body)
		}
		if tc.status == 301 && resp.Header.Get("Location") != "/config/robots.txt" {
			t.Errorf("redirect host: Location %q", resp.Header.Get("Location"))
		}
	}
	if _, err := client.Get("http://example.com/"); !errors.Is(err, ErrUnknownHost) {
		t.Errorf("GET outside the web: err = %v, want ErrUnknownHost", err)
	}
	if _, err := New(Config{Hosts: 2, PagesPerHost: 1}, []string{"a.test", "A.test"}); !errors.Is(err, ErrConfig) {
		t.Errorf("non-canonical authority: err = %v, want ErrConfig", err)
	}
	if _, err := New(Config{Hosts: 0, PagesPerHost: 1}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("no hosts: err = %v, want ErrConfig", err)
	}
}

// TestDeterministic renders every page of two webs from the same Config and
// compares them; a different Seed must change the web.
func TestDeterministic(t *testing.T) {
	render := func(cfg Config) string {
		w, err := New(cfg, VirtualAuthorities(cfg.Hosts))
		if err != nil {
			t.Fatal(err)
		}
		hd := w.Handler(nil)
		var all bytes.Buffer
		for _, h := range w.hosts {
			for _, p := range h.pages {
				rec := httptest.NewRecorder()
				hd.ServeHTTP(rec, httptest.NewRequest("GET", h.url(p.target), nil))
				fmt.Fprintf(&all, "%s %d %s\n", h.url(p.target), rec.Code, rec.Body)
			}
		}
		return all.String()
	}
	cfg := Config{Hosts: 5, PagesPerHost: 30, Seed: 42}
	a, b := render(cfg), render(cfg)
	if a != b {
		t.Error("same Config rendered two different webs")
	}
	cfg.Seed++
	if render(cfg) == a {
		t.Error("a different Seed rendered the same web")
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://h.test", "http://h.test/"},
		{"HTTP://H.Test:80/p/1#frag", "http://h.test/p/1"},
		{"http://h.test/p/%31", "http://h.test/p/1"},
		{"http://h.test/p/1?", "http://h.test/p/1"},
		{"http://h.test/q?id=3&cat=1", "http://h.test/q?cat=1&id=3"},
		{"http://h.test/a/./b/../c", "http://h.test/a/c"},
		{"http://h.test/a/%2f%7e", "http://h.test/a/%2F~"},
		{"https://h.test:443/", "https://h.test/"},
		{"http://127.0.1.2:8080/x?b=%41", "http://127.0.1.2:8080/x?b=A"},
	} {
		got, err := Canonical(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := Canonical("/relative"); !errors.Is(err, ErrNotAbsolute) {
		t.Errorf("relative URL: err = %v, want ErrNotAbsolute", err)
	}
}

func TestMatchPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, target string
		want            bool
	}{
		{"/private/", "/private/3", true},
		{"/private/", "/privat", false},
		{"/*.pdf$", "/files/8.pdf", true},
		{"/*.pdf$", "/files/8.pdf?page=2", false},
		{"/*?sort=", "/p/2?sort=asc", true},
		{"/*?sort=", "/p/2", false},
		{"/a*b*c$", "/axxbyyc", true},
		{"/a*b*c$", "/axxbyycd", false},
		{"/$", "/", true},
		{"/$", "/x", false},
	} {
		if got := matchPattern(tc.pattern, tc.target); got != tc.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", tc.pattern, tc.target, got, tc.want)
		}
	}
	if !allowed(starRules, "/private/open/4") || allowed(starRules, "/private/5") {
		t.Error("the longer Allow rule must beat the shorter Disallow rule")
	}
}

// TestAnalyzeTiming judges hand-made logs, so the politeness and overlap
// arithmetic is checked exactly.
func TestAnalyzeTiming(t *testing.T) {
	w, err := New(Config{Hosts: 2, PagesPerHost: 5, CrawlDelay: 200 * time.Millisecond}, VirtualAuthorities(2))
	if err != nil {
		t.Fatal(err)
	}
	truth, err := w.Truth(TruthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	entries := []Entry{
		{Start: at(0), End: at(50), Host: "h000.test", Method: "GET", Target: "/robots.txt", Status: 200},
		{Start: at(196), End: at(300), Host: "h000.test", Method: "GET", Target: "/", Status: 200},           // 196 ≥ 200−5: polite
		{Start: at(250), End: at(295), Host: "h001.test", Method: "GET", Target: "/robots.txt", Status: 200}, // other host
		{Start: at(290), End: at(310), Host: "h000.test", Method: "GET", Target: "/p/%32", Status: 200},      // 94 ms: too soon
		{Start: at(600), End: at(700), Host: "h000.test", Method: "GET", Target: "/p/2?", Status: 200},       // duplicate of /p/%32
		{Start: at(900), End: at(950), Host: "h000.test", Method: "GET", Target: "/robots.txt", Status: 200},
	}
	r := truth.Analyze(entries, AnalyzeOptions{})
	if len(r.PolitenessViolations) != 1 || !strings.Contains(r.PolitenessViolations[0], "/p/%32") {
		t.Errorf("PolitenessViolations = %q, want the one at 290 ms", r.PolitenessViolations)
	}
	if len(r.Duplicates) != 1 || r.RobotsRefetches != 1 || r.RobotsRequests != 3 {
		t.Errorf("Duplicates %q, RobotsRefetches %d, RobotsRequests %d; want 1, 1, 3", r.Duplicates, r.RobotsRefetches, r.RobotsRequests)
	}
	if r.Makespan != 950*time.Millisecond || r.PeakInFlight != 3 || r.PeakInFlightPerHost != 2 {
		t.Errorf("Makespan %v, PeakInFlight %d, PeakInFlightPerHost %d; want 950ms, 3, 2", r.Makespan, r.PeakInFlight, r.PeakInFlightPerHost)
	}
	// A larger MinDelay than the Crawl-delay raises the bar.
	r = truth.Analyze(entries, AnalyzeOptions{MinDelay: time.Second})
	if len(r.PolitenessViolations) != 4 {
		t.Errorf("with MinDelay 1s: %d violations, want 4: %q", len(r.PolitenessViolations), r.PolitenessViolations)
	}
	n := truth.Requests["h000.test"]
	if want := time.Duration(n-1) * time.Second; r.IdealMakespan != want {
		t.Errorf("IdealMakespan = %v, want %v (%d requests)", r.IdealMakespan, want, n)
	}

	var buf bytes.Buffer
	if err := WriteLog(&buf, entries); err != nil {
		t.Fatal(err)
	}
	back, err := ReadLog(&buf)
	if err != nil || len(back) != len(entries) || !back[3].Start.Equal(entries[3].Start) || back[3].Target != "/p/%32" {
		t.Errorf("log round trip: %v, %+v", err, back)
	}
}

func TestLoopback(t *testing.T) {
	l, err := ListenLoopback(Config{Hosts: 4, PagesPerHost: 5, Latency: time.Millisecond}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	hosts := l.Web.Hosts()
	for i, h := range hosts {
		if !strings.HasPrefix(h.Authority, LoopbackAddr(i)+":") {
			t.Errorf("host %d at %s, want %s:port", i, h.Authority, LoopbackAddr(i))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	for _, u := range l.Web.Seeds() {
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", u, resp.StatusCode)
		}
	}
	if l.Log.Len() != len(hosts) {
		t.Errorf("log has %d entries, want %d", l.Log.Len(), len(hosts))
	}
	if LoopbackAddr(250) != "127.0.2.1" {
		t.Errorf("LoopbackAddr(250) = %s", LoopbackAddr(250))
	}
}
