package redisstore

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// BenchmarkPage measures what a page costs the Store: its Claim, an Add of
// ten links, its Done, on a local redis-server that fsyncs every write.
func BenchmarkPage(b *testing.B) {
	srv := redistest.Start(b)
	s, err := New(srv.Client(), "bench", Options{})
	if err != nil {
		b.Fatal(err)
	}
	var seeds []frontier.Item
	for i := range 100 {
		seeds = append(seeds, item(fmt.Sprintf("h%d", i), "/"))
	}
	if _, err := s.Add(ctx, seeds, frontier.Limits{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		c, err := s.Claim(ctx, time.Now(), opt)
		if err != nil || c.Lease == nil {
			b.Fatalf("Claim = %+v, %v", c, err)
		}
		links := make([]frontier.Item, 10)
		for j := range links {
			links[j] = item(fmt.Sprintf("h%d", (i+j)%100), fmt.Sprintf("/%d/%d", i, j))
		}
		if _, err := s.Add(ctx, links, frontier.Limits{}); err != nil {
			b.Fatal(err)
		}
		if err := s.Done(ctx, c.Lease, time.Now(), frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPageParallel is BenchmarkPage with many workers at once: Redis
// fsyncs the writes of one event-loop turn together.
func BenchmarkPageParallel(b *testing.B) {
	srv := redistest.Start(b)
	s, err := New(srv.Client(), "bench", Options{})
	if err != nil {
		b.Fatal(err)
	}
	var seeds []frontier.Item
	for i := range 1000 {
		seeds = append(seeds, item(fmt.Sprintf("h%d", i), "/"))
	}
	if _, err := s.Add(ctx, seeds, frontier.Limits{}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1))
			c, err := s.Claim(ctx, time.Now(), opt)
			if err != nil {
				b.Error(err)
				return
			}
			if c.Lease == nil {
				continue
			}
			links := make([]frontier.Item, 10)
			for j := range links {
				links[j] = item(fmt.Sprintf("h%d", (i+j)%1000), fmt.Sprintf("/%d/%d", i, j))
			}
			if _, err := s.Add(ctx, links, frontier.Limits{}); err != nil {
				b.Error(err)
				return
			}
			if err := s.Done(ctx, c.Lease, time.Now(), frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCrawl is a crawl in the shape of a real one, through a
// Frontier on the Store: each page is a Next and a DoneAdding of ten
// links spread over twenty hosts. It reports the Store's script calls and
// round trips per page (a script call whose script Redis had not loaded
// counts twice, as it costs two).
func BenchmarkCrawl(b *testing.B) {
	srv := redistest.Start(b)
	c := srv.Client()
	hook := new(countingHook)
	c.AddHook(hook)
	s, err := New(c, "bench", Options{})
	if err != nil {
		b.Fatal(err)
	}
	f := frontier.New(frontier.Config{Store: s, Scope: frontier.ScopeAny, Poll: s.PollInterval()})
	var seeds []string
	for i := range 20 {
		seeds = append(seeds, fmt.Sprintf("http://h%d.example/", i))
	}
	if _, err := f.AddSeeds(ctx, seeds); err != nil {
		b.Fatal(err)
	}
	page := func(i int) {
		l, err := f.Next(ctx)
		if err != nil {
			b.Fatalf("page %d: %v", i, err)
		}
		links := make([]frontier.Item, 10)
		for j := range links {
			links[j] = l.Child(fmt.Sprintf("http://h%d.example/p%d-%d", (i+j)%20, i, j))
		}
		if _, err := f.DoneAdding(ctx, l, frontier.Outcome{Pace: l.Pace}, links); err != nil {
			b.Fatal(err)
		}
	}
	page(-1) // loads the scripts
	hook.n.Store(0)
	hook.scripts.Store(0)
	b.ResetTimer()
	for i := range b.N {
		page(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(hook.scripts.Load())/float64(b.N), "scripts/page")
	b.ReportMetric(float64(hook.n.Load())/float64(b.N), "trips/page")
}
