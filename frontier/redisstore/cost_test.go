package redisstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// BenchmarkCostPerPage measures what a page costs Redis, on one server
// (without persistence, as bench's heed-redis runs it, with 256 shards;
// with one shard, a single Redis's default; with the AOF fsynced on every
// write) and on a cluster of
// three primaries (AOF fsynced on every write, as redistest starts it): a
// crawl through a Frontier whose pages each link to ten of twenty hosts
// (see crawl). It reports per page the client's round trips (a pipeline,
// even across a cluster's nodes, counts once), the script calls and
// commands the servers ran (INFO commandstats, summed over the nodes),
// and the servers' CPU time (used_cpu_user + used_cpu_sys, summed).
func BenchmarkCostPerPage(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		srv := redistest.StartWith(b, redistest.Options{NoPersistence: true})
		benchCost(b, srv.Client(), []*redistest.Server{srv}, DefaultShards)
	})
	b.Run("single-1shard", func(b *testing.B) {
		srv := redistest.StartWith(b, redistest.Options{NoPersistence: true})
		benchCost(b, srv.Client(), []*redistest.Server{srv}, 1)
	})
	b.Run("single-aof", func(b *testing.B) {
		srv := redistest.Start(b)
		benchCost(b, srv.Client(), []*redistest.Server{srv}, DefaultShards)
	})
	b.Run("cluster", func(b *testing.B) {
		cl := redistest.StartCluster(b, redistest.ClusterOptions{Primaries: 3})
		benchCost(b, cl.Client(), cl.Nodes, 0) // the cluster's default
	})
}

func benchCost(b *testing.B, c redis.UniversalClient, nodes []*redistest.Server, shards int) {
	hook := new(countingHook)
	c.AddHook(hook)
	cr := newCrawl(b, c, fmt.Sprintf("cost%d", jobs.Add(1)), shards)
	for i := range 100 { // loads the scripts into every node
		cr.page(b, -1-i, false)
	}
	before := nodeStats(b, nodes)
	hook.n.Store(0)
	b.ResetTimer()
	for i := range b.N {
		cr.page(b, i, false)
	}
	b.StopTimer()
	after := nodeStats(b, nodes)
	n := float64(b.N)
	b.ReportMetric(float64(hook.n.Load())/n, "rt/page")
	b.ReportMetric(float64(after.scripts-before.scripts)/n, "scripts/page")
	b.ReportMetric(float64(after.cmds-before.cmds)/n, "cmds/page")
	b.ReportMetric(float64(after.cpu-before.cpu)/n, "cpu-µs/page")
	var top []string
	for cmd, k := range after.calls {
		if d := float64(k-before.calls[cmd]) / n; d >= 0.05 {
			top = append(top, fmt.Sprintf("%s %.2f", cmd, d))
		}
	}
	slices.Sort(top)
	b.Logf("commands per page: %s", strings.Join(top, ", "))
}

// serverStats are counters of a set of Redis nodes, summed.
type serverStats struct {
	scripts, cmds int64 // script calls; commands, scripts' own included
	cpu           int64 // used_cpu_user + used_cpu_sys, µs
	calls         map[string]int64
	usec          map[string]int64 // time in each command, µs (a script's includes its commands')
}

// nodeStats reads INFO commandstats and cpu of every node.
func nodeStats(b *testing.B, nodes []*redistest.Server) serverStats {
	st := serverStats{calls: map[string]int64{}, usec: map[string]int64{}}
	for _, n := range nodes {
		info, err := n.Client().Info(ctx, "commandstats", "cpu").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			name, val, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			if name == "used_cpu_user" || name == "used_cpu_sys" {
				f, err := strconv.ParseFloat(val, 64)
				if err != nil {
					b.Fatalf("INFO cpu: %s: %v", line, err)
				}
				st.cpu += int64(f * 1e6)
			}
			cmd, ok := strings.CutPrefix(name, "cmdstat_")
			if !ok {
				continue
			}
			calls, rest, _ := strings.Cut(val, ",")
			usec, _, _ := strings.Cut(rest, ",")
			k, err := strconv.ParseInt(strings.TrimPrefix(calls, "calls="), 10, 64)
			if err != nil {
				b.Fatalf("INFO commandstats: %s: %v", line, err)
			}
			us, err := strconv.ParseInt(strings.TrimPrefix(usec, "usec="), 10, 64)
			if err != nil {
				b.Fatalf("INFO commandstats: %s: %v", line, err)
			}
			st.calls[cmd] += k
			st.usec[cmd] += us
			switch cmd {
			case "evalsha", "eval", "fcall":
				st.scripts += k
			case "info", "cluster|nodes", "cluster|slots", "cluster|shards", "ping":
			default:
				st.cmds += k
			}
		}
	}
	return st
}

// BenchmarkScriptCall measures what one call of the batch function
// (batch.lua) costs Redis when it serves a single Claim, or a single Done,
// on one server without persistence and one shard, b.N keys ready: the
// time Redis spent in the call (commandstats' usec of FCALL), and of it
// the time in the commands the script ran. The rest is the script's own
// Lua, much of it paid once a call whatever the call serves: what a
// cluster pays more of, its calls serving fewer pages each.
func BenchmarkScriptCall(b *testing.B) {
	for _, op := range []string{"claim", "done"} {
		b.Run(op, func(b *testing.B) {
			srv := redistest.StartWith(b, redistest.Options{NoPersistence: true})
			nodes := []*redistest.Server{srv}
			s, err := New(srv.Client(), fmt.Sprintf("call%d", jobs.Add(1)), Options{Shards: 1})
			if err != nil {
				b.Fatal(err)
			}
			items := make([]frontier.Item, 0, 500)
			for i := 0; i < b.N; i += len(items) {
				items = items[:0]
				for j := i; j < min(i+500, b.N); j++ {
					items = append(items, frontier.Item{URL: fmt.Sprintf("http://h%d.example/", j), Key: fmt.Sprintf("h%d.example", j)})
				}
				if _, err := s.Add(ctx, items, frontier.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			claim := func() *frontier.Lease {
				c, err := s.Claim(ctx, time.Now(), opt)
				if err != nil || c.Lease == nil {
					b.Fatalf("Claim: %v, %+v", err, c)
				}
				return c.Lease
			}
			leases := make([]*frontier.Lease, 0, b.N)
			var before serverStats
			if op == "claim" {
				before = nodeStats(b, nodes)
			}
			b.ResetTimer()
			for range b.N {
				if op == "claim" {
					leases = append(leases, claim())
				}
			}
			if op == "done" {
				b.StopTimer()
				for range b.N {
					leases = append(leases, claim())
				}
				before = nodeStats(b, nodes)
				b.StartTimer()
				for _, l := range leases {
					if err := s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			after := nodeStats(b, nodes)
			calls := float64(after.calls["fcall"] - before.calls["fcall"])
			var inner int64
			for cmd, us := range after.usec {
				switch cmd {
				case "fcall", "info", "hello", "client|setinfo":
				default:
					inner += us - before.usec[cmd]
				}
			}
			b.ReportMetric(calls/float64(b.N), "calls/op")
			b.ReportMetric(float64(after.usec["fcall"]-before.usec["fcall"])/calls, "script-µs/call")
			b.ReportMetric(float64(inner)/calls, "cmd-µs/call")
		})
	}
}

// BenchmarkCostPerURL measures the Redis memory of the URLs a job knows:
// 200,000 URLs of some 60 bytes, with a referrer, over 2,000 hosts, added
// as a crawl's links are, on one server (256 shards, and one) and on a
// cluster of three primaries (its default, ShardsPerPrimary a primary). It reports used_memory's growth per
// URL queued (seen-set, queues, keys' state, ready sets), what is left of
// it per URL once the queues are gone (what a URL costs once fetched:
// its seen-set member, and its share of its key's state while that
// lasts), the seen-sets' own MEMORY USAGE per URL at the end and its mean
// over the last doubling of the URLs (B/url-seen-mean: at one count the
// figure depends on how full each set's table happens to be, 48-64 B),
// and per key its state (its hash).
func BenchmarkCostPerURL(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		srv := redistest.StartWith(b, redistest.Options{NoPersistence: true})
		benchURLCost(b, srv.Client(), []*redistest.Server{srv}, DefaultShards)
	})
	b.Run("single-1shard", func(b *testing.B) {
		srv := redistest.StartWith(b, redistest.Options{NoPersistence: true})
		benchURLCost(b, srv.Client(), []*redistest.Server{srv}, 1)
	})
	b.Run("cluster", func(b *testing.B) {
		cl := redistest.StartCluster(b, redistest.ClusterOptions{Primaries: 3})
		benchURLCost(b, cl.Client(), cl.Nodes, 0) // the cluster's default
	})
}

func benchURLCost(b *testing.B, c redis.UniversalClient, nodes []*redistest.Server, shards int) {
	const keys, perKey = 2000, 100
	for range b.N {
		s, err := New(c, fmt.Sprintf("url%d", jobs.Add(1)), Options{Shards: shards})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Add(ctx, []frontier.Item{item("warm", "/")}, frontier.Limits{}); err != nil {
			b.Fatal(err)
		}
		before := memoryOf(b, nodes)
		// A page's links: ten hosts, ten URLs each, as the crawl adds them.
		// A seen-set's table doubles as it grows, and costs the most a URL
		// just after: over the last doubling of the URLs (the second half)
		// every shard's set goes through one whole cycle, so its mean is
		// what a URL seen costs whatever the number of shards.
		pages := keys * perKey / 100
		var seenSum float64
		var seenN int
		for p := range pages {
			batch := make([]frontier.Item, 0, 100)
			for h := range 10 {
				k := fmt.Sprintf("host-%04d.example.com", (p*10+h)%keys)
				for j := range 10 {
					batch = append(batch, frontier.Item{Key: k, Depth: 3,
						URL:      fmt.Sprintf("https://%s/section/page-%06d.html", k, p*10+j),
						Referrer: fmt.Sprintf("https://%s/section/", k)})
				}
			}
			if _, err := s.Add(ctx, batch, frontier.Limits{}); err != nil {
				b.Fatal(err)
			}
			if done := p + 1; done >= pages/2 && done%(pages/20) == 0 {
				seenSum += float64(seenUsage(b, nodes, s.Job())) / float64(done*100)
				seenN++
			}
		}
		queued := memoryOf(b, nodes)
		var seen, keyState int64
		var qs []string
		for _, n := range nodes {
			nc := n.Client()
			for _, pat := range []string{"heed:{" + s.Job() + "*:seen", "heed:{" + s.Job() + "*:k:*", "heed:{" + s.Job() + "*:q:*"} {
				ks, err := nc.Keys(ctx, pat).Result()
				if err != nil {
					b.Fatal(err)
				}
				for _, k := range ks {
					if strings.Contains(k, ":q:") {
						qs = append(qs, k)
						continue
					}
					u, err := nc.MemoryUsage(ctx, k, 0).Result()
					if err != nil {
						b.Fatal(err)
					}
					if strings.HasSuffix(k, ":seen") {
						seen += u
					} else {
						keyState += u
					}
				}
			}
		}
		for _, k := range qs {
			if err := c.Del(ctx, k).Err(); err != nil {
				b.Fatal(err)
			}
		}
		left := memoryOf(b, nodes)
		urls := float64(keys * perKey)
		b.ReportMetric(float64(queued-before)/urls, "B/url-queued")
		b.ReportMetric(float64(left-before)/urls, "B/url-after-queue")
		b.ReportMetric(float64(seen)/urls, "B/url-seen")
		b.ReportMetric(seenSum/float64(seenN), "B/url-seen-mean")
		b.ReportMetric(float64(keyState)/keys, "B/key")
	}
}

// seenUsage returns the MEMORY USAGE of job's seen-sets, summed over the
// nodes.
func seenUsage(b *testing.B, nodes []*redistest.Server, job string) int64 {
	var sum int64
	for _, n := range nodes {
		nc := n.Client()
		ks, err := nc.Keys(ctx, "heed:{"+job+"*:seen").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range ks {
			u, err := nc.MemoryUsage(ctx, k, 0).Result()
			if err != nil {
				b.Fatal(err)
			}
			sum += u
		}
	}
	return sum
}

// memoryOf returns the nodes' used_memory, summed.
func memoryOf(b *testing.B, nodes []*redistest.Server) int64 {
	var sum int64
	for _, n := range nodes {
		info, err := n.Client().Info(ctx, "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		v, ok := strings.CutPrefix(info[strings.Index(info, "used_memory:"):], "used_memory:")
		if !ok {
			b.Fatal("INFO memory: no used_memory")
		}
		v, _, _ = strings.Cut(v, "\r\n")
		k, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		sum += k
	}
	return sum
}
