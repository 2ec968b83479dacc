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
	"github.com/heedcrawl/heed/robots"
)

// work is one worker's loop: take a ready item, process it, repeat until
// the frontier is exhausted or closed, or Run's context ends. Run closes
// the frontier when its context ends, but from another goroutine: checking
// the context here keeps a worker that finishes a page just after
// cancellation from taking one more.
func (r *run) work(ctx context.Context) {
	for r.stop.Err() == nil {
		r.pool.idle.Add(1)
		it, err := r.fr.Next(ctx)
		if r.pool.idle.Add(-1) == 0 && err == nil {
			r.pool.grow() // no worker is left waiting for the next item
		}
		if err != nil {
			if !errors.Is(err, frontier.ErrExhausted) && !errors.Is(err, frontier.ErrClosed) && ctx.Err() == nil {
				r.fail(fmt.Errorf("crawler: frontier: %w", err))
			}
			return
		}
		if r.stop.Err() != nil {
			r.deferItem(ctx, it, r.now()) // not started: leave it queued
			return
		}
		r.process(ctx, it)
	}
}

// fail ends the crawl with err, the first failure that leaves it unable to
// go on (the Store failing): Run stops handing out work as on cancellation
// and returns err.
func (r *run) fail(err error) {
	r.failOnce.Do(func() {
		r.failure = err
		r.log.Error("crawler: stopping", "err", err)
		r.fr.Close()
	})
}

// release hands it back to the frontier as done.
func (r *run) release(it *frontier.Item) {
	if err := r.fr.Done(it); err != nil {
		r.frontierError(it, err)
	}
}

// deferItem hands it back to the frontier unfetched, to be handed out again
// at until at the earliest, with what it has been through.
func (r *run) deferItem(ctx context.Context, it *frontier.Item, until time.Time) {
	err := r.fr.Defer(it, until)
	switch {
	case err == nil:
	case errors.Is(err, frontier.ErrGivenUp):
		r.givenUp(ctx, it.URL, it.Key)
	default:
		r.frontierError(it, err)
	}
}

func (r *run) frontierError(it *frontier.Item, err error) {
	if errors.Is(err, frontier.ErrStore) {
		r.fail(fmt.Errorf("crawler: releasing %s: %w", it.URL, err))
		return
	}
	r.log.Error("crawler: releasing item", "url", it.URL, "err", err) // a bug, not the site's doing
}

// process takes one item through the robots gate, the limiter, the fetcher
// and the extractors.
func (r *run) process(ctx context.Context, it *frontier.Item) {
	u, err := url.Parse(it.URL)
	if err != nil { // the frontier hands out only canonical URLs
		r.stats.errorKind("other")
		r.reportError(ctx, it.URL, fmt.Errorf("canonical URL does not parse: %w", err))
		r.release(it)
		return
	}
	if it.Kind == frontier.KindSitemap && r.fr.LimitReached() {
		// Every page it could list would be refused: the crawl ends with
		// the pages already scheduled.
		r.stats.skipped("max-pages")
		r.release(it)
		return
	}
	if !r.robotsAllow(ctx, it, u) {
		return
	}
	// Waits for the host end with Run's context: after cancellation no
	// new request starts, even during the grace period.
	if err := r.lim.Wait(r.stop, it.Key); err != nil {
		r.deferItem(ctx, it, r.now())
		return
	}
	if r.stop.Err() != nil {
		r.lim.Done(it.Key)
		r.deferItem(ctx, it, r.now())
		return
	}
	if it.Kind == frontier.KindSitemap {
		r.fetchSitemap(ctx, it, u)
	} else {
		r.fetchPage(ctx, it, u)
	}
}

// robotsAllow consults the gate. It returns true when the item may be
// fetched now; otherwise it has released or deferred the item itself.
func (r *run) robotsAllow(ctx context.Context, it *frontier.Item, u *url.URL) bool {
	v, err := r.gate.Check(r.stop, u)
	if err != nil {
		if r.stop.Err() != nil {
			r.deferItem(ctx, it, r.now())
			return false
		}
		r.stats.errorKind("other")
		r.reportError(ctx, it.URL, fmt.Errorf("robots gate: %w", err))
		r.release(it)
		return false
	}
	e := v.Entry
	if e != nil && e.HasCrawlDelay {
		r.lim.SetCrawlDelay(it.Key, e.CrawlDelay)
	}
	if v.Fetched {
		r.robotsFetched(ctx, u, e)
	}
	if v.Allowed && (v.Fetched || v.Waited) {
		// This worker's slot, or another's for the same host, went to
		// robots.txt; unless the host may be fetched again at once, the
		// page waits its turn in the frontier rather than in the limiter.
		if at := r.lim.ReadyAt(it.Key); at.After(r.now()) {
			r.deferItem(ctx, it, at)
			return false
		}
	}
	if v.Allowed {
		it.BlockedSince = time.Time{}
		return true
	}
	if e != nil && errors.Is(e.Err, fetch.ErrForbiddenAddress) {
		r.forbidden(ctx, it, e.Err)
		return false
	}
	if !v.RetryAt.IsZero() {
		// robots.txt is unreachable: complete disallow for now. Wait for
		// the gate's retry if the user allows that much patience.
		if it.BlockedSince.IsZero() {
			it.BlockedSince = r.now()
		}
		if r.cfg.robotsWait > 0 && !v.RetryAt.After(it.BlockedSince.Add(r.cfg.robotsWait)) {
			r.deferItem(ctx, it, v.RetryAt)
			return false
		}
		r.stats.errorKind("robots-unavailable")
		r.disallowed(ctx, it, u, DisallowedUnavailable)
		return false
	}
	r.disallowed(ctx, it, u, DisallowedByRules)
	return false
}

func (r *run) disallowed(ctx context.Context, it *frontier.Item, u *url.URL, why DisallowReason) {
	r.stats.update(func(s *Stats) { s.Disallowed++ })
	r.log.Debug("crawler: disallowed by robots.txt", "url", it.URL, "reason", string(why))
	for _, f := range r.onDisallowed {
		r.safely(ctx, it.URL, func() { f(ctx, u, why) })
	}
	r.release(it)
}

// forbidden skips it: its host is or resolves to an address the crawl may
// not reach (see WithAllowPrivate).
func (r *run) forbidden(ctx context.Context, it *frontier.Item, err error) {
	r.stats.skipped("private-address")
	r.reportError(ctx, it.URL, err)
	r.release(it)
}

// robotsFetched records a robots.txt fetch and schedules the sitemaps it
// names. The gate reports a fetch to the one caller that made it, so each
// fetch is counted once.
func (r *run) robotsFetched(ctx context.Context, u *url.URL, e *robots.Entry) {
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
	if !r.cfg.sitemaps || e.Outcome == robots.OutcomeUnreachable {
		return
	}
	// A robots.txt fetched again after its TTL names the same sitemaps:
	// the frontier's seen-set refuses them, so they are read once.
	base := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}
	robotsURL := base.JoinPath("robots.txt").String()
	named := e.Sitemaps
	for _, sm := range fetch.SitemapURLs(base, named, true) {
		it := frontier.Item{URL: sm, Kind: frontier.KindSitemap}
		if len(named) > 0 {
			it.Referrer = robotsURL // cross-submission: the robots.txt named it
		}
		r.add(ctx, it, nil, false)
	}
}

// retryable reports whether a failed fetch is worth another try.
func retryable(status int, err error) bool {
	if err != nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, fetch.ErrInvalidURL) &&
			!errors.Is(err, fetch.ErrContentEncoding) && !errors.Is(err, fetch.ErrForbiddenAddress)
	}
	return status == http.StatusTooManyRequests || status >= 500
}

// maybeRetry defers it for another try after its host's back-off when the
// failure is retryable, tries remain and the host is not given up. It
// reports whether it did.
func (r *run) maybeRetry(ctx context.Context, it *frontier.Item, status int, err error) bool {
	if !retryable(status, err) {
		return false
	}
	if r.hostFailing(ctx, it.Key) {
		return false
	}
	it.Retries++
	if it.Retries > r.cfg.pageRetries {
		return false
	}
	r.stats.update(func(s *Stats) { s.Retries++ })
	r.deferItem(ctx, it, r.lim.ReadyAt(it.Key))
	return true
}

// hostFailing gives key up once its requests have failed
// WithHostFailures times in a row, reporting every URL still queued for
// it. It reports whether key is given up.
func (r *run) hostFailing(ctx context.Context, key string) bool {
	if r.cfg.hostFailures == 0 {
		return false
	}
	n := r.lim.Status(key).Failures
	if n < r.cfg.hostFailures {
		return false
	}
	r.log.Info("crawler: giving up host", "key", key, "consecutive_failures", n)
	err := r.fr.GiveUp(key, func(dropped frontier.Item) { r.givenUp(ctx, dropped.URL, key) })
	if err != nil {
		r.fail(fmt.Errorf("crawler: giving up %s: %w", key, err))
	}
	return true
}

// givenUp reports a URL dropped because its host was given up.
func (r *run) givenUp(ctx context.Context, url, key string) {
	r.stats.errorKind("host-given-up")
	r.reportError(ctx, url, fmt.Errorf("host %s failed %d times in a row: %w", key, r.cfg.hostFailures, frontier.ErrGivenUp))
}

func (r *run) fetchPage(ctx context.Context, it *frontier.Item, u *url.URL) {
	req := fetch.Request{URL: it.URL, Depth: it.Depth, Referrer: it.Referrer, RedirectChain: it.Redirects}
	start := r.now()
	p, err := r.fetcher.Fetch(ctx, req)
	status := 0
	var header http.Header
	if p != nil {
		status, header = p.Status, p.Header
	}
	r.lim.Observe(it.Key, status, header, r.now().Sub(start), err)
	r.lim.Done(it.Key)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			r.deferItem(ctx, it, r.now())
		case errors.Is(err, fetch.ErrForbiddenAddress):
			r.forbidden(ctx, it, err)
		case r.maybeRetry(ctx, it, 0, err):
		default:
			r.stats.errorKind(errorKindOf(err))
			r.reportError(ctx, it.URL, err)
			r.release(it)
		}
		return
	}
	if r.maybeRetry(ctx, it, status, nil) {
		return
	}
	r.stats.page(p.Status, p.TransferSize)

	page := &Page{Page: p}
	if p.Redirect != nil {
		r.followRedirect(ctx, it, p)
	} else if p.Status >= 200 && p.Status < 300 {
		page.Links = r.extract(ctx, it, p)
	}
	for _, f := range r.onPage {
		r.safely(ctx, it.URL, func() { f(ctx, page) })
	}
	r.release(it)
}

// followRedirect schedules a redirect's target as a new URL, so it passes
// canonicalisation, dedup, scope and robots.txt like any other; the target
// carries the chain that led to it, so -max-redirects and loop detection
// hold across hops, and it stands for the item it came from (kind, depth,
// sitemap origin).
func (r *run) followRedirect(ctx context.Context, it *frontier.Item, p *fetch.Page) {
	next, err := p.RedirectRequest(r.cfg.maxRedirects)
	if err != nil {
		r.stats.errorKind("redirect")
		r.reportError(ctx, it.URL, err)
		return
	}
	target := frontier.Item{
		URL: next.URL, Depth: it.Depth, Referrer: it.Referrer, Kind: it.Kind,
		SitemapDepth: it.SitemapDepth, FromSitemap: it.FromSitemap, Redirects: next.RedirectChain,
	}
	if isSeed(it) {
		// http://example.com → https://www.example.com/: the target is
		// the site the seed names, and its links are in scope.
		if err := r.fr.AddScope(next.URL); err != nil {
			r.stats.skipped("invalid")
			r.reportError(ctx, it.URL, fmt.Errorf("redirect target: %w", err))
			return
		}
	}
	r.add(ctx, target, p.URL, false)
}

// isSeed reports whether it is a seed or a redirect target of one: a page
// at depth 0 that no page or sitemap led to.
func isSeed(it *frontier.Item) bool {
	return it.Kind == frontier.KindPage && it.Depth == 0 && it.Referrer == "" && !it.FromSitemap
}

// extract runs the extractors on p and schedules the followable links it
// returns, at most WithMaxLinks of them.
func (r *run) extract(ctx context.Context, it *frontier.Item, p *fetch.Page) []Link {
	d := p.Directives()
	if d.Noindex {
		r.stats.update(func(s *Stats) { s.Noindex++ })
	}
	if d.Nofollow && r.cfg.respectNofollw {
		r.stats.update(func(s *Stats) { s.Nofollow++ })
		return nil
	}
	links, err := r.reg.Extract(ctx, p)
	if err != nil {
		kind := "extract"
		if errors.Is(err, fetch.ErrExtractorPanic) {
			kind = "extractor-panic"
		}
		r.stats.errorKind(kind)
		r.reportError(ctx, it.URL, fmt.Errorf("extracting links: %w", err))
	}
	kept := links[:0]
	for _, l := range links {
		if l.Nofollow {
			continue
		}
		if r.cfg.maxLinks > 0 && len(kept) == r.cfg.maxLinks {
			r.stats.update(func(s *Stats) { s.Skipped["max-links"] += int64(len(links) - len(kept)) })
			break
		}
		kept = append(kept, l)
		r.add(ctx, it.Child(l.URL), p.URL, true)
	}
	return kept
}

// add runs the filters and schedules it, counting a refusal. A Store
// failure ends the crawl.
func (r *run) add(ctx context.Context, it frontier.Item, from *url.URL, filter bool) error {
	if filter && len(r.filters) > 0 {
		u, err := url.Parse(it.URL)
		if err != nil {
			r.stats.skipped("invalid")
			return fmt.Errorf("%w: %w", frontier.ErrRelative, err)
		}
		for _, f := range r.filters {
			ok := false // a filter that panics keeps the link out
			r.safely(ctx, it.URL, func() { ok = f(u, from, it.Depth) })
			if !ok {
				r.stats.skipped("filter")
				return nil
			}
		}
	}
	if err := r.fr.Add(ctx, it); err != nil {
		if errors.Is(err, frontier.ErrStore) {
			r.fail(fmt.Errorf("crawler: scheduling %s: %w", it.URL, err))
		}
		r.stats.skipped(skipReason(err))
		return err
	}
	return nil
}

// safely runs f, turning a panic into a counted, reported error.
func (r *run) safely(ctx context.Context, url string, f func()) {
	defer func() {
		if v := recover(); v != nil {
			r.stats.errorKind("handler-panic")
			err := fmt.Errorf("crawler: handler panicked: %v\n%s", v, debug.Stack())
			r.log.Error("crawler: handler panicked", "url", url, "panic", fmt.Sprint(v))
			for _, h := range r.onError {
				func() {
					defer func() { recover() }() // an OnError that panics too is not called again
					h(ctx, url, err)
				}()
			}
		}
	}()
	f()
}

func (r *run) reportError(ctx context.Context, url string, err error) {
	r.log.Debug("crawler: error", "url", url, "err", err)
	for _, h := range r.onError {
		r.safely(ctx, url, func() { h(ctx, url, err) })
	}
}
