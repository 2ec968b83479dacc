package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// TestRunSmoke builds the colly and gocrawl runners, runs each once as a
// process against a tiny loopback web, and checks that every measurement
// and the table are filled in.
func TestRunSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	crawlers, skipped := BuildCrawlers(ctx, []string{"colly", "gocrawl"}, "..", "../..", dir)
	if len(skipped) != 1 || !errors.Is(skipped["heed"], ErrNotRequested) || len(crawlers) != 2 {
		t.Fatalf("built %d crawlers, skipped %v", len(crawlers), skipped)
	}
	spawner, err := StartSpawner()
	if err != nil {
		t.Fatal(err)
	}
	defer spawner.Close()
	tiny := Workload{Name: "t", Title: "tiny", Config: testweb.Config{Hosts: 5, PagesPerHost: 10, Seed: 1}}
	ms, err := Run(ctx, Plan{Workloads: []Workload{tiny}, Crawlers: crawlers, Runs: 1, Port: 0, Timeout: 2 * time.Minute, Scratch: dir, Spawner: spawner})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d measurements, want 2", len(ms))
	}
	for _, m := range ms {
		if m.Err != nil {
			t.Errorf("%s: %v\n%s", m.Crawler, m.Err, m.Stderr)
		}
		if m.Wall <= 0 || m.CPU <= 0 || m.MaxRSS < 1<<20 {
			t.Errorf("%s: wall %v, CPU %v, max RSS %d: not measured", m.Crawler, m.Wall, m.CPU, m.MaxRSS)
		}
		if m.Report == nil || m.Report.ReachableFetched == 0 || m.PagesPerSecond() <= 0 {
			t.Errorf("%s: the server saw no reachable page fetched: %v", m.Crawler, m.Report)
		}
		// Both ignore the 503 robots.txt: the analysis must notice.
		if m.Report != nil && len(m.Report.UnavailableHostFetches) == 0 {
			t.Errorf("%s: no fetches on the 503 host detected:\n%s", m.Crawler, m.Report)
		}
		// The robots.txt that never answers held neither past the
		// header timeout the harness gives every crawler.
		if m.Wall > time.Minute {
			t.Errorf("%s: a run of the tiny web took %v", m.Crawler, m.Wall)
		}
	}
	table := Table(Summarize(ms), []Workload{tiny}, map[string]error{"heed": ErrNoCrawlCommand})
	for _, want := range []string{"**(t) tiny**", "| heed | pending: crawl command", "| colly | 1 |", "| gocrawl | 1 | "} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestBuildCrawlersSkipsMissingHeed(t *testing.T) {
	crawlers, skipped := BuildCrawlers(context.Background(), []string{"heed", "nope"}, "..", t.TempDir(), t.TempDir())
	if len(crawlers) != 0 || !errors.Is(skipped["heed"], ErrNoCrawlCommand) || skipped["nope"] == nil {
		t.Errorf("crawlers %v, skipped %v", crawlers, skipped)
	}
}

func TestSummarizeAndTable(t *testing.T) {
	w := Workload{Name: "x", Title: "made up"}
	mk := func(c string, wall time.Duration, fetched, dups int, err error) Measurement {
		return Measurement{Crawler: c, Workload: "x", Wall: wall, CPU: wall / 2, MaxRSS: 64 << 20, Err: err,
			Report: &testweb.Report{ReachableFetched: fetched, ReachableTotal: 100, Coverage: float64(fetched) / 100,
				PageRequests: fetched + dups, Duplicates: make([]string, dups),
				Makespan: 2 * wall, IdealMakespan: wall}}
	}
	ms := []Measurement{
		mk("gocrawl", 10*time.Second, 100, 0, nil),
		mk("gocrawl", 30*time.Second, 100, 0, nil),
		mk("gocrawl", 20*time.Second, 100, 0, nil),
		mk("colly", 40*time.Second, 50, 50, nil),
		mk("colly", 40*time.Second, 50, 50, errors.New("boom")),
	}
	sums := Summarize(ms)
	if len(sums) != 2 || sums[0].Wall != 20*time.Second || sums[0].PagesPerSecond != 5 {
		t.Fatalf("gocrawl summary %+v", sums[0])
	}
	if sums[1].Failed != 1 || sums[1].DuplicateShare != 0.5 || sums[1].MakespanRatio != 2 {
		t.Errorf("colly summary %+v", sums[1])
	}
	table := Table(sums, []Workload{w}, nil)
	// colly: 50 pages in 40 s = 1.25/s, a quarter of gocrawl's 5/s.
	for _, want := range []string{"| colly | 2 (1 failed) | 40.00 |", "| 1 | 0.25× |", "50 (50%)", "| 2.00 |"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// The processes of a run crawl together and are judged as one crawl from
// the server's log; a run with Redis is charged what it asked of Redis; a
// crawler that is not heed's stays off a HeedOnly workload.
func TestRunProcessesTogetherWithRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	r := usableRedis(t)(StartRedis(ctx, dir, RedisOptions{}))
	spawner, err := StartSpawner()
	if err != nil {
		t.Fatal(err)
	}
	defer spawner.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	crawlers := []Crawler{
		{Name: "heed-redis-3", Path: exe, Args: fakeCrawlerArgs, Procs: fakeProcs, Redis: true},
		{Name: "colly", Path: exe, Args: fakeCrawlerArgs},
	}
	// No broken hosts: the fake crawler fetches home pages, robots.txt
	// unread, and this test is about the processes' plumbing.
	w := Workload{Name: "t", Title: "tiny", Config: testweb.Config{Hosts: 7, PagesPerHost: 5, Seed: 1, NoBrokenHosts: true}, HeedOnly: true}
	ms, err := Run(ctx, Plan{Workloads: []Workload{w}, Crawlers: crawlers, Runs: 2, Timeout: time.Minute,
		Scratch: dir, Spawner: spawner, Redis: r})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d measurements, want 2 (heed-redis-3 twice, colly never on a HeedOnly workload)", len(ms))
	}
	for _, m := range ms {
		if m.Crawler != "heed-redis-3" || m.Err != nil || m.Procs != fakeProcs || len(m.Exits) != fakeProcs || m.Exits[fakeProcs-1] > m.Wall {
			t.Fatalf("%s run %d: procs %d, exits %v in %v, err %v\n%s", m.Crawler, m.Run, m.Procs, m.Exits, m.Wall, m.Err, m.Stderr)
		}
		// Each process fetched a third of the seeds: only together did
		// they fetch every home page.
		if r := m.Report; r.PageRequests != 7 || r.DistinctPages != 7 || len(r.Duplicates) != 0 {
			t.Errorf("run %d: %d page requests, %d distinct, %d duplicates; want the 7 home pages once each",
				m.Run, r.PageRequests, r.DistinctPages, len(r.Duplicates))
		}
		// One EVAL per process, the INCR it ran, the client's HELLO;
		// FLUSHALL and INFO are the harness's own, not charged.
		if m.Redis == nil || m.Redis.Scripts() != fakeProcs || m.Redis.Calls["incr"] != fakeProcs ||
			m.Redis.Commands() != 3*fakeProcs || m.Redis.Calls["info"] != 0 {
			t.Errorf("run %d: Redis use %+v; want %d EVAL, %d INCR and %d HELLO", m.Run, m.Redis, fakeProcs, fakeProcs, fakeProcs)
		}
	}
	// Each run had a fresh Redis: the job's counter of the second run
	// counts its three processes only.
	if n, err := r.client.Get(ctx, "bench-t-2").Int(); err != nil || n != fakeProcs {
		t.Errorf("bench-t-2 = %d, %v; want %d", n, err, fakeProcs)
	}
	table := Table(Summarize(ms), []Workload{w}, map[string]error{"colly": ErrNotRequested, "heed": ErrNotRequested})
	perPage := fmt.Sprintf("%.2f script calls", float64(fakeProcs)/float64(ms[0].Report.ReachableFetched))
	for _, want := range []string{"| heed | not run", "| heed-redis-3 | 2 |", "3 processes at once", "the processes exited after ", perPage} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "colly") {
		t.Errorf("table of a HeedOnly workload has a row for colly:\n%s", table)
	}
}
