package ratelimit

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"time"
)

// Policy decides how long a host must rest: between requests (the user's
// minimum delay, robots.txt Crawl-delay, adaptive pacing), after failures
// (back-off with jitter, decaying on success) and when the site asks
// (Retry-After), every delay capped by MaxDelay. It keeps no state of its
// own: a host's state is a HostState, which the frontier and its
// Store keep — and persist, and share between processes — while Policy reads
// and updates it. The Store's Bucket of each key is the one owner of when a
// host may next be fetched, and Policy the one place that says how long it
// rests.
//
// A worker holding a lease of a host's item uses it like this:
//
//	h := lease.Pace
//	pol.SetCrawlDelay(lease.Key, &h, entry.CrawlDelay, entry.HasCrawlDelay) // from robots.txt
//	status, header, err := get(...) // the request
//	a := Answer{Failure: fetch.Classify(status, err), Header: header, RTT: rtt}
//	rest := pol.Observe(lease.Key, &h, now, a)
//	fr.Done(ctx, lease, frontier.Outcome{Pace: h, Rest: rest})
//
// A Policy is immutable and safe for concurrent use. Create one with
// NewPolicy.
type Policy struct {
	minDelay, maxDelay time.Duration
	maxRetryAfter      time.Duration
	concurrency        int
	jitter             float64
	adaptive           float64
	log                *slog.Logger
}

// NewPolicy returns the Policy of cfg's pacing fields (MinDelay, MaxDelay,
// MaxRetryAfter, Concurrency, Jitter, AdaptiveFactor, Logger), or an error
// wrapping ErrInvalidConfig.
func NewPolicy(cfg Config) (*Policy, error) {
	p := &Policy{
		minDelay:      orDefault(cfg.MinDelay, DefaultMinDelay),
		maxDelay:      orDefault(cfg.MaxDelay, DefaultMaxDelay),
		maxRetryAfter: orDefault(cfg.MaxRetryAfter, DefaultMaxRetryAfter),
		concurrency:   cfg.Concurrency,
		jitter:        cfg.Jitter,
		adaptive:      cfg.AdaptiveFactor,
		log:           cfg.Logger,
	}
	if p.minDelay < 0 {
		p.minDelay = 0
	}
	switch {
	case p.concurrency == 0:
		p.concurrency = DefaultConcurrency
	case p.concurrency < 0:
		return nil, fmt.Errorf("%w: Concurrency %d is negative", ErrInvalidConfig, cfg.Concurrency)
	}
	switch {
	case p.jitter == 0:
		p.jitter = DefaultJitter
	case p.jitter < 0:
		p.jitter = 0
	}
	if p.maxDelay < 0 || p.maxRetryAfter < 0 {
		return nil, fmt.Errorf("%w: negative MaxDelay or MaxRetryAfter", ErrInvalidConfig)
	}
	if p.minDelay > p.maxDelay {
		return nil, fmt.Errorf("%w: MinDelay %v exceeds MaxDelay %v", ErrInvalidConfig, p.minDelay, p.maxDelay)
	}
	if math.IsNaN(p.adaptive) || math.IsInf(p.adaptive, 0) || p.adaptive < 0 {
		return nil, fmt.Errorf("%w: AdaptiveFactor %v", ErrInvalidConfig, cfg.AdaptiveFactor)
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p, nil
}

// Delay returns h's effective delay between requests, what demanded it, and
// whether MaxDelay cut it.
func (p *Policy) Delay(h HostState) (d time.Duration, why Reason, capped bool) {
	d, why = p.demand(h)
	if h.Backoff > d {
		d, why = h.Backoff, ReasonBackoff
	}
	return min(d, p.maxDelay), why, d > p.maxDelay
}

// demand is h's delay before back-off and capping.
func (p *Policy) demand(h HostState) (time.Duration, Reason) {
	d, r := p.minDelay, ReasonMinDelay
	if h.HasCrawlDelay && h.CrawlDelay > d {
		d, r = h.CrawlDelay, ReasonCrawlDelay
	}
	if p.adaptive > 0 && h.RTT > 0 {
		if a := time.Duration(p.adaptive * float64(h.RTT)); a > d {
			d, r = a, ReasonAdaptive
		}
	}
	return d, r
}

// SetCrawlDelay records robots.txt's Crawl-delay for h (ok false: there is
// none) and updates h.Delay. A delay above MaxDelay is capped, and the
// clamp logged the first time it is set.
func (p *Policy) SetCrawlDelay(key string, h *HostState, d time.Duration, ok bool) {
	d = max(d, 0)
	if !ok {
		d = 0
	}
	if h.CrawlDelay == d && h.HasCrawlDelay == ok {
		return
	}
	h.CrawlDelay, h.HasCrawlDelay = d, ok
	if d > p.maxDelay {
		p.log.Warn("ratelimit: Crawl-delay capped", "key", key, "crawl_delay", d, "max_delay", p.maxDelay)
	}
	h.Delay, _, _ = p.Delay(*h)
}

// Answer is how a request ended, as Policy.Observe reads it.
type Answer struct {
	// Failure classifies the ending: fetch.Classify gives it from a
	// response's status and a request's error, StatusFailure from a
	// status alone.
	Failure Failure
	// Header is the response's header, nil without a response: a
	// throttled answer's Retry-After is read from it.
	Header http.Header
	// RTT is how long the request took.
	RTT time.Duration
}

// Observe updates h with a, the outcome of a request that ended at now,
// and returns how long the host must rest from now before the next
// request starts.
//
//   - FailureThrottled (429, 503) with Retry-After: the host is paused
//     until then (capped by MaxRetryAfter).
//   - any other failure that BacksOff (throttled without Retry-After,
//     other 5xx, timeouts, DNS and connection errors…): the delay doubles,
//     with jitter, up to MaxDelay.
//   - FailureNone: a success; any back-off is halved, and dropped once it
//     falls below 1 s or the delay the host would have without it.
//   - FailureCanceled and FailureInvalidURL are the caller's doing, not
//     the host's, and change nothing.
//
// With one request in flight per host (Concurrency 1) the host rests its
// full delay from now, the answer: the server never sees two requests
// closer than the delay, however long the first took to arrive. With more,
// requests are spaced by their starts (the frontier's claims), and only a
// pause makes the host rest from the answer.
func (p *Policy) Observe(key string, h *HostState, now time.Time, a Answer) time.Duration {
	f := a.Failure
	if !f.informative() {
		return p.Rest(*h, now)
	}
	if f.answered() && a.RTT > 0 {
		if h.RTT == 0 {
			h.RTT = a.RTT
		} else {
			h.RTT += (a.RTT - h.RTT) / 4
		}
	}
	if f.BacksOff() {
		h.Failures++
	} else {
		h.Failures = 0
	}
	switch {
	case f == FailureThrottled:
		d, ok := ParseRetryAfter(a.Header.Get("Retry-After"), now)
		if !ok {
			p.backOff(key, h, f)
			break
		}
		if d > p.maxRetryAfter {
			p.log.Warn("ratelimit: Retry-After capped", "key", key, "retry_after", d, "max", p.maxRetryAfter)
			d = p.maxRetryAfter
		}
		if until := now.Add(d); until.After(h.PausedUntil) {
			h.PausedUntil = until
		}
		p.log.Info("ratelimit: paused by Retry-After", "key", key, "until", h.PausedUntil)
	case f.BacksOff():
		p.backOff(key, h, f)
	default:
		if h.Backoff > 0 {
			h.Backoff /= 2
			if base, _ := p.demand(*h); h.Backoff < backoffFloor || h.Backoff <= base {
				h.Backoff = 0
			}
		}
	}
	h.Delay, _, _ = p.Delay(*h)
	return p.Rest(*h, now)
}

// Rest returns how long h must rest from now after a request that ended
// now: its delay (with one request in flight per host) or any pause,
// whichever is longer.
func (p *Policy) Rest(h HostState, now time.Time) time.Duration {
	var rest time.Duration
	if p.concurrency == 1 {
		rest, _, _ = p.Delay(h)
	}
	if pause := h.PausedUntil.Sub(now); pause > rest {
		rest = pause
	}
	return rest
}

// backOff doubles h's delay, with jitter, up to MaxDelay, after a request
// that ended with f.
func (p *Policy) backOff(key string, h *HostState, f Failure) {
	cur, _, _ := p.Delay(*h)
	next := 2 * max(cur, backoffFloor/2)
	if p.jitter > 0 {
		next += time.Duration(rand.Float64() * p.jitter * float64(next))
	}
	h.Backoff = min(next, p.maxDelay)
	p.log.Info("ratelimit: backing off", "key", key, "failure", f.String(), "delay", h.Backoff)
}

// Status describes h, the pacing state of key, at now.
func (p *Policy) Status(key string, h HostState, now time.Time) HostStatus {
	d, why, capped := p.Delay(h)
	s := HostStatus{
		Key:        key,
		Delay:      d,
		Reason:     why,
		Capped:     capped,
		CrawlDelay: h.CrawlDelay,
		Backoff:    h.Backoff,
		RTT:        h.RTT,
		Failures:   h.Failures,
		ReadyAt:    now,
	}
	if h.NextAllowed.After(now) {
		s.ReadyAt = h.NextAllowed
	}
	if h.PausedUntil.After(now) {
		s.PausedUntil = h.PausedUntil
	}
	return s
}
