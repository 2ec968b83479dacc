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

// refusal is why the command stopped before it crawled, as its exit
// status tells it. Each step has said why on standard error.
type refusal int

const (
	// notRefused: the command goes on.
	notRefused refusal = iota
	// helpShown: -h asked for the flags, and they were shown.
	helpShown
	// badUsage: the command cannot run as it was given, and will not
	// until that changes: bad flags, a seeds file that cannot be read or
	// holds no seed, an -o or -log that would overwrite the seeds file (or
	// each other), a -metrics address that cannot be listened on, a
	// -state DIR in use, or holding a crawl started with other flags or an
	// -o cut shorter than it left it, a -redis job started with other
	// flags, or a -job that -redis does not hold joined without seeds.
	badUsage
	// unavailable: the crawl's state could not be reached or written
	// before the crawl: Redis did not answer, or the -state or the job
	// could not record this run's start.
	unavailable
)

// outcome is what a run of the command ended with: all its exit status
// depends on.
type outcome struct {
	refused  refusal // it stopped before the crawl, and why
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

// ranToEnd reports whether the crawl ran to its end: nothing failed or
// stopped it.
func (o outcome) ranToEnd() bool {
	return o.runErr == nil && o.outErr == nil && o.cause == nil
}

// ending says how a run of the command ended, for what it says of it: each
// has its own lines on standard error.
type ending int

const (
	// endRefused: the command stopped before the crawl, having said why.
	endRefused ending = iota
	// endNoSeeds: standard input ("-") gave no seed to crawl.
	endNoSeeds
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
	// endTimeUp: -for stopped the crawl, as a signal would; it ends
	// well.
	endTimeUp
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

// exitStatus is the exit status of a run of the command that ended with
// o, and how it ended (what it says of it): 0 for a crawl that ran to its
// end, robots.txt rules that keep every seed out included; 1 for one that
// failed (no seed could be fetched, the output or the -state could not be
// written, Redis could not be reached or lost the job); 2 for a command
// given wrong (see badUsage), standard input without a seed included;
// 128+n for a crawl stopped by signal n; 0 for one -for stopped.
func exitStatus(o outcome) (int, ending) {
	switch o.refused {
	case helpShown:
		return 0, endRefused
	case badUsage:
		return 2, endRefused
	case unavailable:
		return 1, endRefused
	}
	noSeeds := errors.Is(o.runErr, crawler.ErrNoSeeds)
	// A rerun that found the crawl complete and did nothing.
	idle := o.complete && o.runErr == nil && o.closeErr == nil && o.nothingNew
	var sig signalled
	var up timeUp
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
	case errors.As(o.cause, &up):
		return 0, endTimeUp
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
