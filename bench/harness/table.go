package harness

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// Baseline is the crawler the ratios in the table compare with, and
// HeedBaseline the one where Baseline did not run (heed's variants are
// compared with heed in memory).
const (
	Baseline     = "gocrawl"
	HeedBaseline = "heed"
)

// Summary is the medians of one crawler's runs on one workload.
type Summary struct {
	Crawler, Workload string
	Runs, Failed      int
	Wall, CPU         time.Duration
	MaxRSS            int64
	PagesPerSecond    float64
	CPUPerPage        time.Duration
	Coverage          float64
	SitemapOnly       float64 // fetched sitemap-only pages
	SitemapOnlyTotal  int
	RobotsViolations  float64
	Politeness        float64
	Duplicates        float64
	DuplicateShare    float64 // duplicates / page and sitemap requests
	Unavailable       float64 // fetches past robots.txt on hosts whose robots.txt is unreachable
	NofollowOnly      float64
	MakespanRatio     float64 // makespan / ideal; 0 when the ideal is 0
	Procs             int     // processes per run
	Makespan          time.Duration
	Exits             []time.Duration // medians of each process's exit, in order

	// Medians of what the runs asked of Redis, per reachable page fetched;
	// Redis is false without Redis.
	Redis                bool
	RedisScriptsPerPage  float64 // script calls (EVALSHA, EVAL, FCALL): round trips
	RedisCommandsPerPage float64 // every command, those run inside scripts included
	RedisCPU             time.Duration
	RedisCPUPerPage      time.Duration // redis-server's CPU per reachable page (or request answered)
	RedisScriptTime      time.Duration // of RedisCPU, running scripts (wall time inside them)

	// PairedPagesPerSecond and PairedCPUPerPage are a heed variant's
	// pages/s and CPU a page against heed's run by run (PairedRatio), where
	// heed ran beside it in at least two runs; nil otherwise.
	PairedPagesPerSecond, PairedCPUPerPage *PairedRatio

	// Fresh is the medians of the freshness judgements of a Continuous
	// workload's runs; nil on other workloads. The Redis figures are
	// then per request the changing web answered, not per page.
	Fresh *FreshSummary
}

// Summarize computes the medians of each crawler's runs per workload.
func Summarize(ms []Measurement) []Summary {
	type key struct{ c, w string }
	groups := make(map[key][]Measurement)
	var order []key
	for _, m := range ms {
		k := key{m.Crawler, m.Workload}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], m)
	}
	var out []Summary
	for _, k := range order {
		g := groups[k]
		s := Summary{Crawler: k.c, Workload: k.w, Runs: len(g), Procs: max(g[0].Procs, 1)}
		var wall, cpu, cpp, rss, pps, cov, smo, rv, pv, dup, dshare, un, nf, mk []float64
		var rScripts, rCmds, rCPU, rCPUpp, rScript, span []float64
		exits := make([][]float64, s.Procs)
		for _, m := range g {
			if len(m.Exits) == s.Procs {
				for i, e := range m.Exits {
					exits[i] = append(exits[i], float64(e))
				}
			}
			if done := m.workDone(); m.Redis != nil && done > 0 {
				pages := float64(done)
				rScripts = append(rScripts, float64(m.Redis.Scripts())/pages)
				rCmds = append(rCmds, float64(m.Redis.Commands())/pages)
				rCPU = append(rCPU, float64(m.Redis.CPU))
				rCPUpp = append(rCPUpp, float64(m.Redis.CPU)/pages)
				rScript = append(rScript, float64(m.Redis.ScriptTime))
			}
			if m.Err != nil {
				s.Failed++
			}
			r := m.Report
			if r == nil {
				r = &testweb.Report{}
			}
			wall = append(wall, float64(m.Wall))
			cpu = append(cpu, float64(m.CPU))
			cpp = append(cpp, float64(m.CPUPerPage()))
			rss = append(rss, float64(m.MaxRSS))
			pps = append(pps, m.PagesPerSecond())
			cov = append(cov, r.Coverage)
			smo = append(smo, float64(r.SitemapOnlyFetched))
			s.SitemapOnlyTotal = r.SitemapOnlyTotal
			rv = append(rv, float64(len(r.RobotsViolations)))
			pv = append(pv, float64(len(r.PolitenessViolations)))
			dup = append(dup, float64(len(r.Duplicates)))
			if n := r.PageRequests + r.SitemapRequests; n > 0 {
				dshare = append(dshare, float64(len(r.Duplicates))/float64(n))
			}
			un = append(un, float64(len(r.UnavailableHostFetches)))
			nf = append(nf, float64(len(r.NofollowOnlyFetched)))
			if r.IdealMakespan > 0 {
				mk = append(mk, float64(r.Makespan)/float64(r.IdealMakespan))
			}
			span = append(span, float64(r.Makespan))
		}
		s.Wall, s.CPU, s.CPUPerPage = time.Duration(median(wall)), time.Duration(median(cpu)), time.Duration(median(cpp))
		s.MaxRSS = int64(median(rss))
		s.PagesPerSecond, s.Coverage, s.SitemapOnly = median(pps), median(cov), median(smo)
		s.RobotsViolations, s.Politeness, s.Duplicates, s.DuplicateShare = median(rv), median(pv), median(dup), median(dshare)
		s.Unavailable, s.NofollowOnly, s.MakespanRatio = median(un), median(nf), median(mk)
		s.Makespan = time.Duration(median(span))
		for _, e := range exits {
			if len(e) > 0 {
				s.Exits = append(s.Exits, time.Duration(median(e)))
			}
		}
		if len(rCmds) > 0 {
			s.Redis = true
			s.RedisScriptsPerPage, s.RedisCommandsPerPage, s.RedisCPU = median(rScripts), median(rCmds), time.Duration(median(rCPU))
			s.RedisScriptTime, s.RedisCPUPerPage = time.Duration(median(rScript)), time.Duration(median(rCPUpp))
		}
		s.Fresh = summarizeFreshness(g)
		if base, ok := groups[key{HeedBaseline, k.w}]; ok && isHeed(k.c) && k.c != HeedBaseline {
			s.PairedPagesPerSecond = pairedRatio(g, base, Measurement.PagesPerSecond)
			s.PairedCPUPerPage = pairedRatio(g, base, func(m Measurement) float64 { return float64(m.CPUPerPage()) })
		}
		out = append(out, s)
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Table renders the summaries as one markdown table per workload: heed and
// its variants, then colly and gocrawl, with ratios against Baseline, or
// against HeedBaseline where Baseline did not run. Crawlers in skipped get a
// row saying why they have no figures (on a HeedOnly workload, heed's
// variants only). Runs of several processes, and runs with Redis, get a note
// under the table.
func Table(sums []Summary, workloads []Workload, skipped map[string]error) string {
	var b strings.Builder
	for _, w := range workloads {
		var base *Summary
		for _, name := range []string{Baseline, HeedBaseline} {
			for i := range sums {
				if base == nil && sums[i].Workload == w.Name && sums[i].Crawler == name {
					base = &sums[i]
				}
			}
		}
		baseName := Baseline
		if base != nil {
			baseName = base.Crawler
		}
		if w.Continuous != nil {
			b.WriteString(continuousTable(sums, w, skipped))
			continue
		}
		fmt.Fprintf(&b, "**(%s) %s**\n\n", w.Name, w.Title)
		b.WriteString("| crawler | runs | wall s | CPU s | peak RSS MB | reachable pages/s | pages/s ×" + baseName +
			" | CPU ms/page | CPU/page ×" + baseName + " | coverage | sitemap-only | robots viol. | politeness viol. | duplicate fetches | fetches past unreachable robots.txt | nofollow-only | makespan / ideal |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		var notes []string
		for _, name := range rowOrder(sums, w, skipped) {
			if err, ok := skipped[name]; ok {
				fmt.Fprintf(&b, "| %s | %s |%s\n", name, skipReason(err), strings.Repeat(" |", 15))
				continue
			}
			s, runs, ok := rowSummary(sums, w, name)
			if !ok {
				continue
			}
			ratio := func(x, y float64) string {
				if base == nil || y == 0 {
					return "–"
				}
				return fmt.Sprintf("%.2f×", x/y)
			}
			mk := "–"
			if s.MakespanRatio > 0 {
				mk = fmt.Sprintf("%.2f", s.MakespanRatio)
			}
			var basePPS, baseCPP float64
			if base != nil {
				basePPS, baseCPP = base.PagesPerSecond, float64(base.CPUPerPage)
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f | %.2f | %d | %.0f | %s | %.3f | %s | %.3f | %.0f / %d | %.0f | %.0f | %.0f (%.0f%%) | %.0f | %.0f | %s |\n",
				name, runs, s.Wall.Seconds(), s.CPU.Seconds(), s.MaxRSS>>20,
				s.PagesPerSecond, ratio(s.PagesPerSecond, basePPS),
				float64(s.CPUPerPage)/float64(time.Millisecond), ratio(float64(s.CPUPerPage), baseCPP),
				s.Coverage, s.SitemapOnly, s.SitemapOnlyTotal, s.RobotsViolations, s.Politeness,
				s.Duplicates, 100*s.DuplicateShare, s.Unavailable, s.NofollowOnly, mk)
			if note := s.note(); note != "" {
				notes = append(notes, "- "+name+": "+note)
			}
		}
		b.WriteString("\n")
		if len(notes) > 0 {
			b.WriteString(strings.Join(notes, "\n") + "\n\n")
		}
	}
	return b.String()
}

// skipReason is the first line of why a crawler did not run, or the
// reason it wraps.
func skipReason(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	for _, reason := range []error{ErrNoCrawlCommand, ErrCrawlDoesNotBuild, ErrNoRedisFlag, ErrNotRequested} {
		if errors.Is(err, reason) {
			msg = reason.Error()
		}
	}
	return msg
}

// note says how a crawler's runs differ from one process in memory.
func (s Summary) note() string {
	var parts []string
	if s.Procs > 1 {
		exits := make([]string, len(s.Exits))
		for i, e := range s.Exits {
			exits[i] = fmt.Sprintf("%.2f", e.Seconds())
		}
		part := fmt.Sprintf("%d processes at once: wall from the first start to the last exit, CPU summed, peak RSS of the largest; "+
			"the processes exited after %s s", s.Procs, strings.Join(exits, ", "))
		if s.Fresh == nil {
			part += fmt.Sprintf(", the server's last answer came %.2f s after its first request", s.Makespan.Seconds())
		}
		parts = append(parts, part)
	}
	if p := s.pairedCell(); p != "" {
		parts = append(parts, p)
	}
	if s.Redis {
		per := "reachable page"
		if s.Fresh != nil {
			per = "request the web answered"
		}
		parts = append(parts, fmt.Sprintf("Redis ran %.2f script calls (EVALSHA or FCALL: round trips) and %.2f commands in all (those inside scripts included) per %s; redis-server's own CPU %.2f s (%.2f s of it running scripts), not in the CPU column",
			s.RedisScriptsPerPage, s.RedisCommandsPerPage, per, s.RedisCPU.Seconds(), s.RedisScriptTime.Seconds()))
	}
	return strings.Join(parts, "; ")
}

// pairedCell is s's figures against heed's run by run, or "" where they
// were not paired.
func (s Summary) pairedCell() string {
	if s.PairedPagesPerSecond == nil {
		return ""
	}
	c := "run by run against heed: pages/s " + s.PairedPagesPerSecond.String()
	if s.PairedCPUPerPage != nil {
		c += ", CPU a page " + s.PairedCPUPerPage.String()
	}
	return c
}

// rowOrder is the crawlers of a workload's table: heed, its variants (by
// name), colly, gocrawl, then any other.
func rowOrder(sums []Summary, w Workload, skipped map[string]error) []string {
	var names []string
	add := func(name string) {
		if !slices.Contains(names, name) && (!w.HeedOnly || isHeed(name)) {
			names = append(names, name)
		}
	}
	for _, s := range sums {
		if s.Workload == w.Name {
			add(s.Crawler)
		}
	}
	for name := range skipped {
		if _, heed := heedVariant(name); heed || slices.Contains(CrawlerNames, name) {
			add(name)
		}
	}
	rank := func(name string) int {
		switch {
		case name == "heed":
			return 0
		case isHeed(name):
			return 1
		case name == "colly":
			return 2
		case name == "gocrawl":
			return 3
		}
		return 4
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return variantCompare(a, b)
	})
	return names
}

// variantCompare orders heed-redis-2 before heed-redis-10.
func variantCompare(a, b string) int {
	if len(a) != len(b) && strings.TrimRight(a, "0123456789") == strings.TrimRight(b, "0123456789") {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// rowSummary returns the summary of name's runs on w, and its table cell
// of runs ("3", or "3 (1 failed)"); ok is false if name has none.
func rowSummary(sums []Summary, w Workload, name string) (s Summary, runs string, ok bool) {
	i := slices.IndexFunc(sums, func(s Summary) bool { return s.Workload == w.Name && s.Crawler == name })
	if i < 0 {
		return Summary{}, "", false
	}
	s = sums[i]
	runs = fmt.Sprint(s.Runs)
	if s.Failed > 0 {
		runs += fmt.Sprintf(" (%d failed)", s.Failed)
	}
	return s, runs, true
}
