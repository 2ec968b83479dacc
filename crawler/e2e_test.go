package crawler_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/testweb"
)

// Politeness figures of the end-to-end crawls. The sites ask for more than
// the crawler's own minimum, so a crawler ignoring Crawl-delay is caught;
// the 404 host (no robots.txt, so no Crawl-delay) is paced by the minimum.
const (
	e2eCrawlDelay = 50 * time.Millisecond
	e2eMinDelay   = 25 * time.Millisecond
	// e2eTolerance absorbs the gap between when the crawler sends a request
	// and when the server has read its headers, which on a loaded shared
	// machine (and under -race) reaches several milliseconds. It is well
	// below the delays, so an unpaced request is still caught.
	e2eTolerance = 15 * time.Millisecond
)

// e2eWeb is the synthetic web of the end-to-end tests: 8 hosts, the last
// three the robots-redirect, robots-404 and robots-503 hosts, with a spider
// trap on the first.
func e2eWeb() testweb.Config {
	return testweb.Config{Hosts: 8, PagesPerHost: 30, CrawlDelay: e2eCrawlDelay, Trap: true, Seed: 7}
}

// e2eResult is what one crawl of a virtual web left behind: the server's
// judgement and what the crawler told its hooks.
type e2eResult struct {
	web        *testweb.Virtual
	truth      *testweb.Truth
	rep        *testweb.Report
	entries    []testweb.Entry
	stats      crawler.Stats
	pages      map[string]int // canonical URL → OnPage calls
	disallowed map[string]crawler.DisallowReason
}

// crawlVirtual serves cfg, crawls it from topts.Seeds (every home page when
// nil) with heed and opts, and judges the crawl from the server's log.
func crawlVirtual(t *testing.T, cfg testweb.Config, topts testweb.TruthOptions, opts ...crawler.Option) *e2eResult {
	t.Helper()
	v, err := testweb.NewVirtual(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	truth, err := v.Web.Truth(topts)
	if err != nil {
		t.Fatal(err)
	}
	res := &e2eResult{web: v, truth: truth, pages: map[string]int{}, disallowed: map[string]crawler.DisallowReason{}}
	var mu sync.Mutex
	c, err := crawler.New(append([]crawler.Option{
		crawler.WithTransport(v.Transport()),
		crawler.WithDelay(e2eMinDelay),
		// The hanging robots.txt costs a header timeout: a short one.
		crawler.WithHeaderTimeout(time.Second),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		mu.Lock()
		res.pages[canonical(t, p.URL.String())]++
		mu.Unlock()
	})
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		mu.Lock()
		res.disallowed[canonical(t, u.String())] = why
		mu.Unlock()
	})
	c.OnError(func(ctx context.Context, u *url.URL, err error) {
		t.Logf("OnError %s: %v", u, err)
	})
	seeds := topts.Seeds
	if seeds == nil {
		seeds = v.Web.Seeds()
	}
	// The deadline only keeps a broken crawler from hanging the test run;
	// the crawls take one to two seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Run(ctx, seeds...); err != nil {
		t.Fatalf("Run: %v; stats %+v", err, statsOf(t, c))
	}
	res.stats = statsOf(t, c)
	res.entries = v.Log.Entries()
	res.rep = truth.Analyze(res.entries, testweb.AnalyzeOptions{MinDelay: e2eMinDelay, Tolerance: e2eTolerance})
	t.Logf("report:\n%s", res.rep)
	t.Logf("stats: %+v", res.stats)
	return res
}

func canonical(t *testing.T, raw string) string {
	c, err := testweb.Canonical(raw)
	if err != nil {
		t.Errorf("hook got a URL the judge cannot read: %v", err)
		return raw
	}
	return c
}

// checkPolite asserts what every crawl must respect, complete or not: no
// request robots.txt forbids, nothing past robots.txt on the 503 host, the
// delay between two requests to a host, no duplicate fetch, no page only
// nofollow links lead to, no URL the web never linked.
func (res *e2eResult) checkPolite(t *testing.T) {
	t.Helper()
	rep := res.rep
	if len(rep.RobotsViolations) > 0 {
		t.Errorf("%d requests robots.txt forbids, e.g. %q", len(rep.RobotsViolations), first(rep.RobotsViolations))
	}
	if len(rep.UnavailableHostFetches) > 0 {
		t.Errorf("%d requests past robots.txt to the host whose robots.txt answers 503, e.g. %q", len(rep.UnavailableHostFetches), first(rep.UnavailableHostFetches))
	}
	if v := res.politenessViolations(); len(v) > 0 {
		t.Errorf("%d requests closer than the host's delay (tolerance %v): %q", len(v), e2eTolerance, v)
	}
	if len(rep.Duplicates) > 0 {
		t.Errorf("%d duplicate fetches, e.g. %q", len(rep.Duplicates), first(rep.Duplicates))
	}
	if rep.RobotsRefetches > 0 {
		t.Errorf("robots.txt fetched %d times more than once per host", rep.RobotsRefetches)
	}
	if len(rep.NofollowOnlyFetched) > 0 {
		t.Errorf("%d pages only nofollow links lead to were fetched, e.g. %q", len(rep.NofollowOnlyFetched), first(rep.NofollowOnlyFetched))
	}
	if len(rep.NotFound) > 0 {
		t.Errorf("%d requests for URLs the web never linked, e.g. %q", len(rep.NotFound), first(rep.NotFound))
	}
	if rep.PeakInFlightPerHost > 1 {
		t.Errorf("%d requests in flight to one host at once, want 1 (the default)", rep.PeakInFlightPerHost)
	}
	// The server's view and the crawler's agree: every page request was
	// delivered to OnPage once, and every URL reported as disallowed is
	// one the truth says must not be fetched.
	if res.stats.Pages != int64(rep.PageRequests) {
		t.Errorf("Stats.Pages = %d, server answered %d page requests", res.stats.Pages, rep.PageRequests)
	}
	for u, n := range res.pages {
		if n != 1 {
			t.Errorf("OnPage called %d times for %s", n, u)
		}
	}
	forbidden := map[string]bool{}
	for _, u := range res.truth.Disallowed {
		forbidden[u] = true
	}
	for u, why := range res.disallowed {
		if !forbidden[u] {
			t.Errorf("OnDisallowed(%s, %s) for a URL the site allows", u, why)
		}
	}
}

// politenessViolations is the judge's list, except that the second hop of
// the robots.txt redirect is held to the crawler's minimum delay only: the
// judge wants the host's Crawl-delay there too, but that delay is written in
// the very file the hop fetches, so no crawler can know it yet.
func (res *e2eResult) politenessViolations() []string {
	var out []string
	for _, v := range res.rep.PolitenessViolations {
		if !strings.HasSuffix(v, " GET "+robotsRedirectTarget) {
			out = append(out, v)
		}
	}
	prev := map[string]time.Time{}
	for _, e := range res.entries {
		if p, ok := prev[e.Host]; ok && e.Target == robotsRedirectTarget {
			if gap := e.Start.Sub(p); gap < e2eMinDelay-e2eTolerance {
				out = append(out, fmt.Sprintf("%s: %v after previous request, minimum delay %v: GET %s", e.Host, gap.Round(time.Millisecond), e2eMinDelay, e.Target))
			}
		}
		prev[e.Host] = e.Start
	}
	return out
}

// robotsRedirectTarget is where the robots-redirect host's robots.txt
// redirects to.
const robotsRedirectTarget = "/config/robots.txt"

// checkComplete asserts that every reachable allowed page, sitemap-only
// pages included, was fetched (exactly once: checkPolite finds duplicates).
func (res *e2eResult) checkComplete(t *testing.T) {
	t.Helper()
	rep := res.rep
	if rep.ReachableFetched != rep.ReachableTotal || len(rep.Missing) > 0 {
		t.Errorf("fetched %d of %d reachable pages; missing e.g. %q", rep.ReachableFetched, rep.ReachableTotal, first(rep.Missing))
	}
	if rep.SitemapOnlyFetched != rep.SitemapOnlyTotal {
		t.Errorf("fetched %d of %d sitemap-only pages", rep.SitemapOnlyFetched, rep.SitemapOnlyTotal)
	}
}

// unreachableKinds are the hosts whose robots.txt cannot be fetched: a
// 503 with an hour's Retry-After (in seconds, and as a date), one that
// never answers, one that refuses connections.
var unreachableKinds = map[testweb.HostKind]bool{
	testweb.HostRobotsUnavailable: true,
	testweb.HostRobotsRetryDate:   true,
	testweb.HostRobotsHang:        true,
	testweb.HostRefused:           true,
}

// checkUnavailableHost asserts that each host whose robots.txt is
// unreachable got one robots.txt request and nothing else (the refused host
// none), and that every URL met there was reported as robots-unavailable,
// once.
func (res *e2eResult) checkUnavailableHost(t *testing.T) {
	t.Helper()
	hosts := map[string]bool{}
	for _, h := range res.web.Web.Hosts() {
		if unreachableKinds[h.Kind] {
			hosts[h.Authority] = true
		}
	}
	if len(hosts) != len(unreachableKinds) {
		t.Fatalf("web has %d hosts with an unreachable robots.txt, want %d", len(hosts), len(unreachableKinds))
	}
	targets := map[string][]string{}
	for _, e := range res.entries {
		if hosts[e.Host] {
			targets[e.Host] = append(targets[e.Host], e.Target)
		}
	}
	for h := range hosts {
		if got := targets[h]; len(got) > 1 || len(got) == 1 && got[0] != "/robots.txt" {
			t.Errorf("requests to %s, whose robots.txt is unreachable: %q, want /robots.txt once at most", h, got)
		}
	}
	reported := 0
	for u, why := range res.disallowed {
		if h, _, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/"); hosts[h] {
			reported++
			if why != crawler.DisallowedUnavailable {
				t.Errorf("OnDisallowed(%s, %q), want %q", u, why, crawler.DisallowedUnavailable)
			}
		}
	}
	if reported == 0 {
		t.Error("no URL of a host whose robots.txt is unreachable reported to OnDisallowed")
	}
	if res.stats.Errors["robots-unavailable"] != int64(reported) {
		t.Errorf("Stats.Errors[robots-unavailable] = %d, OnDisallowed got %d URLs of the hosts whose robots.txt is unreachable", res.stats.Errors["robots-unavailable"], reported)
	}
}

// checkTrapBoundedByDepth asserts that the infinite calendar was entered
// and left at the depth limit. Its entry is linked from the first host's
// home page (depth ≥ 0) and each month links to the previous and the next,
// so within depth d at most 2d−1 months are reachable.
func (res *e2eResult) checkTrapBoundedByDepth(t *testing.T, maxDepth int) {
	t.Helper()
	if res.truth.Trap == "" {
		t.Fatal("the crawl's truth does not meet the trap; the test proves nothing")
	}
	if res.rep.TrapFetches == 0 {
		t.Errorf("no trap page fetched; the depth limit %d should let the crawler into the calendar", maxDepth)
	}
	if limit := 2*maxDepth - 1; res.rep.TrapFetches > limit {
		t.Errorf("%d trap pages fetched with max depth %d, want at most %d", res.rep.TrapFetches, maxDepth, limit)
	}
	if res.stats.SkippedLinks["depth"] == 0 {
		t.Error("Stats.SkippedLinks[depth] = 0 after a crawl cut short by the depth limit")
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func TestEndToEndVirtualWeb(t *testing.T) {
	t.Run("all hosts", func(t *testing.T) {
		t.Parallel()
		probe, err := testweb.New(e2eWeb(), testweb.VirtualAuthorities(e2eWeb().Hosts))
		if err != nil {
			t.Fatal(err)
		}
		truth, err := probe.Truth(testweb.TruthOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res := crawlVirtual(t, e2eWeb(), testweb.TruthOptions{},
			crawler.WithScope(frontier.ScopeAny), crawler.WithMaxDepth(truth.MaxDepth))
		res.checkPolite(t)
		res.checkComplete(t)
		res.checkUnavailableHost(t)
		res.checkTrapBoundedByDepth(t, truth.MaxDepth)
		if res.rep.SitemapOnlyTotal == 0 {
			t.Error("the web has no sitemap-only pages; the test proves less than it claims")
		}
		st := res.stats
		if st.Sitemaps == 0 || st.SitemapURLs == 0 {
			t.Errorf("Stats.Sitemaps = %d, SitemapURLs = %d, want both > 0", st.Sitemaps, st.SitemapURLs)
		}
		if st.RobotsOutcomes["ok"] == 0 || st.RobotsOutcomes["unreachable"] != int64(len(unreachableKinds)) {
			t.Errorf("Stats.RobotsOutcomes = %v, want ok > 0 and unreachable %d (the broken hosts)", st.RobotsOutcomes, len(unreachableKinds))
		}
		var rules int
		for _, why := range res.disallowed {
			if why == crawler.DisallowedByRules {
				rules++
			}
		}
		if rules == 0 {
			t.Error("no URL reported as disallowed by rules, though every normal host disallows some linked pages")
		}
		if st.Disallowed != int64(rules) {
			t.Errorf("Stats.Disallowed = %d, OnDisallowed got %d distinct URLs disallowed by rules", st.Disallowed, rules)
		}
	})

	t.Run("seed hosts only", func(t *testing.T) {
		t.Parallel()
		cfg := e2eWeb()
		cfg.Seed = 11
		probe, err := testweb.New(cfg, testweb.VirtualAuthorities(cfg.Hosts))
		if err != nil {
			t.Fatal(err)
		}
		all := probe.Seeds()
		redirectHost, _ := probe.HostOfKind(testweb.HostRobotsRedirect)
		unavailable, _ := probe.HostOfKind(testweb.HostRobotsUnavailable)
		// The first host (with the trap), the one whose robots.txt
		// redirects and the 503 one; the others are linked but out of
		// scope.
		seeds := []string{all[0], "http://" + redirectHost.Authority + "/", "http://" + unavailable.Authority + "/"}
		topts := testweb.TruthOptions{Seeds: seeds, SeedHostsOnly: true}
		truth, err := probe.Truth(topts)
		if err != nil {
			t.Fatal(err)
		}
		res := crawlVirtual(t, cfg, topts, crawler.WithScope(frontier.ScopeSeedHosts), crawler.WithMaxDepth(truth.MaxDepth))
		res.checkPolite(t)
		res.checkComplete(t)
		res.checkUnavailableHost(t)
		res.checkTrapBoundedByDepth(t, truth.MaxDepth)
		in := map[string]bool{}
		for _, s := range seeds {
			u, _ := url.Parse(s)
			in[u.Host] = true
		}
		for _, e := range res.entries {
			if !in[e.Host] {
				t.Errorf("request to %s, outside the seed hosts: %s", e.Host, e.URL())
			}
		}
		if res.stats.SkippedLinks["scope"] == 0 {
			t.Error("Stats.SkippedLinks[scope] = 0, though the seed hosts link to other hosts")
		}
	})

	t.Run("sitemaps off", func(t *testing.T) {
		t.Parallel()
		cfg := e2eWeb()
		cfg.Hosts, cfg.Seed = 6, 23
		topts := testweb.TruthOptions{NoSitemaps: true}
		probe, err := testweb.New(cfg, testweb.VirtualAuthorities(cfg.Hosts))
		if err != nil {
			t.Fatal(err)
		}
		truth, err := probe.Truth(topts)
		if err != nil {
			t.Fatal(err)
		}
		res := crawlVirtual(t, cfg, topts, crawler.WithScope(frontier.ScopeAny), crawler.WithMaxDepth(truth.MaxDepth), crawler.WithSitemaps(false))
		res.checkPolite(t)
		res.checkComplete(t)
		res.checkUnavailableHost(t)
		if res.rep.SitemapRequests != 0 {
			t.Errorf("%d sitemap requests with sitemaps off", res.rep.SitemapRequests)
		}
		if res.stats.Sitemaps != 0 {
			t.Errorf("Stats.Sitemaps = %d with sitemaps off", res.stats.Sitemaps)
		}
		// Pages only sitemaps list are not reachable without them.
		full, err := probe.Truth(testweb.TruthOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range full.SitemapOnly {
			if res.pages[u] > 0 {
				t.Errorf("sitemap-only page %s fetched with sitemaps off", u)
			}
		}
	})

	t.Run("page limits", func(t *testing.T) {
		t.Parallel()
		// No depth limit: only the page limits keep the crawler out of
		// the infinite calendar.
		const perHost = 12
		cfg := e2eWeb()
		cfg.Hosts, cfg.Seed = 5, 31
		res := crawlVirtual(t, cfg, testweb.TruthOptions{}, crawler.WithScope(frontier.ScopeAny), crawler.WithMaxPagesPerHost(perHost))
		res.checkPolite(t)
		perHostPages := map[string]int{}
		for _, e := range res.entries {
			if e.Target != "/robots.txt" && e.Target != robotsRedirectTarget && !strings.HasPrefix(e.Target, "/sitemap") {
				perHostPages[e.Host]++
			}
		}
		for h, n := range perHostPages {
			if n > perHost {
				t.Errorf("%d page requests to %s, limit %d", n, h, perHost)
			}
		}
		if res.rep.TrapFetches == 0 || res.rep.TrapFetches > perHost {
			t.Errorf("%d trap pages fetched, want between 1 and the per-host limit %d", res.rep.TrapFetches, perHost)
		}
		if res.stats.SkippedLinks["max-pages-per-host"] == 0 {
			t.Error("Stats.SkippedLinks[max-pages-per-host] = 0 after a crawl cut short by it")
		}
	})

	t.Run("total page limit", func(t *testing.T) {
		t.Parallel()
		const total = 20
		cfg := e2eWeb()
		cfg.Hosts, cfg.Seed = 5, 37
		res := crawlVirtual(t, cfg, testweb.TruthOptions{}, crawler.WithScope(frontier.ScopeAny), crawler.WithMaxPages(total))
		res.checkPolite(t)
		if res.rep.PageRequests > total {
			t.Errorf("%d page requests, limit %d", res.rep.PageRequests, total)
		}
		if res.stats.SkippedLinks["max-pages"] == 0 {
			t.Error("Stats.SkippedLinks[max-pages] = 0 after a crawl cut short by it")
		}
	})
}

// TestEndToEndRobotsRedirectHopIsPaced: a robots.txt that redirects costs
// two requests to the host, and the site counts both: the second must wait
// the crawler's delay like any other request, though the gate follows the
// redirect inside one robots.txt fetch.
func TestEndToEndRobotsRedirectHopIsPaced(t *testing.T) {
	cfg := testweb.Config{Hosts: 4, PagesPerHost: 4, Seed: 5}
	v, err := testweb.NewVirtual(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	h, _ := v.Web.HostOfKind(testweb.HostRobotsRedirect)
	const delay = 100 * time.Millisecond
	c, err := crawler.New(crawler.WithTransport(v.Transport()), crawler.WithDelay(delay), crawler.WithMaxPages(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background(), "http://"+h.Authority+"/"); err != nil {
		t.Fatal(err)
	}
	var starts []time.Time
	var targets []string
	for _, e := range v.Log.Entries() {
		starts = append(starts, e.Start)
		targets = append(targets, e.Target)
	}
	if len(targets) < 2 || targets[0] != "/robots.txt" || targets[1] != robotsRedirectTarget {
		t.Fatalf("requests %q, want /robots.txt then %s first", targets, robotsRedirectTarget)
	}
	if gap := starts[1].Sub(starts[0]); gap < delay-e2eTolerance {
		t.Errorf("robots.txt redirect hop %v after robots.txt, want at least the delay %v (robots gate: pace each hop through the Pacer)", gap.Round(time.Millisecond), delay)
	}
}
