// Command websrv serves one workload of the bench harness from loopback
// (one address in 127.0.0.0/8 per host) for crawling by hand, writes its
// seeds, and when stopped (SIGINT, or after -for) judges whatever crawled it
// from its request log.
//
//	go -C bench run ./cmd/websrv -workload b -seeds /tmp/seeds.txt &
//	crawl -delay 200ms -header-timeout 3s /tmp/seeds.txt
//	kill -INT %1
//
// With -broken=false it serves the workload without testweb's broken hosts,
// as benchrun -broken=false does.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/heedcrawl/heed/bench/harness"
	"github.com/heedcrawl/heed/internal/testweb"
)

func main() {
	workload := flag.String("workload", "b", "workload to serve: a–f (see benchrun -h)")
	port := flag.Int("port", 8080, "port of every host's listener; 0 picks free ports")
	seeds := flag.String("seeds", "seeds.txt", "write the seed URLs (every home page) to this file")
	logFile := flag.String("log", "", "write the request log (JSON Lines) to this file when stopping")
	minDelay := flag.Duration("delay", -1, "crawler's minimum delay for the politeness judgement (default: the workload's)")
	serveFor := flag.Duration("for", 30*time.Minute, "stop serving after this long")
	broken := flag.Bool("broken", true, "serve testweb's broken hosts beside the workload (benchrun's -broken)")
	flag.Parse()

	w, ok := harness.WorkloadByName(*workload)
	if !ok {
		fmt.Fprintf(os.Stderr, "websrv: unknown workload %q\n", *workload)
		os.Exit(2)
	}
	if *minDelay < 0 {
		*minDelay = w.Delay
	}
	w.Config.NoBrokenHosts = !*broken
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	web, err := testweb.ListenLoopback(w.Config, *port, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "websrv:", err)
		os.Exit(1)
	}
	defer web.Close()
	if err := os.WriteFile(*seeds, []byte(strings.Join(web.Web.Seeds(), "\n")+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "websrv:", err)
		os.Exit(1)
	}
	truth, err := web.Web.Truth(testweb.TruthOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "websrv:", err)
		os.Exit(1)
	}
	log.Info("serving", "workload", w.Name, "title", w.Title, "hosts", w.Config.TotalHosts(), "seeds", *seeds,
		"reachable", len(truth.Reachable), "for", *serveFor)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *serveFor)
	defer cancel()
	<-ctx.Done()

	entries := web.Log.Entries()
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err == nil {
			err = testweb.WriteLog(f, entries)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "websrv:", err)
		}
	}
	opts := harness.AnalyzeOptions(w)
	opts.MinDelay = *minDelay
	fmt.Fprintln(os.Stderr, truth.Analyze(entries, opts))
}
