package crawler_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/testweb"
)

// Figures of the broken-host crawls (issue 18). The delays are short so a
// healthy crawl takes a second; the maximum delay is the real default, so a
// crawler that waits out a host's rest before reporting its URLs (a
// robots.txt answering 503 with "Retry-After: 3600" rests the host a full
// minute) hangs far past brokenDeadline instead of finishing.
const (
	brokenDelay    = 10 * time.Millisecond
	brokenMaxDelay = crawler.DefaultMaxDelay
	brokenHeader   = 500 * time.Millisecond // the hanging robots.txt costs this once
	// brokenDeadline bounds one crawl: a fixed crawl of the broken web
	// takes a few seconds, one held by a broken host at least a minute.
	brokenDeadline = 15 * time.Second
	// brokenSlack is what the broken hosts may add to a crawl besides
	// doubling it: HostRateLimited's two pages each wait a Retry-After of
	// 1 s, HostResetting's failures back off 1 s then 2 s, the hanging
	// robots.txt costs a header timeout; and a loaded machine's slack.
	brokenSlack = 2*testweb.RateLimitedRetryAfter + 3*time.Second + brokenHeader + 2*time.Second
)

// brokenHostsWeb is the web of these tests: three normal hosts, the
// robots-redirect, robots-404 and robots-503 hosts, then the broken hosts.
func brokenHostsWeb() testweb.Config {
	return testweb.Config{Hosts: 6, PagesPerHost: 12, Seed: 18}
}

// brokenHostsCrawl is what one crawl of the broken web left behind, as the
// server logged it and as the hooks were told.
type brokenHostsCrawl struct {
	runErr  error
	elapsed time.Duration
	entries []testweb.Entry
	dials   map[string]int // dial attempts per authority, refused ones included

	mu      sync.Mutex
	pages   map[string]int      // canonical URL → OnPage calls
	errs    map[string][]string // canonical URL → what OnError was told
	links   map[string]bool     // canonical URLs of the followable links on fetched pages
	started time.Time
	pending []string // for the log: records in the order they came
}

// record notes one OnPage or OnError call.
func (b *brokenHostsCrawl) record(what, u string) {
	b.pending = append(b.pending, fmt.Sprintf("+%v %s %s", time.Since(b.started).Round(time.Millisecond), what, u))
}

// crawlBrokenHosts serves cfg, crawls it from seeds with heed, and returns
// what the crawl did. in, if not nil, limits the crawl to the URLs it
// accepts.
func crawlBrokenHosts(t *testing.T, v *testweb.Virtual, seeds []string, in func(u *url.URL) bool) *brokenHostsCrawl {
	t.Helper()
	v.Log.Reset()
	res := &brokenHostsCrawl{pages: map[string]int{}, errs: map[string][]string{}, links: map[string]bool{}, dials: map[string]int{}}
	var dialMu sync.Mutex
	tr := v.Transport()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		dialMu.Lock()
		res.dials[strings.ToLower(host)]++
		dialMu.Unlock()
		return v.DialContext(ctx, network, addr)
	}
	opts := []crawler.Option{
		crawler.WithTransport(tr),
		crawler.WithDelay(brokenDelay),
		crawler.WithMaxDelay(brokenMaxDelay),
		crawler.WithConnectTimeout(time.Second), crawler.WithHeaderTimeout(brokenHeader), crawler.WithFetchTimeout(5 * time.Second),
		crawler.WithScope(frontier.ScopeAny),
		crawler.WithGracePeriod(time.Second),
	}
	if in != nil {
		opts = append(opts, crawler.WithScopeFunc(in))
	}
	c, err := crawler.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		u := canonical(t, p.URL.String())
		res.mu.Lock()
		defer res.mu.Unlock()
		res.pages[u]++
		res.record("page", u)
		for _, l := range p.Links {
			if !l.Nofollow {
				res.links[canonical(t, l.URL)] = true
			}
		}
	})
	c.OnError(func(ctx context.Context, u *url.URL, err error) {
		cu := canonical(t, u.String())
		res.mu.Lock()
		defer res.mu.Unlock()
		res.errs[cu] = append(res.errs[cu], err.Error())
		res.record("error", cu)
	})
	ctx, cancel := context.WithTimeout(context.Background(), brokenDeadline)
	defer cancel()
	res.started = time.Now()
	res.runErr = c.Run(ctx, seeds...)
	res.elapsed = time.Since(res.started)
	res.entries = v.Log.Entries()
	t.Logf("crawl of %d seeds: Run = %v after %v; %d requests; stats: %v", len(seeds), res.runErr,
		res.elapsed.Round(time.Millisecond), len(res.entries), statsOf(t, c))
	return res
}

// brokenAuthorities returns the authorities of the web's broken hosts (and of the
// robots-503 host, whose robots.txt is as unreachable) by kind.
func brokenAuthorities(w *testweb.Web) map[string]testweb.HostKind {
	out := map[string]testweb.HostKind{}
	for _, h := range w.Hosts() {
		if h.Kind.Broken() {
			out[h.Authority] = h.Kind
		}
	}
	return out
}

func authorityOf(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return pu.Host
}

// TestBrokenHosts crawls a web whose broken hosts do what the real web's
// do — a robots.txt answering 503 with Retry-After in seconds or as an
// HTTP-date, a robots.txt that hangs past the header timeout, a host that
// refuses connections, pages answering 429 with Retry-After, pages cut off
// by a reset — all linked from the healthy hosts, and checks that they do
// not hold the crawl (issue 18): it ends within twice the time of the same
// crawl kept off the broken hosts, plus what their Retry-After and back-off
// cost; every URL of theirs is reported exactly once; and a host whose
// robots.txt is unreachable is asked for robots.txt once and nothing else.
func TestBrokenHosts(t *testing.T) {
	v, err := testweb.NewVirtual(brokenHostsWeb())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	broken := brokenAuthorities(v.Web)
	if len(broken) != testweb.BrokenHosts+1 {
		t.Fatalf("%d broken hosts (%v), want %d and the robots-503 host", len(broken), broken, testweb.BrokenHosts)
	}
	var healthySeeds []string
	for _, s := range v.Web.Seeds() {
		if _, ok := broken[authorityOf(s)]; !ok {
			healthySeeds = append(healthySeeds, s)
		}
	}
	// The same web and crawler, kept off the broken hosts: the time the
	// crawl of the healthy hosts takes.
	healthy := crawlBrokenHosts(t, v, healthySeeds, func(u *url.URL) bool {
		_, ok := broken[strings.ToLower(u.Host)]
		return !ok
	})
	if healthy.runErr != nil {
		t.Fatalf("the crawl of the healthy hosts alone failed: %v", healthy.runErr)
	}
	res := crawlBrokenHosts(t, v, v.Web.Seeds(), nil)
	truth, err := v.Truth()
	if err != nil {
		t.Fatal(err)
	}
	logHeld := func(t *testing.T) {
		t.Helper()
		res.mu.Lock()
		defer res.mu.Unlock()
		t.Logf("records in order:\n  %s", strings.Join(res.pending, "\n  "))
	}

	t.Run("do not hold the crawl", func(t *testing.T) {
		limit := 2*healthy.elapsed + brokenSlack
		if res.runErr != nil {
			t.Errorf("the crawl did not end: Run = %v after %v (deadline %v); the healthy hosts alone took %v",
				res.runErr, res.elapsed.Round(time.Millisecond), brokenDeadline, healthy.elapsed.Round(time.Millisecond))
			logHeld(t)
			return
		}
		if res.elapsed > limit {
			t.Errorf("the crawl with the broken hosts took %v, the healthy hosts alone %v: want at most %v (2× and %v for the broken hosts' Retry-After, back-off and header timeout)",
				res.elapsed.Round(time.Millisecond), healthy.elapsed.Round(time.Millisecond), limit.Round(time.Millisecond), brokenSlack)
			logHeld(t)
		}
	})

	t.Run("every URL reported once", func(t *testing.T) {
		// What the crawl met on the broken hosts: seeds, and the
		// followable links of the pages it fetched. It must be what the
		// truth says a crawl meets there.
		met := map[string]bool{}
		for _, s := range v.Web.Seeds() {
			if _, ok := broken[authorityOf(s)]; ok {
				met[canonical(t, s)] = true
			}
		}
		res.mu.Lock()
		for u := range res.links {
			if _, ok := broken[authorityOf(u)]; ok {
				met[u] = true
			}
		}
		want := map[string]bool{}
		for _, u := range append(slices.Clone(truth.Reachable), truth.Disallowed...) {
			if _, ok := broken[authorityOf(u)]; ok {
				want[u] = true
			}
		}
		// Every URL of a broken host has exactly one record: a page or
		// an error.
		var missing, twice []string
		for u := range met {
			switch n := res.pages[u] + len(res.errs[u]); {
			case n == 0:
				missing = append(missing, fmt.Sprintf("%s (%v host)", u, broken[authorityOf(u)]))
			case n > 1:
				twice = append(twice, fmt.Sprintf("%s: %d pages, errors %q", u, res.pages[u], res.errs[u]))
			}
		}
		var unmet []string
		for u := range maps.Keys(res.pages) {
			if _, ok := broken[authorityOf(u)]; ok && !met[u] {
				unmet = append(unmet, u+" (page)")
			}
		}
		for u := range maps.Keys(res.errs) {
			if _, ok := broken[authorityOf(u)]; ok && !met[u] {
				unmet = append(unmet, u+" (error)")
			}
		}
		res.mu.Unlock()
		slices.Sort(missing)
		slices.Sort(twice)
		if len(met) == 0 || res.runErr == nil && !maps.Equal(met, want) {
			t.Errorf("the crawl met %d URLs of the broken hosts, the truth says %d: met %v, want %v",
				len(met), len(want), slices.Sorted(maps.Keys(met)), slices.Sorted(maps.Keys(want)))
		}
		if len(missing) > 0 {
			t.Errorf("%d URLs of broken hosts never reported (neither OnPage nor OnError) when Run returned %v after %v:\n  %s",
				len(missing), res.runErr, res.elapsed.Round(time.Millisecond), strings.Join(missing, "\n  "))
		}
		if len(twice) > 0 {
			t.Errorf("%d URLs of broken hosts reported more than once:\n  %s", len(twice), strings.Join(twice, "\n  "))
		}
		if len(unmet) > 0 {
			t.Errorf("reports for URLs of broken hosts the crawl never met: %q", unmet)
		}
		if len(missing)+len(twice) > 0 {
			logHeld(t)
		}
	})

	t.Run("unreachable robots.txt asked once", func(t *testing.T) {
		if res.runErr != nil {
			t.Errorf("the crawl did not end (Run = %v after %v): what it asked of the broken hosts is judged on an unfinished crawl",
				res.runErr, res.elapsed.Round(time.Millisecond))
		}
		byHost := map[string][]testweb.Entry{}
		for _, e := range res.entries {
			byHost[e.Host] = append(byHost[e.Host], e)
		}
		for a, kind := range broken {
			if !kind.RobotsUnreachable() {
				continue
			}
			if kind == testweb.HostRefused {
				// No request reaches the server: count the connections
				// tried. robots.txt's is the one.
				if n := res.dials[a]; n != 1 {
					t.Errorf("%s (%v): %d connections tried, want 1, for robots.txt", a, kind, n)
				}
				continue
			}
			var targets []string
			for _, e := range byHost[a] {
				targets = append(targets, e.Target)
			}
			if len(targets) != 1 || targets[0] != "/robots.txt" {
				t.Errorf("%s (%v): requests %q, want /robots.txt once and nothing else", a, kind, targets)
			}
		}
		// And the server's judge agrees: nothing past an unreachable
		// robots.txt, no Retry-After broken, no URL asked again beyond
		// the retries.
		rep := truth.Analyze(res.entries, testweb.AnalyzeOptions{MinDelay: brokenDelay, Tolerance: e2eTolerance, MaxDelay: brokenMaxDelay})
		if len(rep.UnavailableHostFetches) > 0 {
			t.Errorf("requests past an unreachable robots.txt: %q", rep.UnavailableHostFetches)
		}
		var retryAfter []string
		for _, v := range rep.PolitenessViolations {
			if strings.Contains(v, "Retry-After") {
				retryAfter = append(retryAfter, v)
			}
		}
		if len(retryAfter) > 0 || len(rep.ExcessRetries) > 0 || rep.RobotsRefetches > 0 {
			t.Errorf("Retry-After not waited for: %q; retries beyond the allowed: %q; robots.txt asked again %d times", retryAfter, rep.ExcessRetries, rep.RobotsRefetches)
		}
	})
}
