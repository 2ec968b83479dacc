package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
)

// mode is where a crawl keeps its state — in memory (plain), in a -state
// directory (*crawlState) or in a -redis job (*redisJob) — and what that
// adds to the steps of the crawl command, which runCrawl takes in the
// order of these methods. openMode opens one.
type mode interface {
	// check compares this run's flags with those the state or the job
	// was started with, before any file is created; a -redis process
	// with seeds starts the job here if no process has. seeds says
	// whether this run has any.
	check(ctx context.Context, fs *flag.FlagSet, f *flags, seeds bool, stderr io.Writer) refusal
	// options are the crawler's options for the mode's Store; log is the
	// command's log, which the mode's own messages go to.
	options(log *slog.Logger) []crawler.Option
	// openOutput opens -o name, to be written from base on; override is
	// -state-override.
	openOutput(name string, override bool, stderr io.Writer) (of *os.File, base int64, r refusal)
	// begin records this run's start in the state or the job, before
	// the crawl changes anything, and ties the mode to the crawl: rec is
	// its output, c its crawler.
	begin(ctx context.Context, c *crawler.Crawler, rec *recorder, seeds bool, stderr io.Writer) refusal
	// sync makes durable at once what it can: the process is about to
	// quit on a second signal.
	sync()
	// close ends the run on the state or the job as o says the crawl
	// ended, and returns o with what the mode adds to it: which mode it
	// is, what the state or job held when opened, and closeErr.
	close(ctx context.Context, o outcome) outcome
	// release lets go of the state or the job without a word to it: the
	// command stopped before the crawl. After close it does nothing.
	release()
	// report writes what the mode adds to what the command says of a
	// crawl that ended how.
	report(w io.Writer, how ending, o outcome)
}

// openMode opens the mode f asks for: the -state directory or the -redis
// job, and reads what it holds; without either, a plain crawl. On a
// refusal it has said why on stderr.
func openMode(ctx context.Context, f *flags, stderr io.Writer) (mode, refusal) {
	switch {
	case f.state != "":
		st, r := openState(ctx, f.state, stderr)
		if r != notRefused {
			return nil, r
		}
		return st, notRefused
	case f.redis != "":
		rj, r := openRedis(ctx, f, stderr)
		if r != notRefused {
			return nil, r
		}
		return rj, notRefused
	}
	return plain{}, notRefused
}

// plain is a crawl without -state or -redis: its state is in memory, and
// goes with the process.
type plain struct{}

func (plain) check(context.Context, *flag.FlagSet, *flags, bool, io.Writer) refusal {
	return notRefused
}

func (plain) options(*slog.Logger) []crawler.Option { return nil }

// openOutput creates -o name, or empties it.
func (plain) openOutput(name string, _ bool, stderr io.Writer) (*os.File, int64, refusal) {
	of, err := os.Create(name)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: -o: %v\n", err)
		return nil, 0, badUsage
	}
	return of, 0, notRefused
}

func (plain) begin(context.Context, *crawler.Crawler, *recorder, bool, io.Writer) refusal {
	return notRefused
}

func (plain) sync() {}

func (plain) close(_ context.Context, o outcome) outcome {
	o.mode = plainMode
	return o
}

func (plain) release() {}

func (plain) report(io.Writer, ending, outcome) {}

// earlier is what a Store holds of the crawl before this process, -state's
// or a -redis job's alike.
type earlier struct {
	startedBefore bool     // settings were stored: the crawl was started before
	was           settings // and what they were
	complete      bool     // it ran to its end, nothing left to crawl
	counts        frontier.Counts
}

// errSettings is wrapped by readEarlier's error for stored settings that
// do not read.
var errSettings = errors.New("its settings do not read")

// readEarlier reads what store holds of the crawl before this process.
func readEarlier(ctx context.Context, store frontier.Store) (earlier, error) {
	var e earlier
	raw, err := store.Meta(ctx, metaSettings)
	if err != nil {
		return e, err
	}
	if raw != nil {
		if err := json.Unmarshal(raw, &e.was); err != nil {
			return e, fmt.Errorf("%w: %v", errSettings, err)
		}
		e.startedBefore = true
	}
	done, err := store.Meta(ctx, metaComplete)
	if err != nil {
		return e, err
	}
	e.complete = len(done) > 0
	if e.counts, err = store.Counts(ctx, time.Now()); err != nil {
		return e, err
	}
	return e, nil
}
