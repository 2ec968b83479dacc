package ratelimit

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults used for zero Config fields.
const (
	DefaultMinDelay      = time.Second
	DefaultMaxDelay      = 60 * time.Second
	DefaultConcurrency   = 1
	DefaultMaxRetryAfter = time.Hour
	DefaultJitter        = 0.1
	// DefaultResolveTimeout bounds one KeyIP lookup (see NewKeys).
	DefaultResolveTimeout = 5 * time.Second
)

// NoMinDelay is a Config.MinDelay that asks for no minimum delay at all, so
// only robots.txt, back-off and adaptive pacing space requests out.
const NoMinDelay time.Duration = -1

// backoffFloor is the smallest delay a failure backs off to, so that a host
// crawled without any delay still slows down when it starts failing.
const backoffFloor = time.Second

// ErrInvalidConfig is returned, wrapped, by NewPolicy for an inconsistent
// Config and by NewKeys for an unknown KeyMode.
var ErrInvalidConfig = errors.New("ratelimit: invalid config")

// Config configures a Policy. The zero value is usable: every zero field
// means its default, so Config{} gives a 1 s minimum delay, a 60 s maximum
// and one request in flight per host.
type Config struct {
	// MinDelay is the user's minimum delay between two requests to one
	// key: from the previous answer with Concurrency 1, between starts
	// above. Zero means DefaultMinDelay; a negative value (NoMinDelay)
	// means no minimum.
	MinDelay time.Duration

	// MaxDelay caps every delay: Crawl-delay, back-off and adaptive pacing.
	// Zero means DefaultMaxDelay. It must not be below MinDelay.
	MaxDelay time.Duration

	// Concurrency is the number of requests that may be in flight per key.
	// Zero means DefaultConcurrency (1).
	Concurrency int

	// MaxRetryAfter caps how long a Retry-After header may pause a key.
	// Zero means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration

	// Jitter is the largest random fraction added to each back-off step, so
	// that hosts failing together do not recover in lock-step. Zero means
	// DefaultJitter; a negative value means none.
	Jitter float64

	// AdaptiveFactor, when positive, keeps each key's delay at least this
	// many times its smoothed response time (Heritrix's delay factor), so a
	// slow server is given room. Zero disables adaptive pacing.
	AdaptiveFactor float64

	// Logger receives clamps and back-off decisions. Nil discards them.
	Logger *slog.Logger
}

// Reason says which constraint determines a key's delay.
type Reason uint8

// Reasons for a key's delay, from weakest to strongest claim.
const (
	ReasonMinDelay   Reason = iota // the user's minimum delay
	ReasonCrawlDelay               // the site's robots.txt Crawl-delay
	ReasonAdaptive                 // AdaptiveFactor × the observed response time
	ReasonBackoff                  // back-off after failures
)

// String returns a short lower-case name for r, for logs.
func (r Reason) String() string {
	switch r {
	case ReasonMinDelay:
		return "min-delay"
	case ReasonCrawlDelay:
		return "crawl-delay"
	case ReasonAdaptive:
		return "adaptive"
	case ReasonBackoff:
		return "back-off"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// HostStatus is a snapshot of one key's pacing state, as Policy.Status
// describes a HostState.
type HostStatus struct {
	Key         string
	Delay       time.Duration // effective delay between requests
	Reason      Reason        // what demanded Delay
	Capped      bool          // the demanded delay was cut to MaxDelay
	CrawlDelay  time.Duration // as set by SetCrawlDelay, before capping
	Backoff     time.Duration // current back-off delay; zero when healthy
	RTT         time.Duration // smoothed response time (adaptive mode)
	PausedUntil time.Time     // Retry-After pause; zero when not paused
	Failures    int           // consecutive failed requests (errors, 429, 5xx)
	ReadyAt     time.Time     // when the next request may start: the state's NextAllowed, or now
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
