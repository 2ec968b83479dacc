package frontier_test

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// BenchmarkCanonical compares Canonical with net/url's Parse+String (which
// does much less: no case folding, IDN, ports, dot segments or escape
// normalisation) as a yardstick.
func BenchmarkCanonical(b *testing.B) {
	inputs := map[string]string{
		"canonical": "https://www.example.com/articles/2024/some-article-title?page=2&sort=asc",
		"messy":     "HTTPS://WWW.Example.com:443/articles/./2024/x/../%7euser/some%2dtitle?page=2&sort=asc#comments",
		"idn":       "http://bücher.example/katalog/",
	}
	for _, name := range []string{"canonical", "messy", "idn"} {
		in := inputs[name]
		b.Run("heed/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := frontier.Canonical(in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("net-url/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				u, err := url.Parse(in)
				if err != nil {
					b.Fatal(err)
				}
				_ = u.String()
			}
		})
	}
}

func benchURL(host, n int) string {
	buf := make([]byte, 0, 48)
	buf = append(buf, "http://h"...)
	buf = strconv.AppendInt(buf, int64(host), 10)
	buf = append(buf, ".example/page/"...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	return string(buf)
}

// BenchmarkSchedule measures scheduler throughput with many keys in the
// ready-heap and no rest: each op is one Add, one Next and one Done.
// Run with a fixed -benchtime=Nx: the URLs are generated beforehand.
func BenchmarkSchedule(b *testing.B) {
	for _, hosts := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			ctx := context.Background()
			fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
			for h := range hosts {
				if err := fr.Add(ctx, frontier.Item{URL: benchURL(h, 0)}); err != nil {
					b.Fatal(err)
				}
			}
			urls := make([]string, b.N)
			for i := range urls {
				urls[i] = benchURL(i%hosts, 1+i/hosts)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := fr.Add(ctx, frontier.Item{URL: urls[i], Depth: 1}); err != nil {
					b.Fatal(err)
				}
				l, err := fr.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := fr.Done(ctx, l, frontier.Outcome{Pace: l.Pace}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "urls/s")
		})
	}
}

// BenchmarkScheduleParallel is BenchmarkSchedule with GOMAXPROCS workers
// sharing one Frontier, to show lock contention.
func BenchmarkScheduleParallel(b *testing.B) {
	const hosts = 100_000
	ctx := context.Background()
	fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny})
	for h := range hosts {
		if err := fr.Add(ctx, frontier.Item{URL: benchURL(h, 0)}); err != nil {
			b.Fatal(err)
		}
	}
	urls := make([]string, b.N)
	for i := range urls {
		urls[i] = benchURL(i%hosts, 1+i/hosts)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1) - 1)
			if err := fr.Add(ctx, frontier.Item{URL: urls[i%len(urls)], Depth: 1}); err != nil {
				b.Error(err)
				return
			}
			l, err := fr.Next(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if err := fr.Done(ctx, l, frontier.Outcome{Pace: l.Pace}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "urls/s")
}

// BenchmarkMemoryPerURL queues 1,000,000 URLs and reports the heap the
// Frontier and its MemoryStore use per queued URL beyond the URL strings
// themselves (allocated before the first measurement), for several
// spreads of URLs over hosts. Referrers share the parent's string, as
// links from one page do. Run with -benchtime=1x.
func BenchmarkMemoryPerURL(b *testing.B) {
	const n = 1_000_000
	for _, tc := range []struct {
		hosts int
		exact bool
	}{
		{1_000, false}, {10_000, false}, {100_000, false}, {1_000_000, false}, {100_000, true},
	} {
		name := fmt.Sprintf("hosts=%d", tc.hosts)
		if tc.exact {
			name += "/exact-seen"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			urls := make([]string, n)
			refs := make([]string, tc.hosts)
			for i := range urls {
				urls[i] = benchURL(i%tc.hosts, i/tc.hosts)
			}
			for h := range refs {
				refs[h] = benchURL(h, -1)
			}
			var perURL float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, Store: &frontier.MemoryStore{ExactSeen: tc.exact}})
				for i, u := range urls {
					if err := fr.Add(ctx, frontier.Item{URL: u, Depth: 1, Referrer: refs[i%tc.hosts]}); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				s, err := fr.Counts(ctx)
				if err != nil || s.Queued != n {
					b.Fatalf("queued %d (%v), want %d", s.Queued, err, n)
				}
				runtime.KeepAlive(fr)
				perURL = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
			}
			runtime.KeepAlive(urls)
			runtime.KeepAlive(refs)
			b.ReportMetric(perURL, "B/url")
		})
	}
}

// BenchmarkMemoryPerRevisit is BenchmarkMemoryPerURL for URLs known and
// queued as revisits: 1,000,000 URLs are added, fetched once and queued
// again, due in an hour, with a Visit of every field set (a 20-byte ETag
// and an estimator with an observation). It reports the heap the Frontier
// and its MemoryStore use per URL beyond the URL strings (the ETags are
// counted: they are allocated as a crawl would, one per URL). Run with
// -benchtime=1x.
func BenchmarkMemoryPerRevisit(b *testing.B) {
	const n = 1_000_000
	for _, hosts := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			ctx := context.Background()
			urls := make([]string, n)
			for i := range urls {
				urls[i] = benchURL(i%hosts, i/hosts)
			}
			var est revisit.Page
			if err := est.Observe(revisit.Obs{Interval: time.Hour, Changed: true}); err != nil {
				b.Fatal(err)
			}
			var perURL float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				fr := frontier.New(frontier.Config{Scope: frontier.ScopeAny, Store: new(frontier.MemoryStore)})
				for _, u := range urls {
					if err := fr.Add(ctx, frontier.Item{URL: u, Depth: 1}); err != nil {
						b.Fatal(err)
					}
				}
				now := time.Now()
				for i := range n {
					l, err := fr.Next(ctx)
					if err != nil {
						b.Fatal(err)
					}
					rv := l.Item
					rv.Due = now.Add(time.Hour)
					rv.Visit = &frontier.Visit{Fetched: now, Changed: now, ETag: fmt.Sprintf(`"%018x"`, i),
						LastModified: now.Add(-time.Hour), Digest: uint64(i) * 0x9e3779b97f4a7c15, Status: 200, Gone: 1, Estimator: est}
					if err := fr.Done(ctx, l, frontier.Outcome{Pace: l.Pace, Revisit: &rv}); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				s, err := fr.Counts(ctx)
				if err != nil || s.Queued != n || s.Ready != 0 {
					b.Fatalf("counts %+v (%v), want %d queued, none ready", s, err, n)
				}
				runtime.KeepAlive(fr)
				perURL = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
			}
			runtime.KeepAlive(urls)
			b.ReportMetric(perURL, "B/url")
		})
	}
}
