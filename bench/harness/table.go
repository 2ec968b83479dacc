package harness

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// Baseline is the crawler the ratios in the table compare with.
const Baseline = "gocrawl"

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
	Unavailable       float64 // fetches on the 503 host past robots.txt
	NofollowOnly      float64
	MakespanRatio     float64 // makespan / ideal; 0 when the ideal is 0
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
		s := Summary{Crawler: k.c, Workload: k.w, Runs: len(g)}
		var wall, cpu, cpp, rss, pps, cov, smo, rv, pv, dup, dshare, un, nf, mk []float64
		for _, m := range g {
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
		}
		s.Wall, s.CPU, s.CPUPerPage = time.Duration(median(wall)), time.Duration(median(cpu)), time.Duration(median(cpp))
		s.MaxRSS = int64(median(rss))
		s.PagesPerSecond, s.Coverage, s.SitemapOnly = median(pps), median(cov), median(smo)
		s.RobotsViolations, s.Politeness, s.Duplicates, s.DuplicateShare = median(rv), median(pv), median(dup), median(dshare)
		s.Unavailable, s.NofollowOnly, s.MakespanRatio = median(un), median(nf), median(mk)
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

// Table renders the summaries as one markdown table per workload, crawlers
// in CrawlerNames order, with ratios against Baseline. Crawlers in skipped
// get a row saying why they have no figures.
func Table(sums []Summary, workloads []Workload, skipped map[string]error) string {
	var b strings.Builder
	for _, w := range workloads {
		var base *Summary
		for i := range sums {
			if sums[i].Workload == w.Name && sums[i].Crawler == Baseline {
				base = &sums[i]
			}
		}
		fmt.Fprintf(&b, "**(%s) %s**\n\n", w.Name, w.Title)
		b.WriteString("| crawler | runs | wall s | CPU s | peak RSS MB | reachable pages/s | pages/s ×" + Baseline +
			" | CPU ms/page | CPU/page ×" + Baseline + " | coverage | sitemap-only | robots viol. | politeness viol. | duplicate fetches | 503-host fetches | nofollow-only | makespan / ideal |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, name := range CrawlerNames {
			if err, ok := skipped[name]; ok {
				msg, _, _ := strings.Cut(err.Error(), "\n")
				for _, reason := range []error{ErrNoCrawlCommand, ErrCrawlDoesNotBuild, ErrNotRequested} {
					if errors.Is(err, reason) {
						msg = reason.Error()
					}
				}
				fmt.Fprintf(&b, "| %s | %s |%s\n", name, msg, strings.Repeat(" |", 15))
				continue
			}
			i := slices.IndexFunc(sums, func(s Summary) bool { return s.Workload == w.Name && s.Crawler == name })
			if i < 0 {
				continue
			}
			s := sums[i]
			runs := fmt.Sprint(s.Runs)
			if s.Failed > 0 {
				runs += fmt.Sprintf(" (%d failed)", s.Failed)
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
		}
		b.WriteString("\n")
	}
	return b.String()
}
