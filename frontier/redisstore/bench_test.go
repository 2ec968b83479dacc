package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
// links spread over twenty hosts; with revisits, the DoneAdding also
// queues the page again, due in an hour, with a Visit. It reports the
// Store's script calls and round trips per page (a script call whose
// script Redis had not loaded counts twice, as it costs two), and the time
// Redis spent running them and the commands they ran, per page (INFO
// commandstats).
func BenchmarkCrawl(b *testing.B) {
	b.Run("new", func(b *testing.B) { benchCrawl(b, false) })
	b.Run("revisit", func(b *testing.B) { benchCrawl(b, true) })
}

func benchCrawl(b *testing.B, revisit bool) {
	srv := redistest.Start(b)
	c := srv.Client()
	hook := new(countingHook)
	c.AddHook(hook)
	cr := newCrawl(b, c, "bench", 0)
	cr.page(b, -1, revisit) // loads the scripts
	us0, cmds0 := scriptStats(b, c)
	hook.n.Store(0)
	hook.scripts.Store(0)
	b.ResetTimer()
	for i := range b.N {
		cr.page(b, i, revisit)
	}
	b.StopTimer()
	b.ReportMetric(float64(hook.scripts.Load())/float64(b.N), "scripts/page")
	b.ReportMetric(float64(hook.n.Load())/float64(b.N), "trips/page")
	us, cmds := scriptStats(b, c)
	b.ReportMetric(float64(us-us0)/float64(b.N), "script-µs/page")
	b.ReportMetric(float64(cmds-cmds0)/float64(b.N), "cmds/page")
}

// scriptStats returns the µs Redis has spent running scripts (EVALSHA and
// EVAL) and the commands they ran (INFO commandstats counts those too;
// INFO itself, which every script runs, is left out with the scripts).
func scriptStats(b *testing.B, c *redis.Client) (us, cmds int64) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		name, stats, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		script := name == "cmdstat_evalsha" || name == "cmdstat_eval" || name == "cmdstat_fcall"
		for _, f := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			switch {
			case k != "calls" && k != "usec":
			case err != nil:
				b.Fatalf("INFO commandstats: %s: %v", line, err)
			case script && k == "usec":
				us += n
			case !script && k == "calls" && name != "cmdstat_info" && name != "cmdstat_script|load":
				cmds += n
			}
		}
	}
	return us, cmds
}

// BenchmarkRevisitMemory measures the Redis memory a queued revisit costs:
// 100,000 items with a full Visit (a 20-byte ETag), due in an hour, over
// 1,000 keys, as a Done's Revisit queues them (Add queues an item due
// later the same way). It reports used_memory's growth per item (seen-set
// and key state included), the share of the sorted sets of items due
// later alone (what deleting them frees), the same items' share when due
// at once (the lists, for comparison), and their mean encoded size.
func BenchmarkRevisitMemory(b *testing.B) {
	const keys, perKey = 1000, 100
	srv := redistest.Start(b)
	c := srv.Client()
	for range b.N {
		var encoded int
		queue := func(later bool) (grew, freed float64) {
			s, err := New(c, fmt.Sprintf("mem%d", jobs.Add(1)), Options{})
			if err != nil {
				b.Fatal(err)
			}
			before := usedMemory(b, c)
			now := time.Now()
			for k := range keys {
				batch := make([]frontier.Item, perKey)
				for i := range batch {
					it := &batch[i]
					it.Key = fmt.Sprintf("host-%04d.example.com", k)
					it.URL = fmt.Sprintf("https://%s/section/page-%06d.html", it.Key, i)
					it.Referrer = fmt.Sprintf("https://%s/section/", it.Key)
					it.Depth = 3
					it.Visit = fullVisit(it.URL, now)
					if later {
						it.Due = now.Add(time.Hour + time.Duration(i)*time.Second)
					}
					encoded += len(encodeItem(nil, it))
				}
				if _, err := s.Add(ctx, batch, frontier.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			after := usedMemory(b, c)
			pattern := "heed:{" + s.Job() + "/*}:q:*"
			if later {
				pattern = "heed:{" + s.Job() + "/*}:d:*"
			}
			ks, err := c.Keys(ctx, pattern).Result()
			if err != nil || len(ks) != keys {
				b.Fatalf("%d keys %s, want %d: %v", len(ks), pattern, keys, err)
			}
			if err := c.Del(ctx, ks...).Err(); err != nil {
				b.Fatal(err)
			}
			n := float64(keys * perKey)
			return float64(after-before) / n, float64(after-usedMemory(b, c)) / n
		}
		grew, d := queue(true)
		_, q := queue(false)
		b.ReportMetric(grew, "B/revisit-queued")
		b.ReportMetric(d, "B/revisit-in-D")
		b.ReportMetric(q, "B/item-in-Q")
		b.ReportMetric(float64(encoded)/float64(2*keys*perKey), "B/encoded-item")
	}
}

// usedMemory returns Redis's used_memory.
func usedMemory(b *testing.B, c *redis.Client) int64 {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatalf("INFO memory: %s: %v", line, err)
			}
			return n
		}
	}
	b.Fatal("INFO memory: no used_memory")
	return 0
}
