package pebblestore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
	frontierrevisit "github.com/heedcrawl/heed/frontier/revisit"
)

// BenchmarkStore adds, leases and acks HEED_BENCH_URLS URLs (default
// 200,000) over HEED_BENCH_HOSTS hosts (default one per 100 URLs) in a
// MemoryStore and in a Store on disk, end to end, each in a child process
// of its own so that its peak RSS is its own. It reports URLs/s over the
// whole run, the peak RSS, and the two phases' rates. The children run
// with MALLOC_ARENA_MAX=2 unless it is set, as crawl does for itself. The
// figures of BENCHMARKS.md:
//
//	HEED_BENCH_URLS=10000000 go test -run '^$' -bench BenchmarkStore -benchtime 1x -timeout 2h ./frontier/pebblestore
//
// pebble-revisit is a continuous crawl's use of a Store on disk: every URL
// is added stamped with its admission time, as the Frontier does, fetched
// once and queued again by its Done as a revisit with a full Visit (a
// 20-byte ETag) due an hour or two later, in no order within a key, then
// claimed again once due and done for good. It reports the revisits' rate
// beside the rest, and its peak RSS is that of a Store whose every known
// URL is under revisit: pebblestore's target for continuous crawling is
// 250 MB at ten million URLs.
//
// For experiments, the child also reads HEED_BENCH_CACHE_MB and
// HEED_BENCH_MEMTABLE_MB (Options), HEED_BENCH_TUNE (pebble settings, see
// benchWorkload), HEED_BENCH_TRACE (memory every second on stderr),
// HEED_BENCH_METRICS (pebble's metrics at the end), HEED_BENCH_CPUPROFILE
// and HEED_BENCH_MEMPROFILE (heap profiles once everything is added, in
// that file, then once the first fetches are done and, under revisit, once
// the revisits are, in that file with .drained and .revisited added).
func BenchmarkStore(b *testing.B) {
	n := envInt(b, "HEED_BENCH_URLS", 200_000)
	hosts := envInt(b, "HEED_BENCH_HOSTS", max(n/100, 1))
	for _, kind := range []string{"memory", "pebble", "pebble-revisit"} {
		b.Run(kind, func(b *testing.B) {
			var res benchResult
			for b.Loop() {
				res = runBenchChild(b, kind, n, hosts)
			}
			b.ReportMetric(float64(n)/res.Total.Seconds(), "URLs/s")
			b.ReportMetric(float64(res.PeakRSS)/(1<<20), "peak-RSS-MB")
			b.ReportMetric(float64(n)/res.Add.Seconds(), "add-URLs/s")
			b.ReportMetric(float64(n)/res.Drain.Seconds(), "lease+ack-URLs/s")
			if res.DiskBytes > 0 {
				b.ReportMetric(float64(res.DiskBytes)/(1<<20), "disk-MB")
			}
			if res.Revisit > 0 {
				b.ReportMetric(float64(n)/res.Revisit.Seconds(), "revisit-URLs/s")
			}
			b.Logf("%s: %d URLs over %d hosts in %v (adding %v, leasing and acking the rest %v, revisiting %v, closing %v); peak RSS %.0f MB; reopening %v; %s",
				kind, n, hosts, res.Total.Round(time.Millisecond), res.Add.Round(time.Millisecond), res.Drain.Round(time.Millisecond),
				res.Revisit.Round(time.Millisecond), res.Close.Round(time.Millisecond), float64(res.PeakRSS)/(1<<20), res.Reopen.Round(time.Millisecond), res.Notes)
		})
	}
}

// benchChildEnv names the store a child process of BenchmarkStore runs the
// workload on; the child reports a benchResult as JSON on stdout.
const benchChildEnv = "HEED_BENCH_CHILD"

// benchResult is what a child reports.
type benchResult struct {
	Total, Add, Drain, Close time.Duration
	Revisit                  time.Duration // pebble-revisit: claiming and doing every revisit
	Reopen                   time.Duration // of the store left, by a new Open
	PeakRSS                  int64         // VmHWM: this process's own peak
	DiskBytes                int64
	Notes                    string
}

func TestMain(m *testing.M) {
	if kind := os.Getenv(benchChildEnv); kind != "" {
		if path := os.Getenv("HEED_BENCH_CPUPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		res, err := benchWorkload(kind, envIntOS("HEED_BENCH_URLS"), envIntOS("HEED_BENCH_HOSTS"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		json.NewEncoder(os.Stdout).Encode(res)
		return // and stop the profile
	}
	os.Exit(m.Run())
}

func runBenchChild(b *testing.B, kind string, n, hosts int) benchResult {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+kind,
		"HEED_BENCH_URLS="+strconv.Itoa(n), "HEED_BENCH_HOSTS="+strconv.Itoa(hosts), "TMPDIR="+b.TempDir())
	if os.Getenv("MALLOC_ARENA_MAX") == "" {
		// As crawl runs: it keeps glibc's malloc, where pebble's cache and
		// memtables live, to two arenas.
		cmd.Env = append(cmd.Env, "MALLOC_ARENA_MAX=2")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s child: %v\n%s", kind, err, stderr.String())
	}
	var res benchResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		b.Fatalf("%s child: %v\n%s", kind, err, stdout.String())
	}
	return res
}

// benchWorkload is a crawl's use of a Store, without the network: n URLs
// over hosts hosts are added in batches of 100, as the links of a page
// would be, and after each batch one item is leased and done with a
// checkpoint; then every item left is leased and done. No key rests, so
// the Store's own costs are what is measured.
func benchWorkload(kind string, n, hosts int) (benchResult, error) {
	ctx := context.Background()
	var s frontier.Store
	var dir string
	revisits := kind == "pebble-revisit"
	switch kind {
	case "memory":
		s = new(frontier.MemoryStore)
	case "pebble", "pebble-revisit":
		var err error
		dir, err = os.MkdirTemp("", "pebblestore-bench")
		if err != nil {
			return benchResult{}, err
		}
		defer os.RemoveAll(dir)
		opts := Options{}
		if v := os.Getenv("HEED_BENCH_CACHE_MB"); v != "" {
			n, _ := strconv.Atoi(v)
			opts.CacheSize = int64(n) << 20
		}
		if v := os.Getenv("HEED_BENCH_MEMTABLE_MB"); v != "" {
			n, _ := strconv.Atoi(v)
			opts.MemTableSize = int64(n) << 20
		}
		opts.tune = func(po *pebble.Options) {
			for _, t := range strings.Split(os.Getenv("HEED_BENCH_TUNE"), ",") {
				switch t {
				case "notombstone":
					po.Experimental.TombstoneDenseCompactionThreshold = -1
				case "conc2":
					po.CompactionConcurrencyRange = func() (int, int) { return 1, 2 }
				case "nocompress":
					po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
				case "l0":
					po.L0CompactionThreshold, po.L0StopWritesThreshold = 2, 40
				}
			}
		}
		if s, err = Open(dir, opts); err != nil {
			return benchResult{}, err
		}
	default:
		return benchResult{}, fmt.Errorf("no store %q", kind)
	}
	// traced is the Store the trace reads: the one reopened once that is
	// open, so that the trace holds no closed Store's memory.
	var traced atomic.Pointer[frontier.Store]
	first := s
	traced.Store(&first)
	if os.Getenv("HEED_BENCH_TRACE") != "" {
		stop := make(chan struct{})
		defer close(stop)
		go traceMemory(&traced, stop)
	}
	now := time.Now()
	var cp [8]byte
	done := 0
	revisit := benchRevisit(now)
	keyRevisiting := frontierrevisit.Host{Mu: 3600, Span: 86400, LastRevisit: now, Modified: frontierrevisit.Trust{Agree: 3}}
	leaseAndAck := func() (bool, error) {
		c, err := s.Claim(ctx, now, frontier.ClaimOptions{PerHost: 1})
		if err != nil || c.Lease == nil {
			return false, err
		}
		done++
		binary.BigEndian.PutUint64(cp[:], uint64(done))
		o := frontier.Outcome{Pace: c.Lease.Pace, Checkpoint: cp[:]}
		if revisits {
			// As the crawler does after every answer: the key's revisit
			// state, which the Store keeps beside its pacing state.
			o.Revisiting = &keyRevisiting
			if c.Lease.Visit == nil {
				o.Revisit = revisit(c.Lease.Item, done)
			}
		}
		return true, s.Done(ctx, c.Lease, now, o)
	}
	drain := func() error { // everything claimable now
		for {
			if ok, err := leaseAndAck(); err != nil || !ok {
				return err
			}
		}
	}
	start := time.Now()
	batch := make([]frontier.Item, 0, 100)
	for i := 0; i < n; {
		batch = batch[:0]
		for ; i < n && len(batch) < cap(batch); i++ {
			host := fmt.Sprintf("www.host%06d.example", i%hosts)
			batch = append(batch, frontier.Item{
				URL:      fmt.Sprintf("https://%s/section/%d/page-%d.html", host, i/hosts%10, i/hosts),
				Key:      host,
				Referrer: fmt.Sprintf("https://%s/section/%d/", host, i/hosts%10),
				Depth:    2,
			})
			if revisits {
				batch[len(batch)-1].Due = now // as the Frontier stamps it
			}
		}
		refused, err := s.Add(ctx, batch, frontier.Limits{})
		if err != nil {
			return benchResult{}, err
		}
		for j, err := range refused {
			if err != nil {
				return benchResult{}, fmt.Errorf("%s refused: %w", batch[j].URL, err)
			}
		}
		if _, err := leaseAndAck(); err != nil {
			return benchResult{}, err
		}
	}
	var res benchResult
	res.Add = time.Since(start)
	var notes []string
	if ps, ok := s.(*Store); ok {
		// How often a lookup of a new URL reads a block from disk, at the
		// frontier's largest, with the cache as the adding left it: Add's
		// path, the filter in memory, then pebble for what it lets by.
		const probes = 100_000
		before := ps.db.Metrics()
		probeStart := time.Now()
		passed := 0
		for i := range probes {
			u := fmt.Sprintf("https://www.host%06d.example/new/%d", i%hosts, i)
			if !ps.seen.mayContain(u) {
				continue
			}
			passed++
			if seen, err := ps.has(seenKey(nil, u)); err != nil || seen {
				return benchResult{}, fmt.Errorf("probe %d: seen %v, %v", i, seen, err)
			}
		}
		took := time.Since(probeStart)
		after := ps.db.Metrics()
		notes = append(notes, fmt.Sprintf("%d lookups of new URLs took %v each: %d passed the filter in memory (%d MB) and read %d blocks from disk (block cache misses), %d from the cache",
			probes, took/probes, passed, ps.seen.bytes()>>20, after.BlockCache.Misses-before.BlockCache.Misses, after.BlockCache.Hits-before.BlockCache.Hits))
		start = start.Add(took) // not part of the workload
	}
	writeHeapProfile("")
	if err := drain(); err != nil {
		return benchResult{}, err
	}
	writeHeapProfile(".drained")
	res.Drain = time.Since(start) - res.Add
	if done != n {
		return benchResult{}, fmt.Errorf("done %d of %d URLs", done, n)
	}
	if revisits {
		// Every URL is queued again, due within the next two hours: the
		// Store is reopened on them (not timed with the workload), then
		// each is claimed and done again once due.
		ps := s.(*Store)
		reopenStart := time.Now()
		if err := ps.Close(); err != nil {
			return benchResult{}, err
		}
		openStart := time.Now()
		reopened, err := Open(dir, ps.opts)
		if err != nil {
			return benchResult{}, err
		}
		s = reopened
		var rs frontier.Store = reopened
		traced.Store(&rs)
		res.Reopen = time.Since(openStart)
		notes = append(notes, fmt.Sprintf("reopened on every URL queued as a revisit in %v", res.Reopen.Round(time.Millisecond)))
		start = start.Add(time.Since(reopenStart))
		now = now.Add(3 * time.Hour)
		if err := drain(); err != nil {
			return benchResult{}, err
		}
		res.Revisit = time.Since(start) - res.Add - res.Drain
		if done != 2*n {
			return benchResult{}, fmt.Errorf("done %d of %d URLs and their revisits", done, 2*n)
		}
		writeHeapProfile(".revisited")
	}
	if ps, ok := s.(*Store); ok {
		m := ps.db.Metrics()
		if os.Getenv("HEED_BENCH_METRICS") != "" {
			fmt.Fprintln(os.Stderr, m)
		}
		notes = append(notes, fmt.Sprintf("bloom filters answered %d lookups without reading a block, %d could not; block cache %d hits, %d misses",
			m.Filter.Hits, m.Filter.Misses, m.BlockCache.Hits, m.BlockCache.Misses))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	notes = append(notes, fmt.Sprintf("Go: %d MB from the OS, heap in use %d MB (peak goal %d MB), %d GCs",
		ms.Sys>>20, ms.HeapInuse>>20, ms.NextGC>>20, ms.NumGC))
	closeStart := time.Now()
	if err := s.Close(); err != nil {
		return benchResult{}, err
	}
	res.Close = time.Since(closeStart)
	res.Total = time.Since(start)
	res.PeakRSS = peakRSS() // of the workload, before reopening
	if ps, ok := s.(*Store); ok && !revisits {
		// Opening it again: the seen-set's filter is rebuilt, every key
		// restored.
		openStart := time.Now()
		s2, err := Open(dir, ps.opts)
		if err != nil {
			return benchResult{}, err
		}
		res.Reopen = time.Since(openStart)
		if err := s2.Close(); err != nil {
			return benchResult{}, err
		}
	}
	if dir != "" {
		filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					res.DiskBytes += fi.Size()
				}
			}
			return nil
		})
	}
	res.Notes = strings.Join(notes, "; ")
	return res, nil
}

// writeHeapProfile writes a heap profile to the file HEED_BENCH_MEMPROFILE
// names, with suffix added, if it names one.
func writeHeapProfile(suffix string) {
	path := os.Getenv("HEED_BENCH_MEMPROFILE")
	if path == "" {
		return
	}
	if f, err := os.Create(path + suffix); err == nil {
		pprof.WriteHeapProfile(f)
		f.Close()
	}
}

// benchRevisit returns how pebble-revisit queues an item again after its
// first fetch, the done-th, at now: with a full Visit, due an hour after
// now and up to an hour more, in no order within a key.
func benchRevisit(now time.Time) func(it frontier.Item, done int) *frontier.Item {
	var est revisit.Page
	for i := range 3 {
		if err := est.Observe(revisit.Obs{Interval: time.Duration(i+1) * time.Hour, Changed: i != 1}); err != nil {
			panic(err)
		}
	}
	return func(it frontier.Item, done int) *frontier.Item {
		it.Due = now.Add(time.Hour + time.Duration(uint64(done)*7919%3600)*time.Second)
		it.Visit = &frontier.Visit{
			Fetched:      now,
			Changed:      now.Add(-24 * time.Hour),
			ETag:         fmt.Sprintf(`"%018x"`, done), // 20 bytes
			LastModified: now.Add(-48 * time.Hour).Truncate(time.Second),
			Digest:       uint64(done) * 0x9e3779b97f4a7c15,
			Status:       200,
			Estimator:    est,
		}
		return &it
	}
}

// peakRSS returns this process's peak resident set (VmHWM), or 0 where
// /proc is not there.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func envIntOS(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return max(n, 1)
}

// traceMemory writes to stderr, every second, where the memory is.
func traceMemory(traced *atomic.Pointer[frontier.Store], stop chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		line := fmt.Sprintf("%s, Go heap %d MB in use, %d MB held, %d MB in all", rssDetail(), ms.HeapInuse>>20, (ms.HeapSys-ms.HeapReleased)>>20, (ms.Sys-ms.HeapReleased)>>20)
		if ps, ok := (*traced.Load()).(*Store); ok {
			m := ps.db.Metrics()
			line += fmt.Sprintf(", pebble block cache %d MB, memtables %d MB (%d), L0 %d files", m.BlockCache.Size>>20, m.MemTable.Size>>20, m.MemTable.Count, m.Levels[0].TablesCount)
		}
		fmt.Fprintln(os.Stderr, line)
	}
}

// rssDetail returns the resident set of this process, by kind.
func rssDetail() string {
	b, _ := os.ReadFile("/proc/self/status")
	var parts []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, f := range []string{"VmRSS", "RssAnon", "RssFile"} {
			if rest, ok := strings.CutPrefix(line, f+":"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				parts = append(parts, fmt.Sprintf("%s %d MB", f, kb>>10))
			}
		}
	}
	return strings.Join(parts, ", ")
}
