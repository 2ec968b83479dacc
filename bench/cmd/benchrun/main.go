// Command benchrun compares crawlers on the synthetic web of
// internal/testweb: for each workload it serves the web from loopback (one
// address in 127.0.0.0/8 per host), runs heed's crawl command, colly and
// gocrawl as separate processes, alternating, measures each process's wall
// time, CPU time and peak RSS, judges each crawl from the server's request
// log, and prints a markdown table of the medians with ratios against
// gocrawl.
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
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
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

	workloads := flag.String("workloads", strings.Join(harness.DefaultWorkloads, ","), "comma-separated workloads: "+workloadList())
	crawlers := flag.String("crawlers", strings.Join(harness.CrawlerNames, ","), "comma-separated crawlers; heed's variants: "+harness.HeedVariants)
	runs := flag.Int("runs", 3, "runs of each crawler per workload (alternating); 1 for a smoke test")
	port := flag.Int("port", 8080, "port of every host's listener on its 127.0.x.y address; 0 picks free ports")
	timeout := flag.Duration("timeout", 10*time.Minute, "stop a crawler run after this long")
	repo := flag.String("repo", "..", "heed checkout (for cmd/crawl), relative to the bench module")
	out := flag.String("out", "", "also write the markdown table to this file")
	forDuration := flag.Duration("for", 0, "how long each run of a continuous workload (g) revisits (crawl -for); 0 keeps the workload's (3m)")
	cluster := flag.Int("redis-cluster", 0, "run heed-redis on a Redis Cluster of this many primaries (at least 3) instead of one redis-server")
	redisCPUs := flag.String("redis-cpus", "", "run redis-server on these CPUs only (taskset -c `LIST`); run benchrun on the others")
	broken := flag.Bool("broken", true, "serve testweb's broken hosts with each workload; false: the healthy web alone, as before wave three")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var plan harness.Plan
	var ok bool
	if plan.Workloads, ok = chosenWorkloads(*workloads, *broken, *forDuration); !ok {
		return 2
	}
	scratch, err := os.MkdirTemp("", "benchrun-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		return 1
	}
	defer os.RemoveAll(scratch)

	log.Info("building crawlers")
	built, skipped := harness.BuildCrawlers(ctx, strings.Split(*crawlers, ","), ".", *repo, scratch)
	for name, err := range skipped {
		log.Warn("crawler skipped", "crawler", name, "reason", err)
	}
	if len(built) == 0 {
		fmt.Fprintln(os.Stderr, "benchrun: no crawler to run")
		return 1
	}
	plan.Crawlers, plan.Runs, plan.Port, plan.Timeout, plan.Scratch, plan.Logger = built, *runs, *port, *timeout, scratch, log
	plan.Spawner = spawner
	for _, c := range built {
		if c.Redis && plan.Redis == nil {
			if *cluster > 0 {
				plan.Redis, err = harness.StartRedisCluster(ctx, scratch, *cluster, harness.RedisOptions{CPUs: *redisCPUs})
			} else {
				plan.Redis, err = harness.StartRedis(ctx, scratch, harness.RedisOptions{CPUs: *redisCPUs})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchrun:", err)
				return 1
			}
			defer plan.Redis.Close()
			log.Info("redis-server", "url", plan.Redis.URL())
		}
	}

	ms, err := harness.Run(ctx, plan)
	report(ms, plan.Workloads, skipped, *runs, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		return 1
	}
	return 0
}

// chosenWorkloads returns the workloads named in the comma-separated
// list, with or without the broken hosts, continuous ones revisiting for
// forDuration unless it is 0; ok is false, said on stderr, for a name it
// does not know.
func chosenWorkloads(list string, broken bool, forDuration time.Duration) (ws []harness.Workload, ok bool) {
	for _, name := range strings.Split(list, ",") {
		w, ok := harness.WorkloadByName(strings.TrimSpace(name))
		if !ok {
			fmt.Fprintf(os.Stderr, "benchrun: unknown workload %q (known: %s)\n", name, workloadList())
			return nil, false
		}
		w.Config.NoBrokenHosts = !broken
		if w.Continuous != nil && forDuration > 0 {
			c := *w.Continuous
			c.For = forDuration
			w.Continuous = &c
		}
		ws = append(ws, w)
	}
	return ws, true
}

// report prints the table of the measurements ms, and writes it to the
// file out too unless out is empty.
func report(ms []harness.Measurement, workloads []harness.Workload, skipped map[string]error, runs int, out string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %d CPUs (runtime.NumCPU), %s %s/%s; medians of %d run(s); command: `%s`\n\n",
		runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, runs,
		strings.Join(append([]string{"go -C bench run ./cmd/benchrun"}, os.Args[1:]...), " "))
	b.WriteString(harness.Table(harness.Summarize(ms), workloads, skipped))
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
