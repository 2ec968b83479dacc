// Command crawl runs heed, the polite web crawler, from the command line.
//
//	crawl [flags] URL|seeds.txt|- ...
//	                            crawl from the URLs given and those in the
//	                            seeds files ("-" for stdin)
//	crawl -redis URL -job NAME [flags] [URL|seeds.txt|- ...]
//	                            start or join a crawl shared by many processes
//	crawl status -redis URL -job NAME
//	                            show how such a crawl is going
//	crawl robots URL|FILE [agent] [path ...]
//	                            show how heed reads a robots.txt for an agent
//
// An argument with "://" is a URL to start from, "-" standard input, any
// other a seeds file (one URL per line); flags may come before or after
// them, and -- ends the flags.
//
// Every URL the crawl schedules has one record — a page, an error, or a
// skip (a URL robots.txt rules keep out) — written as one JSON object per
// line (JSON Lines) to standard output or to -o FILE, as the crawl goes;
// see the README for the schema, and for the refusals that are only
// counted. robots.txt decisions and skipped URLs go to the optional -log
// file too.
// Run crawl -h for the flags.
//
// With -state DIR the crawl keeps its state in DIR, and the same command
// run again resumes it after any stop (see the README's "Resuming a
// crawl"). With -redis URL -job NAME it keeps it in Redis, shared by every
// process of the job, wherever they run (the README's "Distributed
// crawls").
//
// Exit status: 0 when the crawl ran to its end or -for stopped it, 1 when
// it failed (no seed could be fetched, the output or the state could not
// be written, Redis could not be reached or lost the job), 2 for bad flags, an unreadable
// seeds file, an -o or -log that would overwrite the seeds file, a
// -metrics address that cannot be listened on, a -state DIR in use or
// started with other flags, a -redis job started with other flags, or a
// -job that -redis does not hold, joined without seeds or asked about by
// crawl status, 128+n when stopped by signal n: 130 for SIGINT (Ctrl-C),
// 143 for SIGTERM, 129 for SIGHUP (exitStatus).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// Nearly all a crawl allocates is page garbage that dies within
		// one fetch; collecting at 200 % heap growth instead of 100 %
		// cuts the collector's CPU by about a sixth (BENCHMARKS.md). Set
		// GOGC to choose otherwise.
		debug.SetGCPercent(gcPercent)
	}
	limitMallocArenas()
	// Without this, a write to a closed standard output (crawl … | head -1)
	// kills the process by SIGPIPE before it can stop the crawl, flush
	// the log and print the summary; ignored, the write fails with EPIPE
	// and the recorder stops the crawl.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// gcPercent is crawl's garbage-collection target when GOGC is not set.
const gcPercent = 200

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "robots" {
		return runRobots(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "status" {
		return runStatus(ctx, args[1:], stdout, stderr)
	}
	return runCrawl(ctx, args, stdin, stdout, stderr)
}

// parseFlags parses args into fs, flags and arguments in any order, as
// most commands take them (crawl seeds.txt -delay 0s): the flag package
// stops at the first argument that is not a flag, so it is parsed again
// after each one; "--" ends the flags, and fs.Args() is the arguments in
// their order. -h prints usage on stdout; a bad flag is one line on stderr
// naming it, with a hint, rather than the whole usage. ok is false when
// the command should stop, with exit status code.
func parseFlags(fs *flag.FlagSet, args []string, usage func(io.Writer), stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage(stdout)
				return 0, false
			}
			fmt.Fprintf(stderr, "%s: %s; see %s -h\n", fs.Name(), flagErrorText(err), fs.Name())
			return 2, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
	// Parsing only "--" leaves the flags as they are and the arguments
	// where fs.Args() finds them.
	fs.Parse(append([]string{"--"}, positional...))
	return 0, true
}

// flagErrorText rewords the flag package's errors: "flag provided but not
// defined: -x" becomes "unknown flag -x", and "for flag -x" "for -x".
func flagErrorText(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + name
	}
	return strings.Replace(msg, " for flag -", " for -", 1)
}

// stopSignals end a crawl gracefully: Ctrl-C, kill's default signal, and
// the terminal going away.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalled is the cause of a crawl cancelled by a signal.
type signalled struct{ sig os.Signal }

func (s signalled) Error() string { return "stopped by " + signalName(s.sig) }

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// signalStatus is the exit status of a process ended by sig, as shells
// report it: 128 plus the signal's number.
func signalStatus(sig os.Signal) int {
	if n, ok := sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 128 + int(syscall.SIGINT)
}

// watchSignals cancels the crawl with a signalled cause on the first of
// stopSignals; on a second one it calls quit, which writes what was fetched,
// and ends the process at once with that signal's status. stop ends the
// watch.
func watchSignals(cancel context.CancelCauseFunc, stderr io.Writer, quit func()) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		// Cancel first: once the message is out, the crawl takes no more
		// work.
		cancel(signalled{sig})
		if sig == os.Interrupt {
			fmt.Fprintln(stderr, "\ncrawl: interrupted: finishing fetches in flight (interrupt again to quit at once)")
		} else {
			fmt.Fprintf(stderr, "\ncrawl: %s: finishing fetches in flight (signal again to quit at once)\n", signalName(sig))
		}
		select {
		case sig = <-sigs:
			fmt.Fprintf(stderr, "crawl: second signal (%s): quitting\n", signalName(sig))
			quit()
			os.Exit(signalStatus(sig))
		case <-done:
		}
	})
	return func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
	}
}

// syncWriter serialises writes to w, which several goroutines share (the
// progress line, the log, messages about signals and output errors), and
// flushes w if it is buffered.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Flush flushes w if it has a Flush method.
func (s *syncWriter) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}
