package ratelimit

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"github.com/heedcrawl/heed/frontier"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults used for zero Config fields.
const (
	DefaultMinDelay       = time.Second
	DefaultMaxDelay       = 60 * time.Second
	DefaultConcurrency    = 1
	DefaultMaxRetryAfter  = time.Hour
	DefaultJitter         = 0.1
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultResolveTTL     = 5 * time.Minute
	DefaultResolveTimeout = 5 * time.Second
)

// NoMinDelay is a Config.MinDelay that asks for no minimum delay at all, so
// only robots.txt, back-off and adaptive pacing space requests out.
const NoMinDelay time.Duration = -1

// backoffFloor is the smallest delay a failure backs off to, so that a host
// crawled without any delay still slows down when it starts failing.
const backoffFloor = time.Second

// fullRecheck is how far ahead ReadyAt points when every in-flight slot of a
// key is taken: the slot frees at an unknown time, so the caller re-asks.
const fullRecheck = 100 * time.Millisecond

// evictScan bounds the idle keys examined per call, keeping eviction O(1).
const evictScan = 8

// ErrInvalidConfig is returned, wrapped, by New for an inconsistent Config.
var ErrInvalidConfig = errors.New("ratelimit: invalid config")

// Clock is the source of time; nil means real time. Tests pass a clock they
// advance by hand: any type with these two methods will do.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config configures a HostLimiter. The zero value is usable: every zero field
// means its default, so Config{} gives a 1 s minimum delay, a 60 s maximum,
// one request in flight per host and host keys.
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

	// Key selects what a politeness key is. The zero value is KeyHost.
	Key KeyMode

	// Resolver resolves host names for KeyIP. Nil means net.DefaultResolver.
	Resolver Resolver

	// ResolveTTL is ignored: KeyIP keeps a host name's first resolution
	// for the life of the limiter, so that one host never gets two keys
	// (see KeyIP). It is kept so existing configurations still compile.
	//
	// Deprecated: it has no effect.
	ResolveTTL time.Duration

	// ResolveTimeout bounds one KeyIP lookup. Zero means
	// DefaultResolveTimeout.
	ResolveTimeout time.Duration

	// IdleTimeout is how long a key must be idle (no request in flight, no
	// pause, bucket full) before its state is forgotten. Zero means
	// DefaultIdleTimeout. A forgotten key's Crawl-delay must be set again
	// with SetCrawlDelay.
	IdleTimeout time.Duration

	// Clock supplies time. Nil means real time.
	Clock Clock

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

// HostStatus is a snapshot of one key's pacing state.
type HostStatus struct {
	Key         string
	Delay       time.Duration // effective delay between request starts
	Reason      Reason        // what demanded Delay
	Capped      bool          // the demanded delay was cut to MaxDelay
	CrawlDelay  time.Duration // as set by SetCrawlDelay, before capping
	Backoff     time.Duration // current back-off delay; zero when healthy
	RTT         time.Duration // smoothed response time (adaptive mode)
	PausedUntil time.Time     // Retry-After pause; zero when not paused
	Failures    int           // consecutive failed requests (errors, 429, 5xx)
	InFlight    int           // requests between Wait and Done
	Waiting     int           // callers blocked in Wait
	ReadyAt     time.Time     // as ReadyAt(Key) would report now
}

// HostLimiter paces requests per politeness key. It is safe for concurrent
// use. Create one with New.
type HostLimiter struct {
	policy      *Policy
	idleTimeout time.Duration
	clock       Clock
	log         *slog.Logger
	keys        *Keys

	mu    sync.Mutex
	hosts map[string]*hostState
	lru   list.List // of *hostState; front is the most recently touched
}

// hostState is the pacing state of one key. All fields are guarded by
// HostLimiter.mu.
type hostState struct {
	key  string
	elem *list.Element

	// bucket holds the token for the next request; nil while the delay is
	// zero. It is rebuilt whenever the delay changes so that the next start
	// is always lastStart + the delay in force now (see setDelay).
	bucket    *rate.Limiter
	lastStart time.Time

	delay time.Duration // in force: the bucket's rate
	pace  frontier.HostState

	inFlight int
	waiters  int
	touched  time.Time

	// wake is closed when the state changes in a way that may let a waiter
	// go sooner; created on demand by a waiter.
	wake chan struct{}
}

// New returns a HostLimiter configured by cfg, or an error wrapping
// ErrInvalidConfig if cfg is inconsistent.
func New(cfg Config) (*HostLimiter, error) {
	pol, err := NewPolicy(cfg)
	if err != nil {
		return nil, err
	}
	l := &HostLimiter{
		policy:      pol,
		idleTimeout: orDefault(cfg.IdleTimeout, DefaultIdleTimeout),
		clock:       cfg.Clock,
		log:         pol.log,
		hosts:       make(map[string]*hostState),
	}
	if l.idleTimeout < 0 || cfg.ResolveTTL < 0 || cfg.ResolveTimeout < 0 {
		return nil, fmt.Errorf("%w: negative IdleTimeout, ResolveTTL or ResolveTimeout", ErrInvalidConfig)
	}
	if l.clock == nil {
		l.clock = realClock{}
	}
	keys, err := NewKeys(cfg.Key, cfg.Resolver, cfg.ResolveTimeout, l.hasState, l.log)
	if err != nil {
		return nil, err
	}
	l.keys = keys
	return l, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// ReadyAt returns the earliest time a request to key may start, considering
// the key's token bucket, any Retry-After pause and its in-flight limit. A
// time not after Now means now. ReadyAt never blocks and does not create
// state for an unknown key (which is ready now).
//
// When every in-flight slot of key is taken, the slot frees at a time no one
// knows yet, so ReadyAt returns a time a little ahead as a hint to ask again.
func (l *HostLimiter) ReadyAt(key string) time.Time {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[key]
	if h == nil {
		return now
	}
	return l.readyHint(h, now)
}

func (l *HostLimiter) readyHint(h *hostState, now time.Time) time.Time {
	at, full := l.readyAt(h, now)
	if full {
		if t := now.Add(max(h.delay, fullRecheck)); t.After(at) {
			at = t
		}
	}
	return at
}

// readyAt returns when the bucket and the pause let the next request start,
// and whether every in-flight slot is taken.
func (l *HostLimiter) readyAt(h *hostState, now time.Time) (time.Time, bool) {
	at := now
	if h.pace.PausedUntil.After(at) {
		at = h.pace.PausedUntil
	}
	if h.bucket != nil {
		// The bucket counts in float64 seconds; round the wait to the
		// nearest nanosecond so that a token due at exactly t is ready at
		// t, not a nanosecond later. ReadyAt and Wait share this rounding,
		// so a key reported ready is one Wait lets through at once.
		if need := 1 - h.bucket.TokensAt(now); need > 0 {
			wait := time.Duration(math.Round(need / float64(h.bucket.Limit()) * float64(time.Second)))
			if t := now.Add(wait); t.After(at) {
				at = t
			}
		}
	}
	return at, h.inFlight >= l.policy.concurrency
}

// Wait blocks until a request to key may start, then takes the key's token
// and one of its in-flight slots; the caller must release the slot with Done
// once the request is over. It returns ctx's error, wrapped, if ctx ends
// first, in which case nothing is taken. When ReadyAt(key) is not after now
// and a slot is free, Wait returns at once.
func (l *HostLimiter) Wait(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ratelimit: wait for %q: %w", key, err)
	}
	l.mu.Lock()
	h := l.touch(key, l.clock.Now())
	h.waiters++
	for {
		now := l.clock.Now()
		at, full := l.readyAt(h, now)
		if !full && !at.After(now) {
			h.waiters--
			if h.bucket != nil {
				// ReserveN, not AllowN: the token may be a rounding error
				// short of 1, and it must be taken all the same.
				h.bucket.ReserveN(now, 1)
			}
			h.lastStart = now
			h.inFlight++
			h.touched = now
			l.mu.Unlock()
			return nil
		}
		if h.wake == nil {
			h.wake = make(chan struct{})
		}
		wake := h.wake
		l.mu.Unlock()

		var timer <-chan time.Time
		if at.After(now) {
			timer = l.clock.After(at.Sub(now))
		}
		select {
		case <-ctx.Done():
			l.mu.Lock()
			h.waiters--
			l.mu.Unlock()
			return fmt.Errorf("ratelimit: wait for %q: %w", key, ctx.Err())
		case <-timer:
		case <-wake:
		}
		l.mu.Lock()
	}
}

// Done releases an in-flight slot of key taken by Wait. Calling Done more
// often than Wait is a bug in the caller; the extra calls are logged and
// ignored.
func (l *HostLimiter) Done(key string) {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[key]
	if h == nil || h.inFlight == 0 {
		l.log.Warn("ratelimit: Done without Wait", "key", key)
		return
	}
	h.inFlight--
	h.touched = now
	l.lru.MoveToFront(h.elem)
	notify(h)
}

// Acquire waits until a request to key may start and takes its slot, like
// Wait; the returned func reports the request's outcome (Observe), releases
// the slot (Done) and returns when key is ready again (ReadyAt). Its
// signature is robots.Pacer's, so a HostLimiter paces a robots.Gate.
func (l *HostLimiter) Acquire(ctx context.Context, key string) (func(status int, header http.Header, rtt time.Duration, err error) time.Time, error) {
	if err := l.Wait(ctx, key); err != nil {
		return nil, err
	}
	return func(status int, header http.Header, rtt time.Duration, err error) time.Time {
		l.Observe(key, status, header, rtt, err)
		l.Done(key)
		return l.ReadyAt(key)
	}, nil
}

// SetCrawlDelay records the robots.txt Crawl-delay for key; d ≤ 0 clears
// it. A delay above MaxDelay is capped, and the clamp logged. Setting the
// value the key already has is cheap and does nothing, so a crawler may call
// SetCrawlDelay every time it consults robots.txt, which also restores the
// delay after an idle key was forgotten. Under KeyDomain and KeyIP several
// hosts share a key; the Crawl-delay set last wins.
func (l *HostLimiter) SetCrawlDelay(key string, d time.Duration) {
	d = max(d, 0)
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[key]
	if h == nil && d == 0 {
		return // an unknown key already has no Crawl-delay
	}
	if h == nil {
		h = l.touch(key, now)
	}
	l.policy.SetCrawlDelay(key, &h.pace, d, d > 0)
	l.update(h)
}

// Observe reports the outcome of a request to key, so that the key backs off
// when the host struggles and recovers when it does not. status and header
// are the response's (0 and nil when err is non-nil), rtt is how long the
// request took. Pass err for transport failures: timeouts, DNS and connection
// errors back off, context.Canceled is ignored (it is the caller's doing, not
// the host's).
//
//   - 429 or 503 with Retry-After: the key is paused until then (capped by
//     MaxRetryAfter).
//   - 429 or 503 without Retry-After, other 5xx, err: the delay doubles.
//   - anything else: a success; any back-off delay is halved, and dropped
//     once it falls below 1 s or the delay the key would have without it.
func (l *HostLimiter) Observe(key string, status int, header http.Header, rtt time.Duration, err error) {
	if err != nil && errors.Is(err, context.Canceled) {
		return
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.touch(key, now)
	l.policy.Observe(key, &h.pace, now, status, header, rtt, err)
	if l.policy.concurrency == 1 && h.bucket != nil {
		// One request at a time: count the delay from the end of this
		// request, not its start. The server saw the request some time
		// after we took its token (dialling, scheduling, a slow send); the
		// next request must not reach it sooner than the delay after that,
		// and the answer arriving is the latest the server can have seen it.
		h.lastStart = now
		h.bucket = rate.NewLimiter(rate.Every(h.delay), 1)
		h.bucket.ReserveN(now, 1)
	}
	l.update(h)
}

// update applies h's effective delay: when it changed, the bucket is rebuilt;
// waiters are woken in any case, since a pause may have changed.
func (l *HostLimiter) update(h *hostState) {
	d, _, _ := l.policy.Delay(h.pace)
	h.pace.Delay = d
	if d != h.delay {
		l.setDelay(h, d)
	}
	notify(h)
}

// setDelay makes d the delay between request starts. The bucket is replaced
// rather than re-rated with SetLimitAt because a re-rated bucket keeps the
// tokens it accrued at the old rate: doubling the delay half-way through it
// would let the next request go after 1.5 delays. Starting the new bucket
// empty at lastStart makes the next request due exactly lastStart + d.
func (l *HostLimiter) setDelay(h *hostState, d time.Duration) {
	h.delay = d
	if d <= 0 {
		h.bucket = nil
		return
	}
	h.bucket = rate.NewLimiter(rate.Every(d), 1)
	if !h.lastStart.IsZero() {
		h.bucket.ReserveN(h.lastStart, 1)
	}
}

func notify(h *hostState) {
	if h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
}

// touch returns key's state, creating it if need be, marks it used at now and
// forgets a few idle keys. l.mu must be held.
func (l *HostLimiter) touch(key string, now time.Time) *hostState {
	h := l.hosts[key]
	if h == nil {
		h = &hostState{key: key}
		l.update(h)
		h.elem = l.lru.PushFront(h)
		l.hosts[key] = h
	} else {
		l.lru.MoveToFront(h.elem)
	}
	h.touched = now
	l.evictIdle(now)
	return h
}

// evictIdle forgets up to evictScan keys at the cold end of the LRU list that
// have been idle for IdleTimeout. A cold key that is still busy (in flight,
// waited on, paused or not yet refilled) is moved to the warm end instead,
// so it does not shield idle keys behind it.
func (l *HostLimiter) evictIdle(now time.Time) {
	for range evictScan {
		e := l.lru.Back()
		if e == nil {
			return
		}
		h := e.Value.(*hostState)
		if now.Sub(h.touched) < l.idleTimeout {
			return
		}
		at, _ := l.readyAt(h, now)
		if h.inFlight > 0 || h.waiters > 0 || at.After(now) {
			h.touched = now
			l.lru.MoveToFront(e)
			continue
		}
		l.lru.Remove(e)
		delete(l.hosts, h.key)
	}
}

// Status returns a snapshot of key's pacing state. An unknown key reports
// the defaults.
func (l *HostLimiter) Status(key string) HostStatus {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[key]
	if h == nil {
		return l.policy.Status(key, frontier.HostState{}, now)
	}
	s := l.policy.Status(key, h.pace, now)
	s.InFlight, s.Waiting, s.ReadyAt = h.inFlight, h.waiters, l.readyHint(h, now)
	return s
}

// Len returns the number of keys whose state is held, for metrics and tests.
func (l *HostLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.hosts)
}
