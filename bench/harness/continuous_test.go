package harness

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// A Continuous workload serves each run a changing web of its own, with
// the static web of broken hosts beside it, runs the crawler for its time
// and judges the second half from the web's log: a polite crawler that
// revisits conditionally is judged so, a rude one caught.
func TestRunContinuous(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	spawner, err := StartSpawner()
	if err != nil {
		t.Fatal(err)
	}
	defer spawner.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const delay = 20 * time.Millisecond
	w := Workload{Name: "t", Title: "tiny changing", Delay: delay, HeedOnly: true,
		Config: testweb.Config{Hosts: 4, PagesPerHost: 2, CrawlDelay: delay, Seed: 1},
		Continuous: &Continuous{
			Web: testweb.ChangingConfig{Hosts: 2, PagesPerHost: 3, Seed: 1, CrawlDelay: delay,
				MinChangeInterval: 50 * time.Millisecond, MaxChangeInterval: 5 * time.Second},
			For: 1500 * time.Millisecond, MinRevisit: delay, MaxRevisit: time.Second,
		}}
	crawlers := []Crawler{
		{Name: "heed-polite", Path: exe, Args: fakeRevisitorArgs(true)},
		{Name: "heed-rude", Path: exe, Args: fakeRevisitorArgs(false)},
		{Name: "colly", Path: exe, Args: fakeRevisitorArgs(true)},
	}
	ms, err := Run(ctx, Plan{Workloads: []Workload{w}, Crawlers: crawlers, Runs: 1, Timeout: time.Minute, Scratch: dir, Spawner: spawner})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d measurements, want 2 (colly never on a HeedOnly workload)", len(ms))
	}
	for _, m := range ms {
		r := m.Freshness
		if m.Err != nil || r == nil {
			t.Fatalf("%s: err %v, freshness %v\n%s", m.Crawler, m.Err, r, m.Stderr)
		}
		// The judged window is the run's second half: it has the pages,
		// their fetches, and fewer requests than the whole run.
		if r.Pages != 6 || r.Fetches == 0 || r.Requests == 0 || r.Requests >= m.Requests || r.Revisits == 0 {
			t.Errorf("%s: %d pages, %d fetches, %d revisits, %d requests in the window of %d: %s", m.Crawler, r.Pages, r.Fetches, r.Revisits, r.Requests, m.Requests, r)
		}
		if !(r.Measured >= 0 && r.Measured <= 1) || !(r.Optimum > 0 && r.Optimum <= 1) {
			t.Errorf("%s: freshness %v, optimum %v", m.Crawler, r.Measured, r.Optimum)
		}
		// The broken hosts were served and their requests judged.
		if m.Report == nil || m.Report.PageRequests == 0 {
			t.Errorf("%s: broken hosts' web not judged: %v", m.Crawler, m.Report)
		}
	}
	polite, rude := ms[0], ms[1]
	if polite.Crawler != "heed-polite" {
		polite, rude = rude, polite
	}
	// The polite fake waits the delay after each answer: the judge, by
	// the workload's delay, finds no fault with it.
	if p := polite.Freshness; len(p.PolitenessViolations) != 0 || p.ConditionalShare != 1 {
		t.Errorf("polite: %d politeness violations, conditional share %v: %s", len(p.PolitenessViolations), p.ConditionalShare, p)
	}
	if r := rude.Freshness; len(r.PolitenessViolations) == 0 || r.ConditionalRevisits != 0 {
		t.Errorf("rude: %d politeness violations, %d conditional revisits: %s", len(r.PolitenessViolations), r.ConditionalRevisits, r)
	}
	sums := Summarize(ms)
	table := Table(sums, []Workload{w}, map[string]error{"heed": ErrNotRequested, "colly": ErrNotRequested})
	rudeViolations := fmt.Sprintf("| %.0f | 0 | 0.000 |", float64(len(rude.Freshness.PolitenessViolations)))
	for _, want := range []string{"**(t) tiny changing** — each run `-revisit -for 1.5s", "| conditional share |",
		"| heed | not run", "| heed-polite | 1 | ", "| heed-rude | 1 | ", rudeViolations} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "reachable pages/s") || strings.Contains(table, "colly") {
		t.Errorf("a continuous workload's table has the static columns, or colly:\n%s", table)
	}
}

func TestSummarizeFreshness(t *testing.T) {
	mk := func(measured float64, violations int, wait time.Duration) Measurement {
		return Measurement{Crawler: "heed", Workload: "g", Wall: time.Minute, Requests: 100,
			Freshness: &testweb.FreshnessReport{Measured: measured, Pages: 10, Fetches: 40,
				PolitenessViolations: make([]string, violations), LongestDiscoveryDelay: wait,
				Requests: 50, Hosts: []testweb.HostFreshness{{FullBudget: 80}, {FullBudget: 20}}},
			Report: &testweb.Report{UnavailableHostFetches: make([]string, violations)}}
	}
	sums := Summarize([]Measurement{mk(0.5, 0, time.Second), mk(0.7, 4, 3*time.Second), mk(0.6, 1, 2*time.Second)})
	if len(sums) != 1 || sums[0].Fresh == nil {
		t.Fatalf("summaries %+v", sums)
	}
	f := sums[0].Fresh
	if f.Measured != 0.6 || f.PolitenessViolations != 1 || f.LongestDiscoveryDelay != 2*time.Second ||
		f.FetchesPerPage != 4 || f.BudgetUsed != 0.5 || !f.Broken || f.BrokenPastRobots != 1 {
		t.Errorf("medians %+v", f)
	}
	if sums := Summarize([]Measurement{{Crawler: "heed", Workload: "a", Report: &testweb.Report{}}}); sums[0].Fresh != nil {
		t.Errorf("a static workload's summary has freshness %+v", sums[0].Fresh)
	}
}

// Workload g is a changing web the testweb package accepts, with the
// broken hosts beside it, and heed revisits it for its time.
func TestContinuousWorkload(t *testing.T) {
	w, ok := WorkloadByName("g")
	if !ok || w.Continuous == nil || !w.HeedOnly || !withBroken(w) {
		t.Fatalf("workload g: %+v", w)
	}
	c := w.Continuous
	authorities := make([]string, c.Web.Hosts)
	for i := range authorities {
		authorities[i] = fmt.Sprintf("h%d.test", i)
	}
	if _, err := testweb.NewChanging(c.Web, authorities); err != nil {
		t.Fatal(err)
	}
	if c.Web.CrawlDelay != w.Delay || !(c.MinRevisit < c.MaxRevisit) || c.For <= 0 {
		t.Errorf("delay %v (web's %v), revisits %v to %v, for %v", w.Delay, c.Web.CrawlDelay, c.MinRevisit, c.MaxRevisit, c.For)
	}
	args := strings.Join(heedArgs(w, RunEnv{SeedsFile: "seeds.txt", Scratch: "/s", Proc: 1}), " ")
	want := fmt.Sprintf("-revisit -for %v -min-revisit %v -max-revisit %v", c.For, c.MinRevisit, c.MaxRevisit)
	if !strings.Contains(args, want) || !strings.HasSuffix(args, "seeds.txt") {
		t.Errorf("heed's args %q lack %q", args, want)
	}
	w.Config.NoBrokenHosts = true
	if withBroken(w) {
		t.Error("broken hosts served with NoBrokenHosts")
	}
}
