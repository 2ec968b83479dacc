package ratelimit_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/ratelimit"
)

var bt0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func wantReady(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s: ready at t0+%v, want t0+%v", what, got.Sub(bt0), want.Sub(bt0))
	}
}

func TestBucketZeroIsFull(t *testing.T) {
	var b ratelimit.Bucket
	wantReady(t, "zero bucket", b.ReadyAt(bt0), bt0)
	wantReady(t, "Take(0)", b.Take(bt0, 0), bt0)
	wantReady(t, "Take(-1s)", b.Take(bt0, -time.Second), bt0)
}

// With one request in flight, the token is taken when the answer arrives:
// the next request starts a full rest after it, however long the fetch.
func TestBucketRestFromTheAnswer(t *testing.T) {
	clk := fakeclock.New(bt0)
	var b ratelimit.Bucket
	clk.Advance(time.Minute) // a long fetch
	wantReady(t, "answer after 1m, rest 20s", b.Take(clk.Now(), 20*time.Second), bt0.Add(80*time.Second))
	clk.Advance(10 * time.Second)
	wantReady(t, "halfway", b.ReadyAt(clk.Now()), bt0.Add(80*time.Second))
	clk.Advance(10 * time.Second)
	wantReady(t, "when due", b.ReadyAt(clk.Now()), clk.Now())
	clk.Advance(3 * time.Second) // the next answer, a shorter delay
	wantReady(t, "second answer, rest 2s", b.Take(clk.Now(), 2*time.Second), bt0.Add(85*time.Second))
}

// With several in flight, each claim takes a token at rate Every(Delay):
// requests start at least a Delay apart, and waiting longer earns no burst.
func TestBucketSpacesStartsWithoutBurst(t *testing.T) {
	clk := fakeclock.New(bt0)
	var b ratelimit.Bucket
	const delay = time.Second
	var starts []time.Time
	for range 5 {
		now := clk.Now()
		if r := b.ReadyAt(now); r.After(now) {
			clk.Advance(r.Sub(now))
			now = r
		}
		starts = append(starts, now)
		b.Take(now, delay)
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap != delay {
			t.Errorf("start %d came %v after the one before, want %v", i, gap, delay)
		}
	}
	clk.Advance(time.Hour) // idle: the bucket holds one token, no more
	now := clk.Now()
	wantReady(t, "after an hour idle", b.Take(now, delay), now.Add(delay))
	wantReady(t, "a second claim at once", b.ReadyAt(now), now.Add(delay))
}

// A pause (back-off, Retry-After) acts on the same bucket: it stretches a
// rest under way, and never shortens one.
func TestBucketPauseStretchesNeverShortens(t *testing.T) {
	var b ratelimit.Bucket
	wantReady(t, "claim, Delay 20s", b.Take(bt0, 20*time.Second), bt0.Add(20*time.Second))
	wantReady(t, "a 10s rest", b.Take(bt0, 10*time.Second), bt0.Add(20*time.Second))
	wantReady(t, "a 10s rest 5s on", b.Take(bt0.Add(5*time.Second), 10*time.Second), bt0.Add(20*time.Second))
	wantReady(t, "a 30s pause 5s on", b.Take(bt0.Add(5*time.Second), 30*time.Second), bt0.Add(35*time.Second))
	wantReady(t, "while paused", b.ReadyAt(bt0.Add(34*time.Second)), bt0.Add(35*time.Second))
	wantReady(t, "pause over", b.ReadyAt(bt0.Add(35*time.Second)), bt0.Add(35*time.Second))
	// The next claim takes the token at the Delay's rate again.
	wantReady(t, "next claim, Delay 20s", b.Take(bt0.Add(35*time.Second), 20*time.Second), bt0.Add(55*time.Second))
}

// A Store that reopens rebuilds the bucket from the ready time it kept:
// a fresh bucket whose token is due then.
func TestBucketRebuiltFromReadyTime(t *testing.T) {
	ready := bt0.Add(90*time.Minute + 123456789)
	var b ratelimit.Bucket
	wantReady(t, "rebuilt", b.Take(bt0, ready.Sub(bt0)), ready)
	wantReady(t, "a Delay from reopening, shorter", b.Take(bt0, time.Second), ready)
	wantReady(t, "a claim at the ready time", b.Take(ready, time.Second), ready.Add(time.Second))
}

// TestBucketIsNextAllowed: a token bucket of burst 1 is a next-allowed time
// by another name: over random claims, answers and pauses, in the order a
// Store sees them, each Take leaves the bucket ready exactly at
// max(ready before, now+d) — the rule the frontier paced by before it had
// buckets, to the nanosecond.
func TestBucketIsNextAllowed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	durations := []time.Duration{0, time.Millisecond, 250 * time.Millisecond, time.Second, 1500 * time.Millisecond,
		7 * time.Second, time.Minute, time.Hour, 333333333, 1000000007}
	events := 0
	for seq := range 200 {
		var b ratelimit.Bucket
		now := bt0.Add(time.Duration(seq) * time.Hour)
		next := now
		for range 500 {
			switch rng.IntN(4) {
			case 0: // at the ready time exactly, as a claim comes
				if next.After(now) {
					now = next
				}
			case 1: // a little before or after it
				now = maxTime(now, next.Add(time.Duration(rng.Int64N(int64(2*time.Second)))-time.Second))
			default: // any time later
				now = now.Add(time.Duration(rng.Int64N(int64(3 * time.Second))))
			}
			d := durations[rng.IntN(len(durations))]
			if d > 0 && now.Add(d).After(next) {
				next = now.Add(d)
			}
			got := b.Take(now, d)
			events++
			if want := maxTime(next, now); !got.Equal(want) {
				t.Fatalf("sequence %d, event %d: Take(t+%v, %v) ready at t+%v, want t+%v",
					seq, events, now.Sub(bt0), d, got.Sub(bt0), want.Sub(bt0))
			}
		}
	}
	t.Logf("%d events, every ready time exact", events)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
