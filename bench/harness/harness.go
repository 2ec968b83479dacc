// Package harness runs crawlers as separate processes against a
// testweb.Loopback web, measures each process (wall time, CPU time, peak
// RSS), judges each crawl from the server's request log, and prints the
// medians side by side as a markdown table.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// Agent and UserAgent identify every crawler the harness runs.
const (
	Agent     = "heedbench"
	UserAgent = "heedbench/1.0 (+http://127.0.0.1/; crawler comparison)"
)

// Limits every crawler the harness runs is given, or judged by.
const (
	// HeaderTimeout is every crawler's response-header timeout (heed's
	// -header-timeout, the runners' -header-timeout): what the broken
	// host whose robots.txt never answers costs a crawl.
	HeaderTimeout = 3 * time.Second
	// MaxDelay caps, for the judge, any wait a host asks for with
	// Retry-After: heed's default -max-delay.
	MaxDelay = time.Minute
)

// AnalyzeOptions are how the harness judges a crawl of w from the server's
// log: the workload's delay, Retry-After capped by MaxDelay, heed's default
// retries.
func AnalyzeOptions(w Workload) testweb.AnalyzeOptions {
	return testweb.AnalyzeOptions{MinDelay: w.Delay, MaxDelay: MaxDelay}
}

// Workload is one synthetic web and the delay the crawlers are told.
type Workload struct {
	Name   string
	Title  string
	Config testweb.Config
	// Delay is each crawler's minimum delay per host; equal to the web's
	// Crawl-delay where it has one.
	Delay time.Duration
	// Workers is heed's -workers in each process; 0 leaves crawl's default.
	Workers int
	// HeedOnly runs only heed's variants on the workload: colly and gocrawl
	// would take very long on it, or have no setting that matches.
	HeedOnly bool
	// Bar is the figure heed must reach on the workload, and VariantBar
	// the one its variants (heed-state, heed-redis, heed-redis-N) must,
	// against heed in memory; Figures prints them beside the figures.
	Bar, VariantBar string
	// Continuous, when set, makes the workload a continuous crawl of a
	// changing web, judged on its freshness (see Continuous); Config then
	// describes the small static web served beside it for its broken
	// hosts.
	Continuous *Continuous
}

// Workloads are the workloads of the comparison: (a)–(d) compare heed with
// colly and gocrawl; (e) and (f) compare heed's stores with each other; (g)
// is heed's revisiting, judged on freshness (see ContinuousWorkload). Each
// web also has, beyond the hosts its title counts, testweb's BrokenHosts
// (Config.TotalHosts): a robots.txt answering 503 with an HTTP-date
// Retry-After, one that never answers (a HeaderTimeout per crawl), a host
// refusing connections, pages answering 429 once with Retry-After: 1, pages
// reset mid-body once; the healthy hosts link to them and to the robots-503
// host. A crawler that waits on them, or ignores them, shows in its wall
// time and its judgement.
var Workloads = []Workload{
	{Name: "a", Title: "throughput: 200 hosts × 50 pages, no delay",
		Config:     testweb.Config{Hosts: 200, PagesPerHost: 50, Seed: 1},
		Bar:        "≥ 2× gocrawl's pages/s at ≤ 0.5× its CPU a page; coverage 1, 0 faults",
		VariantBar: "heed-redis: ≥ 0.5× memory's pages/s, ≤ 50 µs Redis CPU a page; coverage 1, 0 faults"},
	{Name: "b", Title: "politeness: 20 hosts × 20 pages, Crawl-delay 0.2 s",
		Config:     testweb.Config{Hosts: 20, PagesPerHost: 20, CrawlDelay: 200 * time.Millisecond, Seed: 2},
		Delay:      200 * time.Millisecond,
		Bar:        "makespan ≤ 1.10× ideal; coverage 1, 0 faults",
		VariantBar: "makespan ≤ 1.15× ideal, by any number of processes; coverage 1, 0 faults"},
	{Name: "c", Title: "scale: 2,000 hosts × 20 pages, no delay",
		Config: testweb.Config{Hosts: 2000, PagesPerHost: 20, Seed: 3},
		Bar:    "wall ≤ 0.5× gocrawl's, peak RSS ≤ 100 MB; coverage 1, 0 faults"},
	{Name: "d", Title: "slow servers: 200 hosts × 20 pages, 300 ms latency per response",
		Config: testweb.Config{Hosts: 200, PagesPerHost: 20, Latency: 300 * time.Millisecond, Seed: 4},
		Bar:    "makespan near the ideal (one request at a time a host); coverage 1, 0 faults"},
	{Name: "e", Title: "state on disk: 1,000 hosts × 1,000 pages, no delay",
		Config:     testweb.Config{Hosts: 1000, PagesPerHost: 1000, Seed: 5},
		HeedOnly:   true,
		VariantBar: "heed-state: wall ≤ 1.3× memory's, peak RSS ≤ 150 MB; coverage 1, 0 faults"},
	{Name: "f", Title: "scale-out: 100 hosts × 10 pages, 200 ms latency per response, 4 workers per process",
		Config:     testweb.Config{Hosts: 100, PagesPerHost: 10, Latency: 200 * time.Millisecond, Seed: 6},
		Workers:    4,
		HeedOnly:   true,
		VariantBar: "heed-redis-N: wall ≤ 1/3 of one process's (heed-redis) at N = 4; coverage 1, 0 faults"},
	ContinuousWorkload(),
}

// DefaultWorkloads are the ones benchrun runs unless told otherwise.
var DefaultWorkloads = []string{"a", "b", "c", "d"}

// WorkloadByName returns the named workload of Workloads.
func WorkloadByName(name string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// Crawler is a crawler binary and how to call it.
type Crawler struct {
	Name string
	Path string
	// Args returns the arguments of one process for a workload.
	Args func(w Workload, env RunEnv) []string
	// Procs is how many processes a run starts at once (0 means 1); they
	// crawl together, sharing their state through Redis.
	Procs int
	// Redis says the crawler keeps its state in the Plan's Redis.
	Redis bool
}

// RunEnv is where one process of a run finds its input and puts its output.
type RunEnv struct {
	SeedsFile string
	// Scratch is a fresh directory for the run's output and state, shared
	// by its processes.
	Scratch string
	// Proc numbers the processes of a run from 1.
	Proc int
	// RedisURL and Job name the Redis and the job of a crawler with Redis:
	// a job of its own for every run.
	RedisURL, Job string
}

// heedFamily says whether a crawler is heed, in any of its variants.
func (c Crawler) heedFamily() bool { return isHeed(c.Name) }

func isHeed(name string) bool { return name == "heed" || strings.HasPrefix(name, "heed-") }

// Measurement is one run of one crawler on one workload.
type Measurement struct {
	Crawler  string
	Workload string
	Run      int
	Wall     time.Duration // process start to exit
	CPU      time.Duration // user + system time of the process
	MaxRSS   int64         // peak resident set size, bytes
	Report   *testweb.Report
	Err      error  // the process failed or timed out
	Stderr   string // the tail of the process's standard error
	// Procs is how many processes crawled together: Wall is then from the
	// first start to the last exit, CPU their sum, MaxRSS the largest.
	Procs int
	// Exits is when each process exited, from the first start, in order.
	Exits []time.Duration
	// Redis is what the run asked of Redis; nil without Redis.
	Redis *RedisUse
	// Freshness judges a run of a Continuous workload over the second
	// half of its -for, and Requests counts every request the changing
	// web answered in the run; Report is then the judgement of the static
	// web beside it, with the broken hosts.
	Freshness *testweb.FreshnessReport
	Requests  int
}

// workDone is what a run's costs are shared over: on a Continuous
// workload the requests the changing web answered, on others the distinct
// reachable pages fetched.
func (m Measurement) workDone() int {
	if m.Freshness != nil {
		return m.Requests
	}
	if m.Report == nil {
		return 0
	}
	return m.Report.ReachableFetched
}

// PagesPerSecond is distinct reachable pages fetched per wall second.
func (m Measurement) PagesPerSecond() float64 {
	if m.Wall <= 0 || m.Report == nil {
		return 0
	}
	return float64(m.Report.ReachableFetched) / m.Wall.Seconds()
}

// CPUPerPage is CPU time per distinct reachable page fetched.
func (m Measurement) CPUPerPage() time.Duration {
	if m.Report == nil || m.Report.ReachableFetched == 0 {
		return 0
	}
	return m.CPU / time.Duration(m.Report.ReachableFetched)
}

// Plan is what Run does.
type Plan struct {
	Workloads []Workload
	Crawlers  []Crawler
	Runs      int           // runs of each crawler per workload, alternating
	Port      int           // port of every host's listener; 0 picks free ports
	Timeout   time.Duration // per crawler run; the process is stopped after it
	Scratch   string        // directory for seeds and crawler output
	Logger    *slog.Logger  // progress; nil discards
	// Spawner starts the crawler processes. Without one they are started
	// by this process, and their peak RSS is never below this process's
	// own peak (see StartSpawner).
	Spawner *Spawner
	// Redis serves the crawlers with Redis; it is emptied before each of
	// their runs. Without it they fail.
	Redis *Redis
}

// Run executes the plan: for each workload it starts the web, then runs the
// crawlers one after another, rotating their order each round, and returns
// every measurement. A crawler that fails is recorded with its error and
// the plan goes on.
func Run(ctx context.Context, p Plan) ([]Measurement, error) {
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if p.Runs < 1 {
		return nil, errors.New("harness: Runs must be at least 1")
	}
	var out []Measurement
	for _, w := range p.Workloads {
		if w.Continuous != nil {
			ms, err := runContinuous(ctx, p, w, log)
			out = append(out, ms...)
			if err != nil {
				return out, err
			}
			continue
		}
		if err := raiseFileLimit(uint64(w.Config.TotalHosts())*4 + 4096); err != nil {
			log.Warn("file descriptor limit", "err", err)
		}
		web, err := testweb.ListenLoopback(w.Config, p.Port, log)
		if err != nil {
			return out, fmt.Errorf("harness: workload %s: %w", w.Name, err)
		}
		ms, err := runWorkload(ctx, p, w, web, log)
		out = append(out, ms...)
		if cerr := web.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func runWorkload(ctx context.Context, p Plan, w Workload, web *testweb.Loopback, log *slog.Logger) ([]Measurement, error) {
	truth, err := web.Web.Truth(testweb.TruthOptions{})
	if err != nil {
		return nil, err
	}
	seedsFile := filepath.Join(p.Scratch, "seeds-"+w.Name+".txt")
	if err := os.WriteFile(seedsFile, []byte(strings.Join(web.Web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	log.Info("workload", "name", w.Name, "title", w.Title, "reachable", len(truth.Reachable),
		"sitemap-only", len(truth.SitemapOnly), "ideal", truth.IdealMakespan(w.Delay))
	crawlers := p.crawlersFor(w)
	var out []Measurement
	for run := range p.Runs {
		for i := range crawlers {
			c := crawlers[(i+run)%len(crawlers)]
			if err := ctx.Err(); err != nil {
				return out, err
			}
			web.Log.Reset()
			m := measure(ctx, p, c, w, seedsFile, run+1)
			m.Run = run + 1
			m.Report = truth.Analyze(web.Log.Entries(), AnalyzeOptions(w))
			out = append(out, m)
			args := []any{"workload", w.Name, "run", m.Run, "crawler", c.Name, "wall", m.Wall.Round(time.Millisecond),
				"cpu", m.CPU.Round(time.Millisecond), "rss_mb", m.MaxRSS >> 20,
				"pages_per_s", int(m.PagesPerSecond()), "coverage", fmt.Sprintf("%.3f", m.Report.Coverage)}
			if m.Redis != nil && m.Report.ReachableFetched > 0 {
				pages := float64(m.Report.ReachableFetched)
				args = append(args, "redis_scripts_per_page", fmt.Sprintf("%.2f", float64(m.Redis.Scripts())/pages),
					"redis_commands_per_page", fmt.Sprintf("%.2f", float64(m.Redis.Commands())/pages),
					"redis_cpu", m.Redis.CPU.Round(time.Millisecond), "redis_script_time", m.Redis.ScriptTime.Round(time.Millisecond),
					"redis_calls_per_page", m.Redis.PerPage(pages), "redis_us_per_page", m.Redis.TimePerPage(pages))
			}
			if m.Err != nil {
				log.Warn("crawler failed", append(args, "err", m.Err, "stderr", m.Stderr)...)
			} else {
				log.Info("crawler done", args...)
			}
		}
	}
	return out, nil
}

// crawlersFor returns the plan's crawlers that run on w: on a HeedOnly
// workload heed's variants only.
func (p Plan) crawlersFor(w Workload) []Crawler {
	var crawlers []Crawler
	for _, c := range p.Crawlers {
		if c.heedFamily() || !w.HeedOnly {
			crawlers = append(crawlers, c)
		}
	}
	return crawlers
}

func measure(ctx context.Context, p Plan, c Crawler, w Workload, seedsFile string, run int) Measurement {
	m := Measurement{Crawler: c.Name, Workload: w.Name, Procs: max(c.Procs, 1)}
	scratch, err := os.MkdirTemp(p.Scratch, c.Name+"-")
	if err != nil {
		m.Err = err
		return m
	}
	defer os.RemoveAll(scratch)
	env := RunEnv{SeedsFile: seedsFile, Scratch: scratch}
	var before RedisStats
	if c.Redis {
		if p.Redis == nil {
			m.Err = fmt.Errorf("harness: %s needs a Redis and the plan has none", c.Name)
			return m
		}
		if err := p.Redis.Flush(ctx); err != nil {
			m.Err = err
			return m
		}
		if before, err = p.Redis.Stats(ctx); err != nil {
			m.Err = err
			return m
		}
		env.RedisURL, env.Job = p.Redis.URL(), fmt.Sprintf("bench-%s-%d", w.Name, run)
	}
	req := spawnRequest{Timeout: p.Timeout}
	if w.Continuous != nil && p.Timeout > 0 {
		// The processes are meant to run for the whole of -for: Timeout
		// counts from its end.
		req.Timeout += w.Continuous.For
	}
	for i := range m.Procs {
		env.Proc = i + 1
		req.Procs = append(req.Procs, procSpec{Path: c.Path, Args: c.Args(w, env)})
	}
	var res spawnResult
	if p.Spawner != nil {
		if res, err = p.Spawner.run(ctx, req); err != nil {
			m.Err = err
			return m
		}
	} else {
		res = runChild(req)
	}
	m.Wall, m.CPU, m.MaxRSS, m.Stderr, m.Exits = res.Wall, res.CPU, res.MaxRSS, res.Stderr, res.Exits
	if res.Err != "" {
		m.Err = errors.New(res.Err)
	}
	if c.Redis {
		after, err := p.Redis.Stats(ctx)
		if err != nil {
			m.Err = errors.Join(m.Err, err)
			return m
		}
		use := after.Sub(before)
		m.Redis = &use
	}
	return m
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(t.buf.String()) }

// raiseFileLimit makes sure this process (and so its children) may open at
// least n files: every host is a listener, and crawlers open a connection
// per host. Go already raises the soft limit to the hard one at start-up.
func raiseFileLimit(n uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= n {
		return nil
	}
	want := lim
	want.Cur = n
	want.Max = max(lim.Max, n)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		want.Cur = lim.Max
		want.Max = lim.Max
		if err2 := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err2 != nil {
			return fmt.Errorf("open-file limit is %d, need %d: %w", lim.Cur, n, err)
		}
		return fmt.Errorf("open-file limit raised only to %d, need %d: %w", lim.Max, n, err)
	}
	return nil
}

// maxRSSBytes converts getrusage's ru_maxrss, kilobytes on Linux and bytes
// on Darwin.
func maxRSSBytes(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
