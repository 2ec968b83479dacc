package testweb_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/testweb"
)

// dnsLookups counts name-server connections any test of this package tried
// to open. The machine's resolver is on a private address, so a lookup is
// traffic leaving loopback; every web here is reached by name through a
// dialer that maps names to loopback listeners, so none is ever needed.
var dnsLookups atomic.Int64

// dnsServer is the name server the last refused query was for.
var dnsServer atomic.Pointer[string]

// TestMain routes every DNS query through a resolver that refuses and counts
// it, before any test starts (so no test races with the change), and fails
// the run if one was attempted.
func TestMain(m *testing.M) {
	net.DefaultResolver = &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			dnsLookups.Add(1)
			dnsServer.Store(&address)
			return nil, fmt.Errorf("testweb tests: DNS query to %s refused: no traffic may leave loopback", address)
		},
	}
	code := m.Run()
	if n := dnsLookups.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d DNS queries attempted (to %s); tests must never leave loopback\n", n, *dnsServer.Load())
		code = 1
	}
	os.Exit(code)
}

// Figures of the hostile crawls. The delay is short so a crawl takes
// seconds; the tolerance is half of it because a 2-core machine running
// the race detector and parsing a link flood delays the server's reading
// of a request by tens of milliseconds, while an unpaced request still
// lands well inside it.
const (
	hostileMinDelay  = 50 * time.Millisecond
	hostileTolerance = 25 * time.Millisecond
	// The timeouts of most scenarios are generous: parsing a 10 MiB page
	// under the race detector on two cores can starve a fetch's goroutine
	// for a second, and a timeout there would be the test's flake, not
	// the crawler's. The scenarios about timeouts use short ones.
	hostileConnect       = 2 * time.Second
	hostileHeaderTimeout = 5 * time.Second
	hostileTotalTimeout  = 10 * time.Second
	shortHeaderTimeout   = time.Second
	shortTotalTimeout    = 2 * time.Second
	hostileMaxRedirects  = 5
	// hostileDeadline bounds one scenario's crawl; a crawl that needs it
	// has failed ("the crawl ends"). The bomb scenario decodes and parses
	// three 10 MiB pages and two sitemaps, each holding its host's lease:
	// under the race detector on two busy cores that alone took 25 s, so
	// the bound is a hang's, not a speed target.
	hostileDeadline = 60 * time.Second
	// hostileGrace is how long fetches in flight may go on once the
	// deadline has passed, so a hung crawl still fails promptly.
	hostileGrace = time.Second
	// heapCeiling is the most heap a crawl may hold in use, server
	// included: generous for a few hosts, far below what decoding a bomb
	// or keeping a flood's every link would take.
	heapCeiling = 300 << 20
	// overrun is how far past its timeout a request may last as the server
	// sees it: the server notices a client that gave up only when it next
	// writes (a drip interval) or reads.
	overrun = 1500 * time.Millisecond
)

// hostileNormalWeb is the synthetic web served beside the hostile hosts:
// its pages must all be fetched whatever the hostile host does ("no lost
// URL"). Five hosts: two normal, then the robots-redirect, robots-404 and
// robots-503 ones; and the broken hosts after them.
func hostileNormalWeb() testweb.Config {
	return testweb.Config{Hosts: 5, PagesPerHost: 8, Seed: 11}
}

// hostileCrawl is what one crawl of a hostile web left behind.
type hostileCrawl struct {
	hw       *testweb.Hostile
	runErr   error
	elapsed  time.Duration
	stats    crawler.Stats
	peakHeap uint64
	entries  []testweb.Entry
	rep      *testweb.HostileReport

	mu         sync.Mutex
	pages      map[string]pageSeen // URL → what OnPage saw last
	errs       map[string][]error  // URL → errors reported to OnError
	disallowed map[string]crawler.DisallowReason
}

type pageSeen struct {
	links int // followable links
}

// crawlHostile serves a hostile web of cfg, crawls it with heed from the
// normal web's home pages and the seeds of scenarios, and judges the crawl.
func crawlHostile(t *testing.T, cfg testweb.HostileConfig, scenarios []testweb.Scenario, opts ...crawler.Option) *hostileCrawl {
	t.Helper()
	hw, err := testweb.NewHostile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hw.Close)
	res := &hostileCrawl{hw: hw, pages: map[string]pageSeen{}, errs: map[string][]error{}, disallowed: map[string]crawler.DisallowReason{}}
	c, err := crawler.New(append([]crawler.Option{
		crawler.WithTransport(hw.Transport()),
		crawler.WithDelay(hostileMinDelay),
		crawler.WithMaxDelay(2 * time.Second),
		crawler.WithConnectTimeout(hostileConnect), crawler.WithHeaderTimeout(hostileHeaderTimeout), crawler.WithFetchTimeout(hostileTotalTimeout),
		crawler.WithScope(frontier.ScopeAny),
		crawler.WithGracePeriod(hostileGrace),
		crawler.WithMaxRedirects(hostileMaxRedirects),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	res.hook(c)
	dnsBefore := dnsLookups.Load()
	heap := startHeapSampler()
	ctx, cancel := context.WithTimeout(context.Background(), hostileDeadline)
	defer cancel()
	start := time.Now()
	res.runErr = c.Run(ctx, hw.Seeds(scenarios...)...)
	res.elapsed = time.Since(start)
	res.peakHeap = heap.stop()
	if res.stats, err = c.Stats(context.Background()); err != nil {
		t.Errorf("Stats: %v", err)
	}
	res.entries = hw.Log.Entries()
	res.rep, err = hw.Analyze(res.entries, testweb.HostileAnalyzeOptions{
		MinDelay: hostileMinDelay, Tolerance: hostileTolerance,
		MaxRedirects: hostileMaxRedirects, Scenarios: scenarios,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("crawl of %v: Run = %v after %v, peak heap in use %d MiB", scenarios, res.runErr, res.elapsed.Round(time.Millisecond), res.peakHeap>>20)
	t.Logf("report:\n%s", res.rep)
	t.Logf("stats: pages %d, errors %v, skipped %v, disallowed %d, robots %v, sitemaps %d",
		res.stats.Pages, res.stats.Errors, res.stats.SkippedLinks, res.stats.Disallowed, res.stats.RobotsOutcomes, res.stats.Sitemaps)
	res.logHostile(t, start)
	res.logErrors(t)
	if n := dnsLookups.Load() - dnsBefore; n > 0 {
		t.Errorf("%d DNS queries (to %s) during the crawl: the crawler resolved names itself instead of leaving it to its transport", n, *dnsServer.Load())
	}
	return res
}

// logHostile logs the requests to hostile hosts (a few per host): when
// each started after the crawl, how long it lasted, and its status.
func (res *hostileCrawl) logHostile(t *testing.T, start time.Time) {
	t.Helper()
	var b strings.Builder
	perHost := map[string]int{}
	for _, e := range res.entries {
		if res.rep.Requests[e.Host] == 0 {
			continue // a normal host
		}
		if perHost[e.Host]++; perHost[e.Host] > 25 {
			continue
		}
		fmt.Fprintf(&b, "\n  +%v %v %s %.120s -> %d", e.Start.Sub(start).Round(time.Millisecond), e.End.Sub(e.Start).Round(time.Millisecond), e.Method, e.URL(), e.Status)
	}
	t.Logf("hostile requests (first 25 per host):%s", b.String())
}

// logErrors logs what OnError was told about URLs of hostile hosts.
func (res *hostileCrawl) logErrors(t *testing.T) {
	t.Helper()
	res.mu.Lock()
	defer res.mu.Unlock()
	var b strings.Builder
	for u, errs := range res.errs {
		if ur, err := url.Parse(u); err == nil && res.rep.Requests[ur.Host] > 0 {
			for _, err := range errs {
				fmt.Fprintf(&b, "\n  %.120s: %.200v", u, err)
			}
		}
	}
	if b.Len() > 0 {
		t.Logf("OnError for hostile hosts:%s", b.String())
	}
}

func (res *hostileCrawl) hook(c *crawler.Crawler) {
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		res.mu.Lock()
		res.pages[p.URL.String()] = pageSeen{links: len(p.Links)}
		res.mu.Unlock()
	})
	c.OnError(func(ctx context.Context, u *url.URL, err error) {
		res.mu.Lock()
		res.errs[u.String()] = append(res.errs[u.String()], err)
		res.mu.Unlock()
	})
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		res.mu.Lock()
		res.disallowed[u.String()] = why
		res.mu.Unlock()
	})
}

// checkCommon asserts what every hostile crawl must do: end on its own,
// in time, with nil; keep the heap bounded; and pass the judge (nothing
// forbidden or disallowed fetched, polite pacing, every reachable page of
// the normal web and every required page of the hostile hosts fetched, no
// dial outside the web).
func (res *hostileCrawl) checkCommon(t *testing.T) {
	t.Helper()
	if res.runErr != nil {
		t.Errorf("the crawl did not end: Run = %v after %v (deadline %v)", res.runErr, res.elapsed.Round(time.Millisecond), hostileDeadline)
	}
	if res.peakHeap > heapCeiling {
		t.Errorf("heap in use peaked at %d MiB, ceiling %d MiB", res.peakHeap>>20, heapCeiling>>20)
	}
	if err := res.rep.Check(); err != nil {
		t.Errorf("judge: %v", err)
	}
}

// requests returns the requests the server logged for target on host.
func (res *hostileCrawl) requests(host, target string) []testweb.Entry {
	var out []testweb.Entry
	for _, e := range res.entries {
		if e.Host == host && e.Target == target {
			out = append(out, e)
		}
	}
	return out
}

// checkLasted asserts that every request for host+target lasted, as the
// server saw it, at most limit plus overrun: the crawler gave up in time.
func (res *hostileCrawl) checkLasted(t *testing.T, host, target string, limit time.Duration) {
	t.Helper()
	es := res.requests(host, target)
	if len(es) == 0 {
		t.Errorf("http://%s%s never requested", host, target)
	}
	for _, e := range es {
		if d := e.End.Sub(e.Start); d > limit+overrun {
			t.Errorf("http://%s%s held for %v, want the crawler to give up after %v", host, target, d.Round(time.Millisecond), limit)
		}
	}
}

// checkReported asserts that u reached OnPage or OnError: a URL that fails
// is reported, never silently lost.
func (res *hostileCrawl) checkReported(t *testing.T, u string) {
	t.Helper()
	res.mu.Lock()
	defer res.mu.Unlock()
	if _, ok := res.pages[u]; ok {
		return
	}
	if len(res.errs[u]) > 0 {
		return
	}
	if _, ok := res.disallowed[u]; ok {
		return
	}
	t.Errorf("%s reached neither OnPage, OnError nor OnDisallowed", u)
}

// checkDisallowed asserts that u was reported to OnDisallowed for why.
func (res *hostileCrawl) checkDisallowed(t *testing.T, u string, why crawler.DisallowReason) {
	t.Helper()
	res.mu.Lock()
	got, ok := res.disallowed[u]
	res.mu.Unlock()
	if !ok || got != why {
		t.Errorf("OnDisallowed(%s) = %q (reported %v), want %q", u, got, ok, why)
	}
}

func (res *hostileCrawl) skipped(match func(reason string) bool) int64 {
	var n int64
	for reason, k := range res.stats.SkippedLinks {
		if match(string(reason)) {
			n += k
		}
	}
	return n
}

// heapSampler records the largest HeapInuse seen while a crawl runs. It
// samples, so a spike shorter than its period may be missed; a bomb decoded
// or a flood kept lasts far longer.
type heapSampler struct {
	peak atomic.Uint64
	done chan struct{}
	wg   sync.WaitGroup
}

func startHeapSampler() *heapSampler {
	s := &heapSampler{done: make(chan struct{})}
	s.wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > s.peak.Load() {
				s.peak.Store(ms.HeapInuse)
			}
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	})
	return s
}

func (s *heapSampler) stop() uint64 {
	close(s.done)
	s.wg.Wait()
	return s.peak.Load()
}

// hostileCase is one scenario of TestHostile: the hostile config, extra
// crawler options, and the checks beyond checkCommon.
type hostileCase struct {
	scenario testweb.Scenario
	// heavy scenarios build large bodies or documents: they run alone, so
	// the heap measured is theirs. The others run in parallel with each
	// other, after them: they mostly wait for timeouts and delays.
	heavy bool
	cfg   func(*testweb.HostileConfig)
	opts  []crawler.Option
	check func(t *testing.T, res *hostileCrawl)
}

// TestHostile crawls, one scenario at a time, the normal synthetic web
// beside one hostile host (issue 11), and asserts from the server's log and
// the crawl's output that nothing disallowed was fetched, no politeness
// rule was broken, no URL was lost, memory stayed bounded and the crawl
// ended. Heavy scenarios run first, one at a time, so the heap measured is
// each one's own; the rest then run in parallel.
func TestHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile crawls take tens of seconds")
	}
	run := func(tc hostileCase) {
		t.Run(string(tc.scenario), func(t *testing.T) {
			if tc.heavy {
				runtime.GC() // the previous scenario's garbage is not this one's heap
			} else {
				t.Parallel()
			}
			cfg := testweb.HostileConfig{Normal: hostileNormalWeb()}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			res := crawlHostile(t, cfg, []testweb.Scenario{tc.scenario}, tc.opts...)
			res.checkCommon(t)
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
	cases := hostileCases()
	for _, tc := range cases {
		if tc.heavy {
			run(tc)
		}
	}
	// HeapInuse counts garbage not yet collected; the parallel scenarios
	// start once this function returns, without the heavy ones' garbage.
	runtime.GC()
	for _, tc := range cases {
		if !tc.heavy {
			run(tc)
		}
	}
}

// shortTimeouts keep the timeout scenarios short: each try of a dripping,
// hanging or silent URL costs a timeout and a back-off, and one retry shows
// as well as two that the crawler gives up and moves on.
var shortTimeouts = []crawler.Option{
	crawler.WithConnectTimeout(time.Second), crawler.WithHeaderTimeout(shortHeaderTimeout), crawler.WithFetchTimeout(shortTotalTimeout),
	crawler.WithRetries(1),
}

func hostileCases() []hostileCase {
	return []hostileCase{
		{scenario: testweb.ScenarioDrip, opts: shortTimeouts, check: func(t *testing.T, res *hostileCrawl) {
			res.checkLasted(t, "drip.test", "/drip/headers", shortHeaderTimeout)
			res.checkLasted(t, "drip.test", "/drip/body", shortTotalTimeout)
			res.checkReported(t, "http://drip.test/drip/headers")
			res.checkReported(t, "http://drip.test/drip/body")
		}},
		{scenario: testweb.ScenarioHang, opts: shortTimeouts, check: func(t *testing.T, res *hostileCrawl) {
			res.checkLasted(t, "hang.test", "/hang", shortHeaderTimeout)
			res.checkReported(t, "http://hang.test/hang")
		}},
		{scenario: testweb.ScenarioSilent, opts: shortTimeouts, check: func(t *testing.T, res *hostileCrawl) {
			// robots.txt never answers: complete disallow (RFC 9309
			// §2.3.1.4), reported, and no pile of connections.
			if n := res.hw.SilentAccepts(); n == 0 || n > 4 {
				t.Errorf("silent.test accepted %d connections, want 1 to 4 (robots.txt and its retries)", n)
			}
			for _, u := range []string{"http://silent.test/", "http://silent.test/page"} {
				res.checkReported(t, u)
			}
		}},
		{scenario: testweb.ScenarioBomb, heavy: true, check: func(t *testing.T, res *hostileCrawl) {
			for _, p := range []string{"/bomb/gzip", "/bomb/deflate", "/bomb/br"} {
				res.checkLasted(t, "bomb.test", p, hostileTotalTimeout)
				res.checkReported(t, "http://bomb.test"+p)
			}
		}},
		{scenario: testweb.ScenarioRobotsBomb, heavy: true, check: func(t *testing.T, res *hostileCrawl) {
			res.checkDisallowed(t, "http://robotsbomb.test/secret/x", crawler.DisallowedByRules)
		}},
		{scenario: testweb.ScenarioSitemapChain, check: func(t *testing.T, res *hostileCrawl) {
			if n := res.skipped(func(r string) bool { return strings.HasPrefix(r, "sitemap") }); n == 0 {
				t.Errorf("no sitemap refused and counted in Stats.SkippedLinks (%v), though the chain never ends", res.stats.SkippedLinks)
			}
		}},
		{
			scenario: testweb.ScenarioLinkFlood,
			heavy:    true,
			// Ten thousand links at 50 ms each would take minutes; the
			// per-host page limit ends the crawl, the link cap is checked
			// on the page.
			opts: []crawler.Option{crawler.WithMaxPagesPerHost(60)},
			check: func(t *testing.T, res *hostileCrawl) {
				res.mu.Lock()
				home, ok := res.pages["http://flood.test/"]
				res.mu.Unlock()
				if !ok {
					t.Fatal("flood.test/ never reached OnPage")
				}
				if home.links > testweb.DefaultLinkCap {
					t.Errorf("flood.test/ gave %d followable links, want at most the default cap %d", home.links, testweb.DefaultLinkCap)
				}
				// Every link is fetched or counted: none lost.
				fetched := int64(res.rep.Requests["flood.test"])
				if skipped := res.skipped(func(string) bool { return true }); fetched+skipped < 300_000 {
					t.Errorf("%d flood links fetched and %d skipped, want all 300,000 accounted for", fetched, skipped)
				}
			},
		},
		{scenario: testweb.ScenarioDeepNesting, check: func(t *testing.T, res *hostileCrawl) {
			// /deep-ok's links may be followed, or the page reported as
			// one whose links could not be read; not silently dropped.
			found := 0
			for _, e := range res.entries {
				if e.Host == "nest.test" && strings.HasPrefix(e.Target, "/found/") {
					found++
				}
			}
			res.mu.Lock()
			reported := len(res.errs["http://nest.test/deep-ok"])
			res.mu.Unlock()
			if found == 0 && reported == 0 && res.stats.Errors["extract"] == 0 {
				t.Error("no link of /deep-ok followed, and the page not reported to OnError nor counted in Stats.Errors[extract]")
			}
		}},
		{scenario: testweb.ScenarioRedirects, check: func(t *testing.T, res *hostileCrawl) {
			last := fmt.Sprintf("http://redirect.test/chain/%d", hostileMaxRedirects)
			res.mu.Lock()
			errs := res.errs[last]
			res.mu.Unlock()
			if len(errs) == 0 {
				t.Errorf("%s, whose redirect is one hop too many, not reported to OnError", last)
			}
			if res.stats.Errors["redirect"] == 0 {
				t.Errorf("Stats.Errors[redirect] = 0 after a redirect chain longer than max-redirects")
			}
			res.checkDisallowed(t, "http://redirect.test/private/secret", crawler.DisallowedByRules)
		}},
		{scenario: testweb.ScenarioRobotsRedirectSlow, check: func(t *testing.T, res *hostileCrawl) {
			res.checkDisallowed(t, "http://slowrobots.test/secret/x", crawler.DisallowedByRules)
		}},
		{scenario: testweb.ScenarioRobotsGzip, check: func(t *testing.T, res *hostileCrawl) {
			res.checkDisallowed(t, "http://gzrobots.test/secret/x", crawler.DisallowedByRules)
		}},
		{scenario: testweb.ScenarioRobotsUTF16, check: func(t *testing.T, res *hostileCrawl) {
			res.checkDisallowed(t, "http://utf16robots.test/secret/x", crawler.DisallowedByRules)
		}},
		{scenario: testweb.ScenarioRobotsGroups, check: func(t *testing.T, res *hostileCrawl) {
			res.checkDisallowed(t, "http://groups.test/", crawler.DisallowedByRules)
		}},
		{scenario: testweb.ScenarioPrivateRedirect, check: func(t *testing.T, res *hostileCrawl) {
			// Refused by policy, before robots.txt or any dial, and counted.
			h := res.hw.Scenario(testweb.ScenarioPrivateRedirect)[0]
			if n := res.skipped(func(r string) bool { return strings.Contains(r, "private") }); n < int64(len(h.Unreachable)) {
				t.Errorf("Stats.SkippedLinks = %v: %d private-address refusals, want at least %d (%q)", res.stats.SkippedLinks, n, len(h.Unreachable), h.Unreachable)
			}
			res.mu.Lock()
			defer res.mu.Unlock()
			for u := range res.disallowed {
				if !strings.HasPrefix(u, "http://private.test/") && slices.ContainsFunc(h.Unreachable, func(p string) bool { return sameHost(p, u) }) {
					t.Errorf("OnDisallowed(%s): a private address got as far as robots.txt", u)
				}
			}
		}},
		{scenario: testweb.ScenarioPaths, check: func(t *testing.T, res *hostileCrawl) {
			if n := res.skipped(func(string) bool { return true }); n == 0 {
				t.Errorf("Stats.SkippedLinks = %v: the endless /a/a/a/… was not refused and counted", res.stats.SkippedLinks)
			}
		}},
	}
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host
}

// TestHostileStaleRobots: stale.test's robots.txt is fetched, expires after
// a minute, and then answers 429 with Retry-After: 3600. The crawl runs in a
// synctest bubble, whose clock moves only when every goroutine of the crawl
// waits on time, with a 61 s delay, so every page after the first finds the
// copy expired. The crawler must keep obeying the stale copy (no /secret/),
// still fetch the host's pages (not refuse them as robots-unavailable), ask
// nothing of the host before the Retry-After has run out, and end.
func TestHostileStaleRobots(t *testing.T) {
	// The server runs outside the bubble (a listener's Accept would keep
	// the bubble's clock from ever moving); the crawl's requests are logged
	// by its transport, on the bubble's clock.
	hw, err := testweb.NewHostile(testweb.HostileConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Close()
	synctest.Test(t, func(t *testing.T) {
		const delay = 61 * time.Second
		// A polite crawl is over an hour and a few minutes after it
		// starts (the Retry-After, then a page a minute); one still going
		// after six hours of the bubble's time has failed.
		const horizon = 6 * time.Hour
		tr := hw.Transport()
		tr.DisableKeepAlives = true // an idle connection's reader would keep the bubble's clock still
		stamped := &stampedTransport{rt: tr}
		c, err := crawler.New(
			crawler.WithTransport(stamped),
			crawler.WithDelay(delay),
			crawler.WithMaxDelay(2*time.Hour),
			crawler.WithConnectTimeout(hostileConnect), crawler.WithHeaderTimeout(hostileHeaderTimeout), crawler.WithFetchTimeout(hostileTotalTimeout),
			crawler.WithGracePeriod(hostileGrace),
		)
		if err != nil {
			t.Fatal(err)
		}
		res := &hostileCrawl{hw: hw, pages: map[string]pageSeen{}, errs: map[string][]error{}, disallowed: map[string]crawler.DisallowReason{}}
		res.hook(c)
		ctx, cancel := context.WithTimeout(context.Background(), horizon)
		defer cancel()
		dnsBefore := dnsLookups.Load()
		t0 := time.Now()
		runErr := c.Run(ctx, hw.Seeds(testweb.ScenarioStaleRobots)...)
		elapsed := time.Since(t0)

		entries := stamped.entries()
		var b strings.Builder
		for i, e := range entries {
			if i == 30 {
				fmt.Fprintf(&b, "\n  … %d more", len(entries)-i)
				break
			}
			fmt.Fprintf(&b, "\n  +%v %s %s -> %d", e.Start.Sub(t0), e.Method, e.URL(), e.Status)
		}
		st, err := c.Stats(context.Background())
		if err != nil {
			t.Errorf("Stats: %v", err)
		}
		t.Logf("Run = %v after %v on the bubble's clock; requests:%s", runErr, elapsed, b.String())
		t.Logf("stats: pages %d, errors %v, skipped %v, disallowed %d, robots %v", st.Pages, st.Errors, st.SkippedLinks, st.Disallowed, st.RobotsOutcomes)
		if runErr != nil {
			t.Errorf("the crawl did not end within %v: Run = %v", horizon, runErr)
		}
		if n := dnsLookups.Load() - dnsBefore; n > 0 {
			t.Errorf("%d DNS queries (to %s) during the crawl: the crawler resolved names itself instead of leaving it to its transport", n, *dnsServer.Load())
		}
		res.checkReported(t, "http://stale.test/")
		rep, err := hw.Analyze(entries, testweb.HostileAnalyzeOptions{
			MinDelay: delay, Tolerance: time.Second, Scenarios: []testweb.Scenario{testweb.ScenarioStaleRobots},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("report:\n%s", rep)
		if err := rep.Check(); err != nil {
			t.Errorf("judge: %v", err)
		}
		robots := 0
		for _, e := range entries {
			if e.Target == "/robots.txt" {
				robots++
			}
		}
		if robots < 2 {
			t.Errorf("robots.txt requested %d times; the copy expires after a minute and the crawl lasts longer, so it must be asked again", robots)
		}
		res.mu.Lock()
		for u, why := range res.disallowed {
			if why == crawler.DisallowedUnavailable {
				t.Errorf("OnDisallowed(%s, %s): a stale copy of robots.txt was at hand", u, why)
			}
		}
		res.mu.Unlock()
		res.checkDisallowed(t, "http://stale.test/secret/x", crawler.DisallowedByRules)
	})
}

// stampedTransport logs every round trip on the clock of the goroutine that
// makes it: inside a synctest bubble, the bubble's.
type stampedTransport struct {
	rt  http.RoundTripper
	mu  sync.Mutex
	log []testweb.Entry
}

func (s *stampedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := s.rt.RoundTrip(req)
	e := testweb.Entry{
		Start: start, End: time.Now(), Host: strings.TrimSuffix(strings.ToLower(req.URL.Host), ":80"),
		Method: req.Method, Target: req.URL.RequestURI(), UserAgent: req.UserAgent(),
	}
	if err == nil {
		e.Status = resp.StatusCode
	}
	s.mu.Lock()
	s.log = append(s.log, e)
	s.mu.Unlock()
	return resp, err
}

func (s *stampedTransport) entries() []testweb.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}
