//go:build unix

package crawler_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/redisstore"
	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/heedcrawl/heed/internal/testweb"
)

// affinityStore is a MemoryStore that claims with an Affinity of its own
// instead of the crawler's, the one setting the crawler gives no option
// for: how a crawl goes on a Store that ignores Affinity, all else being
// in memory.
type affinityStore struct {
	*frontier.MemoryStore
	affinity int          // the Affinity claims are made with; -1: the crawler's
	asked    atomic.Int64 // the Affinity the crawler asked for last
}

func (s *affinityStore) opt(opt frontier.ClaimOptions) frontier.ClaimOptions {
	s.asked.Store(int64(opt.Affinity))
	if s.affinity >= 0 {
		opt.Affinity = s.affinity
	}
	return opt
}

func (s *affinityStore) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	return s.MemoryStore.Claim(ctx, now, s.opt(opt))
}

func (s *affinityStore) ClaimKey(ctx context.Context, key string, now time.Time, opt frontier.ClaimOptions) (*frontier.Lease, time.Time, error) {
	return s.MemoryStore.ClaimKey(ctx, key, now, s.opt(opt))
}

// BenchmarkAffinity measures what ClaimOptions.Affinity buys a crawl in
// memory, on the shapes of bench workloads (a), 200 hosts × 50 pages, and
// (c), 2,000 hosts × 20 pages, both with no delay: each served as a
// virtual web on loopback and crawled as `crawl` crawls it (256 workers,
// one request at a time per host, any host, sitemaps, the crawler's
// transport and idle-connection cap), through a MemoryStore with the
// crawler's Affinity and with Affinity 0, which is how a Store that
// ignores it schedules; and through redisstore itself (which leases runs
// of up to 16 items for it), on a
// redis-server the benchmark starts (skipped without one), a fresh job
// per crawl. "wrapped" passes the crawler's Affinity through the same
// wrapper as "affinity=0", to show the wrapper costs nothing. It reports
// pages/s of the crawl's wall time, the CPU time per page of the whole
// process (crawler and web server; not redis-server's), TCP connections
// to the web opened per crawl, and requests per connection:
//
//	go test -run '^$' -bench 'Affinity/a/' -benchtime 3x ./crawler
//
// Run it a few times rather than with -count, which runs each case its
// count of times in a row instead of alternating them.
func BenchmarkAffinity(b *testing.B) {
	for _, w := range []struct {
		name string
		cfg  testweb.Config
	}{
		{"a", testweb.Config{Hosts: 200, PagesPerHost: 50, Seed: 1}},
		{"c", testweb.Config{Hosts: 2000, PagesPerHost: 20, Seed: 3}},
	} {
		b.Run(w.name, func(b *testing.B) { benchAffinity(b, w.cfg) })
	}
}

func benchAffinity(b *testing.B, cfg testweb.Config) {
	v, err := testweb.NewVirtual(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	truth, err := v.Truth()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		affinity int // -1: the crawler's, no wrapper; -2: the crawler's, wrapped; -3: redisstore
	}{
		{"affinity=crawler", -1},
		{"affinity=crawler,wrapped", -2},
		{"affinity=0", 0},
		{"redisstore", -3},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var srv *redistest.Server
			if tc.affinity == -3 {
				srv = redistest.StartWith(b, redistest.Options{NoPersistence: true}) // as the bench harness runs it
			}
			var pages, dials, requests int64
			var wall, cpu time.Duration
			asked := int64(-1)
			for i := range b.N {
				v.Log.Reset()
				var opened atomic.Int64
				tr := (&fetch.Fetcher{}).CrawlTransport()
				tr.Proxy = nil
				tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
					opened.Add(1)
					return v.DialContext(ctx, network, addr)
				}
				tr.MaxIdleConns = 2 * 256 // as the crawler caps its own for 256 workers
				opts := []crawler.Option{
					crawler.WithTransport(tr),
					crawler.WithDelay(0),
					crawler.WithPerHost(1),
					crawler.WithWorkers(256),
					crawler.WithScope(frontier.ScopeAny),
					crawler.WithSitemaps(true),
				}
				var st *affinityStore
				var rs *redisstore.Store
				switch tc.affinity {
				case -1:
				case -3:
					rs, err = redisstore.New(srv.Client(), fmt.Sprintf("bench-%d", i), redisstore.Options{})
					if err != nil {
						b.Fatal(err)
					}
					opts = append(opts, crawler.WithStore(rs))
				default:
					st = &affinityStore{MemoryStore: new(frontier.MemoryStore), affinity: max(tc.affinity, -1)}
					opts = append(opts, crawler.WithStore(st))
				}
				c, err := crawler.New(opts...)
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				start, cpu0 := time.Now(), cpuTime(b)
				err = c.Run(ctx, v.Web.Seeds()...)
				wall += time.Since(start)
				cpu += cpuTime(b) - cpu0
				cancel()
				tr.CloseIdleConnections()
				if rs != nil {
					rs.Close()
				}
				if err != nil {
					b.Fatalf("Run: %v", err)
				}
				rep := truth.Analyze(v.Log.Entries(), testweb.AnalyzeOptions{})
				if rep.Coverage != 1 || len(rep.Duplicates) > 0 || rep.PeakInFlightPerHost > 1 {
					b.Fatalf("the crawl went wrong:\n%s", rep)
				}
				pages += int64(rep.ReachableFetched)
				requests += int64(rep.Requests)
				dials += opened.Load()
				if st != nil {
					asked = st.asked.Load()
				}
			}
			if tc.affinity == -2 && asked <= 0 {
				b.Fatalf("the crawler claimed with Affinity %d; this benchmark measures what a positive one buys", asked)
			}
			b.ReportMetric(float64(pages)/wall.Seconds(), "pages/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(pages), "cpu-µs/page")
			b.ReportMetric(float64(dials)/float64(b.N), "conns/op")
			b.ReportMetric(float64(requests)/float64(dials), "reqs/conn")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
