package crawler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots/gate"
)

// work is one worker's loop: take a lease of a ready item, process it,
// repeat until the frontier is exhausted or closed, or Run's context ends.
// Run closes the frontier when its context ends, but from another
// goroutine: checking the context here keeps a worker that finishes a page
// just after cancellation from taking one more.
func (r *crawl) work(ctx context.Context) {
	for r.stop.Err() == nil {
		if r.c.pause.wait(r.stop) != nil {
			return
		}
		r.pool.idle.Add(1)
		l, err := r.fr.Next(ctx)
		if r.pool.idle.Add(-1) == 0 && err == nil {
			r.pool.grow() // no worker is left waiting for the next item
		}
		if errors.Is(err, frontier.ErrExhausted) && r.feed.waiting(r.stop) {
			continue // a seed arrived on the feed
		}
		if err != nil {
			if !errors.Is(err, frontier.ErrExhausted) && !errors.Is(err, frontier.ErrClosed) && ctx.Err() == nil {
				r.fail(fmt.Errorf("crawler: frontier: %w", err))
			}
			return
		}
		j := &lease{Lease: l}
		if r.stop.Err() != nil {
			r.requeue(ctx, j, time.Time{}) // not started: leave it queued
			return
		}
		if r.c.pause.paused() {
			r.requeue(ctx, j, time.Time{}) // paused as it was claimed
			continue
		}
		r.process(ctx, j)
	}
}

// sleep waits d on the crawl's clock, or until ctx ends.
func (r *crawl) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	var after <-chan time.Time
	if r.clock != nil {
		after = r.clock.After(d)
	} else {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fail ends the crawl with err, the first failure that leaves it unable to
// go on (the Store failing): Run stops handing out work as on cancellation
// and returns err.
func (r *crawl) fail(err error) {
	r.failOnce.Do(func() {
		r.failure = err
		r.log.Error("crawler: stopping", "err", err)
		r.fr.Close()
		if r.feed != nil {
			r.feed.signal(true) // no worker waits for more seeds
		}
	})
}

// process takes one item through the robots gate, the fetcher and the
// extractors. Its lease says the host may be fetched now.
func (r *crawl) process(ctx context.Context, j *lease) {
	r.reports.hold(j.URL)
	defer r.reports.release(j.URL)
	u, err := url.Parse(j.URL)
	if err != nil { // the frontier hands out only canonical URLs
		r.done(ctx, j, func() { r.failed(ctx, j.URL, FailedInvalidURL, fmt.Errorf("canonical URL does not parse: %w", err)) }, nil)
		return
	}
	if j.Closed(r.now()) {
		r.closedItem(ctx, j, u)
		return
	}
	if j.Kind == frontier.KindSitemap && r.fr.LimitReached() {
		// Every page it could list would be refused: the crawl ends with
		// the pages already scheduled. Counted, not reported, as a
		// sitemap read is (see "Reports" in the package documentation).
		r.stats.skipped(SkippedMaxPages)
		r.done(ctx, j, nil, nil)
		return
	}
	if !j.Expires.IsZero() && !r.now().Before(j.Expires) {
		// A shared store may have handed the host to another process
		// (this one was paused): no request, robots.txt's included.
		r.requeue(ctx, j, time.Time{})
		return
	}
	if !r.robotsAllow(ctx, j, u) {
		return
	}
	// After cancellation no new request starts, even during the grace
	// period; nor while paused; nor on a lease a shared store may have
	// handed to another worker already.
	if r.stop.Err() != nil || r.c.pause.paused() || !j.Expires.IsZero() && !r.now().Before(j.Expires) {
		r.requeue(ctx, j, time.Time{})
		return
	}
	if at := r.interruptedUntil(j); at.After(r.now()) {
		r.requeue(ctx, j, at)
		return
	}
	if j.Kind == frontier.KindSitemap {
		r.fetchSitemap(ctx, j, u)
	} else {
		r.fetchPage(ctx, j, u)
	}
}

// robotsAction is what a worker does with its lease once the robots gate
// has answered for its item.
type robotsAction uint8

const (
	robotsFetch        robotsAction = iota // fetch the item now
	robotsAfterRest                        // robots.txt took the lease's request: back to the queue until the host has rested
	robotsWaitRetry                        // robots.txt unreachable, its retry due within WithRobotsWait: back to the queue until then
	robotsReport                           // robots.txt unreachable: report the item, and close the key until the retry
	robotsForbidden                        // the host is at an address the crawl may not reach: skip the item
	robotsRecordFailed                     // recording the robots.txt exchange failed: the crawl stops
	robotsDisallowed                       // the site's rules disallow the item
)

// robotsDecision decides what to do with a lease after the gate's verdict
// v, given how long its host must still rest (restLeft) and how long a URL
// may wait for an unreachable robots.txt (wait, WithRobotsWait). An
// unreachable robots.txt is a complete disallow (RFC 9309 §2.3.1.4): a URL
// waits for the retry only while the retry is due within wait of the first
// failure, and is reported otherwise.
func robotsDecision(v gate.Verdict, restLeft, wait time.Duration) robotsAction {
	e := v.Entry
	switch {
	case v.Allowed && restLeft > 0:
		return robotsAfterRest
	case v.Allowed:
		return robotsFetch
	case e != nil && v.Fetched && errors.Is(e.Err, fetch.ErrRecord):
		return robotsRecordFailed
	case e != nil && errors.Is(e.Err, fetch.ErrForbiddenAddress):
		return robotsForbidden
	case v.RetryAt.IsZero():
		return robotsDisallowed
	case wait > 0 && e != nil && !e.UnreachableSince.IsZero() && !v.RetryAt.After(e.UnreachableSince.Add(wait)):
		return robotsWaitRetry
	}
	return robotsReport
}

// robotsAllow consults the gate. It returns true when the item may be
// fetched now; otherwise it has ended the lease itself. A robots.txt request
// to the item's own host is made under the item's lease (see leasePacer),
// unless another worker's fetch of that robots.txt is under way, which this
// one then waits for, its lease unused.
func (r *crawl) robotsAllow(ctx context.Context, j *lease, u *url.URL) bool {
	v, err := r.gate.CheckWith(r.stop, u, leasePacer{r: r, held: j})
	if err != nil {
		if r.stop.Err() != nil || errors.Is(err, errLeaseExpired) {
			r.requeue(ctx, j, time.Time{})
			return false
		}
		r.done(ctx, j, func() { r.failed(ctx, j.URL, FailedOther, fmt.Errorf("robots gate: %w", err)) }, nil)
		return false
	}
	e := v.Entry
	if e != nil {
		r.policy.SetCrawlDelay(j.Key, &j.Pace, e.CrawlDelay, e.HasCrawlDelay)
		if !j.answered.IsZero() {
			// robots.txt was fetched under this lease before its
			// Crawl-delay was known: the host rests by it.
			j.rest = r.policy.Rest(j.Pace, j.answered)
		}
	}
	if v.Fetched {
		r.robotsFetched(ctx, u, e)
	}
	if v.Restored {
		// Kept by an earlier run, which may have stopped before it
		// scheduled the sitemaps: the seen-set drops the repeats.
		r.scheduleSitemaps(ctx, u, e)
	}
	switch robotsDecision(v, r.restFromNow(j), r.cfg.robotsWait) {
	case robotsFetch:
		return true
	case robotsAfterRest:
		r.requeue(ctx, j, time.Time{})
	case robotsWaitRetry:
		r.requeue(ctx, j, v.RetryAt)
	case robotsReport:
		r.unreachable(ctx, j, u, e, v.RetryAt)
	case robotsForbidden:
		j.Pace.ClosedUntil = v.RetryAt
		r.forbidden(ctx, j, e.Err)
	case robotsRecordFailed:
		r.fail(fmt.Errorf("crawler: recording %s: %w", e.URL, e.Err))
		r.requeue(ctx, j, time.Time{})
	case robotsDisallowed:
		r.disallowed(ctx, j, u, DisallowedByRules)
	}
	return false
}

// unreachable reports j's item robots-unavailable and ends its lease,
// closing its key until retryAt, when robots.txt may be asked for again:
// until then the key's other URLs, queued or found later, are handed out at
// once to be reported the same way (see closedItem), not left waiting for
// the host's rest, which still governs its next request.
func (r *crawl) unreachable(ctx context.Context, j *lease, u *url.URL, e *gate.Entry, retryAt time.Time) {
	j.Pace.ClosedUntil = retryAt
	r.done(ctx, j, func() {
		r.failed(ctx, j.URL, FailedRobotsUnavailable, robotsUnreachable(e))
		for _, f := range r.hooks().onDisallowed {
			r.safely(ctx, j.URL, func() { f(ctx, u, DisallowedUnavailable) })
		}
	}, nil)
}

// closedItem ends a lease of a closed key (frontier.Lease.Closed), which
// may come before the host's rest is over, so nothing is requested under
// it: a given-up host's URL is reported so (a sitemap only counted), and
// one a page limit refused as skipped; one whose robots.txt is still
// known unreachable is reported robots-unavailable. Any other — a URL of
// another authority paced under the same key — opens the key again and
// waits its turn.
func (r *crawl) closedItem(ctx context.Context, j *lease, u *url.URL) {
	switch {
	case j.GivenUp && j.Kind == frontier.KindSitemap:
		// Counted, not reported, as a sitemap read is: whether its host
		// was given up before it was asked must not change the reports.
		r.stats.skipped(SkippedHostGivenUp)
		r.done(ctx, j, nil, nil)
		return
	case j.GivenUp:
		r.done(ctx, j, func() { r.givenUp(ctx, j.URL, j.Key) }, nil)
		return
	case j.Refused == frontier.RefusedSeenOnly:
		// Found disallowed by a process that died before its report was
		// known written (frontier.ReportWriter): reported here.
		r.disallowed(ctx, j, u, DisallowedByRules)
		return
	case j.Refused != frontier.NotRefused:
		// Refused by a page limit when found, and queued to be reported
		// here, once (frontier.ErrReported).
		why := skipReason(j.Refused.Err())
		r.done(ctx, j, func() { r.reportSkip(ctx, j.URL, why, j.Refused.Err()) }, nil)
		return
	}
	e, ok := r.gate.Known(ctx, u)
	if ok && e.Outcome == gate.OutcomeUnreachable && r.now().Before(e.Expires) {
		if errors.Is(e.Err, fetch.ErrForbiddenAddress) {
			r.forbidden(ctx, j, e.Err)
			return
		}
		r.unreachable(ctx, j, u, e, j.Pace.ClosedUntil)
		return
	}
	j.Pace.ClosedUntil = time.Time{}
	r.requeue(ctx, j, time.Time{})
}

// leasePacer paces the gate's robots.txt requests with the frontier's
// leases, the one owner of when a host may next be fetched: a request to
// the key of the lease the worker holds (held) goes at once — the lease is
// the permission — and its outcome sets how long the host rests when the
// lease ends; a redirect hop to another key, or any request when held is
// nil, waits for a lease of that key.
// errLeaseExpired: a robots.txt request was to be made under a lease
// past its expiry (see frontier.Lease.Expires); the item goes back.
var errLeaseExpired = errors.New("crawler: lease expired before the request")

type leasePacer struct {
	r    *crawl
	held *lease
}

func (p leasePacer) Acquire(ctx context.Context, key string) (gate.Release, error) {
	r := p.r
	if j := p.held; j != nil && j.Key == key {
		if err := r.sleep(ctx, r.interruptedUntil(j).Sub(r.now())); err != nil {
			return nil, err
		}
		if !j.Expires.IsZero() && !r.now().Before(j.Expires) {
			// Expired since process checked: a shared store may have
			// handed the host to another process, whose robots.txt
			// fetch this is not.
			return nil, errLeaseExpired
		}
		if !j.answered.IsZero() {
			// A redirect hop on the same host: it rests from the answer
			// to the previous hop, as between pages.
			if err := r.sleep(ctx, j.answered.Add(j.rest).Sub(r.now())); err != nil {
				return nil, err
			}
		}
		u := r.requestStarting(ctx, key, "", true)
		return func(status int, header http.Header, rtt time.Duration, err error) time.Time {
			r.observe(j, answer(status, header, rtt, err))
			r.robotsAnswered(ctx, u, j.answered, status, header, rtt, err, j.Pace)
			return r.now().Add(j.rest)
		}, nil
	}
	l, err := r.fr.NextKey(ctx, key)
	if err != nil {
		return nil, err
	}
	u := r.requestStarting(ctx, key, "", true)
	return func(status int, header http.Header, rtt time.Duration, err error) time.Time {
		h := l.Pace
		answered := r.now()
		rest := r.policy.Observe(key, &h, answered, answer(status, header, rtt, err))
		r.robotsAnswered(ctx, u, answered, status, header, rtt, err, h)
		if err := r.fr.Done(context.WithoutCancel(ctx), l, frontier.Outcome{Pace: h, Rest: rest}); err != nil && errors.Is(err, frontier.ErrStore) {
			r.fail(fmt.Errorf("crawler: releasing %s: %w", key, err))
		}
		return r.now().Add(rest)
	}, nil
}

func (r *crawl) disallowed(ctx context.Context, j *lease, u *url.URL, why DisallowReason) {
	r.stats.update(func(s *Stats) {
		s.Disallowed++
		if j.Visit != nil {
			s.RevisitsDropped++ // reported once, then no longer revisited
		}
	})
	r.log.Debug("crawler: disallowed by robots.txt", "url", j.URL, "reason", string(why))
	r.done(ctx, j, func() { r.reportDisallowed(ctx, j.URL, u, why) }, nil)
}

// reportDisallowed runs the OnDisallowed handlers for u (rawURL).
func (r *crawl) reportDisallowed(ctx context.Context, rawURL string, u *url.URL, why DisallowReason) {
	for _, f := range r.hooks().onDisallowed {
		r.safely(ctx, rawURL, func() { f(ctx, u, why) })
	}
}

// markDisallowed marks SeenOnly the items that the robots.txt the gate
// holds fresh for their authority disallows (gate.Disallows): such a URL
// takes no place in a queue, and no lease, only one in the seen-set, so
// that it is reported once however often it is found (disallowedFound).
// Every other item is checked again when it is claimed, against the
// robots.txt of that time.
//
// With WithCheckpoint it marks none: a URL reported after the Store
// operation that took it (disallowedFound) has no acknowledgement of its
// own to carry its checkpoint, and a crash before the next would lose its
// report while its URL stays seen. Queued, it is reported on its own
// lease, whose Done carries the checkpoint, exactly once across a crash;
// the lease costs the host no rest, since nothing is requested under it.
func (r *crawl) markDisallowed(items []frontier.Item) {
	if r.cfg.checkpoint != nil {
		return
	}
	for i := range items {
		if u, err := url.Parse(items[i].URL); err == nil && r.gate.Disallows(u) {
			items[i].SeenOnly = true
		}
	}
}

// disallowedFound reports the items markDisallowed marked that the Store
// took as new (errs[i] nil): disallowed by robots.txt, as a lease of
// them would have been. A Store that keeps them pending until then
// (frontier.ReportWriter) hears that their reports are written.
func (r *crawl) disallowedFound(ctx context.Context, items []frontier.Item, errs []error) {
	var written []frontier.Item
	defer func() {
		if rw, ok := r.fr.Store().(frontier.ReportWriter); ok && len(written) > 0 {
			rw.ReportsWritten(written)
		}
	}()
	for i := range items {
		if !items[i].SeenOnly || i >= len(errs) || errs[i] != nil {
			continue
		}
		it := items[i] // the frontier took a copy: canonical as a lease's URL is
		if r.fr.Identify(&it) != nil {
			continue // the Store took it: not so
		}
		u, err := url.Parse(it.URL)
		if err != nil {
			continue
		}
		r.stats.update(func(s *Stats) { s.Disallowed++ })
		r.log.Debug("crawler: disallowed by robots.txt", "url", it.URL, "reason", string(DisallowedByRules), "found", true)
		r.reportDisallowed(ctx, it.URL, u, DisallowedByRules)
		written = append(written, it)
	}
}

// robotsUnreachable says why robots.txt could not be read, for OnError.
func robotsUnreachable(e *gate.Entry) error {
	switch {
	case e == nil:
		return ErrRobotsUnavailable
	case e.Err != nil:
		return fmt.Errorf("%w: %w", ErrRobotsUnavailable, e.Err)
	case e.Status != 0:
		return fmt.Errorf("%w: answered %d %s", ErrRobotsUnavailable, e.Status, http.StatusText(e.Status))
	}
	return ErrRobotsUnavailable
}

// forbidden skips it: its host is or resolves to an address the crawl may
// not reach (see WithAllowPrivate).
func (r *crawl) forbidden(ctx context.Context, j *lease, err error) {
	r.done(ctx, j, func() { r.reportSkip(ctx, j.URL, SkippedPrivateAddress, err) }, nil)
}

// robotsFetched records a robots.txt fetch and schedules the sitemaps it
// names. The gate reports a fetch to the one caller that made it, so each
// fetch is counted once.
func (r *crawl) robotsFetched(ctx context.Context, u *url.URL, e *gate.Entry) {
	if e == nil {
		return
	}
	r.stats.update(func(s *Stats) {
		s.RobotsOutcomes[e.Outcome.String()]++
		if e.HasCrawlDelay && e.CrawlDelay > 0 {
			s.CrawlDelayHosts++
			s.MaxCrawlDelay = max(s.MaxCrawlDelay, min(e.CrawlDelay, r.cfg.maxDelay))
		}
	})
	r.log.Debug("crawler: robots.txt", "authority", e.Authority, "outcome", e.Outcome.String(), "status", e.Status)
	r.reportRobots(ctx, u, e)
	r.scheduleSitemaps(ctx, u, e)
}

// scheduleSitemaps schedules the sitemaps e names, or the authority's
// /sitemap.xml.
func (r *crawl) scheduleSitemaps(ctx context.Context, u *url.URL, e *gate.Entry) {
	if e == nil || !r.cfg.sitemaps || !r.cfg.follow || e.Outcome == gate.OutcomeUnreachable {
		return
	}
	// A robots.txt fetched again after its TTL names the same sitemaps:
	// the frontier's seen-set refuses them, so they are scheduled once
	// (a revisiting crawl reads each again every SitemapInterval).
	base := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}
	robotsURL := base.JoinPath("robots.txt").String()
	named := e.Sitemaps
	var items []frontier.Item
	for _, sm := range fetch.SitemapURLs(base, named, true) {
		it := frontier.Item{URL: sm, Kind: frontier.KindSitemap}
		if len(named) > 0 {
			it.Referrer = robotsURL // cross-submission: the robots.txt named it
		}
		items = append(items, it)
	}
	// One Store call for the host's sitemaps: on a shared Store a round
	// trip, and a script, instead of one each.
	r.addAll(ctx, items, nil, false)
}

// maybeRetry defers j for another try after its host's back-off when its
// request ended with a retryable failure f, tries remain and the host is
// not given up. It reports whether it did.
func (r *crawl) maybeRetry(ctx context.Context, j *lease, f ratelimit.Failure) bool {
	if !f.Retryable() {
		return false
	}
	if r.hostFailing(ctx, j) {
		return false
	}
	j.Retries++
	if j.Retries > r.cfg.pageRetries {
		return false
	}
	r.stats.update(func(s *Stats) { s.Retries++ })
	r.requeue(ctx, j, time.Time{})
	return true
}

// hostFailing gives j's host up once its requests have failed
// WithHostFailures times in a row; every URL still queued for it is then
// reported. It reports whether the host is given up.
func (r *crawl) hostFailing(ctx context.Context, j *lease) bool {
	if r.cfg.hostFailures == NoLimit || j.Pace.Failures < r.cfg.hostFailures {
		return false
	}
	r.log.Info("crawler: giving up host", "key", j.Key, "consecutive_failures", j.Pace.Failures)
	// Its queued URLs are handed out at once, each reported and done on
	// its own lease (closedItem): exactly once, even across a crash.
	if err := r.fr.GiveUp(context.WithoutCancel(ctx), j.Key); err != nil {
		r.fail(fmt.Errorf("crawler: giving up %s: %w", j.Key, err))
	}
	return true
}

// givenUp reports a URL dropped because its host was given up.
func (r *crawl) givenUp(ctx context.Context, url, key string) {
	r.failed(ctx, url, FailedHostGivenUp, fmt.Errorf("host %s failed %d times in a row: %w", key, r.cfg.hostFailures, frontier.ErrGivenUp))
}

func (r *crawl) fetchPage(ctx context.Context, j *lease, u *url.URL) {
	req := fetch.Request{URL: j.URL, Depth: j.Depth, Referrer: j.Referrer, RedirectChain: j.Redirects}
	if r.revisit != nil {
		req.Header = conditional(&j.Item)
	}
	w := r.requestStarting(ctx, j.Key, j.URL, false)
	p, err := r.fetcher.Fetch(ctx, req)
	status := 0
	var header http.Header
	var size int64
	if p != nil {
		status, header, size = p.Status, p.Header, p.TransferSize
	}
	a := answer(status, header, r.now().Sub(w.started), err)
	r.observe(j, a)
	r.pageAnswered(ctx, j, w, a, status, size, err)
	if err != nil {
		r.fetchFailed(ctx, j, err, a.Failure, true)
		return
	}
	if r.maybeRetry(ctx, j, a.Failure) {
		return
	}
	r.stats.page(p.Status, p.TransferSize)

	page := &Page{Page: p, Meta: j.Meta, run: r, item: &j.Item}
	if r.revisit != nil {
		r.revisitedPage(j, page)
	}
	// Revisits compare what the site sent; handlers and extractors get
	// what the browser built of it.
	page.Page, page.Render = r.renderPage(ctx, j, p)
	if ctx.Err() != nil {
		r.requeue(ctx, j, time.Time{}) // stopping mid-render: not done
		return
	}
	var follow []frontier.Item
	if p.Redirect != nil {
		follow = r.redirectTarget(ctx, j, p)
	} else if p.Status >= 200 && p.Status < 300 {
		page.Links, follow = r.extract(ctx, j, page.Page)
		follow = r.filter(ctx, follow, p.URL)
	}
	r.done(ctx, j, func() {
		for _, f := range r.hooks().onPage {
			r.safely(ctx, j.URL, func() { f(ctx, page) })
		}
		r.runHTML(ctx, page)
		for _, f := range r.hooks().onScraped {
			r.safely(ctx, j.URL, func() { f(ctx, page) })
		}
	}, follow)
}

// fetchFailed ends j after its fetch failed with err, classified f: the
// crawl stops if its recording failed; the item goes back if the crawl is
// stopping; a forbidden address is a skip; otherwise it is tried again
// (when retry and tries remain) or reported under f's kind.
func (r *crawl) fetchFailed(ctx context.Context, j *lease, err error, f ratelimit.Failure, retry bool) {
	switch {
	case errors.Is(err, fetch.ErrRecord):
		r.fail(fmt.Errorf("crawler: recording %s: %w", j.URL, err))
		r.requeue(ctx, j, time.Time{})
	case ctx.Err() != nil:
		r.requeue(ctx, j, time.Time{})
	case f == ratelimit.FailureForbidden:
		r.forbidden(ctx, j, err)
	case retry && r.maybeRetry(ctx, j, f):
	default:
		r.keepRevisiting(j)
		r.done(ctx, j, func() { r.failed(ctx, j.URL, failureKind(f), err) }, nil)
	}
}

// redirectTarget returns the item to schedule for a redirect's target, as
// a new URL, so it passes canonicalisation, dedup, scope and robots.txt
// like any other; the target carries the chain that led to it, so
// -max-redirects and loop detection hold across hops, and it stands for
// the item it came from (kind, depth, sitemap origin). It returns none if
// the redirect cannot be followed, reporting why.
func (r *crawl) redirectTarget(ctx context.Context, it *lease, p *fetch.Page) []frontier.Item {
	next, err := p.RedirectRequest(r.cfg.maxRedirects)
	if err != nil {
		r.failed(ctx, it.URL, FailedRedirect, err)
		return nil
	}
	target := frontier.Item{
		URL: next.URL, Depth: it.Depth, Referrer: it.Referrer, Kind: it.Kind,
		SitemapDepth: it.SitemapDepth, FromSitemap: it.FromSitemap, Redirects: next.RedirectChain,
	}
	if isSeed(&it.Item) {
		// http://example.com → https://www.example.com/: the target is
		// the site the seed names, and its links are in scope.
		if err := r.fr.AddScope(ctx, next.URL); err != nil {
			r.reportSkip(ctx, it.URL, SkippedInvalid, fmt.Errorf("redirect target: %w", err))
			return nil
		}
	}
	return []frontier.Item{target}
}

// isSeed reports whether it is a seed or a redirect target of one: a page
// at depth 0 that no page or sitemap led to.
func isSeed(it *frontier.Item) bool {
	return it.Kind == frontier.KindPage && it.Depth == 0 && it.Referrer == "" && !it.FromSitemap
}

// extract runs the extractors on p and returns the links they found, and
// those to schedule (at most WithMaxLinks of them; none without
// WithFollowLinks), for done.
func (r *crawl) extract(ctx context.Context, j *lease, p *fetch.Page) ([]Link, []frontier.Item) {
	d := p.Directives()
	if d.Noindex {
		r.stats.update(func(s *Stats) { s.Noindex++ })
	}
	if d.Nofollow && r.cfg.respectNofollow {
		r.stats.update(func(s *Stats) { s.Nofollow++ })
		return nil, nil
	}
	links, dropped, err := r.reg.ExtractLimited(ctx, p)
	if dropped > 0 {
		r.stats.update(func(s *Stats) { s.SkippedLinks[SkippedMaxLinks] += int64(dropped) })
	}
	if err != nil {
		kind := FailedExtract
		if errors.Is(err, fetch.ErrExtractorPanic) {
			kind = FailedExtractorPanic
		}
		r.failed(ctx, j.URL, kind, fmt.Errorf("extracting links: %w", err))
	}
	kept := links[:0]
	items := make([]frontier.Item, 0, len(links))
	for _, l := range links {
		if l.Nofollow {
			continue
		}
		kept = append(kept, l)
		items = append(items, j.Child(l.URL))
	}
	if !r.cfg.follow {
		items = nil
	}
	return kept, items
}

// add runs the filters and schedules it, counting a refusal. A Store
// failure ends the crawl.
func (r *crawl) add(ctx context.Context, it frontier.Item, from *url.URL, filter bool) error {
	errs := r.addAll(ctx, []frontier.Item{it}, from, filter)
	if len(errs) == 0 {
		return nil // filtered out
	}
	return errs[0]
}

// addAll runs the filters on items and schedules those they let through in
// one Store call, counting refusals. It returns the frontier's answer for
// each item scheduled (not for those filtered out).
func (r *crawl) addAll(ctx context.Context, items []frontier.Item, from *url.URL, filter bool) []error {
	if filter {
		items = r.filter(ctx, items, from)
	}
	if len(items) == 0 {
		return nil
	}
	r.markDisallowed(items)
	errs, err := r.fr.AddAll(ctx, items)
	errs = r.scheduled(items, errs, err)
	r.disallowedFound(ctx, items, errs)
	return errs
}

// filter returns the items (from the page at from) that every filter lets
// through, reusing items' array.
func (r *crawl) filter(ctx context.Context, items []frontier.Item, from *url.URL) []frontier.Item {
	filters := r.hooks().filters
	if len(filters) == 0 {
		return items
	}
	kept := items[:0]
	for _, it := range items {
		if r.passesFilters(ctx, filters, it, from) {
			kept = append(kept, it)
		}
	}
	return kept
}

// scheduled counts the frontier's answers (errs, or err for all when errs
// is nil) for items it was asked to schedule, and returns one per item; a
// Store failure ends the crawl.
func (r *crawl) scheduled(items []frontier.Item, errs []error, err error) []error {
	if errs == nil && err != nil {
		if errors.Is(err, frontier.ErrStore) {
			r.fail(fmt.Errorf("crawler: scheduling %d URLs: %w", len(items), err))
		}
		r.stats.update(func(s *Stats) { s.SkippedLinks[skipReason(err)] += int64(len(items)) })
		errs = make([]error, len(items))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	for _, e := range errs {
		if e != nil && !errors.Is(e, frontier.ErrReported) { // counted when reported
			r.stats.skipped(skipReason(e))
		}
	}
	return errs
}

// passesFilters reports whether every one of filters lets it through; a
// filter that panics keeps it out.
func (r *crawl) passesFilters(ctx context.Context, filters []func(u *url.URL, from *url.URL, depth int) bool, it frontier.Item, from *url.URL) bool {
	u, err := url.Parse(it.URL)
	if err != nil {
		r.stats.skipped(SkippedInvalid)
		return false
	}
	for _, f := range filters {
		ok := false
		r.safely(ctx, it.URL, func() { ok = f(u, from, it.Depth) })
		if !ok {
			r.stats.skipped(SkippedFilter)
			return false
		}
	}
	return true
}

// safely runs f, turning a panic into a counted, reported error.
func (r *crawl) safely(ctx context.Context, url string, f func()) {
	defer func() {
		if v := recover(); v != nil {
			r.stats.failed(FailedHandlerPanic)
			err := &Error{Kind: FailedHandlerPanic, Err: fmt.Errorf("crawler: handler panicked: %v\n%s", v, debug.Stack())}
			r.log.Error("crawler: handler panicked", "url", url, "panic", fmt.Sprint(v))
			u := hookURL(url)
			for _, h := range r.hooks().onError {
				func() {
					defer func() { recover() }() // an OnError that panics too is not called again
					h(ctx, u, err)
				}()
			}
		}
	}()
	f()
}

// failed counts err under kind in Stats.Errors and reports it to OnError
// as an *Error of that kind.
func (r *crawl) failed(ctx context.Context, url string, kind ErrorKind, err error) {
	r.stats.failed(kind)
	r.reportError(ctx, url, &Error{Kind: kind, Err: err})
}

// reportSkip counts url skipped for reason in Stats.SkippedLinks and reports it,
// with err, to OnError as an *Error whose Skipped is reason.
func (r *crawl) reportSkip(ctx context.Context, url string, reason SkipReason, err error) {
	r.stats.skipped(reason)
	r.reportError(ctx, url, &Error{Skipped: reason, Err: err})
}

func (r *crawl) reportError(ctx context.Context, url string, err error) {
	r.log.Debug("crawler: error", "url", url, "err", err)
	handlers := r.hooks().onError
	if len(handlers) == 0 {
		return
	}
	u := hookURL(url)
	for _, h := range handlers {
		r.safely(ctx, url, func() { h(ctx, u, err) })
	}
}

// hookURL is raw as hooks receive it: parsed, or whole in Opaque when it
// does not parse.
func hookURL(raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		return &url.URL{Opaque: raw}
	}
	return u
}
