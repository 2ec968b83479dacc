package ratelimit_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/ratelimit"
	"golang.org/x/time/rate"
)

const benchHosts = 10000

func benchKeys() []string {
	keys := make([]string, benchHosts)
	for i := range keys {
		keys[i] = "h" + strconv.Itoa(i) + ".example"
	}
	return keys
}

// BenchmarkRequestCycle is the limiter's cost per request in a crawler:
// ReadyAt (the frontier asks), Wait (returns at once), Observe, Done,
// ReadyAt again, over 10,000 hosts visited round-robin at a 1 s delay.
func BenchmarkRequestCycle(b *testing.B) {
	clock := fakeclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	lim, _ := ratelimit.New(ratelimit.Config{Clock: clock, Jitter: -1})
	keys := benchKeys()
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%benchHosts == 0 {
			clock.Advance(time.Second)
		}
		k := keys[i%benchHosts]
		lim.ReadyAt(k)
		if err := lim.Wait(ctx, k); err != nil {
			b.Fatal(err)
		}
		lim.Observe(k, 200, nil, 50*time.Millisecond, nil)
		lim.Done(k)
		lim.ReadyAt(k)
		i++
	}
}

// BenchmarkBaselineRateMap is the naive design for comparison: a mutex
// and a map of rate.Limiters, one AllowN and two TokensAt per request, no
// in-flight limit, back-off or eviction.
func BenchmarkBaselineRateMap(b *testing.B) {
	var mu sync.Mutex
	m := make(map[string]*rate.Limiter)
	keys := benchKeys()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%benchHosts == 0 {
			now = now.Add(time.Second)
		}
		k := keys[i%benchHosts]
		mu.Lock()
		l := m[k]
		if l == nil {
			l = rate.NewLimiter(rate.Every(time.Second), 1)
			m[k] = l
		}
		l.TokensAt(now)
		if !l.AllowN(now, 1) {
			b.Fatal("not allowed")
		}
		l.TokensAt(now)
		mu.Unlock()
		i++
	}
}

// BenchmarkMemoryPerHost reports the heap held per tracked host.
func BenchmarkMemoryPerHost(b *testing.B) {
	keys := benchKeys()
	for b.Loop() {
		clock := fakeclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		lim, _ := ratelimit.New(ratelimit.Config{Clock: clock})
		for _, k := range keys {
			_ = lim.Wait(context.Background(), k)
			lim.Done(k)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/benchHosts, "B/host")
		runtime.KeepAlive(lim)
	}
}
