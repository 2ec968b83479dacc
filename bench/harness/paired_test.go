package harness

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// A variant is paired with heed run by run: the ratio is the geometric
// mean of each run's, whatever the drift between runs; failed runs and
// runs without a partner are left out; fewer than two pairs give none.
func TestPairedRatio(t *testing.T) {
	run := func(crawler string, n int, wall time.Duration) Measurement {
		return Measurement{Crawler: crawler, Workload: "a", Run: n, Wall: wall, CPU: wall / 2, Procs: 1,
			Report: &testweb.Report{ReachableFetched: 1000}}
	}
	var ms []Measurement
	// The machine slows down run by run; the variant takes 1/0.9 of heed's
	// wall in each run, so it fetches 0.9× heed's pages a second.
	for n := 1; n <= 3; n++ {
		wall := time.Duration(n) * time.Second
		ms = append(ms, run("heed", n, wall), run("heed-ui", n, time.Duration(float64(wall)/0.9)))
	}
	failed := run("heed-ui", 4, time.Second)
	failed.Err = errors.New("killed")
	ms = append(ms, run("heed", 4, time.Second), failed, run("heed-ui", 5, time.Second))

	sums := Summarize(ms)
	var ui, heed Summary
	for _, s := range sums {
		switch s.Crawler {
		case "heed-ui":
			ui = s
		case "heed":
			heed = s
		}
	}
	if heed.PairedPagesPerSecond != nil {
		t.Errorf("heed paired against itself: %v", heed.PairedPagesPerSecond)
	}
	p := ui.PairedPagesPerSecond
	if p == nil {
		t.Fatal("heed-ui not paired")
	}
	if p.Pairs != 3 || math.Abs(p.Mean-0.9) > 1e-9 || math.Abs(p.Low-0.9) > 1e-9 || math.Abs(p.High-0.9) > 1e-9 {
		t.Errorf("pages/s run by run = %+v, want 0.9× over 3 pairs, interval 0.9–0.9", *p)
	}
	// CPU a page: wall/2 over the same pages, so 1/0.9 of heed's.
	if c := ui.PairedCPUPerPage; c == nil || math.Abs(c.Mean-1/0.9) > 1e-6 {
		t.Errorf("CPU a page run by run = %+v, want 1.111×", c)
	}
	if note := ui.note(); !strings.Contains(note, "run by run against heed: pages/s 0.900× (95 % 0.900–0.900×, 3 pairs), CPU a page 1.111×") {
		t.Errorf("note %q lacks the paired ratios", note)
	}

	a, _ := WorkloadByName("a")
	row := Figures(sums, []Workload{a}, nil, Provenance{})
	if !strings.Contains(row, "run by run against heed: pages/s 0.900×") || !strings.Contains(row, LiveUIBar) ||
		strings.Contains(row, a.VariantBar) {
		t.Errorf("heed-ui's row lacks its paired ratio or its own bar:\n%s", row)
	}

	// Ratios of 0.8 and 1.0: their geometric mean, inside an interval
	// that the two bound.
	two := pairedRatio(
		[]Measurement{run("heed-ui", 1, 1250*time.Millisecond), run("heed-ui", 2, time.Second)},
		[]Measurement{run("heed", 1, time.Second), run("heed", 2, time.Second)},
		Measurement.PagesPerSecond)
	if two == nil || math.Abs(two.Mean-math.Sqrt(0.8)) > 1e-9 || two.Low < 0.8-1e-9 || two.High > 1+1e-9 || two.Low > two.Mean || two.High < two.Mean {
		t.Errorf("two pairs = %+v, want %.3f× within 0.8–1.0", two, math.Sqrt(0.8))
	}
	again := pairedRatio(
		[]Measurement{run("heed-ui", 1, 1250*time.Millisecond), run("heed-ui", 2, time.Second)},
		[]Measurement{run("heed", 1, time.Second), run("heed", 2, time.Second)},
		Measurement.PagesPerSecond)
	if *again != *two {
		t.Errorf("the same runs gave %+v, then %+v: the interval must not move", *two, *again)
	}
	if one := pairedRatio([]Measurement{run("heed-ui", 1, time.Second)}, []Measurement{run("heed", 1, time.Second)},
		Measurement.PagesPerSecond); one != nil {
		t.Errorf("one pair gave %+v, want none", *one)
	}
}
