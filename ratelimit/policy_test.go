package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

func TestPolicyRest(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	one, _ := ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: 10 * time.Second, Jitter: -1})
	two, _ := ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: 10 * time.Second, Concurrency: 2, Jitter: -1})
	for _, tc := range []struct {
		name          string
		pol           *ratelimit.Policy
		status        int
		header        http.Header
		err           error
		rest, delay   time.Duration
		failures      int
		pausedUntilIn time.Duration
	}{
		{"one in flight: the delay from the answer", one, 200, nil, nil, time.Second, time.Second, 0, 0},
		{"more in flight: starts are spaced by claims", two, 200, nil, nil, 0, time.Second, 0, 0},
		{"a 500 doubles the delay", one, 500, nil, nil, 2 * time.Second, 2 * time.Second, 1, 0},
		{"an error too", two, 0, nil, errors.New("reset"), 0, 2 * time.Second, 1, 0},
		{"Retry-After pauses, capped at MaxDelay", two, 429, http.Header{"Retry-After": {"3600"}}, nil, 10 * time.Second, time.Second, 1, 10 * time.Second},
		{"a cancelled request changes nothing", one, 0, nil, context.Canceled, time.Second, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h frontier.HostState
			pol := tc.pol
			// MaxRetryAfter defaults to an hour; the crawler caps it by
			// MaxDelay, as here.
			if tc.status == 429 {
				pol, _ = ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: 10 * time.Second, MaxRetryAfter: 10 * time.Second, Concurrency: 2})
			}
			rest := pol.Observe("k", &h, now, tc.status, tc.header, 10*time.Millisecond, tc.err)
			if rest != tc.rest || h.Delay != tc.delay || h.Failures != tc.failures {
				t.Errorf("rest %v, Delay %v, Failures %d; want %v, %v, %d", rest, h.Delay, h.Failures, tc.rest, tc.delay, tc.failures)
			}
			if tc.pausedUntilIn > 0 && !h.PausedUntil.Equal(now.Add(tc.pausedUntilIn)) {
				t.Errorf("PausedUntil %v, want now+%v", h.PausedUntil, tc.pausedUntilIn)
			}
		})
	}
}

func TestPolicyCrawlDelay(t *testing.T) {
	pol, _ := ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: 10 * time.Second})
	var h frontier.HostState
	pol.SetCrawlDelay("k", &h, time.Minute, true)
	d, why, capped := pol.Delay(h)
	if d != 10*time.Second || why != ratelimit.ReasonCrawlDelay || !capped || h.Delay != d {
		t.Errorf("Delay = %v, %v, capped %v (HostState.Delay %v); want 10s by Crawl-delay, capped", d, why, capped, h.Delay)
	}
	pol.SetCrawlDelay("k", &h, 0, false)
	if d, why, _ := pol.Delay(h); d != time.Second || why != ratelimit.ReasonMinDelay {
		t.Errorf("without Crawl-delay: %v, %v", d, why)
	}
}
