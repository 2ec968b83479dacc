package ratelimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
)

// failures lists every Failure with what it must mean. The names are the
// crawler's Stats.Errors kinds and must not change.
var failures = []struct {
	f                               ratelimit.Failure
	name                            string
	retryable, backsOff, network    bool
	changesNothing, countsRoundTrip bool
}{
	{ratelimit.FailureNone, "none", false, false, false, false, true},
	{ratelimit.FailureThrottled, "throttled", true, true, false, false, true},
	{ratelimit.FailureServerError, "server-error", true, true, false, false, true},
	{ratelimit.FailureTimeout, "timeout", true, true, true, false, false},
	{ratelimit.FailureDNS, "dns", true, true, true, false, false},
	{ratelimit.FailureConnection, "connection", true, true, true, false, false},
	{ratelimit.FailureTLS, "tls", true, true, false, false, false},
	{ratelimit.FailureRedirect, "redirect", false, true, false, false, false},
	{ratelimit.FailureEncoding, "encoding", false, true, false, false, false},
	{ratelimit.FailureForbidden, "forbidden-address", false, true, false, false, false},
	{ratelimit.FailureInvalidURL, "invalid-url", false, false, false, true, false},
	{ratelimit.FailureCanceled, "canceled", false, false, false, true, false},
	{ratelimit.FailureOther, "other", true, true, false, false, false},
}

func TestFailureTraits(t *testing.T) {
	for i, tc := range failures {
		if tc.f != ratelimit.Failure(i) {
			t.Fatalf("failures[%d] is %v: the table must list every Failure in order", i, tc.f)
		}
		if got := tc.f.String(); got != tc.name {
			t.Errorf("%d.String() = %q, want %q", tc.f, got, tc.name)
		}
		if tc.f.Retryable() != tc.retryable || tc.f.BacksOff() != tc.backsOff || tc.f.Network() != tc.network {
			t.Errorf("%v: Retryable %v, BacksOff %v, Network %v; want %v, %v, %v", tc.f,
				tc.f.Retryable(), tc.f.BacksOff(), tc.f.Network(), tc.retryable, tc.backsOff, tc.network)
		}
	}
	beyond := ratelimit.Failure(len(failures))
	if beyond.String() != "Failure(13)" || beyond.Retryable() || beyond.BacksOff() || beyond.Network() {
		t.Errorf("a Failure past the last: %q, Retryable %v, BacksOff %v, Network %v", beyond, beyond.Retryable(), beyond.BacksOff(), beyond.Network())
	}
}

func TestStatusFailure(t *testing.T) {
	for status, want := range map[int]ratelimit.Failure{
		0: ratelimit.FailureNone, 200: ratelimit.FailureNone, 204: ratelimit.FailureNone,
		301: ratelimit.FailureNone, 304: ratelimit.FailureNone, 404: ratelimit.FailureNone,
		410: ratelimit.FailureNone, 499: ratelimit.FailureNone,
		429: ratelimit.FailureThrottled, 503: ratelimit.FailureThrottled,
		500: ratelimit.FailureServerError, 502: ratelimit.FailureServerError,
		504: ratelimit.FailureServerError, 599: ratelimit.FailureServerError,
		600: ratelimit.FailureServerError, // no server should send it; treated as failing, as before
	} {
		if got := ratelimit.StatusFailure(status); got != want {
			t.Errorf("StatusFailure(%d) = %v, want %v", status, got, want)
		}
	}
}

// TestObserveFollowsFailure observes each Failure on a host already
// backing off: Observe's effect is what the Failure's traits say, so that
// the pacing and the retries, which read the same traits, agree.
func TestObserveFollowsFailure(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{MinDelay: time.Second, MaxDelay: time.Minute})
	before := ratelimit.HostState{Backoff: 8 * time.Second, Failures: 2, RTT: time.Second}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			h := before
			pol.Observe("k", &h, t0, ratelimit.Answer{Failure: tc.f, RTT: 3 * time.Second})
			switch {
			case tc.changesNothing:
				if h != before {
					t.Errorf("state %+v, want it unchanged: %+v", h, before)
				}
			case tc.backsOff:
				if h.Failures != 3 || h.Backoff != 16*time.Second {
					t.Errorf("Failures %d, Backoff %v; want 3 and a doubled 16s", h.Failures, h.Backoff)
				}
			default:
				if h.Failures != 0 || h.Backoff != 4*time.Second {
					t.Errorf("Failures %d, Backoff %v; want 0 and a halved 4s", h.Failures, h.Backoff)
				}
			}
			if roundTrip := h.RTT != before.RTT; roundTrip != tc.countsRoundTrip {
				t.Errorf("RTT %v after a %v answer: counted %v, want %v", h.RTT, tc.f, roundTrip, tc.countsRoundTrip)
			}
		})
	}
}

// TestObserveThrottledRetryAfter: a throttled answer with Retry-After
// pauses the host instead of doubling its delay, and still counts as a
// failure; a 503 and a 429 are both throttled.
func TestObserveThrottledRetryAfter(t *testing.T) {
	pol := newPolicy(t, ratelimit.Config{MinDelay: time.Second, MaxDelay: time.Minute, MaxRetryAfter: time.Hour})
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		var h ratelimit.HostState
		a := ratelimit.Answer{Failure: ratelimit.StatusFailure(status), Header: http.Header{"Retry-After": {"90"}}}
		if rest := pol.Observe("k", &h, t0, a); rest != 90*time.Second || h.Backoff != 0 || h.Failures != 1 {
			t.Errorf("%d with Retry-After: rest %v, Backoff %v, Failures %d; want 90s, 0, 1", status, rest, h.Backoff, h.Failures)
		}
	}
}
