package main

import (
	"flag"
	"strings"
	"time"

	"github.com/heedcrawl/heed/bench/harness"
)

// options are benchrun's flags.
type options struct {
	workloads, crawlers  string
	runs, port, cluster  int
	timeout, forDuration time.Duration
	repo, out, redisCPUs string
	redisFsync           string
	broken               bool
}

// newFlagSet defines benchrun's flags on a new FlagSet that fills o; the
// test of BENCHMARKS.md's commands parses them with it too.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.StringVar(&o.workloads, "workloads", strings.Join(harness.DefaultWorkloads, ","), "comma-separated workloads: "+workloadList())
	fs.StringVar(&o.crawlers, "crawlers", strings.Join(harness.CrawlerNames, ","), "comma-separated crawlers; heed's variants: "+harness.HeedVariants)
	fs.IntVar(&o.runs, "runs", 3, "runs of each crawler per workload (alternating); 1 for a smoke test")
	fs.IntVar(&o.port, "port", 8080, "port of every host's listener on its 127.0.x.y address; 0 picks free ports")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "stop a crawler run after this long")
	fs.StringVar(&o.repo, "repo", "..", "heed checkout (for cmd/crawl), relative to the bench module")
	fs.StringVar(&o.out, "out", "", "also write the tables to this file")
	fs.DurationVar(&o.forDuration, "for", 0, "how long each run of a continuous workload (g) revisits (crawl -for); 0 keeps the workload's (3m)")
	fs.IntVar(&o.cluster, "redis-cluster", 0, "run heed-redis on a Redis Cluster of this many primaries (3 or more; 1 is one node holding every slot) instead of one redis-server")
	fs.StringVar(&o.redisCPUs, "redis-cpus", "", "run redis-server on these CPUs only (taskset -c `LIST`); run benchrun on the others")
	fs.StringVar(&o.redisFsync, "redis-fsync", "", "run redis-server with its append-only file and this appendfsync `POLICY` (always, everysec, no); empty: no persistence")
	fs.BoolVar(&o.broken, "broken", true, "serve testweb's broken hosts with each workload; false: the healthy web alone")
	return fs
}
