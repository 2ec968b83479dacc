package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// fetch fetches auth's robots.txt and turns the result into an entry; prev
// is the expired entry, if any, whose copy and failure history carry over.
// It returns an error only when ctx ended, in which case nothing is learnt
// about the site and nothing must be cached.
func (g *Gate) fetch(ctx context.Context, auth string, prev *Entry) (*Entry, error) {
	robotsURL := auth + "/robots.txt"
	u, err := url.Parse(robotsURL)
	if err != nil { // Authority built it; cannot happen
		return nil, fmt.Errorf("robots: %s: %w", robotsURL, err)
	}

	key := u.Host
	if g.key != nil {
		key = g.key(u)
	}
	start := g.clock.Now()
	// held is the pacer key whose slot this fetch holds: a redirect hop is
	// a request like any other, paced under its own host's key after the
	// previous hop has been reported and released.
	held := ""
	if g.pacer != nil {
		if err := g.pacer.Wait(ctx, key); err != nil {
			return nil, fmt.Errorf("robots: fetch %s: pacer: %w", robotsURL, err)
		}
		held = key
		defer func() {
			if held != "" {
				g.pacer.Done(held)
			}
		}()
		ctx = context.WithValue(ctx, gateHopKey{}, func(next *http.Request) error {
			if g.observer != nil && next.Response != nil {
				g.observer.Observe(held, next.Response.StatusCode, next.Response.Header, g.clock.Now().Sub(start), nil)
			}
			g.pacer.Done(held)
			held = ""
			nextKey := next.URL.Host
			if g.key != nil {
				nextKey = g.key(next.URL)
			}
			if err := g.pacer.Wait(next.Context(), nextKey); err != nil {
				return err
			}
			held, start = nextKey, g.clock.Now()
			return nil
		})
	}

	status, header, body, _, err := g.get(ctx, robotsURL)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("robots: fetch %s: %w", robotsURL, ctx.Err())
	}
	// The pacer learns how the last host asked answered, unless the
	// redirects ran out (no request was made for the refused hop).
	if g.observer != nil && held != "" &&
		!errors.Is(err, ErrTooManyRedirects) && !errors.Is(err, ErrRedirectScheme) {
		g.observer.Observe(held, status, header, g.clock.Now().Sub(start), err)
	}

	now := g.clock.Now()
	var e *Entry
	switch {
	case errors.Is(err, ErrTooManyRedirects) || errors.Is(err, ErrRedirectScheme):
		e = g.newEntry(auth, robotsURL, OutcomeUnavailable, AllowAll(), now)
		e.Err = err
		e.Expires = now.Add(g.ttl)
	case err != nil:
		e = g.failed(auth, robotsURL, prev, status, header, err)
	case status >= 200 && status <= 299:
		e = g.newEntry(auth, robotsURL, OutcomeOK, Parse(body), now)
		e.Expires = now.Add(g.cacheTTL(header))
	case status >= 300 && status <= 499 && status != http.StatusTooManyRequests:
		// A 3xx the client did not follow (no Location, 304, 300) is as
		// good as a missing file, as in Google's crawler.
		e = g.newEntry(auth, robotsURL, OutcomeUnavailable, AllowAll(), now)
		e.Expires = now.Add(g.cacheTTL(header))
	default: // 429, 5xx, and statuses no server should send
		e = g.failed(auth, robotsURL, prev, status, header, nil)
	}
	e.Status = status
	g.log.Debug("robots: fetched", "url", robotsURL, "outcome", e.Outcome.String(), "status", status, "expires", e.Expires)
	return e, nil
}

// get requests robotsURL and reads at most MaxSize+1 bytes of a 2xx body,
// so that Parse can tell a line cut by the limit from a complete one. A
// read error is a fetch error: a robots.txt that breaks off is unreachable.
// last is the URL of the last request made, after redirects, if known.
func (g *Gate) get(ctx context.Context, robotsURL string) (status int, header http.Header, body []byte, last *url.URL, err error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, robotsURL, nil)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	req.Header.Set("User-Agent", g.userAgent)
	resp, err := g.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			last, _ = url.Parse(ue.URL)
		}
		return 0, nil, nil, last, err
	}
	defer resp.Body.Close() // unread bytes past the limit are never downloaded
	last = resp.Request.URL
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		body, err = io.ReadAll(io.LimitReader(resp.Body, MaxSize+1))
		if err != nil {
			return resp.StatusCode, resp.Header, nil, last, fmt.Errorf("robots: read %s: %w", robotsURL, err)
		}
	}
	return resp.StatusCode, resp.Header, body, last, nil
}

func (g *Gate) newEntry(auth, robotsURL string, o Outcome, r *Robots, now time.Time) *Entry {
	e := &Entry{
		Authority: auth,
		URL:       robotsURL,
		Outcome:   o,
		FetchedAt: now,
		CheckedAt: now,
	}
	g.setRobots(e, r)
	return e
}

func (g *Gate) setRobots(e *Entry, r *Robots) {
	e.Robots = r
	e.Group = r.Group(g.agent)
	e.CrawlDelay, e.HasCrawlDelay = r.CrawlDelay(g.agent)
	e.Sitemaps = r.Sitemaps()
}

// failed builds the entry for an unreachable robots.txt: a stale copy if
// there is one, else disallow-all, or allow-all once it has been
// unreachable for AssumeAllowAfter; in every case due again after the
// back-off or Retry-After, whichever is longer.
func (g *Gate) failed(auth, robotsURL string, prev *Entry, status int, header http.Header, err error) *Entry {
	now := g.clock.Now()
	e := &Entry{
		Authority:        auth,
		URL:              robotsURL,
		Status:           status,
		Err:              err,
		CheckedAt:        now,
		Failures:         1,
		UnreachableSince: now,
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
	if ra, ok := gateRetryAfter(header.Get("Retry-After"), now); ok {
		wait = max(wait, min(ra, g.retryMax))
	}
	e.Expires = now.Add(wait)

	switch {
	case prev != nil && (prev.Outcome == OutcomeOK || prev.Outcome == OutcomeUnavailable || prev.Outcome == OutcomeStale):
		// A 404 seen before counts as a copy too: the last thing the site
		// said was that it has no rules.
		e.Outcome = OutcomeStale
		e.FetchedAt = prev.FetchedAt
		g.setRobots(e, prev.Robots)
	case now.Sub(e.UnreachableSince) >= g.assumeAllow:
		e.Outcome = OutcomeAssumedAllow
		e.FetchedAt = now
		g.setRobots(e, AllowAll())
	default:
		e.Outcome = OutcomeUnreachable
		e.FetchedAt = now
		g.setRobots(e, DisallowAll())
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

// gateRetryAfter parses a Retry-After value, delay-seconds or an HTTP date,
// into the delay from now (RFC 9110 §10.2.3).
func gateRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return time.Duration(1<<32-1) * time.Second, true
			}
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
