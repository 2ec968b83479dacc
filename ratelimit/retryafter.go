package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfterSeconds keeps a delta-seconds value from overflowing a
// time.Duration; anything this large is capped by MaxRetryAfter anyway.
const maxRetryAfterSeconds = 1 << 32

// ParseRetryAfter parses a Retry-After header value (RFC 9110 §10.2.3),
// either delay-seconds ("120") or an HTTP date, into the delay from now. A
// date in the past gives zero. A delay too long to matter saturates: more
// than 2³² seconds (136 years) gives 2³² seconds, a date beyond a
// Duration's reach the longest Duration, so a huge value never wraps to a
// short delay nor is mistaken for no value. It reports false for an empty or
// malformed value. It is heed's one Retry-After parser.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if value[0] >= '0' && value[0] <= '9' {
		for i := range len(value) {
			if value[i] < '0' || value[i] > '9' {
				return 0, false
			}
		}
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil || n > maxRetryAfterSeconds {
			n = maxRetryAfterSeconds // only overflow can fail: all digits
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
