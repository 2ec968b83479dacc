package main

import (
	"context"
	"errors"
	"os"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
)

// modeKind names where a crawl keeps its state.
type modeKind int

const (
	plainMode modeKind = iota // in memory, for this run only
	stateMode                 // in a -state directory
	redisMode                 // in a -redis job, shared with its other processes
)

// outcome is what a crawl ended with: all its exit status depends on.
type outcome struct {
	mode     modeKind
	streamed bool  // the seeds came from standard input as the crawl went
	runErr   error // what the crawler's Run returned
	cause    error // why the crawl was cancelled, if it was: a signal, the output failing
	outErr   error // the output could not be written
	closeErr error // the -state or the -redis job could not be closed
	// What the -state or the -redis job held when the command opened it.
	started  bool // an earlier run had started the crawl (for -redis, or another process)
	complete bool // and it had run to its end
	// What this run did.
	nothingNew  bool // no request, no record
	seedsFailed bool // no page was fetched, and not because robots.txt rules kept the seeds out
}

// ending says how a crawl ended, for what the command says of it: each
// has its own lines on standard error.
type ending int

const (
	// endNoSeeds: standard input ("-") gave no seed to crawl.
	endNoSeeds ending = iota
	// endComplete: a -state crawl or a -redis job that had run to its
	// end, run again with nothing new to crawl. It says so, instead of a
	// summary.
	endComplete
	// endNothingToDo: a -redis job joined, with nothing queued and
	// nothing held. It says so, instead of a summary.
	endNothingToDo
	// endOutputFailed: the output could not be written.
	endOutputFailed
	// endStoreFailed: the -state or Redis failed under the crawl, or
	// Redis lost the job.
	endStoreFailed
	// endSignalled: a signal stopped the crawl.
	endSignalled
	// endCancelled: the crawl was cancelled, not by a signal.
	endCancelled
	// endRunFailed: the crawl failed otherwise.
	endRunFailed
	// endCloseFailed: the crawl ran, but its -state or its -redis job
	// could not be closed.
	endCloseFailed
	// endDone: the crawl ran to its end, with seeds that an earlier run
	// (-state) or other processes (-redis) may have fetched: whether they
	// gave a page is not this run's to say.
	endDone
	// endSeedsCrawled: the crawl ran to its end from its seeds; it says
	// why if none gave a page.
	endSeedsCrawled
)

// exitStatus is the exit status of a crawl that ended with o, and how it
// ended (what it says of it): 0 for a crawl that ran to its end, robots.txt
// rules that keep every seed out included; 1 for one that failed (no seed
// could be fetched, the output or the -state could not be written, Redis
// could not be reached or lost the job); 2 for standard input without a
// seed; 128+n for one stopped by signal n.
func exitStatus(o outcome) (int, ending) {
	noSeeds := errors.Is(o.runErr, crawler.ErrNoSeeds)
	// A rerun that found the crawl complete and did nothing.
	idle := o.complete && o.runErr == nil && o.closeErr == nil && o.nothingNew
	var sig signalled
	switch {
	case o.streamed && noSeeds:
		return 2, endNoSeeds
	case o.mode == stateMode && idle,
		o.mode == redisMode && o.started && o.complete && (idle || noSeeds):
		return 0, endComplete
	case o.mode == redisMode && o.started && noSeeds:
		return 0, endNothingToDo
	case o.outErr != nil:
		return 1, endOutputFailed
	case errors.Is(o.runErr, frontier.ErrStore):
		return 1, endStoreFailed
	case errors.As(o.cause, &sig):
		return signalStatus(sig.sig), endSignalled
	case errors.Is(o.runErr, context.Canceled):
		return signalStatus(os.Interrupt), endCancelled
	case o.runErr != nil:
		return 1, endRunFailed
	case o.closeErr != nil:
		return 1, endCloseFailed
	case o.mode == stateMode && o.started && !o.complete, o.mode == redisMode:
		// The seeds were fetched, or failed, in an earlier run; a job's
		// pages are fetched by all its processes: one that fetched none,
		// or whose seeds others fetched, did its part.
		return 0, endDone
	case o.seedsFailed:
		return 1, endSeedsCrawled
	}
	return 0, endSeedsCrawled
}
