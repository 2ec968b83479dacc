package ratelimit_test

import (
	"math"
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

// TestRetryAfterCappedInLimiter: a saturated Retry-After pauses the key
// for MaxRetryAfter, no more and no less.
func TestRetryAfterCappedInLimiter(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{MaxRetryAfter: time.Hour})
	h := map[string][]string{"Retry-After": {strings.Repeat("9", 100)}}
	l.Observe("h", 503, h, time.Millisecond, nil)
	if s := l.Status("h"); !s.PausedUntil.Equal(clock.Now().Add(time.Hour)) {
		t.Errorf("paused until %v, want now+1h (%v)", s.PausedUntil, clock.Now().Add(time.Hour))
	}
}
