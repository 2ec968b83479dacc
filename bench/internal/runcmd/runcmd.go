// Package runcmd is the command line shared by cmd/collyrun and
// cmd/gocrawlrun, which mirrors the flags of heed's crawl command that the
// harness uses.
package runcmd

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/heedcrawl/heed/bench/runner"
)

// Main parses args, runs crawl and returns the process exit code: 0 on
// success, 1 if the crawl failed, 2 for bad usage.
func Main(name string, crawl func(context.Context, runner.Options) (runner.Result, error), args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	agent := fs.String("agent", "heedbench", "product token matched against robots.txt groups")
	ua := fs.String("ua", "heedbench/1.0", "full User-Agent header")
	delay := fs.Duration("delay", time.Second, "minimum delay between requests to a host")
	timeout := fs.Duration("timeout", 30*time.Minute, "stop the crawl after this long")
	headerTimeout := fs.Duration("header-timeout", 0, "give up on a request whose response headers take longer (heed's -header-timeout); 0: the library's own")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [flags] seeds.txt\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	seeds, err := readSeeds(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	start := time.Now()
	res, err := crawl(ctx, runner.Options{Seeds: seeds, Agent: *agent, UserAgent: *ua, Delay: *delay, HeaderTimeout: *headerTimeout})
	fmt.Fprintf(stderr, "%s: %d pages visited, %d errors, %v\n", name, res.Visited, res.Errors, time.Since(start).Round(time.Millisecond))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

func readSeeds(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var seeds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			seeds = append(seeds, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("%s: no seeds", path)
	}
	return seeds, nil
}
