package pebblestore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/heedcrawl/heed/frontier"
)

// BenchmarkCrawlShape is workload (e)'s use of a Store, without the
// network: 1,000 hosts of 1,000 pages, each page claimed and done with its
// links (DoneAdding): three children in a tree (new), two random pages of its
// host and one of another (mostly seen). It reports pages/s and the
// process's CPU time (the compactions run beside the workload), for
// comparing pebble settings (HEED_BENCH_TUNE, see benchWorkload; here
// also "default": pebble's own, which the Store changes):
//
//	go test -run '^$' -bench BenchmarkCrawlShape -benchtime 1x ./frontier/pebblestore
func BenchmarkCrawlShape(b *testing.B) {
	for b.Loop() {
		crawlShape(b)
	}
}

func crawlShape(t *testing.B) {
	const hosts, pages = 1000, 1000
	ctx := context.Background()
	var start0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &start0)
	dir := t.TempDir()
	opts := Options{}
	opts.tune = func(po *pebble.Options) {
		for _, tt := range strings.Split(os.Getenv("HEED_BENCH_TUNE"), ",") {
			switch tt {
			case "default":
				po.L0CompactionThreshold, po.L0StopWritesThreshold = 4, 12
				po.Experimental.TombstoneDenseCompactionThreshold = 0.10
				po.ApplyCompressionSettings(func() pebble.DBCompressionSettings {
					return pebble.UniformDBCompressionSettings(sstable.SnappyCompression)
				})
			case "l08": // the Store's setting before b56792f (2026-11-23)
				po.L0CompactionThreshold, po.L0StopWritesThreshold = 8, 24
			}
		}
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	url := func(h, k int) string { return fmt.Sprintf("http://h%04d.test:8080/p/%d", h, k) }
	key := func(h int) string { return fmt.Sprintf("h%04d.test:8080", h) }
	var batch []frontier.Item
	for h := range hosts {
		batch = append(batch, frontier.Item{URL: url(h, 0), Key: key(h)})
	}
	if _, err := s.Add(ctx, batch, frontier.Limits{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	start := time.Now()
	done, dups := 0, 0
	var cp [8]byte
	for {
		c, err := s.Claim(ctx, now, frontier.ClaimOptions{PerHost: 1})
		if err != nil {
			t.Fatal(err)
		}
		if c.Lease == nil {
			break
		}
		done++
		binary.BigEndian.PutUint64(cp[:], uint64(done))
		var h, k int
		fmt.Sscanf(c.Lease.Item.URL, "http://h%04d.test:8080/p/%d", &h, &k)
		batch = batch[:0]
		for c := 3*k + 1; c <= 3*k+3 && c < pages; c++ {
			batch = append(batch, frontier.Item{URL: url(h, c), Key: key(h), Depth: 1, Referrer: url(h, k)})
		}
		for range 2 {
			batch = append(batch, frontier.Item{URL: url(h, rng.IntN(pages)), Key: key(h), Depth: 1, Referrer: url(h, k)})
		}
		o := rng.IntN(hosts)
		batch = append(batch, frontier.Item{URL: url(o, rng.IntN(pages)), Key: key(o), Depth: 1, Referrer: url(h, k)})
		refused, err := s.DoneAdding(ctx, c.Lease, now, frontier.Outcome{Pace: c.Lease.Pace, Checkpoint: cp[:]}, batch, frontier.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range refused {
			if e != nil {
				dups++
			}
		}
	}
	took := time.Since(start)
	m := s.db.Metrics()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano() - start0.Utime.Nano() - start0.Stime.Nano())
	t.ReportMetric(float64(done)/took.Seconds(), "pages/s")
	t.ReportMetric(cpu.Seconds(), "CPU-s")
	t.Logf("%d pages, %d links seen before, in %v: %.0f pages/s; CPU %v", done, dups, took, float64(done)/took.Seconds(), cpu)
	if os.Getenv("HEED_BENCH_METRICS") != "" {
		t.Logf("\n%s", m)
	}
	s.Close()
}
