package harness

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Provenance is where and on what a run measured: the four columns every
// row of BENCHMARKS.md's tables of today's figures ends with.
type Provenance struct {
	Machine string // e.g. "2 CPUs (AMD EPYC), go1.26.8 linux/amd64"
	Command string // as run, from the repository's root
	Date    string // UTC, 2006-01-02
	Build   string // the commit of the heed checkout measured
}

// cells is the provenance as the last four cells of a table row.
func (p Provenance) cells() string {
	return fmt.Sprintf(" %s | `%s` | %s | %s |", p.Machine, p.Command, p.Date, p.Build)
}

// PeersHeader and FiguresHeader head the two shapes of table Figures
// prints, which are BENCHMARKS.md's: one row a workload with heed, gocrawl
// and colly side by side, and one row a measure of heed against what it is
// compared with.
const (
	PeersHeader = "| workload | heed (× gocrawl) | gocrawl | colly | bar | machine | command | date | build |\n" +
		"|---|---|---|---|---|---|---|---|---|\n"
	FiguresHeader = "| measure | heed | against | bar | machine | command | date | build |\n" +
		"|---|---|---|---|---|---|---|---|\n"
)

// Figures renders the summaries as BENCHMARKS.md's tables of today's
// figures, so that a run's output can be pasted there: first the
// workloads heed ran beside gocrawl or colly, one row each (PeersHeader);
// then every variant of heed (heed-state, heed-redis, heed-redis-N) on
// any workload, and heed itself on a continuous workload, one row each
// against the crawl it is measured by (FiguresHeader). Every row ends with
// p. A table with no row is left out.
func Figures(sums []Summary, workloads []Workload, skipped map[string]error, p Provenance) string {
	var peers, figures strings.Builder
	for _, w := range workloads {
		peers.WriteString(peersRow(sums, w, skipped, p))
		for _, name := range rowOrder(sums, w, nil) {
			if !isHeed(name) || (name == HeedBaseline && w.Continuous == nil) {
				continue
			}
			if s, _, ok := rowSummary(sums, w, name); ok {
				figures.WriteString(figuresRow(sums, w, s, p))
			}
		}
	}
	var b strings.Builder
	if peers.Len() > 0 {
		b.WriteString(PeersHeader + peers.String() + "\n")
	}
	if figures.Len() > 0 {
		b.WriteString(FiguresHeader + figures.String() + "\n")
	}
	return b.String()
}

// peersRow is w's row of heed, gocrawl and colly side by side, or "" if
// neither gocrawl nor colly ran on it.
func peersRow(sums []Summary, w Workload, skipped map[string]error, p Provenance) string {
	if w.Continuous != nil || w.HeedOnly {
		return ""
	}
	base, _, hasBase := rowSummary(sums, w, Baseline)
	_, _, hasColly := rowSummary(sums, w, "colly")
	if !hasBase && !hasColly {
		return ""
	}
	cell := func(name string) string {
		s, _, ok := rowSummary(sums, w, name)
		if !ok {
			if err, ok := skipped[name]; ok {
				return skipReason(err)
			}
			return "not run"
		}
		var against *Summary
		if name == HeedBaseline && hasBase {
			against = &base
		}
		return crawlCell(s, against)
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s |%s\n", label(w),
		cell(HeedBaseline), cell(Baseline), cell("colly"), w.Bar, p.cells())
}

// figuresRow is the row of heed's variant s on w, against heed in memory
// (a run of several processes against heed-redis, one process, where that
// ran), or on a continuous workload against uniform revisiting and the
// optimum.
func figuresRow(sums []Summary, w Workload, s Summary, p Provenance) string {
	measure := label(w) + ": " + s.Crawler
	if f := s.Fresh; f != nil {
		heed := fmt.Sprintf("fresh / optimum %.3f · gap closed %.2f · %.3f at full budget · %s violations · %.1f %% conditional · bytes ratio %.2f",
			f.RatioToOptimum, f.GapClosed, f.RatioToFullBudget, thousands(f.PolitenessViolations+f.RobotsViolations), 100*f.ConditionalShare, f.BytesRatio)
		heed += redisCell(s, "request")
		against := fmt.Sprintf("fresh %.3f against uniform revisiting %.3f and the optimum %.3f", f.Measured, f.Uniform, f.Optimum)
		if f.Broken {
			against += fmt.Sprintf("; broken hosts: %s faults", thousands(f.BrokenRobots+f.BrokenPoliteness+f.BrokenPastRobots))
		}
		return fmt.Sprintf("| %s, -for %v: %s | %s | %s | %s |%s\n", label(w), w.Continuous.For, s.Crawler,
			heed, against, w.Bar, p.cells())
	}
	if w.Continuous != nil {
		return fmt.Sprintf("| %s | not judged | | %s |%s\n", measure, w.VariantBar, p.cells())
	}
	baseName := HeedBaseline
	if s.Procs > 1 {
		if _, _, ok := rowSummary(sums, w, "heed-redis"); ok {
			baseName = "heed-redis"
		}
	}
	base, _, ok := rowSummary(sums, w, baseName)
	against := "heed in memory did not run"
	var b *Summary
	if ok {
		b = &base
		against = baseName + ": " + crawlCell(base, nil)
	}
	heed := crawlCell(s, b) + redisCell(s, "page")
	if p := s.pairedCell(); p != "" {
		heed += " · " + p
	}
	if s.Procs > 1 {
		heed += fmt.Sprintf(" · %d processes", s.Procs)
	}
	bar := w.VariantBar
	if s.Crawler == "heed-ui" {
		bar = LiveUIBar
	}
	return fmt.Sprintf("| %s | %s | %s | %s |%s\n", measure, heed, against, bar, p.cells())
}

// LiveUIBar is heed-ui's bar on any workload, in place of the workload's
// VariantBar (which is heed-state's and heed-redis's): what a browser
// watching the live page may cost the crawl.
const LiveUIBar = "heed-ui: ≤ 2 % of heed's pages/s (run by run)"

// label names w in a table: its name and title, and whether testweb's
// broken hosts were served beside it.
func label(w Workload) string {
	l := fmt.Sprintf("(%s) %s", w.Name, w.Title)
	if withBroken(w) {
		l += " + the broken hosts"
	}
	return l
}

// crawlCell is one crawler's figures on a workload, with ratios against
// against's where it is not nil: wall, reachable pages a second, CPU a
// page, peak RSS, coverage, faults (see Faults) and, where the workload
// has an ideal, the makespan against it.
func crawlCell(s Summary, against *Summary) string {
	ratio := func(x, y float64) string {
		if against == nil || y == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.2f×)", x/y)
	}
	var b, ab float64
	var bw, bc time.Duration
	if against != nil {
		b, bw, bc, ab = against.PagesPerSecond, against.Wall, against.CPUPerPage, float64(against.MaxRSS)
	}
	cell := fmt.Sprintf("%.2f s wall%s · %s pages/s%s · %.3f ms CPU a page%s · %d MB%s · coverage %.3f · %s faults",
		s.Wall.Seconds(), ratio(float64(s.Wall), float64(bw)),
		thousands(s.PagesPerSecond), ratio(s.PagesPerSecond, b),
		float64(s.CPUPerPage)/float64(time.Millisecond), ratio(float64(s.CPUPerPage), float64(bc)),
		s.MaxRSS>>20, ratio(float64(s.MaxRSS), ab),
		s.Coverage, thousands(s.Faults()))
	if s.MakespanRatio > 0 {
		cell += fmt.Sprintf(" · makespan %.2f× ideal", s.MakespanRatio)
	}
	if s.Failed > 0 {
		cell += fmt.Sprintf(" · %d of %d runs failed", s.Failed, s.Runs)
	}
	return cell
}

// redisCell is what s asked of Redis per unit of work ("page" or
// "request"), or "" without Redis.
func redisCell(s Summary, per string) string {
	if !s.Redis {
		return ""
	}
	return fmt.Sprintf(" · Redis: %.0f µs CPU, %.2f scripts, %.1f commands a %s",
		float64(s.RedisCPUPerPage)/float64(time.Microsecond), s.RedisScriptsPerPage, s.RedisCommandsPerPage, per)
}

// Faults is the median count of requests a polite and correct crawler
// does not make: to URLs robots.txt disallows, sooner than a host's delay
// or Retry-After, of a URL already fetched, past a robots.txt that could
// not be read, and of pages only nofollow links lead to.
func (s Summary) Faults() float64 {
	return s.RobotsViolations + s.Politeness + s.Duplicates + s.Unavailable + s.NofollowOnly
}

// thousands formats x rounded to a whole number, with commas between
// thousands: 17798.4 is "17,798".
func thousands(x float64) string {
	s := strconv.FormatFloat(x, 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
