package crawler_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
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

// downTransport answers 503 for every page of the host down, robots.txt
// aside, and passes every other request to rt: a host that is up, polite
// and linked from every site of the web, but whose pages all fail — the
// host of issue 30. The broken hosts of testweb are linked from home pages
// only, so a crawl meets all their URLs before it can give them up; the
// pages of a healthy host are linked from pages all over the web, and so
// are found throughout the crawl, before and after it is given up.
type downTransport struct {
	rt   http.RoundTripper
	down string
}

func (d downTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.EqualFold(req.URL.Host, d.down) || req.URL.Path == "/robots.txt" {
		return d.rt.RoundTrip(req)
	}
	return &http.Response{
		Status: "503 Service Unavailable", StatusCode: http.StatusServiceUnavailable,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader("down")),
		ContentLength: 4, Request: req,
	}, nil
}

// reportsCrawl is what the hooks of one crawl were told.
type reportsCrawl struct {
	mu      sync.Mutex
	reports map[string][]string // canonical URL → its reports ("page 200", "error host-given-up", "disallowed")
	met     map[string]bool     // seeds, followable links of the pages fetched, redirect targets
}

// crawlReports crawls the broken-host web from every seed with no retries,
// every host given up at its first failure and the pages of down all
// answering 503 — as issue 30 measured — and returns every report.
func crawlReports(t *testing.T, v *testweb.Virtual, down string) *reportsCrawl {
	t.Helper()
	v.Log.Reset() // the broken hosts' pages fail their first request again
	res := &reportsCrawl{reports: map[string][]string{}, met: map[string]bool{}}
	for _, s := range v.Web.Seeds() {
		res.met[canonical(t, s)] = true
	}
	c, err := crawler.New(
		crawler.WithTransport(downTransport{rt: v.Transport(), down: down}),
		crawler.WithDelay(0), crawler.WithMaxDelay(brokenMaxDelay),
		crawler.WithRetries(0), crawler.WithHostFailures(1),
		crawler.WithConnectTimeout(time.Second), crawler.WithHeaderTimeout(brokenHeader), crawler.WithFetchTimeout(5*time.Second),
		crawler.WithScope(frontier.ScopeAny),
	)
	if err != nil {
		t.Fatal(err)
	}
	report := func(u, what string) {
		res.mu.Lock()
		defer res.mu.Unlock()
		res.reports[u] = append(res.reports[u], what)
	}
	c.OnPage(func(_ context.Context, p *crawler.Page) {
		report(canonical(t, p.URL.String()), fmt.Sprintf("page %d", p.Status))
		res.mu.Lock()
		defer res.mu.Unlock()
		for _, l := range p.Links {
			if !l.Nofollow {
				res.met[canonical(t, l.URL)] = true
			}
		}
		if p.Redirect != nil {
			res.met[canonical(t, p.Redirect.String())] = true
		}
	})
	c.OnError(func(_ context.Context, u *url.URL, err error) {
		what := "error"
		if e, ok := err.(*crawler.Error); ok {
			what += " " + string(e.Kind) + string(e.Skipped)
		}
		report(canonical(t, u.String()), what)
	})
	c.OnDisallowed(func(_ context.Context, u *url.URL, why crawler.DisallowReason) {
		if why == crawler.DisallowedByRules { // an unreachable robots.txt is told to OnError too
			report(canonical(t, u.String()), "disallowed")
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), brokenDeadline)
	defer cancel()
	if err := c.Run(ctx, v.Web.Seeds()...); err != nil {
		t.Fatalf("Run = %v", err)
	}
	return res
}

// TestReportsSameEveryRun crawls the broken-host web, with a host whose
// pages all answer 503, twenty times (issue 30): every URL the crawl meets
// is reported exactly once — a page, an error or a robots.txt disallow —
// and the URLs reported are the same every time, whenever the failing host
// was given up relative to the pages linking to it.
func TestReportsSameEveryRun(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 3
	}
	v, err := testweb.NewVirtual(brokenHostsWeb())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	down := v.Web.Hosts()[1]
	if down.Kind != testweb.HostNormal {
		t.Fatalf("host 1 is %v, want a normal host", down.Kind)
	}
	var first []string
	for run := range runs {
		res := crawlReports(t, v, down.Authority)
		var missing, twice []string
		for u := range res.met {
			if len(res.reports[u]) == 0 {
				missing = append(missing, u)
			}
		}
		givenUp := 0
		for u, r := range res.reports {
			if len(r) > 1 {
				twice = append(twice, fmt.Sprintf("%s: %q", u, r))
			}
			if authorityOf(u) == down.Authority && slices.Contains(r, "error host-given-up") {
				givenUp++
			}
		}
		slices.Sort(missing)
		slices.Sort(twice)
		if len(missing) > 0 {
			t.Errorf("run %d: %d URLs met and never reported:\n  %s", run+1, len(missing), strings.Join(missing, "\n  "))
		}
		if len(twice) > 0 {
			t.Errorf("run %d: %d URLs reported more than once:\n  %s", run+1, len(twice), strings.Join(twice, "\n  "))
		}
		if givenUp == 0 {
			t.Errorf("run %d: no URL of %s reported given up: the test does not test what it should", run+1, down.Authority)
		}
		got := slices.Sorted(maps.Keys(res.reports))
		if first == nil {
			first = got
			continue
		}
		if !slices.Equal(got, first) {
			t.Errorf("run %d reported %d URLs, run 1 %d: only in run %d %q, only in run 1 %q",
				run+1, len(got), len(first), run+1, minus(got, first), minus(first, got))
		}
		if t.Failed() {
			return
		}
	}
}

// minus returns the strings of a, sorted, that b, sorted, lacks.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if _, found := slices.BinarySearch(b, s); !found {
			out = append(out, s)
		}
	}
	return out
}

// TestGivenUpSitemapCounted: a sitemap dropped with its host given up is
// counted, not reported — as a sitemap read is not — while the host's
// pages are reported given up.
func TestGivenUpSitemapCounted(t *testing.T) {
	s := newSite(t, "", map[string]http.HandlerFunc{})
	s.mu.Lock()
	s.routes["/robots.txt"] = func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "User-agent: *\nDisallow:\nSitemap: %s/sm.xml\n", s.URL)
	}
	for _, p := range []string{"/", "/sm.xml"} {
		s.routes[p] = func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }
	}
	s.mu.Unlock()
	c, err := crawler.New(crawler.WithDelay(0), crawler.WithRetries(0), crawler.WithHostFailures(1))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reported []string
	c.OnError(func(_ context.Context, u *url.URL, err error) {
		mu.Lock()
		reported = append(reported, u.Path)
		mu.Unlock()
	})
	if err := c.Run(context.Background(), s.URL+"/", s.URL+"/second"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reported, []string{"/second"}) {
		t.Errorf("reported to OnError: %q, want /second alone (given up; / is a page, /sm.xml a sitemap)", reported)
	}
	if st := statsOf(t, c); st.SkippedLinks[crawler.SkippedHostGivenUp] != 1 || s.count("/sm.xml") != 0 {
		t.Errorf("Skipped[host-given-up] = %d, /sm.xml asked %d times; want the sitemap counted, not asked", st.SkippedLinks[crawler.SkippedHostGivenUp], s.count("/sm.xml"))
	}
}
