// Command crawl runs heed, the polite web crawler, from the command line.
//
//	crawl [flags] seeds.txt     crawl from the URLs in seeds.txt ("-" for stdin)
//	crawl robots URL|FILE [agent] [path ...]
//	                            show how heed reads a robots.txt for an agent
//
// Every fetched page is written as one JSON object per line (JSON Lines) to
// standard output or to -o FILE; see the README for the schema. robots.txt
// decisions and skipped URLs go to the optional -log file. Run crawl -h for
// the flags.
//
// Exit status: 0 when the crawl ran to its end, 1 when it failed, 2 for bad
// flags or an unreadable seeds file, 130 when interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// Nearly all a crawl allocates is page garbage that dies within
		// one fetch; collecting at 200 % heap growth instead of 100 %
		// cuts the collector's CPU by about a sixth (BENCHMARKS.md). Set
		// GOGC to choose otherwise.
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// gcPercent is crawl's garbage-collection target when GOGC is not set.
const gcPercent = 200

// errUsage marks errors that are the caller's: bad flags or arguments.
var errUsage = errors.New("usage")

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "robots" {
		return runRobots(ctx, args[1:], stdout, stderr)
	}
	return runCrawl(ctx, args, stdin, stdout, stderr)
}

// interruptible returns a context cancelled by the first SIGINT; a second
// SIGINT calls quit (which flushes what was fetched) and ends the process at
// once.
func interruptible(parent context.Context, stderr io.Writer, quit func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		// Cancel first: once the message is out, the crawl takes no more
		// work.
		cancel()
		fmt.Fprintln(stderr, "\ncrawl: interrupted: finishing fetches in flight (interrupt again to quit at once)")
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "crawl: interrupted twice: quitting")
			quit()
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
