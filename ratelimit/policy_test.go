package ratelimit_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// newPolicy returns the Policy of cfg, with exact back-off unless the test
// asks for jitter.
func newPolicy(t *testing.T, cfg ratelimit.Config) *ratelimit.Policy {
	t.Helper()
	if cfg.Jitter == 0 {
		cfg.Jitter = -1
	}
	pol, err := ratelimit.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// answer is a response of status, as Observe reads it.
func answer(status int, header http.Header, rtt time.Duration) ratelimit.Answer {
	return ratelimit.Answer{Failure: ratelimit.StatusFailure(status), Header: header, RTT: rtt}
}

func TestPolicyRest(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	one, _ := ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: 10 * time.Second, Jitter: -1})
	two, _ := ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: 10 * time.Second, Concurrency: 2, Jitter: -1})
	for _, tc := range []struct {
		name          string
		pol           *ratelimit.Policy
		status        int
		header        http.Header
		failure       ratelimit.Failure // of a request without a response
		rest, delay   time.Duration
		failures      int
		pausedUntilIn time.Duration
	}{
		{"one in flight: the delay from the answer", one, 200, nil, 0, time.Second, time.Second, 0, 0},
		{"more in flight: starts are spaced by claims", two, 200, nil, 0, 0, time.Second, 0, 0},
		{"a 500 doubles the delay", one, 500, nil, 0, 2 * time.Second, 2 * time.Second, 1, 0},
		{"a connection failure too", two, 0, nil, ratelimit.FailureConnection, 0, 2 * time.Second, 1, 0},
		{"Retry-After pauses, capped at MaxDelay", two, 429, http.Header{"Retry-After": {"3600"}}, 0, 10 * time.Second, time.Second, 1, 10 * time.Second},
		{"a cancelled request changes nothing", one, 0, nil, ratelimit.FailureCanceled, time.Second, 0, 0, 0},
		{"nor does an invalid URL", one, 0, nil, ratelimit.FailureInvalidURL, time.Second, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h ratelimit.HostState
			pol := tc.pol
			// MaxRetryAfter defaults to an hour; the crawler caps it by
			// MaxDelay, as here.
			if tc.status == 429 {
				pol, _ = ratelimit.NewPolicy(ratelimit.Config{MinDelay: time.Second, MaxDelay: 10 * time.Second, MaxRetryAfter: 10 * time.Second, Concurrency: 2})
			}
			a := answer(tc.status, tc.header, 10*time.Millisecond)
			if tc.failure != ratelimit.FailureNone {
				a = ratelimit.Answer{Failure: tc.failure, RTT: 10 * time.Millisecond}
			}
			rest := pol.Observe("k", &h, now, a)
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
	var h ratelimit.HostState
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

func TestPolicyCrawlDelayCannotSpeedUp(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{MinDelay: time.Second})
	var h ratelimit.HostState
	pol.SetCrawlDelay("h", &h, 5*time.Second, true) // above the minimum: the site slows us
	if rest := pol.Observe("h", &h, t0, answer(200, nil, 0)); rest != 5*time.Second {
		t.Fatalf("rest %v, want the 5s Crawl-delay", rest)
	}
	pol.SetCrawlDelay("h", &h, 200*time.Millisecond, true) // below: it cannot speed us up
	if d, why, _ := pol.Delay(h); d != time.Second || why != ratelimit.ReasonMinDelay || h.Delay != d {
		t.Fatalf("Delay %v (%v), HostState.Delay %v; want the 1s minimum", d, why, h.Delay)
	}
	if h.CrawlDelay != 200*time.Millisecond || !h.HasCrawlDelay {
		t.Fatalf("Crawl-delay not recorded: %+v", h)
	}
}

func TestPolicyNoMinDelay(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{MinDelay: ratelimit.NoMinDelay})
	var h ratelimit.HostState
	for range 3 {
		if rest := pol.Observe("h", &h, t0, answer(200, nil, time.Millisecond)); rest != 0 {
			t.Fatalf("rest %v, want 0", rest)
		}
	}
	if d, _, _ := pol.Delay(h); d != 0 {
		t.Fatalf("Delay = %v, want 0", d)
	}
}

func TestPolicyCrawlDelayCapIsLogged(t *testing.T) {
	var buf bytes.Buffer
	pol := newPolicy(t, ratelimit.Config{MaxDelay: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	var h ratelimit.HostState
	pol.SetCrawlDelay("h", &h, time.Hour, true)
	s := pol.Status("h", h, t0)
	if s.Delay != 10*time.Second || !s.Capped || s.Reason != ratelimit.ReasonCrawlDelay || s.CrawlDelay != time.Hour {
		t.Fatalf("status = %+v", s)
	}
	if !strings.Contains(buf.String(), "Crawl-delay capped") || !strings.Contains(buf.String(), "key=h") {
		t.Fatalf("clamp not logged: %q", buf.String())
	}
	buf.Reset()
	pol.SetCrawlDelay("h", &h, time.Hour, true) // unchanged: no repeated log
	if buf.Len() != 0 {
		t.Fatalf("unchanged Crawl-delay logged again: %q", buf.String())
	}
}

func TestPolicyRetryAfterPauses(t *testing.T) {
	cases := []struct {
		name  string
		value string
		want  time.Duration
	}{
		{"seconds", "120", 120 * time.Second},
		{"http-date", t0.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"capped", "86400", time.Hour},
		{"past-date", t0.Add(-time.Hour).Format(http.TimeFormat), 0},
	}
	for _, tc := range cases {
		for _, status := range []int{429, 503} {
			t.Run(tc.name+"/"+http.StatusText(status), func(t *testing.T) {
				pol := newPolicy(t, ratelimit.Config{MaxRetryAfter: time.Hour})
				var h ratelimit.HostState
				rest := pol.Observe("h", &h, t0, answer(status, http.Header{"Retry-After": {tc.value}}, 0))
				if want := max(tc.want, time.Second); rest != want { // never less than the delay
					t.Fatalf("rest %v, want %v", rest, want)
				}
				if s := pol.Status("h", h, t0); s.Backoff != 0 || s.Delay != time.Second {
					t.Fatalf("Retry-After also backed off: %+v", s)
				}
			})
		}
	}
}

func TestPolicyBackoffDoublesAndDecays(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{MinDelay: time.Second, MaxDelay: 60 * time.Second})
	var h ratelimit.HostState
	fail := []ratelimit.Answer{
		answer(500, nil, 0), answer(503, nil, 0), answer(429, nil, 0), {Failure: ratelimit.FailureTimeout},
		answer(502, nil, 0), answer(500, nil, 0), answer(500, nil, 0),
	}
	want := []time.Duration{2, 4, 8, 16, 32, 60, 60}
	for i, f := range fail {
		rest := pol.Observe("h", &h, t0, f)
		d, why, _ := pol.Delay(h)
		if d != want[i]*time.Second || why != ratelimit.ReasonBackoff || rest != d || h.Delay != d {
			t.Fatalf("after failure %d: Delay %v (%v), rest %v, want %vs", i+1, d, why, rest, want[i])
		}
	}
	// Each success halves the back-off until it falls to the base delay.
	for _, w := range []time.Duration{30000, 15000, 7500, 3750, 1875, 1000} {
		pol.Observe("h", &h, t0, answer(200, nil, 0))
		if d, _, _ := pol.Delay(h); d != w*time.Millisecond {
			t.Fatalf("after success: Delay %v, want %v", d, w*time.Millisecond)
		}
	}
	if d, why, _ := pol.Delay(h); h.Backoff != 0 || why != ratelimit.ReasonMinDelay || d != time.Second {
		t.Fatalf("not recovered: %+v", h)
	}
}

func TestPolicyBackoffFromZeroDelay(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{MinDelay: ratelimit.NoMinDelay})
	var h ratelimit.HostState
	pol.Observe("h", &h, t0, answer(500, nil, 0))
	if d, _, _ := pol.Delay(h); d != time.Second {
		t.Fatalf("Delay = %v, want the 1s floor", d)
	}
	pol.Observe("h", &h, t0, answer(200, nil, 0))
	if d, _, _ := pol.Delay(h); d != 0 {
		t.Fatalf("Delay = %v after recovery, want 0", d)
	}
}

func TestPolicyBackoffJitterStaysInBounds(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{Jitter: 0.25})
	for range 50 {
		var h ratelimit.HostState
		pol.Observe("h", &h, t0, answer(500, nil, 0))
		if d, _, _ := pol.Delay(h); d < 2*time.Second || d > 2500*time.Millisecond {
			t.Fatalf("Delay = %v, want within [2s, 2.5s]", d)
		}
	}
}

func TestPolicyAdaptiveDelay(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{AdaptiveFactor: 5})
	var h ratelimit.HostState
	pol.Observe("h", &h, t0, answer(200, nil, 2*time.Second))
	if s := pol.Status("h", h, t0); s.Delay != 10*time.Second || s.Reason != ratelimit.ReasonAdaptive || s.RTT != 2*time.Second {
		t.Fatalf("status = %+v", s)
	}
	// Fast responses pull the smoothed time down gradually.
	pol.Observe("h", &h, t0, answer(200, nil, 400*time.Millisecond))
	if s := pol.Status("h", h, t0); s.RTT != 1600*time.Millisecond || s.Delay != 8*time.Second {
		t.Fatalf("status = %+v", s)
	}
}

func TestPolicyConsecutiveFailures(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{MinDelay: ratelimit.NoMinDelay})
	var h ratelimit.HostState
	fail := []ratelimit.Answer{
		{Failure: ratelimit.FailureConnection}, answer(503, nil, time.Millisecond),
		answer(429, nil, time.Millisecond), answer(500, nil, time.Millisecond),
	}
	for i, f := range fail {
		pol.Observe("k", &h, t0, f)
		if h.Failures != i+1 {
			t.Fatalf("after %d failures Failures = %d", i+1, h.Failures)
		}
	}
	pol.Observe("k", &h, t0, ratelimit.Answer{Failure: ratelimit.FailureCanceled}) // our doing, not the host's
	if h.Failures != len(fail) {
		t.Errorf("a cancelled request changed Failures to %d", h.Failures)
	}
	pol.Observe("k", &h, t0, answer(404, nil, time.Millisecond))
	if h.Failures != 0 {
		t.Errorf("after a success Failures = %d", h.Failures)
	}
}

func TestPolicyStatus(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{})
	h := ratelimit.HostState{NextAllowed: t0.Add(3 * time.Second), PausedUntil: t0.Add(time.Minute), Failures: 2}
	s := pol.Status("k", h, t0)
	if s.Key != "k" || !s.ReadyAt.Equal(h.NextAllowed) || !s.PausedUntil.Equal(h.PausedUntil) || s.Failures != 2 {
		t.Fatalf("status = %+v", s)
	}
	// Later, the host is ready now and no longer paused.
	later := t0.Add(time.Hour)
	if s := pol.Status("k", h, later); !s.ReadyAt.Equal(later) || !s.PausedUntil.IsZero() {
		t.Fatalf("status an hour on = %+v", s)
	}
}

func TestNewPolicyRejectsBadConfig(t *testing.T) {
	for _, cfg := range []ratelimit.Config{
		{MinDelay: time.Minute, MaxDelay: time.Second},
		{Concurrency: -1},
		{AdaptiveFactor: -1},
		{MaxDelay: -time.Second},
		{MaxRetryAfter: -time.Second},
	} {
		if _, err := ratelimit.NewPolicy(cfg); !errors.Is(err, ratelimit.ErrInvalidConfig) {
			t.Errorf("NewPolicy(%+v) err = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
