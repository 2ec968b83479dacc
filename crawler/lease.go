package crawler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

// lease is a worker's hold on one item: the item, its host's pacing state,
// and the timing of the requests made under it. It ends exactly once, by
// one of two exits: done (the item is finished, with what it led to) or
// back (to the queue, not before a given time). Either way the host rests
// as the lease's requests earned — rest, counted from answered — and the
// Store, the one owner of when a host may next be asked, keeps that.
type lease struct {
	*frontier.Lease
	rest     time.Duration  // how long the host rests after the last answer; zero before any request
	answered time.Time      // when the last request under the lease ended
	revisit  *frontier.Item // with WithRevisit: the item queued again when the lease is done, nil for none
	// revisited says the revisit policy updated the host's revisit state,
	// Lease.Revisiting, which the lease's end then stores.
	revisited bool
}

// answer is how a request ended — its response's status and header, or
// its error — as the pacing policy reads it. Its Failure, the one
// classification of the request (fetch.Classify), is also what the crawl
// retries by and counts a failed URL under.
func answer(status int, header http.Header, rtt time.Duration, err error) ratelimit.Answer {
	return ratelimit.Answer{Failure: fetch.Classify(status, err), Header: header, RTT: rtt}
}

// observe updates j's host with a, the outcome of a request made under it
// that ended now.
func (r *crawl) observe(j *lease, a ratelimit.Answer) {
	j.answered = r.now()
	j.Pace.Interrupted = time.Time{} // a request has completed since
	j.rest = r.policy.Observe(j.Key, &j.Pace, j.answered, a)
}

// interruptedUntil is when j's host may be asked again after a request to
// it was cut short by a stop (HostState.Interrupted): a full delay later, by
// what is known of the host now. Zero if there was none.
func (r *crawl) interruptedUntil(j *lease) time.Time {
	if j.Pace.Interrupted.IsZero() || !j.answered.IsZero() {
		return time.Time{}
	}
	d, _, _ := r.policy.Delay(j.Pace)
	return j.Pace.Interrupted.Add(d)
}

// restFromNow is how long j's host must still rest: j.rest counts from the
// answer to the last request made under the lease.
func (r *crawl) restFromNow(j *lease) time.Duration {
	if j.answered.IsZero() {
		return 0
	}
	return j.answered.Add(j.rest).Sub(r.now())
}

// done ends j: its item is finished. report — the handlers that tell the
// caller how it ended, nil for none — runs first; found — what the item
// led to (a page's links that the filters let through, a redirect's
// target) — is scheduled in the same Store operation that ends j
// (frontier.DoneAdding), and so is j.revisit, the item queued again to be
// revisited, if set. With WithCheckpoint, report and the end happen
// under one lock with the caller's checkpoint taken between them, so that
// what the handlers wrote and the acknowledgement that carries the
// checkpoint stay in step.
func (r *crawl) done(ctx context.Context, j *lease, report func(), found []frontier.Item) {
	o := frontier.Outcome{Pace: j.Pace, Rest: r.restFromNow(j), Revisit: j.revisit}
	if j.revisited {
		o.Revisiting = &j.Revisiting
	}
	if r.cfg.checkpoint != nil {
		r.commitMu.Lock()
		defer r.commitMu.Unlock()
	}
	if report != nil && r.reports.first(j.URL) {
		report()
	}
	if r.cfg.checkpoint != nil {
		o.Checkpoint = r.cfg.checkpoint()
	}
	r.markDisallowed(found)
	errs, err := r.fr.DoneAdding(context.WithoutCancel(ctx), j.Lease, o, found)
	if len(found) > 0 {
		r.scheduled(found, errs, err)
		r.disallowedFound(ctx, found, errs)
	}
	if err != nil {
		// ErrLeaseLost: reported, maybe, but the Store had taken the lease
		// back (this process was presumed dead) and queued the item again;
		// if it comes back to this crawl, its report is not made twice.
		r.frontierError(j, err)
		return
	}
	r.reports.ended(j.URL)
}

// requeue gives j's item requeue unfinished, with what it has been through, to be
// handed out again once its host has rested, and not before notBefore
// (zero: no such bound).
func (r *crawl) requeue(ctx context.Context, j *lease, notBefore time.Time) {
	rest := max(r.restFromNow(j), notBefore.Sub(r.now()))
	if err := r.fr.Requeue(context.WithoutCancel(ctx), j.Lease, frontier.Outcome{Pace: j.Pace, Rest: rest}); err != nil {
		r.frontierError(j, err)
	}
}

// frontierError handles the frontier's refusal to end j: a Store failure
// ends the crawl; a lease lost to expiry (a shared Store) was handed to
// someone else, which is logged.
func (r *crawl) frontierError(j *lease, err error) {
	if errors.Is(err, frontier.ErrStore) {
		r.fail(fmt.Errorf("crawler: ending the lease of %s: %w", j.URL, err))
		return
	}
	r.log.Warn("crawler: ending a lease", "url", j.URL, "err", err)
}
