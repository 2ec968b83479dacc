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
	"syscall"
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

// fetchedPages returns the canonical URLs of the pages the log shows
// answered: robots.txt, sitemaps and failed requests (no complete answer,
// 429) left out.
func fetchedPages(entries []Entry, w *Web) map[string]bool {
	out := make(map[string]bool)
	for _, e := range entries {
		target, _ := requestTarget(e.Target)
		h := w.byAuthority[e.Host]
		switch {
		case target == robotsPath, target == robotsMovedPath,
			h.hasSitemaps() && (target == sitemapIndexPath || target == sitemapGzipPath || target == sitemapTextPath),
			e.Status == 0, e.Status == http.StatusTooManyRequests:
			continue
		}
		out["http://"+e.Host+target] = true
	}
	return out
}

// TestTruthMatchesPoliteCrawl crawls webs with an independent polite
// crawler and checks that it fetches exactly Truth.Reachable, at exactly
// Truth.Depth, in exactly Truth.Requests requests per host, and that the
// analysis finds nothing wrong. The webs of 4 or more hosts have the broken
// hosts too: the crawler waits out a 429's Retry-After there, and the
// hanging robots.txt costs it its robots timeout, so the crawls run in
// parallel.
func TestTruthMatchesPoliteCrawl(t *testing.T) {
	t.Parallel()
	cfgs := []Config{
		{Hosts: 6, PagesPerHost: 40, Seed: 1},
		{Hosts: 5, PagesPerHost: 23, Seed: 7, BodyBytes: -1},
		{Hosts: 4, PagesPerHost: 2, Seed: 3},                       // broken hosts with 2 pages
		{Hosts: 5, PagesPerHost: 23, Seed: 7, NoBrokenHosts: true}, // the special robots hosts only
		{Hosts: 3, PagesPerHost: 30, Seed: 2},                      // no special hosts
		{Hosts: 1, PagesPerHost: 1},
	}
	webs := make([]*Virtual, len(cfgs))
	crawlers := make([]*naiveCrawler, len(cfgs))
	var crawls []func() error
	for i, cfg := range cfgs {
		webs[i] = newVirtual(t, cfg)
		crawlers[i] = newNaiveCrawler(webs[i].Client())
		crawls = append(crawls, func() error { return crawlers[i].crawl(webs[i].Web.Seeds()) })
	}
	crawlAll(t, crawls...)
	for i, cfg := range cfgs {
		t.Run(fmt.Sprintf("%dx%d/broken=%v", cfg.Hosts, cfg.PagesPerHost, cfg.hasBroken()), func(t *testing.T) {
			v, c := webs[i], crawlers[i]
			if got := len(v.Web.Hosts()); got != cfg.TotalHosts() {
				t.Fatalf("%d hosts, TotalHosts says %d", got, cfg.TotalHosts())
			}
			truth, err := v.Truth()
			if err != nil {
				t.Fatal(err)
			}

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
			if r.Requests != r.RobotsRequests+r.SitemapRequests+r.PageRequests+r.FailedRequests {
				t.Errorf("requests %d are not robots %d + sitemaps %d + pages %d + failed %d",
					r.Requests, r.RobotsRequests, r.SitemapRequests, r.PageRequests, r.FailedRequests)
			}
			// Each page of the hosts whose pages fail once fails once and
			// is asked again; nothing else fails.
			failOnce := 0
			for _, u := range truth.Reachable {
				if h, _ := v.Web.Host(strings.Split(strings.TrimPrefix(u, "http://"), "/")[0]); h.Kind == HostRateLimited || h.Kind == HostResetting {
					failOnce++
				}
			}
			if r.FailedRequests != failOnce || r.Retries != failOnce {
				t.Errorf("%d failed requests and %d retries, want %d each (the pages of the hosts whose pages fail once)", r.FailedRequests, r.Retries, failOnce)
			}
			if cfg.hasBroken() {
				for _, k := range []HostKind{HostRobotsUnavailable, HostRobotsRetryDate, HostRobotsHang, HostRefused} {
					h, _ := v.Web.HostOfKind(k)
					n := 0
					for _, u := range truth.Disallowed {
						if strings.HasPrefix(u, "http://"+h.Authority+"/") {
							n++
						}
					}
					if want := min(cfg.PagesPerHost, brokenTargets); n != want {
						t.Errorf("%v host: %d URLs met and disallowed, want %d: the healthy hosts link to several", k, n, want)
					}
				}
				if failOnce == 0 {
					t.Error("no page of the hosts whose pages fail once is reachable")
				}
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
	t.Parallel() // each crawl waits out the rate-limited host's Retry-After
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
	c := newNaiveCrawler(v.Client())
	c.sitemaps = false
	c.mustCrawl(t, []string{seed})
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
	t.Parallel() // each crawl waits out the rate-limited host's Retry-After
	cfg := Config{Hosts: 6, PagesPerHost: 40, Seed: 5}
	cases := []struct {
		name  string
		rude  func(*naiveCrawler)
		count func(*Report) int
	}{
		{"ignores robots", func(c *naiveCrawler) { c.obeyRobots = false }, func(r *Report) int { return len(r.RobotsViolations) }},
		{"ignores robots: unreachable robots.txt", func(c *naiveCrawler) { c.obeyRobots = false }, func(r *Report) int { return len(r.UnavailableHostFetches) }},
		{"ignores Retry-After", func(c *naiveCrawler) { c.retryAfter = false }, func(r *Report) int {
			n := 0
			for _, v := range r.PolitenessViolations {
				if strings.Contains(v, "after a 429 with Retry-After 1s") {
					n++
				}
			}
			return n
		}},
		{"ignores nofollow", func(c *naiveCrawler) { c.obeyNofollow = false }, func(r *Report) int { return len(r.NofollowOnlyFetched) }},
		{"no normalisation", func(c *naiveCrawler) { c.canonical = false }, func(r *Report) int { return len(r.Duplicates) }},
		{"ignores base href", func(c *naiveCrawler) { c.useBase = false }, func(r *Report) int { return len(r.NotFound) }},
		{"no sitemaps", func(c *naiveCrawler) { c.sitemaps = false }, func(r *Report) int { return len(r.Missing) }},
	}
	webs := make([]*Virtual, len(cases))
	var crawls []func() error
	for i, tc := range cases {
		webs[i] = newVirtual(t, cfg)
		c := newNaiveCrawler(webs[i].Client())
		tc.rude(c)
		crawls = append(crawls, func() error { return c.crawl(webs[i].Web.Seeds()) })
	}
	crawlAll(t, crawls...)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := webs[i]
			truth, err := v.Truth()
			if err != nil {
				t.Fatal(err)
			}
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
	t.Parallel() // each crawl waits out the rate-limited host's Retry-After
	v := newVirtual(t, Config{Hosts: 4, PagesPerHost: 25, Trap: true, Seed: 9})
	truth, err := v.Truth()
	if err != nil {
		t.Fatal(err)
	}
	if truth.Trap != "http://h000.test/cal/2025/01" {
		t.Fatalf("Trap = %q", truth.Trap)
	}
	c := newNaiveCrawler(v.Client())
	c.maxDepth = truth.MaxDepth
	c.mustCrawl(t, v.Web.Seeds())
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
		switch status {
		case 301:
			status = 200
		case 0: // no answer: unreachable, as a 5xx
			status = 503
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
	hosts := v.Web.Hosts()
	if len(hosts) != 4+BrokenHosts {
		t.Fatalf("%d hosts, want 4 and the %d broken ones", len(hosts), BrokenHosts)
	}
	for i, h := range hosts {
		if want := VirtualAuthorities(len(hosts))[i]; h.Authority != want {
			t.Errorf("host %d is %s, want %s", i, h.Authority, want)
		}
	}
	for _, tc := range []struct {
		kind       HostKind
		status     int // of robots.txt; 0: no answer
		delay      time.Duration
		retryAfter time.Duration
	}{
		{HostNormal, 200, 1500 * time.Millisecond, 0},
		{HostRobotsRedirect, 301, 1500 * time.Millisecond, 0},
		{HostRobotsNotFound, 404, 0, 0},
		{HostRobotsUnavailable, 503, 0, time.Hour},
		{HostRobotsRetryDate, 503, 0, time.Hour},
		{HostRobotsHang, 0, 0, 0},
		{HostRefused, 0, 0, 0},
		{HostRateLimited, 200, 1500 * time.Millisecond, time.Second},
		{HostResetting, 200, 1500 * time.Millisecond, 0},
	} {
		h, ok := v.Web.HostOfKind(tc.kind)
		if !ok {
			t.Fatalf("no %v host", tc.kind)
		}
		if h.CrawlDelay != tc.delay || h.RetryAfter != tc.retryAfter {
			t.Errorf("%v host: CrawlDelay = %v, RetryAfter = %v; want %v, %v", tc.kind, h.CrawlDelay, h.RetryAfter, tc.delay, tc.retryAfter)
		}
		if got := tc.kind.RobotsUnreachable(); got != (tc.status == 0 || tc.status == 503) {
			t.Errorf("%v.RobotsUnreachable() = %v", tc.kind, got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.Authority+"/robots.txt", nil)
		asked := time.Now()
		resp, err := client.Do(req)
		if tc.status == 0 {
			cancel()
			if err == nil {
				resp.Body.Close()
				t.Errorf("%v host: robots.txt answered %d, want no answer", tc.kind, resp.StatusCode)
			}
			continue
		}
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != tc.status {
			t.Errorf("%v host: robots.txt status %d, want %d", tc.kind, resp.StatusCode, tc.status)
		}
		if tc.status == 200 && !strings.Contains(string(body), "Crawl-delay: 1.5") {
			t.Errorf("%v host: robots.txt lacks the Crawl-delay:\n%s", tc.kind, body)
		}
		if tc.status == 301 && resp.Header.Get("Location") != "/config/robots.txt" {
			t.Errorf("redirect host: Location %q", resp.Header.Get("Location"))
		}
		switch ra := resp.Header.Get("Retry-After"); tc.kind {
		case HostRobotsUnavailable:
			if ra != "3600" {
				t.Errorf("503 host: Retry-After %q, want 3600", ra)
			}
		case HostRobotsRetryDate:
			at, err := http.ParseTime(ra)
			if d := at.Sub(asked); err != nil || d < time.Hour-time.Second || d > time.Hour+time.Second {
				t.Errorf("503-date host: Retry-After %q (%v), want an HTTP-date an hour after %v", ra, err, asked)
			}
		}
	}

	// The refused host's connections fail as with no listener.
	refused, _ := v.Web.HostOfKind(HostRefused)
	if _, err := client.Get("http://" + refused.Authority + "/"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("GET on the refused host: err = %v, want ECONNREFUSED", err)
	}
	// The rate-limited host answers a page's first request with 429 and
	// Retry-After: 1, the next with the page; the resetting host cuts the
	// first off mid-body.
	for _, kind := range []HostKind{HostRateLimited, HostResetting} {
		h, _ := v.Web.HostOfKind(kind)
		for _, target := range []string{"/", "/p/1"} {
			u := "http://" + h.Authority + target
			resp, err := client.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch kind {
			case HostRateLimited:
				if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
					t.Errorf("first GET %s: %d, Retry-After %q; want 429, 1", u, resp.StatusCode, resp.Header.Get("Retry-After"))
				}
			case HostResetting:
				if resp.StatusCode != 200 || err == nil || len(body) == 0 || int64(len(body)) >= resp.ContentLength {
					t.Errorf("first GET %s: %d, %d of %d bytes, err %v; want 200 cut off mid-body", u, resp.StatusCode, len(body), resp.ContentLength, err)
				}
			}
			resp, err = client.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || err != nil || !strings.Contains(string(body), "</html>") {
				t.Errorf("second GET %s: %d, err %v; want the page", u, resp.StatusCode, err)
			}
		}
	}
	var first, retried int
	for _, e := range v.Log.Entries() {
		if h, _ := v.Web.Host(e.Host); e.Target != "/robots.txt" && (h.Kind == HostRateLimited || h.Kind == HostResetting) {
			if e.Status == 0 || e.Status == 429 {
				first++
			} else {
				retried++
			}
		}
	}
	if first != 4 || retried != 4 {
		t.Errorf("log: %d failed and %d answered page requests on the hosts whose pages fail once, want 4 and 4", first, retried)
	}
	for _, kind := range []HostKind{HostRateLimited, HostResetting} {
		h, _ := v.Web.HostOfKind(kind)
		if resp, err := client.Get("http://" + h.Authority + "/p/2"); err != nil || resp.StatusCode != 404 {
			t.Errorf("%v host has a /p/2: %v, %v", kind, resp, err)
		} else {
			resp.Body.Close()
		}
	}
	// A reset log fails them again.
	v.Log.Reset()
	h, _ := v.Web.HostOfKind(HostRateLimited)
	if resp, err := client.Get("http://" + h.Authority + "/"); err != nil || resp.StatusCode != 429 {
		t.Errorf("after Log.Reset: %v, %v; want 429", resp, err)
	} else {
		resp.Body.Close()
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
	if _, err := New(Config{Hosts: 4, PagesPerHost: 1}, VirtualAuthorities(5)); !errors.Is(err, ErrConfig) {
		t.Errorf("5 authorities for 4+%d hosts: err = %v, want ErrConfig", BrokenHosts, err)
	}
	w, err := New(Config{Hosts: 4, PagesPerHost: 1, NoBrokenHosts: true}, VirtualAuthorities(4))
	if err != nil || len(w.Hosts()) != 4 {
		t.Errorf("NoBrokenHosts: %v", err)
	} else if _, ok := w.HostOfKind(HostRobotsHang); ok {
		t.Error("NoBrokenHosts: the web has a broken host")
	}
}

// TestHangingRobotsEndOnClose: a robots.txt request left hanging ends when
// the web is closed, Virtual or Loopback, and Close returns; the request
// is logged with status 0.
func TestHangingRobotsEndOnClose(t *testing.T) {
	cfg := Config{Hosts: 4, PagesPerHost: 3}
	check := func(t *testing.T, w *Web, hd *handler, log *Log, client *http.Client, closeWeb func()) {
		h, _ := w.HostOfKind(HostRobotsHang)
		hanging := make(chan struct{})
		hd.onHang = func() { close(hanging) }
		errc := make(chan error, 1)
		go func() {
			resp, err := client.Get("http://" + h.Authority + "/robots.txt")
			if err == nil {
				resp.Body.Close()
				err = fmt.Errorf("answered %d", resp.StatusCode)
			}
			errc <- err
		}()
		<-hanging
		closed := make(chan struct{})
		go func() { closeWeb(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return with a robots.txt request hanging")
		}
		if err := <-errc; err == nil || strings.Contains(err.Error(), "answered") {
			t.Errorf("hanging robots.txt: %v, want the connection dropped", err)
		}
		es := log.Entries()
		if len(es) != 1 || es[0].Target != "/robots.txt" || es[0].Status != 0 {
			t.Errorf("log %+v, want the robots.txt request with status 0", es)
		}
	}
	t.Run("virtual", func(t *testing.T) {
		v, err := NewVirtual(cfg)
		if err != nil {
			t.Fatal(err)
		}
		check(t, v.Web, v.hd, v.Log, v.Client(), v.Close)
		v.Close() // twice is fine
	})
	t.Run("loopback", func(t *testing.T) {
		l, err := ListenLoopback(cfg, 0, nil)
		if err != nil {
			t.Skipf("cannot listen on loopback addresses: %v", err)
		}
		check(t, l.Web, l.hd, l.Log, &http.Client{Transport: &http.Transport{Proxy: nil}}, func() { l.Close() })
	})
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

// TestAnalyzeBrokenHosts judges a hand-made log of requests to the broken
// hosts: failed requests are not pages, asking again after a failure is a
// retry (not a duplicate) up to the allowed retries, a host's Retry-After
// binds the next request, and anything past an unreachable robots.txt is a
// violation.
func TestAnalyzeBrokenHosts(t *testing.T) {
	w, err := New(Config{Hosts: 4, PagesPerHost: 3}, VirtualAuthorities(4))
	if err != nil {
		t.Fatal(err)
	}
	truth, err := w.Truth(TruthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	host := func(k HostKind) string {
		h, ok := w.HostOfKind(k)
		if !ok {
			t.Fatalf("no %v host", k)
		}
		return h.Authority
	}
	unavailable, hang, limited, resetting := host(HostRobotsUnavailable), host(HostRobotsHang), host(HostRateLimited), host(HostResetting)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	e := func(start, end int, h, target string, status int) Entry {
		return Entry{Start: at(start), End: at(end), Host: h, Method: "GET", Target: target, Status: status}
	}
	entries := []Entry{
		e(0, 1, unavailable, "/robots.txt", 503),
		e(10_000, 10_001, unavailable, "/robots.txt", 503), // within the hour it asked for
		e(0, 2000, hang, "/robots.txt", 0),                 // given up by the client
		e(3000, 3001, hang, "/", 200),                      // past an unreachable robots.txt
		e(0, 1, limited, "/robots.txt", 200),
		e(100, 101, limited, "/", 429),
		e(600, 601, limited, "/", 200), // a retry, 499 ms after a Retry-After of 1 s
		e(2000, 2001, limited, "/p/1", 429),
		e(3100, 3101, limited, "/p/1", 429),
		e(4200, 4201, limited, "/p/1", 429),
		e(5300, 5301, limited, "/p/1", 200), // a third retry
		e(0, 1, resetting, "/robots.txt", 200),
		e(500, 501, resetting, "/", 0),
		e(1000, 1001, resetting, "/", 200), // a retry
		e(2000, 2001, resetting, "/", 200), // a duplicate
	}
	r := truth.Analyze(entries, AnalyzeOptions{})
	if r.FailedRequests != 5 || r.Retries != 5 || r.PageRequests != 5 || r.RobotsRequests != 5 || r.DistinctPages != 4 {
		t.Errorf("failed %d, retries %d, pages %d, robots %d, distinct %d; want 5, 5, 5, 5, 4\n%s",
			r.FailedRequests, r.Retries, r.PageRequests, r.RobotsRequests, r.DistinctPages, r)
	}
	if len(r.Duplicates) != 1 || !strings.Contains(r.Duplicates[0], resetting) {
		t.Errorf("Duplicates = %q, want the third request of the resetting host's home page", r.Duplicates)
	}
	if len(r.ExcessRetries) != 1 || !strings.Contains(r.ExcessRetries[0], limited+"/p/1 (after 3 failed") {
		t.Errorf("ExcessRetries = %q, want the fourth request of /p/1", r.ExcessRetries)
	}
	if len(r.UnavailableHostFetches) != 1 || r.UnavailableHostFetches[0] != "http://"+hang+"/" {
		t.Errorf("UnavailableHostFetches = %q, want the hanging host's home page", r.UnavailableHostFetches)
	}
	if pv := strings.Join(r.PolitenessViolations, "\n"); len(r.PolitenessViolations) != 2 ||
		!strings.Contains(pv, unavailable+": 9.999s after a 503 with Retry-After 1h0m0s: GET /robots.txt") ||
		!strings.Contains(pv, limited+": 499ms after a 429 with Retry-After 1s: GET /") {
		t.Errorf("PolitenessViolations = %q, want the robots.txt asked again within the hour and the retry 499ms after a 429", r.PolitenessViolations)
	}
	if r.RobotsRefetches != 1 {
		t.Errorf("RobotsRefetches = %d, want 1", r.RobotsRefetches)
	}
	// Answered pages count; the ones that only failed do not.
	if r.ReachableFetched != 3 {
		t.Errorf("ReachableFetched = %d, want 3", r.ReachableFetched)
	}
	err = r.Check()
	for _, want := range []string{"retries beyond the allowed", "unreachable", "politeness", "duplicate"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check() = %v, want it to mention %q", err, want)
		}
	}
	// A crawler that caps any wait at 5 s may ask for robots.txt again
	// after 5 s; one allowed no retry has every retry counted.
	r = truth.Analyze(entries, AnalyzeOptions{MaxDelay: 5 * time.Second, Retries: -1})
	if len(r.PolitenessViolations) != 1 || len(r.ExcessRetries) != 5 {
		t.Errorf("MaxDelay 5s, Retries -1: politeness %q, excess retries %q; want the 429 one, and all 5", r.PolitenessViolations, r.ExcessRetries)
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
	if len(hosts) != 4+BrokenHosts {
		t.Fatalf("%d hosts, want 4 and the broken ones", len(hosts))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	for i, u := range l.Web.Seeds() {
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		resp, err := client.Do(req)
		if hosts[i].Kind == HostRefused {
			// Nothing listens on its address.
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("GET %s on the refused host: %v, want ECONNREFUSED", u, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		want := 200
		if hosts[i].Kind == HostRateLimited {
			want = 429
		}
		if resp.StatusCode != want || (err != nil) != (hosts[i].Kind == HostResetting) {
			t.Errorf("GET %s (%v host): %d, body error %v; want %d", u, hosts[i].Kind, resp.StatusCode, err, want)
		}
	}
	if l.Log.Len() != len(hosts)-1 {
		t.Errorf("log has %d entries, want %d", l.Log.Len(), len(hosts)-1)
	}
	if LoopbackAddr(250) != "127.0.2.1" {
		t.Errorf("LoopbackAddr(250) = %s", LoopbackAddr(250))
	}
}
