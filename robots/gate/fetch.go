package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/heedcrawl/heed/robots"
)

// fetchRecovering is fetch, with a panic turned into a failed attempt: the
// single flight must end whatever happens, or every caller waiting for the
// authority would wait forever. A panic is a bug in Get, the Pacer or a key
// function, not news about the site; treating robots.txt as unreachable
// keeps the site's pages out until the next retry, which is the cautious
// reading, and the panic is logged with its stack for the bug report.
func (g *Gate) fetchRecovering(ctx context.Context, auth string, prev *Entry, p Pacer) (e *Entry, err error) {
	defer func() {
		if p := recover(); p != nil {
			g.log.Error("robots: robots.txt fetch panicked", "authority", auth, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			e = g.failed(auth, auth+"/robots.txt", prev, 0, fmt.Errorf("%w: %v", ErrFetchPanicked, p), time.Time{})
			err = nil
		}
	}()
	return g.fetch(ctx, auth, prev, p)
}

// fetch fetches auth's robots.txt, following redirects, each request paced
// by p (nil: not paced), and turns the result into an entry; prev is the
// expired entry, if any, whose copy and failure history carry over. It
// returns an error only when ctx ended or the Pacer refused to let a
// request start, in which case nothing is learnt about the site and nothing
// must be cached.
func (g *Gate) fetch(ctx context.Context, auth string, prev *Entry, p Pacer) (*Entry, error) {
	robotsURL := auth + "/robots.txt"
	u, err := url.Parse(robotsURL)
	if err != nil { // a Host function returned something no URL can hold
		return nil, fmt.Errorf("robots: %s: %w", robotsURL, err)
	}

	var (
		resp  *Response
		ready time.Time // when the hosts asked may be asked again
	)
	for hop := 0; ; hop++ {
		var at time.Time
		resp, at, err = g.request(ctx, u, p)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("robots: fetch %s: %w", robotsURL, ctx.Err())
		}
		var paced *pacerError
		if errors.As(err, &paced) {
			if hop == 0 {
				return nil, &unaskedError{paced.err}
			}
			return nil, paced.err
		}
		if at.After(ready) {
			ready = at
		}
		if err != nil || !isRedirect(resp.Status) {
			break
		}
		next, ok := location(u, resp.Header)
		if !ok {
			break // a 3xx that cannot be followed: as good as none
		}
		if next.Scheme != "http" && next.Scheme != "https" {
			err = fmt.Errorf("%w: %s", ErrRedirectScheme, next.Redacted())
			break
		}
		if hop == MaxRedirects {
			err = fmt.Errorf("%w: %d", ErrTooManyRedirects, hop)
			break
		}
		u = next
	}
	status := 0
	var header http.Header
	if resp != nil {
		status, header = resp.Status, resp.Header
	}

	now := g.clock.Now()
	var e *Entry
	switch {
	case errors.Is(err, ErrTooManyRedirects) || errors.Is(err, ErrRedirectScheme):
		e = g.newEntry(auth, robotsURL, OutcomeUnavailable, robots.AllowAll(), 0, now)
		e.Err = err
		e.Expires = now.Add(g.ttl)
	case err != nil:
		e = g.failed(auth, robotsURL, prev, status, err, ready)
	case status >= 200 && status <= 299:
		body := bodyToParse(resp)
		e = g.newEntry(auth, robotsURL, OutcomeOK, robots.Parse(body), len(body), now)
		if g.keeper != nil {
			e.body = body // to save; a stale copy keeps it too
		}
		e.Expires = now.Add(g.cacheTTL(header))
	case status >= 300 && status <= 499 && status != http.StatusTooManyRequests:
		// A 3xx not followed (no usable Location, 304, 300) is as good
		// as a missing file, as in Google's crawler.
		e = g.newEntry(auth, robotsURL, OutcomeUnavailable, robots.AllowAll(), 0, now)
		e.Expires = now.Add(g.cacheTTL(header))
	default: // 429, 5xx, and statuses no server should send
		e = g.failed(auth, robotsURL, prev, status, nil, ready)
	}
	e.Status = status
	g.log.Debug("robots: fetched", "url", robotsURL, "outcome", e.Outcome.String(), "status", status, "expires", e.Expires)
	return e, nil
}

// pacerError marks a Pacer's refusal to let a request start: the
// caller's business (its context, its pacer), not the site's.
type pacerError struct{ err error }

func (e *pacerError) Error() string { return e.err.Error() }

// unaskedError is a Pacer's refusal of a fetch's first request: the site
// was not asked at all.
type unaskedError struct{ err error }

func (e *unaskedError) Error() string { return e.err.Error() }
func (e *unaskedError) Unwrap() error { return e.err }

// request makes one request for u, under u's own pacer key: it waits for
// p (nil: no wait), then gives Get Timeout, and releases the slot with the
// answer, whatever it is. ready is when p says the key may be asked again,
// if it can say.
func (g *Gate) request(ctx context.Context, u *url.URL, p Pacer) (resp *Response, ready time.Time, err error) {
	key := g.key(u)
	var release Release
	if p != nil {
		if release, err = p.Acquire(ctx, key); err != nil {
			return nil, time.Time{}, &pacerError{fmt.Errorf("robots: fetch %s: pacer: %w", u, err)}
		}
	}
	start := g.clock.Now()
	rctx, cancel := context.WithTimeout(ctx, g.timeout)
	resp, err = g.get(rctx, u.String())
	cancel()
	if err == nil && resp == nil {
		err = fmt.Errorf("robots: fetch %s: Get returned no response and no error", u)
	}
	if release != nil {
		status, header, rerr := 0, http.Header(nil), err
		if resp != nil {
			status, header = resp.Status, resp.Header
		}
		if ctx.Err() != nil {
			rerr = context.Canceled // abandoned: our doing, not the site's
		}
		ready = release(status, header, g.clock.Now().Sub(start), rerr)
	}
	return resp, ready, err
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// location resolves a redirect's Location against the URL it answered.
// It reports false when there is none to follow: missing, unparseable, or
// an http(s) URL without a host.
func location(base *url.URL, header http.Header) (*url.URL, bool) {
	loc := strings.TrimSpace(header.Get("Location"))
	if loc == "" {
		return nil, false
	}
	next, err := base.Parse(loc)
	if err != nil {
		return nil, false
	}
	next.Scheme = strings.ToLower(next.Scheme)
	if (next.Scheme == "http" || next.Scheme == "https") && next.Host == "" {
		return nil, false
	}
	next.Fragment, next.RawFragment = "", ""
	return next, true
}

// bodyToParse returns the text robots.Parse should read from a 2xx
// response: at most robots.MaxSize+1 bytes, without a last line that was
// cut where Parse cannot see it. Decoding is Get's: the body is UTF-8
// already.
func bodyToParse(resp *Response) []byte {
	body := resp.Body
	if len(body) > robots.MaxSize+1 {
		return body[:robots.MaxSize+1]
	}
	if resp.Truncated && len(body) <= robots.MaxSize {
		end := bytes.LastIndexAny(body, "\r\n")
		body = body[:end+1]
	}
	return body
}

// entryOverhead approximates what an entry holds besides its rules:
// the Entry, its strings, its cache slots.
const entryOverhead = 512

func (g *Gate) newEntry(auth, robotsURL string, o Outcome, r *robots.Robots, bodySize int, now time.Time) *Entry {
	e := &Entry{
		Authority: auth,
		URL:       robotsURL,
		Outcome:   o,
		FetchedAt: now,
		CheckedAt: now,
		size:      entryOverhead + int64(bodySize),
	}
	g.setRobots(e, r)
	return e
}

func (g *Gate) setRobots(e *Entry, r *robots.Robots) {
	e.Robots = r
	e.Group = r.Group(g.agent)
	e.CrawlDelay, e.HasCrawlDelay = r.CrawlDelay(g.agent)
	e.Sitemaps = r.Sitemaps()
}

// failed builds the entry for an unreachable robots.txt: a stale copy if
// there is one, else disallow-all, or allow-all once it has been
// unreachable for AssumeAllowAfter; in every case due again after the
// back-off, or when the Pacer lets the host be asked again (ready, which
// holds any Retry-After), whichever is later, within RetryMax.
func (g *Gate) failed(auth, robotsURL string, prev *Entry, status int, err error, ready time.Time) *Entry {
	now := g.clock.Now()
	e := &Entry{
		Authority:        auth,
		URL:              robotsURL,
		Status:           status,
		Err:              err,
		CheckedAt:        now,
		Failures:         1,
		UnreachableSince: now,
		size:             entryOverhead,
	}
	if prev != nil && prev.Failures > 0 {
		e.Failures = prev.Failures + 1
		e.UnreachableSince = prev.UnreachableSince
	}
	wait := g.retryMin
	for i := 1; i < e.Failures && wait < g.retryMax; i++ {
		if wait > g.retryMax/2 {
			wait = g.retryMax
			break
		}
		wait *= 2
	}
	wait = min(wait, g.retryMax)
	stale := prev != nil && (prev.Outcome == OutcomeOK || prev.Outcome == OutcomeUnavailable || prev.Outcome == OutcomeStale)
	if rest := ready.Sub(now); rest > 0 {
		if stale {
			// The host rests until ready; then its pages go on under the
			// stale copy, and robots.txt is asked again only a back-off
			// later. Were it due when the host is, every slot the host
			// grants would go to robots.txt, and a site answering it with
			// 429 would never have a page fetched, nor let the crawl end.
			// (The pause itself is the Pacer's to bound; RetryMax caps
			// only the gate's own back-off.)
			wait += rest
		} else if rest > wait {
			wait = min(rest, g.retryMax)
		}
	}
	e.Expires = now.Add(wait)

	switch {
	case stale:
		// A 404 seen before counts as a copy too: the last thing the site
		// said was that it has no rules.
		e.Outcome = OutcomeStale
		e.FetchedAt = prev.FetchedAt
		e.size = prev.size
		e.body = prev.body
		g.setRobots(e, prev.Robots)
	case now.Sub(e.UnreachableSince) >= g.assumeAllow:
		e.Outcome = OutcomeAssumedAllow
		e.FetchedAt = now
		g.setRobots(e, robots.AllowAll())
	default:
		e.Outcome = OutcomeUnreachable
		e.FetchedAt = now
		g.setRobots(e, robots.DisallowAll())
	}
	g.log.Info("robots: robots.txt unreachable", "url", robotsURL, "status", status, "err", err,
		"outcome", e.Outcome.String(), "failures", e.Failures, "retry_at", e.Expires)
	return e
}

// cacheTTL returns how long a response may be used: TTL, shortened by
// Cache-Control max-age, no-cache or no-store, but not below MinTTL.
func (g *Gate) cacheTTL(header http.Header) time.Duration {
	ttl := g.ttl
	for _, v := range header.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			name, arg, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				ttl = 0
			case "max-age", "s-maxage":
				n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(arg), `"`), 10, 64)
				if err == nil && n >= 0 && time.Duration(n) < ttl/time.Second {
					ttl = time.Duration(n) * time.Second
				}
			}
		}
	}
	return max(ttl, g.minTTL)
}
