package redisstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// BenchmarkHeartbeat measures what a member's heartbeat costs Redis: the
// µs of Redis's time in the script and the commands it runs, per
// heartbeat, with three members in the job, and per process per second
// at the default liveness timeout (a heartbeat every fifth of it).
func BenchmarkHeartbeat(b *testing.B) {
	srv := redistest.Start(b)
	job := fmt.Sprintf("beat%d", jobs.Add(1))
	var stores []*Store
	for range 3 {
		s, err := New(srv.Client(), job, Options{})
		if err != nil {
			b.Fatal(err)
		}
		s.live.manual = true
		if err := s.ensureMember(ctx, 0); err != nil {
			b.Fatal(err)
		}
		stores = append(stores, s)
	}
	c := srv.Client()
	us0, cmds0 := scriptStats(b, c)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s := stores[i%len(stores)]
		s.live.mu.Lock()
		err := s.beat(ctx)
		s.live.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	us, cmds := scriptStats(b, c)
	per := float64(us-us0) / float64(b.N)
	b.ReportMetric(per, "redis-µs/beat")
	b.ReportMetric(float64(cmds-cmds0)/float64(b.N), "cmds/beat")
	b.ReportMetric(per*beatsPerTimeout/frontier.DefaultLease.Seconds(), "redis-µs/process/s")
}

// BenchmarkReclaim measures how long the lease of a process that stops
// beating (as a SIGKILL leaves it) takes to reach another process: two
// Stores with their heartbeats running and a liveness timeout of one
// second; one claims an item and stops beating; the other Claims every
// Poll (100 ms, the default) until it is handed the item. It reports the
// median and the worst time from the stop to the item, and the worst
// beyond the timeout.
func BenchmarkReclaim(b *testing.B) {
	const timeout = time.Second
	srv := redistest.Start(b)
	opt := frontier.ClaimOptions{PerHost: 1, Lease: timeout}
	var took []time.Duration
	for b.Loop() {
		job := fmt.Sprintf("reclaim%d", jobs.Add(1))
		dead, err := New(srv.Client(), job, Options{})
		if err != nil {
			b.Fatal(err)
		}
		alive, err := New(srv.Client(), job, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dead.Add(ctx, []frontier.Item{{URL: "http://k/1", Key: "k"}}, frontier.Limits{}); err != nil {
			b.Fatal(err)
		}
		c, err := dead.Claim(ctx, time.Now(), opt)
		if err != nil || c.Lease == nil {
			b.Fatalf("Claim = %+v, %v", c, err)
		}
		if c, err := alive.Claim(ctx, time.Now(), opt); err != nil || c.Lease != nil {
			b.Fatalf("Claim of the held item = %+v, %v", c, err)
		}
		// The process dies: its heartbeat stops, its leases stay.
		close(dead.live.stop)
		<-dead.live.stopped
		killed := time.Now()
		for {
			c, err := alive.Claim(ctx, time.Now(), opt)
			if err != nil {
				b.Fatal(err)
			}
			if c.Lease != nil {
				took = append(took, time.Since(killed))
				break
			}
			if time.Since(killed) > 10*timeout {
				b.Fatal("the dead process's item never came back")
			}
			time.Sleep(alive.PollInterval())
		}
		alive.Close()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "median-ms")
	b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "worst-ms")
	b.ReportMetric(float64((took[len(took)-1] - timeout).Milliseconds()), "worst-beyond-timeout-ms")
}
