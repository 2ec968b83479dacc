package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// Continuous makes a workload a continuous crawl: the crawler revisits a
// changing web for For (crawl -revisit -for) and is judged, from the web's
// log, on how fresh it kept its copy over the second half of that time,
// against uniform revisiting and the offline optimum (testweb's Judge).
type Continuous struct {
	// Web is the changing web; its Start and Clock are left zero, as each
	// run serves a new one from its own start, in real time.
	Web testweb.ChangingConfig
	// For is how long each process crawls (-for); it exits 0 then.
	For time.Duration
	// MinRevisit and MaxRevisit bound each page's interval
	// (-min-revisit, -max-revisit).
	MinRevisit, MaxRevisit time.Duration
}

// ContinuousWorkload is workload g: heed revisiting 20 hosts × 50 pages
// at a Crawl-delay of 0.1 s for 3 minutes, scaled as
// crawler/freshness_bench_test.go scales its hour-long crawls: change
// rates log-uniform from 0.01 to 100 changes per uniform interval Iu =
// (pages + 1) × delay = 5.1 s, a new page per host every 20 Iu, revisits
// between Iu/16 and 64 Iu; the rest is testweb.TypicalChangingConfig (a
// tenth static; weak, missing and lying validators; a third of the
// sitemaps lying), with pages going and moving within the first minute.
// Three minutes give each page about 35 fetches. Beside it is served a
// static web of 4 hosts (one healthy, then the special robots.txt hosts:
// redirected, 404, 503 with Retry-After) with testweb's broken hosts,
// which the healthy host links to and the seeds name: the changing web
// cannot link them itself.
func ContinuousWorkload() Workload {
	const (
		hosts, pages = 20, 50
		delay        = 100 * time.Millisecond
		seed         = 7
	)
	iu := time.Duration(pages+1) * delay
	web := testweb.TypicalChangingConfig(hosts, pages, seed)
	web.MinChangeInterval, web.MaxChangeInterval = iu/100, 100*iu
	web.NewPageInterval = 20 * iu
	web.FateWithin = time.Minute
	web.CrawlDelay = delay
	return Workload{
		Name:   "g",
		Title:  "continuous: 20 hosts × 50 changing pages, Crawl-delay 0.1 s, revisited",
		Config: testweb.Config{Hosts: 4, PagesPerHost: 10, CrawlDelay: delay, Seed: seed},
		Delay:  delay, HeedOnly: true,
		Bar:        "fresh / optimum ≥ 0.9, gap closed ≥ 0.5, ≥ 0.8 at full budget, 0 violations, ≥ 99 % conditional",
		Continuous: &Continuous{Web: web, For: 3 * time.Minute, MinRevisit: iu / 16, MaxRevisit: 64 * iu},
	}
}

// withBroken says whether the static web with the broken hosts is served
// beside w's changing web: it is there for them alone.
func withBroken(w Workload) bool {
	return w.Config.Hosts > 0 && !w.Config.NoBrokenHosts && w.Config.TotalHosts() > w.Config.Hosts
}

// FreshnessOptions are how the harness judges a run of a Continuous
// workload w over [from, to]: by the workload's delay, with the judge's
// default tolerance for real-time timers.
func FreshnessOptions(w Workload, from, to time.Time) testweb.FreshnessOptions {
	return testweb.FreshnessOptions{From: from, To: to, MinDelay: w.Delay}
}

// runContinuous runs the plan's crawlers on the Continuous workload w,
// rotating their order each round, each on a changing web of its own that
// starts with its run.
func runContinuous(ctx context.Context, p Plan, w Workload, log *slog.Logger) ([]Measurement, error) {
	total := w.Continuous.Web.Hosts
	if withBroken(w) {
		total += w.Config.TotalHosts()
	}
	if err := raiseFileLimit(uint64(total)*4 + 4096); err != nil {
		log.Warn("file descriptor limit", "err", err)
	}
	log.Info("workload", "name", w.Name, "title", w.Title, "for", w.Continuous.For,
		"min_revisit", w.Continuous.MinRevisit, "max_revisit", w.Continuous.MaxRevisit, "broken_hosts", withBroken(w))
	crawlers := p.crawlersFor(w)
	var out []Measurement
	for run := range p.Runs {
		for i := range crawlers {
			c := crawlers[(i+run)%len(crawlers)]
			if err := ctx.Err(); err != nil {
				return out, err
			}
			m, err := runContinuousOnce(ctx, p, c, w, run+1, log)
			if err != nil {
				return out, err
			}
			out = append(out, m)
			logContinuous(log, m)
		}
	}
	return out, nil
}

// runContinuousOnce serves a new changing web (and the static one with the
// broken hosts), runs c on it and judges the run. Its error is the webs'
// (the run cannot be judged); the crawler's is in the Measurement.
func runContinuousOnce(ctx context.Context, p Plan, c Crawler, w Workload, run int, log *slog.Logger) (m Measurement, err error) {
	web, err := testweb.ListenChangingLoopback(w.Continuous.Web, p.Port, log)
	if err != nil {
		return m, fmt.Errorf("harness: workload %s: %w", w.Name, err)
	}
	defer func() { err = errors.Join(err, web.Close()) }()
	seeds := web.Web.Seeds()
	var broken *testweb.Loopback
	if withBroken(w) {
		port := p.Port
		if port != 0 {
			port++ // the changing web has port on the same addresses
		}
		if broken, err = testweb.ListenLoopback(w.Config, port, log); err != nil {
			return m, fmt.Errorf("harness: workload %s, broken hosts: %w", w.Name, err)
		}
		defer func() { err = errors.Join(err, broken.Close()) }()
		seeds = append(seeds, broken.Web.Seeds()...)
	}
	seedsFile := filepath.Join(p.Scratch, "seeds-"+w.Name+".txt")
	if err := os.WriteFile(seedsFile, []byte(strings.Join(seeds, "\n")+"\n"), 0o644); err != nil {
		return m, fmt.Errorf("harness: %w", err)
	}
	start := web.Web.Start()
	m = measure(ctx, p, c, w, seedsFile, run)
	m.Run = run
	end := web.Web.Now()
	entries := web.Log.Entries()
	m.Requests = len(entries)
	m.Freshness, err = web.Web.Judge(entries, FreshnessOptions(w, start.Add(end.Sub(start)/2), end))
	if err != nil {
		m.Err = errors.Join(m.Err, fmt.Errorf("harness: judging the run: %w", err))
	}
	if broken != nil {
		truth, err := broken.Web.Truth(testweb.TruthOptions{})
		if err != nil {
			return m, fmt.Errorf("harness: workload %s, broken hosts: %w", w.Name, err)
		}
		m.Report = truth.Analyze(broken.Log.Entries(), AnalyzeOptions(w))
	}
	return m, nil
}

// logContinuous logs the outcome of a run of a Continuous workload.
func logContinuous(log *slog.Logger, m Measurement) {
	args := []any{"workload", m.Workload, "run", m.Run, "crawler", m.Crawler, "wall", m.Wall.Round(time.Millisecond),
		"cpu", m.CPU.Round(time.Millisecond), "rss_mb", m.MaxRSS >> 20, "requests", m.Requests}
	if r := m.Freshness; r != nil {
		args = append(args, "fresh", fmt.Sprintf("%.3f", r.Measured), "fresh_per_opt", fmt.Sprintf("%.3f", r.RatioToOptimum),
			"gap_closed", fmt.Sprintf("%.2f", r.GapClosed), "fresh_per_full", fmt.Sprintf("%.3f", r.RatioToFullBudget),
			"politeness_violations", len(r.PolitenessViolations), "conditional", fmt.Sprintf("%.3f", r.ConditionalShare),
			"fetches_per_page", fmt.Sprintf("%.1f", fetchesPerPage(r)))
	}
	if r := m.Report; r != nil {
		args = append(args, "broken_robots_violations", len(r.RobotsViolations),
			"broken_politeness_violations", len(r.PolitenessViolations), "broken_past_unreachable_robots", len(r.UnavailableHostFetches))
	}
	if m.Err != nil {
		log.Warn("crawler failed", append(args, "err", m.Err, "stderr", m.Stderr)...)
	} else {
		log.Info("crawler done", args...)
	}
}

// fetchesPerPage is the judged window's fetches of the judged pages per
// page.
func fetchesPerPage(r *testweb.FreshnessReport) float64 {
	if r.Pages == 0 {
		return 0
	}
	return float64(r.Fetches) / float64(r.Pages)
}

// budgetUsed is the share of the hosts' full politeness budget that the
// window's requests used, every request counted.
func budgetUsed(r *testweb.FreshnessReport) float64 {
	var full int
	for _, h := range r.Hosts {
		full += h.FullBudget
	}
	if full == 0 {
		return 0
	}
	return float64(r.Requests) / float64(full)
}

// FreshSummary is the medians of the freshness judgements of one
// crawler's runs on a Continuous workload (see testweb.FreshnessReport).
type FreshSummary struct {
	Measured, Uniform, Optimum                   float64
	RatioToOptimum, GapClosed, RatioToFullBudget float64
	PolitenessViolations, RobotsViolations       float64
	ConditionalShare, BytesRatio                 float64
	LongestDiscoveryDelay                        time.Duration
	FetchesPerPage                               float64
	BudgetUsed                                   float64 // requests in the window / the hosts' full budget
	// Broken is whether the static web with the broken hosts was served;
	// then the medians of its judgement: robots.txt and politeness
	// violations, fetches past a robots.txt that could not be read.
	Broken                                           bool
	BrokenRobots, BrokenPoliteness, BrokenPastRobots float64
}

// summarizeFreshness returns the medians of the runs' freshness
// judgements, or nil if none has one.
func summarizeFreshness(ms []Measurement) *FreshSummary {
	var cols [13][]float64
	var broken [3][]float64
	for _, m := range ms {
		r := m.Freshness
		if r == nil {
			continue
		}
		for i, v := range []float64{r.Measured, r.Uniform, r.Optimum, r.RatioToOptimum, r.GapClosed, r.RatioToFullBudget,
			float64(len(r.PolitenessViolations)), float64(len(r.RobotsViolations)), r.ConditionalShare, r.BytesRatio,
			float64(r.LongestDiscoveryDelay), fetchesPerPage(r), budgetUsed(r)} {
			cols[i] = append(cols[i], v)
		}
		if b := m.Report; b != nil {
			for i, v := range []float64{float64(len(b.RobotsViolations)), float64(len(b.PolitenessViolations)), float64(len(b.UnavailableHostFetches))} {
				broken[i] = append(broken[i], v)
			}
		}
	}
	if len(cols[0]) == 0 {
		return nil
	}
	var med [13]float64
	for i, c := range cols {
		med[i] = median(c)
	}
	return &FreshSummary{
		Measured: med[0], Uniform: med[1], Optimum: med[2],
		RatioToOptimum: med[3], GapClosed: med[4], RatioToFullBudget: med[5],
		PolitenessViolations: med[6], RobotsViolations: med[7],
		ConditionalShare: med[8], BytesRatio: med[9],
		LongestDiscoveryDelay: time.Duration(med[10]), FetchesPerPage: med[11], BudgetUsed: med[12],
		Broken:       len(broken[0]) > 0,
		BrokenRobots: median(broken[0]), BrokenPoliteness: median(broken[1]), BrokenPastRobots: median(broken[2]),
	}
}

// continuousColumns is the header of a Continuous workload's table.
const continuousColumns = "| crawler | runs | fresh | uniform | optimum | fresh / opt | gap closed | fresh / opt at full budget | budget used | " +
	"politeness viol. | robots viol. | conditional share | bytes ratio | longest new-page wait s | fetches / page | " +
	"broken hosts: robots viol. / politeness viol. / fetches past unreadable robots.txt | wall s | CPU s | peak RSS MB |\n" +
	"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"

// continuousTable renders the summaries of a Continuous workload: one row
// per crawler with the medians of its freshness judgements over the second
// half of each run, against uniform revisiting and the offline optimum.
func continuousTable(sums []Summary, w Workload, skipped map[string]error) string {
	var b strings.Builder
	c := w.Continuous
	fmt.Fprintf(&b, "**(%s) %s** — each run `-revisit -for %v -min-revisit %v -max-revisit %v`, judged over its second half\n\n",
		w.Name, w.Title, c.For, c.MinRevisit, c.MaxRevisit)
	b.WriteString(continuousColumns)
	var notes []string
	for _, name := range rowOrder(sums, w, skipped) {
		if err, ok := skipped[name]; ok {
			fmt.Fprintf(&b, "| %s | %s |%s\n", name, skipReason(err), strings.Repeat(" |", 17))
			continue
		}
		s, runs, ok := rowSummary(sums, w, name)
		if !ok {
			continue
		}
		f := s.Fresh
		if f == nil {
			fmt.Fprintf(&b, "| %s | %s | not judged |%s\n", name, runs, strings.Repeat(" |", 16))
			continue
		}
		brokenCell := "not served"
		if f.Broken {
			brokenCell = fmt.Sprintf("%.0f / %.0f / %.0f", f.BrokenRobots, f.BrokenPoliteness, f.BrokenPastRobots)
		}
		fmt.Fprintf(&b, "| %s | %s | %.3f | %.3f | %.3f | %.3f | %.2f | %.3f | %.2f | %.0f | %.0f | %.3f | %.3f | %.1f | %.1f | %s | %.1f | %.2f | %d |\n",
			name, runs, f.Measured, f.Uniform, f.Optimum, f.RatioToOptimum, f.GapClosed, f.RatioToFullBudget, f.BudgetUsed,
			f.PolitenessViolations, f.RobotsViolations, f.ConditionalShare, f.BytesRatio, f.LongestDiscoveryDelay.Seconds(),
			f.FetchesPerPage, brokenCell, s.Wall.Seconds(), s.CPU.Seconds(), s.MaxRSS>>20)
		if note := s.note(); note != "" {
			notes = append(notes, "- "+name+": "+note)
		}
	}
	b.WriteString("\n")
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, "\n") + "\n\n")
	}
	return b.String()
}
