package ratelimit_test

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
)

// TestParseRetryAfterSaturates: a delay too long to matter must come out
// as a very long delay, never wrap to a short or negative one (a server
// would get hammered) and never be refused (a server would be retried at
// once, as if it had sent nothing).
func TestParseRetryAfterSaturates(t *testing.T) {
	const ceiling = (1 << 32) * time.Second // about 136 years
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"4294967295", ceiling - time.Second},
		{"4294967296", ceiling},
		{"4294967297", ceiling},
		{"9223372036", ceiling},              // whole seconds of MaxInt64 ns
		{"9223372037", ceiling},              // one more would wrap a Duration
		{"18446744073709551615", ceiling},    // MaxUint64
		{"18446744073709551616", ceiling},    // MaxUint64+1: ParseUint fails
		{strings.Repeat("9", 4096), ceiling}, // absurdly long
		{"000000000000000000000000120", 120 * time.Second},
		// Dates far in the future are as far as a Duration reaches.
		{"Fri, 31 Dec 9999 23:59:59 GMT", time.Duration(math.MaxInt64)},
		// Dates in the past mean now.
		{"Mon, 01 Jan 0001 00:00:00 GMT", 0},
	}
	for _, tc := range cases {
		got, ok := ratelimit.ParseRetryAfter(tc.in, now)
		if !ok || got != tc.want {
			name := tc.in
			if len(name) > 40 {
				name = name[:40] + "..."
			}
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, true", name, got, ok, tc.want)
		}
		if !now.Add(got).After(now) && got != 0 {
			t.Errorf("ParseRetryAfter(%q) = %v: now plus it is not later than now", tc.in, got)
		}
	}
}

func TestParseRetryAfterRejects(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, in := range []string{"", "  ", "+5", "-5", "0x10", "1e3", "1 2", "5s", "1.5", "Tomorrow", "Fri, 31 Dec 9999"} {
		if got, ok := ratelimit.ParseRetryAfter(in, now); ok {
			t.Errorf("ParseRetryAfter(%q) = %v, true; want false", in, got)
		}
	}
}

// TestRetryAfterCappedInPolicy: a saturated Retry-After pauses the host
// for MaxRetryAfter, no more and no less.
func TestRetryAfterCappedInPolicy(t *testing.T) {
	pol, err := ratelimit.NewPolicy(ratelimit.Config{MaxRetryAfter: time.Hour, Jitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	var h ratelimit.HostState
	header := http.Header{"Retry-After": {strings.Repeat("9", 100)}}
	if rest := pol.Observe("h", &h, t0, answer(503, header, time.Millisecond)); rest != time.Hour {
		t.Errorf("rest %v, want 1h", rest)
	}
	if !h.PausedUntil.Equal(t0.Add(time.Hour)) {
		t.Errorf("paused until %v, want t0+1h", h.PausedUntil)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := t0
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{" 120 ", 120 * time.Second, true},
		{now.Add(time.Minute).Format(http.TimeFormat), time.Minute, true},
		{now.Add(time.Minute).Format(time.RFC850), time.Minute, true},
		{now.Add(time.Minute).Format(time.ANSIC), time.Minute, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"99999999999999999999999", 1 << 32 * time.Second, true},
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"12abc", 0, false},
		{"soon", 0, false},
	}
	for _, tc := range cases {
		got, ok := ratelimit.ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
