// Command benchrun compares crawlers on the synthetic web of
// internal/testweb: for each workload it serves the web from loopback (one
// address in 127.0.0.0/8 per host), runs heed's crawl command, colly and
// gocrawl as separate processes, alternating, measures each process's wall
// time, CPU time and peak RSS, judges each crawl from the server's request
// log, and prints the medians as BENCHMARKS.md's tables of today's figures,
// each row ending with the machine, the command, the date and the commit
// measured, so that they can be pasted there; then each crawler in detail,
// with ratios against gocrawl.
//
// Run it from the repository's root:
//
//	go -C bench run ./cmd/benchrun                      # workloads a–d, 3 runs each
//	go -C bench run ./cmd/benchrun -workloads b -runs 1 # smoke test
//	go -C bench run ./cmd/benchrun -broken=false        # without testweb's broken hosts
//
// Heed's variants run the same crawl command with its state elsewhere:
// heed-state in pebble (-state, a fresh directory per run), heed-redis in a
// redis-server benchrun starts (-redis, a fresh job per run), heed-redis-N
// as N processes sharing one job. Workloads e and f compare them with heed
// in memory:
//
//	go -C bench run ./cmd/benchrun -workloads e -crawlers heed,heed-state -runs 1
//	go -C bench run ./cmd/benchrun -workloads f -crawlers heed,heed-redis,heed-redis-4 -runs 1
//	go -C bench run ./cmd/benchrun -workloads a -crawlers heed,heed-redis -runs 3
//	go -C bench run ./cmd/benchrun -workloads b -crawlers heed,heed-redis-3 -runs 3
//
// Workload g is heed's revisiting end to end: each run crawls a changing
// web with -revisit for -for (3 minutes by default) and is judged on the
// freshness of its copy over the second half of that time, against uniform
// revisiting and the offline optimum, in a table of its own:
//
//	go -C bench run ./cmd/benchrun -workloads g -crawlers heed -runs 1
//	go -C bench run ./cmd/benchrun -workloads g -crawlers heed,heed-redis-2 -runs 3 -for 5m
//
// With -redis-cluster N, heed-redis runs on a Redis Cluster of N primaries:
//
//	go -C bench run ./cmd/benchrun -workloads f -crawlers heed,heed-redis,heed-redis-4 -redis-cluster 3 -runs 1
//
// With -redis-fsync always, each redis-server keeps an append-only file
// and syncs it at every write, as a deployment that loses no acknowledged
// write runs it:
//
//	go -C bench run ./cmd/benchrun -workloads a -crawlers heed,heed-redis -redis-cluster 3 -redis-fsync always -runs 1
//
// With -redis-cpus, redis-server runs on CPUs of its own, as a deployment
// that gives Redis its own machine has; run benchrun on the others:
//
//	taskset -c 0 go -C bench run ./cmd/benchrun -workloads a -crawlers heed,heed-redis -redis-cpus 1 -runs 3
//
// Heed is skipped, with a note in the table, while ../cmd/crawl does not
// exist or does not build; heed-redis while crawl has no -redis flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/heedcrawl/heed/bench/harness"
)

func main() {
	if harness.ServeSpawnerIfRequested() {
		return
	}
	os.Exit(run())
}

func run() int {
	// Start the spawner while this process is small: crawlers it starts
	// report their own peak RSS, not ours.
	spawner, err := harness.StartSpawner()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		return 1
	}
	defer spawner.Close()

	var o options
	fs := newFlagSet(&o)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	workloads, err := chosenWorkloads(o.workloads, o.broken, o.forDuration)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		return 2
	}

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	plan := harness.Plan{Workloads: workloads}
	scratch, err := os.MkdirTemp("", "benchrun-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		return 1
	}
	defer os.RemoveAll(scratch)

	log.Info("building crawlers")
	built, skipped := harness.BuildCrawlers(ctx, strings.Split(o.crawlers, ","), ".", o.repo, scratch)
	for name, err := range skipped {
		log.Warn("crawler skipped", "crawler", name, "reason", err)
	}
	if len(built) == 0 {
		fmt.Fprintln(os.Stderr, "benchrun: no crawler to run")
		return 1
	}
	plan.Crawlers, plan.Runs, plan.Port, plan.Timeout, plan.Scratch, plan.Logger = built, o.runs, o.port, o.timeout, scratch, log
	plan.Spawner = spawner
	for _, c := range built {
		if c.Redis && plan.Redis == nil {
			if o.cluster > 0 {
				plan.Redis, err = harness.StartRedisCluster(ctx, scratch, o.cluster, harness.RedisOptions{CPUs: o.redisCPUs, Fsync: o.redisFsync})
			} else {
				plan.Redis, err = harness.StartRedis(ctx, scratch, harness.RedisOptions{CPUs: o.redisCPUs, Fsync: o.redisFsync})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchrun:", err)
				return 1
			}
			defer plan.Redis.Close()
			log.Info("redis-server", "url", plan.Redis.URL())
		}
	}

	prov := provenance(ctx, o.repo, os.Args[1:])
	ms, err := harness.Run(ctx, plan)
	report(ms, plan.Workloads, skipped, prov, o.out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		return 1
	}
	return 0
}

// chosenWorkloads returns the workloads named in the comma-separated
// list, with or without the broken hosts, continuous ones revisiting for
// forDuration unless it is 0, or an error naming a workload it does not
// know.
func chosenWorkloads(list string, broken bool, forDuration time.Duration) ([]harness.Workload, error) {
	var ws []harness.Workload
	for _, name := range strings.Split(list, ",") {
		w, ok := harness.WorkloadByName(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("unknown workload %q (known: %s)", name, workloadList())
		}
		w.Config.NoBrokenHosts = !broken
		if w.Continuous != nil && forDuration > 0 {
			c := *w.Continuous
			c.For = forDuration
			w.Continuous = &c
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// report prints the tables of the measurements ms — today's figures in
// BENCHMARKS.md's shape, then each workload's crawlers in detail — and
// writes them to the file out too unless out is empty.
func report(ms []harness.Measurement, workloads []harness.Workload, skipped map[string]error, p harness.Provenance, out string) {
	sums := harness.Summarize(ms)
	var b strings.Builder
	b.WriteString(harness.Figures(sums, workloads, skipped, p))
	b.WriteString("Each crawler in detail (medians):\n\n")
	b.WriteString(harness.Table(sums, workloads, skipped))
	fmt.Print(b.String())
	if out != "" {
		if werr := os.WriteFile(out, []byte(b.String()), 0o644); werr != nil {
			fmt.Fprintln(os.Stderr, "benchrun:", werr)
		}
	}
}

func workloadList() string {
	var names []string
	for _, w := range harness.Workloads {
		title := w.Title
		if w.HeedOnly {
			title += "; heed's variants only"
		}
		names = append(names, w.Name+" ("+title+")")
	}
	return strings.Join(names, "; ")
}
