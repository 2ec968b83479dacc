package harness

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// Figures prints BENCHMARKS.md's two shapes: heed beside gocrawl and colly
// a workload a row, with ratios against gocrawl; heed's variants against
// heed in memory (several processes against one); every row with as many
// cells as its header and the provenance at its end.
func TestFigures(t *testing.T) {
	mk := func(crawler, workload string, wall time.Duration, fetched int, robots int) Measurement {
		return Measurement{Crawler: crawler, Workload: workload, Wall: wall, CPU: wall / 2, MaxRSS: 40 << 20, Procs: 1,
			Report: &testweb.Report{ReachableFetched: fetched, ReachableTotal: 1000, Coverage: float64(fetched) / 1000,
				RobotsViolations: make([]string, robots)}}
	}
	redis4 := mk("heed-redis-4", "f", 15*time.Second, 1000, 0)
	redis4.Procs, redis4.Exits = 4, []time.Duration{14 * time.Second, 14 * time.Second, 15 * time.Second, 15 * time.Second}
	redis4.Redis = &RedisUse{CPU: 50 * time.Millisecond, Calls: map[string]int64{"evalsha": 500, "hset": 1500}}
	ms := []Measurement{
		mk("heed", "a", 1*time.Second, 1000, 0),
		mk("gocrawl", "a", 2*time.Second, 800, 1003),
		mk("heed", "f", 60*time.Second, 1000, 0),
		mk("heed-redis", "f", 60*time.Second, 1000, 0),
		redis4,
	}
	a, _ := WorkloadByName("a")
	f, _ := WorkloadByName("f")
	a.Config.NoBrokenHosts, f.Config.NoBrokenHosts = true, true
	p := Provenance{Machine: "2 CPUs", Command: "go -C bench run ./cmd/benchrun -workloads a,f", Date: "2026-12-06", Build: "5f0bbe3"}
	out := Figures(Summarize(ms), []Workload{a, f}, map[string]error{"colly": ErrNotRequested}, p)

	for _, want := range []string{
		PeersHeader, FiguresHeader,
		// heed: 1,000 pages/s, twice gocrawl's 400, in half its wall.
		"| (a) throughput: 200 hosts × 50 pages, no delay | 1.00 s wall (0.50×) · 1,000 pages/s (2.50×) ·",
		"coverage 1.000 · 0 faults |", "coverage 0.800 · 1,003 faults |",
		"| not run (left out of -crawlers) |", "| " + a.Bar + " |",
		// Four processes against one on Redis: a quarter of its wall.
		"| (f) scale-out: 100 hosts × 10 pages, 200 ms latency per response, 4 workers per process: heed-redis-4 | 15.00 s wall (0.25×)",
		"Redis: 50 µs CPU, 0.50 scripts, 2.0 commands a page · 4 processes | heed-redis: 60.00 s wall",
		"| 2 CPUs | `go -C bench run ./cmd/benchrun -workloads a,f` | 2026-12-06 | 5f0bbe3 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Figures lacks %q:\n%s", want, out)
		}
	}
	// heed in memory is the yardstick of (f), not a row of its own.
	if strings.Contains(out, "| (f) scale-out: 100 hosts × 10 pages, 200 ms latency per response, 4 workers per process: heed |") {
		t.Errorf("Figures has a row of heed against itself:\n%s", out)
	}
	checkShape(t, out)

	// With the broken hosts, the row says so.
	a.Config.NoBrokenHosts = false
	out = Figures(Summarize(ms), []Workload{a}, nil, p)
	if !strings.Contains(out, "| (a) throughput: 200 hosts × 50 pages, no delay + the broken hosts | 1.00 s wall") {
		t.Errorf("Figures does not say the broken hosts were served:\n%s", out)
	}
}

// checkShape fails t for a row with other than its header's cells.
func checkShape(t *testing.T, out string) {
	t.Helper()
	want := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			want = 0
			continue
		}
		// Code spans hold no bars here; cells are what lies between them.
		n := strings.Count(line, "|") - 1
		if want == 0 {
			want = n
			continue
		}
		if n != want {
			t.Errorf("row with %d cells under a header of %d:\n%s", n, want, line)
		}
	}
}

// A continuous workload's row is judged on freshness; a workload only heed
// ran, with no variant, has no row.
func TestFiguresContinuous(t *testing.T) {
	g := ContinuousWorkload()
	g.Config.NoBrokenHosts = true
	m := Measurement{Crawler: "heed", Workload: "g", Wall: time.Minute, Requests: 100,
		Freshness: &testweb.FreshnessReport{Measured: 0.6, Uniform: 0.5, Optimum: 0.61, RatioToOptimum: 0.98, GapClosed: 0.9,
			ConditionalShare: 1}}
	a, _ := WorkloadByName("a")
	out := Figures(Summarize([]Measurement{m, {Crawler: "heed", Workload: "a", Wall: time.Second, Report: &testweb.Report{}}}),
		[]Workload{g, a}, map[string]error{"heed-redis": errors.New("no redis")}, Provenance{})
	for _, want := range []string{"| (g) continuous: 20 hosts × 50 changing pages, Crawl-delay 0.1 s, revisited, -for 3m0s: heed | fresh / optimum 0.980 · gap closed 0.90",
		"fresh 0.600 against uniform revisiting 0.500 and the optimum 0.610", g.Bar} {
		if !strings.Contains(out, want) {
			t.Errorf("Figures lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "(a)") || strings.Contains(out, PeersHeader) {
		t.Errorf("Figures has a row for (a), which only heed ran:\n%s", out)
	}
	checkShape(t, out)
}
