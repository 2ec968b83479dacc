package harness_test

import (
	"fmt"
	"time"

	"github.com/heedcrawl/heed/bench/harness"
	"github.com/heedcrawl/heed/internal/testweb"
)

// Summarize takes the medians of the runs; Table compares with gocrawl.
func ExampleSummarize() {
	run := func(crawler string, wall time.Duration, fetched int) harness.Measurement {
		return harness.Measurement{Crawler: crawler, Workload: "a", Wall: wall, CPU: wall,
			Report: &testweb.Report{ReachableFetched: fetched, ReachableTotal: 1000, Coverage: float64(fetched) / 1000}}
	}
	sums := harness.Summarize([]harness.Measurement{
		run("gocrawl", 4*time.Second, 800), run("gocrawl", 5*time.Second, 800), run("gocrawl", 9*time.Second, 800),
		run("colly", 10*time.Second, 900),
	})
	for _, s := range sums {
		fmt.Printf("%s: %d run(s), median wall %v, %.0f reachable pages/s\n", s.Crawler, s.Runs, s.Wall, s.PagesPerSecond)
	}
	// Output:
	// gocrawl: 3 run(s), median wall 5s, 160 reachable pages/s
	// colly: 1 run(s), median wall 10s, 90 reachable pages/s
}
