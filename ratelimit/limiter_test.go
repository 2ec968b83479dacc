package ratelimit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/ratelimit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func newLimiter(t *testing.T, cfg ratelimit.Config) (*ratelimit.HostLimiter, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(t0)
	cfg.Clock = clock
	if cfg.Jitter == 0 {
		cfg.Jitter = -1 // exact back-off unless a test asks for jitter
	}
	l, err := ratelimit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l, clock
}

// take calls Wait, which must return at once because the key is ready, and
// Done.
func take(t *testing.T, l *ratelimit.HostLimiter, clock *fakeclock.Clock, key string) {
	t.Helper()
	if s := l.Status(key); s.ReadyAt.After(clock.Now()) || s.InFlight > 0 {
		t.Fatalf("take(%q): not ready: %+v", key, s)
	}
	if err := l.Wait(context.Background(), key); err != nil {
		t.Fatalf("Wait(%q): %v", key, err)
	}
	l.Done(key)
}

// waitAsync runs Wait in a goroutine and reports its result.
func waitAsync(l *ratelimit.HostLimiter, ctx context.Context, key string) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- l.Wait(ctx, key) }()
	return ch
}

func assertPending(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("Wait returned early (err=%v)", err)
	default:
	}
}

func wantReady(t *testing.T, l *ratelimit.HostLimiter, key string, want time.Time) {
	t.Helper()
	if got := l.ReadyAt(key); !got.Equal(want) {
		t.Fatalf("ReadyAt(%q) = t0%+v, want t0%+v", key, got.Sub(t0), want.Sub(t0))
	}
}

func TestUnknownKeyIsReadyNowAndCostsNothing(t *testing.T) {
	l, _ := newLimiter(t, ratelimit.Config{})
	wantReady(t, l, "a.example", t0)
	if n := l.Len(); n != 0 {
		t.Fatalf("ReadyAt created state: Len = %d", n)
	}
}

func TestExactSpacing(t *testing.T) {
	for _, delay := range []time.Duration{time.Second, 1500 * time.Millisecond, 100 * time.Millisecond, 7 * time.Second} {
		t.Run(delay.String(), func(t *testing.T) {
			l, clock := newLimiter(t, ratelimit.Config{MinDelay: delay})
			for i := range 5 {
				now := t0.Add(time.Duration(i) * delay)
				clock.Set(now)
				wantReady(t, l, "h", now)
				take(t, l, clock, "h")
				// The token just taken is reflected at once.
				wantReady(t, l, "h", now.Add(delay))
			}
		})
	}
}

func TestWaitBlocksUntilTheTokenIsDue(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{MinDelay: 2 * time.Second})
	take(t, l, clock, "h")
	done := waitAsync(l, context.Background(), "h")
	clock.BlockUntil(1)
	if d, _ := clock.NextDeadline(); !d.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("Wait sleeps until t0%+v, want t0+2s", d.Sub(t0))
	}
	clock.Advance(2*time.Second - time.Nanosecond)
	assertPending(t, done)
	clock.Advance(time.Nanosecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := l.Status("h"); s.InFlight != 1 {
		t.Fatalf("InFlight = %d, want 1", s.InFlight)
	}
	l.Done("h")
	wantReady(t, l, "h", t0.Add(4*time.Second))
}

func TestWaitCancelledTakesNothing(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{})
	take(t, l, clock, "h")
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(l, ctx, "h")
	clock.BlockUntil(1)
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if s := l.Status("h"); s.InFlight != 0 {
		t.Fatalf("InFlight = %d after cancelled Wait", s.InFlight)
	}
	wantReady(t, l, "h", t0.Add(time.Second))
}

func TestNoMinDelay(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{MinDelay: ratelimit.NoMinDelay})
	for range 3 {
		take(t, l, clock, "h")
		wantReady(t, l, "h", t0)
	}
	if s := l.Status("h"); s.Delay != 0 {
		t.Fatalf("Delay = %v, want 0", s.Delay)
	}
}

func TestCrawlDelay(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{MinDelay: time.Second})

	l.SetCrawlDelay("h", 5*time.Second) // above the minimum: the site slows us
	take(t, l, clock, "h")
	wantReady(t, l, "h", t0.Add(5*time.Second))
	if s := l.Status("h"); s.Delay != 5*time.Second || s.Reason != ratelimit.ReasonCrawlDelay {
		t.Fatalf("status = %+v", s)
	}

	l.SetCrawlDelay("h", 200*time.Millisecond) // below: it cannot speed us up
	wantReady(t, l, "h", t0.Add(time.Second))
	if s := l.Status("h"); s.Delay != time.Second || s.Reason != ratelimit.ReasonMinDelay {
		t.Fatalf("status = %+v", s)
	}

	l.SetCrawlDelay("h", 0)
	clock.Advance(time.Second)
	take(t, l, clock, "h")
	wantReady(t, l, "h", t0.Add(2*time.Second))
}

func TestCrawlDelayCapIsLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	l, _ := newLimiter(t, ratelimit.Config{MaxDelay: 10 * time.Second, Logger: log})
	l.SetCrawlDelay("h", time.Hour)
	s := l.Status("h")
	if s.Delay != 10*time.Second || !s.Capped || s.Reason != ratelimit.ReasonCrawlDelay || s.CrawlDelay != time.Hour {
		t.Fatalf("status = %+v", s)
	}
	if !strings.Contains(buf.String(), "Crawl-delay capped") || !strings.Contains(buf.String(), "key=h") {
		t.Fatalf("clamp not logged: %q", buf.String())
	}
	buf.Reset()
	l.SetCrawlDelay("h", time.Hour) // unchanged: no repeated log
	if buf.Len() != 0 {
		t.Fatalf("unchanged Crawl-delay logged again: %q", buf.String())
	}
}

func TestRetryAfterPauses(t *testing.T) {
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
				l, clock := newLimiter(t, ratelimit.Config{MaxRetryAfter: time.Hour})
				take(t, l, clock, "h")
				l.Observe("h", status, http.Header{"Retry-After": {tc.value}}, 0, nil)
				want := t0.Add(max(tc.want, time.Second)) // never before the token is due
				wantReady(t, l, "h", want)
				if s := l.Status("h"); s.Backoff != 0 || s.Delay != time.Second {
					t.Fatalf("Retry-After also backed off: %+v", s)
				}
			})
		}
	}
}

func TestRetryAfterWakesNoOneEarly(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{})
	take(t, l, clock, "h")
	l.Observe("h", 429, http.Header{"Retry-After": {"30"}}, 0, nil)
	done := waitAsync(l, context.Background(), "h")
	clock.BlockUntil(1)
	clock.Advance(29 * time.Second)
	assertPending(t, done)
	clock.BlockUntil(1)
	clock.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !clock.Now().Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("Wait returned at t0%+v", clock.Now().Sub(t0))
	}
	l.Done("h")
}

func TestBackoffDoublesAndDecays(t *testing.T) {
	l, _ := newLimiter(t, ratelimit.Config{MinDelay: time.Second, MaxDelay: 60 * time.Second})
	fail := []struct {
		status int
		err    error
	}{
		{500, nil}, {503, nil}, {429, nil}, {0, context.DeadlineExceeded}, {502, nil}, {500, nil}, {500, nil},
	}
	want := []time.Duration{2, 4, 8, 16, 32, 60, 60}
	for i, f := range fail {
		l.Observe("h", f.status, nil, 0, f.err)
		s := l.Status("h")
		if s.Delay != want[i]*time.Second || s.Reason != ratelimit.ReasonBackoff {
			t.Fatalf("after failure %d: Delay %v (%v), want %vs", i+1, s.Delay, s.Reason, want[i])
		}
	}
	// Each success halves the back-off until it falls to the base delay.
	for _, w := range []time.Duration{30000, 15000, 7500, 3750, 1875, 1000} {
		l.Observe("h", 200, nil, 0, nil)
		if s := l.Status("h"); s.Delay != w*time.Millisecond {
			t.Fatalf("after success: Delay %v, want %v", s.Delay, w*time.Millisecond)
		}
	}
	if s := l.Status("h"); s.Backoff != 0 || s.Reason != ratelimit.ReasonMinDelay {
		t.Fatalf("not recovered: %+v", s)
	}
}

func TestBackoffFromZeroDelay(t *testing.T) {
	l, _ := newLimiter(t, ratelimit.Config{MinDelay: ratelimit.NoMinDelay})
	l.Observe("h", 500, nil, 0, nil)
	if s := l.Status("h"); s.Delay != time.Second {
		t.Fatalf("Delay = %v, want the 1s floor", s.Delay)
	}
	l.Observe("h", 200, nil, 0, nil)
	if s := l.Status("h"); s.Delay != 0 {
		t.Fatalf("Delay = %v after recovery, want 0", s.Delay)
	}
}

func TestBackoffJitterStaysInBounds(t *testing.T) {
	for range 50 {
		l, _ := newLimiter(t, ratelimit.Config{Jitter: 0.25})
		l.Observe("h", 500, nil, 0, nil)
		if d := l.Status("h").Delay; d < 2*time.Second || d > 2500*time.Millisecond {
			t.Fatalf("Delay = %v, want within [2s, 2.5s]", d)
		}
	}
}

func TestBackoffAppliesFromTheLastStart(t *testing.T) {
	// One request at a time: the doubled delay runs from the failed answer.
	l, clock := newLimiter(t, ratelimit.Config{})
	take(t, l, clock, "h")
	clock.Advance(500 * time.Millisecond)
	l.Observe("h", 500, nil, 0, nil)
	wantReady(t, l, "h", t0.Add(2500*time.Millisecond))

	// Several in flight: the next start is due a full doubled delay after
	// the last one, not after the half-refilled token finishes at the new
	// rate.
	l, clock = newLimiter(t, ratelimit.Config{Concurrency: 2})
	take(t, l, clock, "h")
	clock.Advance(500 * time.Millisecond)
	l.Observe("h", 500, nil, 0, nil)
	wantReady(t, l, "h", t0.Add(2*time.Second))
}

func TestCancelledRequestsDoNotBackOff(t *testing.T) {
	l, _ := newLimiter(t, ratelimit.Config{})
	l.Observe("h", 0, nil, 0, context.Canceled)
	if s := l.Status("h"); s.Backoff != 0 || s.Delay != time.Second {
		t.Fatalf("status = %+v", s)
	}
}

func TestAdaptiveDelay(t *testing.T) {
	l, _ := newLimiter(t, ratelimit.Config{AdaptiveFactor: 5})
	l.Observe("h", 200, nil, 2*time.Second, nil)
	if s := l.Status("h"); s.Delay != 10*time.Second || s.Reason != ratelimit.ReasonAdaptive || s.RTT != 2*time.Second {
		t.Fatalf("status = %+v", s)
	}
	// Fast responses pull the smoothed time down gradually.
	l.Observe("h", 200, nil, 400*time.Millisecond, nil)
	if s := l.Status("h"); s.RTT != 1600*time.Millisecond || s.Delay != 8*time.Second {
		t.Fatalf("status = %+v", s)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{MinDelay: ratelimit.NoMinDelay, Concurrency: 2})
	ctx := context.Background()
	for range 2 {
		if err := l.Wait(ctx, "h"); err != nil {
			t.Fatal(err)
		}
	}
	if s := l.Status("h"); s.InFlight != 2 {
		t.Fatalf("InFlight = %d", s.InFlight)
	}
	if at := l.ReadyAt("h"); !at.After(t0) {
		t.Fatalf("ReadyAt = t0%+v with every slot taken, want later", at.Sub(t0))
	}
	third := waitAsync(l, ctx, "h")
	for l.Status("h").Waiting != 1 {
		runtime.Gosched()
	}
	assertPending(t, third)
	if clock.Waiters() != 0 {
		t.Fatalf("a slot waiter set %d timers; it must wait for Done", clock.Waiters())
	}
	l.Done("h")
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if s := l.Status("h"); s.InFlight != 2 || s.Waiting != 0 {
		t.Fatalf("status = %+v", s)
	}
	l.Done("h")
	l.Done("h")
	wantReady(t, l, "h", t0)
}

func TestConcurrentWaitersKeepSpacing(t *testing.T) {
	// Many goroutines share one key; each start must come exactly one delay
	// after the previous one. The clock is advanced only when nobody is in
	// flight and nobody can start now, so each recorded time is the time
	// the start happened.
	l, clock := newLimiter(t, ratelimit.Config{MinDelay: time.Second})
	const n = 20
	var (
		mu     sync.Mutex
		starts []time.Time
		wg     sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			if err := l.Wait(context.Background(), "h"); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			starts = append(starts, clock.Now())
			mu.Unlock()
			l.Done("h")
		})
	}
	for {
		mu.Lock()
		got := len(starts)
		mu.Unlock()
		if got == n {
			break
		}
		if s := l.Status("h"); s.InFlight == 0 && s.ReadyAt.After(clock.Now()) {
			clock.Set(s.ReadyAt)
		} else {
			runtime.Gosched()
		}
	}
	wg.Wait()
	for i, at := range starts {
		if want := t0.Add(time.Duration(i) * time.Second); !at.Equal(want) {
			t.Fatalf("start %d at t0%+v, want t0%+v", i, at.Sub(t0), want.Sub(t0))
		}
	}
}

func TestDoneWithoutWaitIsLoggedAndIgnored(t *testing.T) {
	var buf bytes.Buffer
	l, clock := newLimiter(t, ratelimit.Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	l.Done("h")
	take(t, l, clock, "h")
	l.Done("h")
	if s := l.Status("h"); s.InFlight != 0 {
		t.Fatalf("InFlight = %d", s.InFlight)
	}
	if got := strings.Count(buf.String(), "Done without Wait"); got != 2 {
		t.Fatalf("logged %d times, want 2: %q", got, buf.String())
	}
}

func TestIdleKeysAreEvicted(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{IdleTimeout: time.Minute})
	ctx := context.Background()
	for i := range 100 {
		take(t, l, clock, "idle"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	if err := l.Wait(ctx, "busy"); err != nil { // in flight across the idle period
		t.Fatal(err)
	}
	l.Observe("paused", 429, http.Header{"Retry-After": {"3600"}}, 0, nil)
	if n := l.Len(); n != 102 {
		t.Fatalf("Len = %d, want 102", n)
	}
	clock.Advance(2 * time.Minute)
	for range 20 { // each touch forgets a few idle keys
		take(t, l, clock, "fresh")
		clock.Advance(time.Second)
	}
	if n := l.Len(); n != 3 {
		t.Fatalf("Len = %d after idle period, want 3 (fresh, busy, paused)", n)
	}
	if s := l.Status("busy"); s.InFlight != 1 {
		t.Fatalf("busy key lost its state: %+v", s)
	}
	if s := l.Status("paused"); !s.PausedUntil.Equal(t0.Add(time.Hour)) {
		t.Fatalf("paused key lost its pause: %+v", s)
	}
	l.Done("busy")
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []ratelimit.Config{
		{MinDelay: time.Minute, MaxDelay: time.Second},
		{Concurrency: -1},
		{AdaptiveFactor: -1},
		{MaxDelay: -time.Second},
		{Key: ratelimit.KeyMode(9)},
	} {
		if _, err := ratelimit.New(cfg); !errors.Is(err, ratelimit.ErrInvalidConfig) {
			t.Errorf("New(%+v) err = %v, want ErrInvalidConfig", cfg, err)
		}
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

// With one request in flight per key, the delay runs from the answer, so a
// request the server saw late is still followed by a full delay.
func TestDelayRunsFromTheAnswer(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{MinDelay: time.Second})
	if err := l.Wait(context.Background(), "h"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(300 * time.Millisecond) // the response takes 300 ms
	l.Observe("h", 200, nil, 300*time.Millisecond, nil)
	l.Done("h")
	wantReady(t, l, "h", t0.Add(1300*time.Millisecond))

	// With several requests in flight, the delay separates starts.
	l2, clock2 := newLimiter(t, ratelimit.Config{MinDelay: time.Second, Concurrency: 2})
	if err := l2.Wait(context.Background(), "h"); err != nil {
		t.Fatal(err)
	}
	clock2.Advance(300 * time.Millisecond)
	l2.Observe("h", 200, nil, 300*time.Millisecond, nil)
	l2.Done("h")
	wantReady(t, l2, "h", t0.Add(time.Second))
}

func TestConsecutiveFailures(t *testing.T) {
	l, _ := newLimiter(t, ratelimit.Config{MinDelay: ratelimit.NoMinDelay})
	fail := []struct {
		status int
		err    error
	}{{0, errors.New("connection reset")}, {503, nil}, {429, nil}, {500, nil}}
	for i, f := range fail {
		l.Observe("k", f.status, nil, time.Millisecond, f.err)
		if got := l.Status("k").Failures; got != i+1 {
			t.Fatalf("after %d failures Status.Failures = %d", i+1, got)
		}
	}
	l.Observe("k", 0, nil, 0, context.Canceled) // our doing, not the host's
	if got := l.Status("k").Failures; got != len(fail) {
		t.Errorf("a cancelled request changed Failures to %d", got)
	}
	l.Observe("k", 404, nil, time.Millisecond, nil)
	if got := l.Status("k").Failures; got != 0 {
		t.Errorf("after a success Failures = %d", got)
	}
}

func TestRetryAfterCappedByMaxRetryAfter(t *testing.T) {
	l, clock := newLimiter(t, ratelimit.Config{MinDelay: ratelimit.NoMinDelay, MaxDelay: 5 * time.Second, MaxRetryAfter: 5 * time.Second})
	l.Observe("k", 429, http.Header{"Retry-After": {"40"}}, time.Millisecond, nil)
	wantReady(t, l, "k", clock.Now().Add(5*time.Second))
}
