package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier/redisstore"
	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/heedcrawl/heed/internal/testweb"
	"github.com/redis/go-redis/v9"
)

// TestClusterFailover crawls a loopback web with three processes of the
// built command sharing a job on a Redis Cluster of three primaries, each
// with a replica (AOF, appendfsync always). One process is SIGKILLed while
// it holds a page; later the primary of a shard with queued work is
// SIGKILLed and its replica promoted. The survivors carry on and exit 0
// when nothing is left, and the servers' log must show a complete, polite
// crawl: robots.txt once per host, and no page fetched again but those a
// death explains — the killed process's leases, taken back once its
// heartbeat was older than its liveness timeout (-lease), within that and
// a few seconds, and on the failed-over primary's shards the leases whose
// end was lost with it (acknowledged too late for its replica). The job's
// heartbeats live in its own slot, which the primary killed may hold: no
// survivor may be presumed dead across the failover.
func TestClusterFailover(t *testing.T) { clusterFailover(t, false) }

// TestClusterFailoverPause is TestClusterFailover with a survivor stopped
// (SIGSTOP) before the primary dies, for longer than its liveness timeout,
// then continued: the other survivor takes its leases back, across the
// failover; the continued process finds itself presumed dead, makes no
// request under the leases it lost (no two requests to one host at once,
// no rest cut short), joins again and ends with the others, exit 0; no
// page is recorded twice in any one output, and every page fetched again
// is one a death or the pause explains.
func TestClusterFailoverPause(t *testing.T) { clusterFailover(t, true) }

// clusterFailover is TestClusterFailover, with a survivor paused if pause.
func clusterFailover(t *testing.T, pause bool) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL nor SIGSTOP on Windows")
	}
	const (
		job                 = "fo"
		hosts, pagesPerHost = 12, 20
		crawlDelay          = 200 * time.Millisecond
		minDelay            = 50 * time.Millisecond
		timeout             = 2 * time.Second
		lease               = 2 * timeout
		// slack covers what the server's log cannot see: a lease is
		// granted before its request starts, the test notices a death a
		// little late, and a replica receives its primary's writes a
		// little after the primary acknowledged them.
		slack = 500 * time.Millisecond
	)
	cluster := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3, Replicas: 1})
	web, truth := loopbackWeb(t, testweb.Config{Hosts: hosts, PagesPerHost: pagesPerHost, CrawlDelay: crawlDelay,
		Latency: 10 * time.Millisecond, Seed: 21, NoBrokenHosts: true})
	holding := newHoldingSite(t)
	bin := buildCrawl(t)
	dir := t.TempDir()
	seeds := writeSeeds(t, append(web.Web.Seeds(), holding.URL+"/")...)
	url := cluster.URL()

	ua := func(n int) string { return fmt.Sprintf("heed-failover-test/%d", n) }
	out := func(n int) string { return filepath.Join(dir, fmt.Sprintf("out%d.jsonl", n)) }
	logOf := func(n int) string { return filepath.Join(dir, fmt.Sprintf("log%d.jsonl", n)) }
	args := func(n int, withSeeds bool) []string {
		a := []string{"-redis", url, "-job", job, "-process", "p" + strconv.Itoa(n), "-ua", ua(n), "-o", out(n), "-log", logOf(n),
			"-scope", "any", "-delay", minDelay.String(), "-max-delay", "1s",
			"-timeout", timeout.String(), "-lease", lease.String(), "-progress", "off"}
		if withSeeds {
			a = append(a, seeds)
		}
		return a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// (a) Kill whichever process holds /a, at once.
	runs, survivors, victim, killedAt := crashHolder(t, ctx, bin, web, holding, "heed-failover-test/", args)

	// (b) Then the primary of the shards with the most queued hosts dies
	// and its replica takes over, while the survivors crawl on.
	target := web.Log.Len() + 10
	untilTrue(t, "10 more requests", survivors, func() bool { return web.Log.Len() >= target })
	failed := queuedOnBusiestPrimary(t, cluster, job)
	paused, stoppedAt := 0, time.Time{}
	if pause {
		paused = slices.IndexFunc(runs, func(r *crawlRun) bool { return r == survivors[0] }) + 1
		runs[paused-1].signal(t, syscall.SIGSTOP)
		stoppedAt = time.Now()
	}
	primaryDown := time.Now()
	cluster.KillPrimary(failed.anyKey)
	primaryUp := time.Now()
	if pause {
		untilPresumedDead(t, ctx, cluster.Client(), job, survivors[1:], stoppedAt, lease)
		runs[paused-1].signal(t, syscall.SIGCONT)
		t.Logf("process %d stopped %v before the failover, for %v", paused, primaryDown.Sub(stoppedAt).Round(time.Millisecond), time.Since(stoppedAt).Round(time.Millisecond))
	}
	t.Logf("process %d killed %v into the crawl; primary of %d queued keys and %d robots.txt entries killed %v later, replica serving %v after",
		victim, killedAt.Sub(holding.entries()[0].Start).Round(time.Millisecond), len(failed.keys), len(failed.robots),
		primaryDown.Sub(killedAt).Round(time.Millisecond), primaryUp.Sub(primaryDown).Round(time.Millisecond))

	for i, r := range runs {
		if i+1 == victim {
			continue
		}
		select {
		case err := <-r.exited:
			if code := exitCode(err); code != 0 {
				t.Errorf("process %d: exit %v; stderr:\n%s", i+1, err, r.stderr)
			}
			log, err := os.ReadFile(logOf(i + 1))
			if err != nil {
				t.Error(err)
			}
			if presumed := strings.Contains(string(log), "presumed dead"); presumed != (i+1 == paused) {
				t.Errorf("process %d (paused: %v) presumed dead: %v; its log:\n%s", i+1, i+1 == paused, presumed, log)
			}
			noGoRedisLines(t, r.stderr.String())
		case <-time.After(time.Minute):
			t.Fatalf("process %d did not end within a minute of the failover; stderr:\n%s", i+1, r.stderr)
		}
	}

	entries := web.Log.Entries()
	processOf := func(e testweb.Entry) int {
		n, err := strconv.Atoi(strings.TrimPrefix(e.UserAgent, "heed-failover-test/"))
		if err != nil || n < 1 || n > 3 {
			t.Fatalf("request with User-Agent %q, from no process of the test", e.UserAgent)
		}
		return n
	}
	byProcess := map[int]int{}
	afterFailover := 0
	for _, e := range entries {
		p := processOf(e)
		if p == victim && e.Start.After(killedAt.Add(serverReadLag)) {
			t.Errorf("process %d, killed, made a request %v after its death: %s", p, e.Start.Sub(killedAt), e.URL())
		}
		byProcess[p]++
		if failed.keys[e.Host] && e.Start.After(primaryUp) {
			afterFailover++
		}
	}
	t.Logf("requests by process: %v; %d to the failed-over shards' hosts after the replica took over", byProcess, afterFailover)
	if byProcess[victim] < 5 {
		t.Errorf("process %d made %d requests before it was killed; the test wants a kill mid-crawl", victim, byProcess[victim])
	}
	if afterFailover == 0 {
		t.Errorf("no request to the hosts of the failed-over shards after the failover: it came too late to test anything")
	}

	checkSharedCrawl(t, truth.Analyze(entries, testweb.AnalyzeOptions{MinDelay: minDelay}))

	// Every request made again must be one a death explains.
	holdingEntries := holding.entries()
	all := append(slices.Clone(entries), holdingEntries...)
	slices.SortStableFunc(all, func(a, b testweb.Entry) int { return a.Start.Compare(b.Start) })
	victimStarts, pausedStarts := map[string][]time.Time{}, map[string][]time.Time{}
	for _, e := range all {
		switch {
		case processOf(e) == victim:
			victimStarts[e.Host] = append(victimStarts[e.Host], e.Start)
		case processOf(e) == paused && e.Start.Before(stoppedAt.Add(serverReadLag)):
			pausedStarts[e.Host] = append(pausedStarts[e.Host], e.Start)
		}
	}
	var byKill, byFailover, byPause []string
	last := map[string]testweb.Entry{}
	for _, e := range all {
		c, err := testweb.Canonical(e.URL())
		if err != nil {
			t.Fatal(err)
		}
		prev, again := last[c]
		last[c] = e
		if !again {
			continue
		}
		what := fmt.Sprintf("%s (process %d, then %d after %v)", e.URL(), processOf(prev), processOf(e), e.Start.Sub(prev.Start).Round(time.Millisecond))
		switch {
		case answerFailed(prev):
			// A retry: a 503 robots.txt, or the request the killed
			// process left hanging.
		case processOf(prev) == victim && heldAtDeath(prev, victimStarts, killedAt, lease, slack):
			// The killed process's lease of the host (a run of its URLs),
			// taken back once its heartbeat was older than its liveness
			// timeout (-lease): its last heartbeat came a fifth of the
			// timeout before its death at most.
			byKill = append(byKill, what)
			if e.Start.Before(killedAt.Add(lease*4/5 - slack)) {
				t.Errorf("%s fetched again before the killed process's liveness timeout (%v) could have passed", what, lease)
			}
		case pause && processOf(prev) == paused && prev.Start.Before(stoppedAt.Add(serverReadLag)) && heldAtDeath(prev, pausedStarts, stoppedAt, lease, slack):
			// The paused process's lease, taken back once its heartbeat
			// was older than its timeout.
			byPause = append(byPause, what)
			if e.Start.Before(stoppedAt.Add(lease*4/5 - slack)) {
				t.Errorf("%s fetched again before the paused process's liveness timeout (%v) could have passed", what, lease)
			}
		case failed.owns(prev) && !prev.End.Before(primaryDown.Add(-slack)) && !prev.End.After(primaryUp.Add(slack)):
			// Its end was lost with the primary (a write the replica had
			// not received), or refused: the lease had expired before
			// the replica took over.
			byFailover = append(byFailover, what)
		default:
			t.Errorf("%s fetched again with no death to explain it", what)
		}
	}
	robots := map[string]int{} // host and target (a redirected robots.txt is two) → answered requests
	for _, e := range all {
		if isRobots(e) && !answerFailed(e) {
			robots[e.Host+e.Target]++
		}
	}
	// robots.txt once per host for the job, but for an entry lost with a
	// death (the switch above holds each second fetch to that): the
	// process died between fetching it and storing it, or the failed
	// primary acknowledged the entry and died before its replica had
	// it. Each loses one fetch at most.
	for h, n := range robots {
		if n > 2 {
			t.Errorf("%s fetched %d times", h, n)
		} else if n == 2 {
			t.Logf("%s fetched twice, its entry lost with a death", h)
		}
	}
	t.Logf("fetched again: %d the killed process's, %d the paused one's, %d around the failover: %v", len(byKill), len(byPause), len(byFailover), slices.Concat(byKill, byPause, byFailover))

	// The held page: fetched again, by a survivor, once the killed
	// process's liveness timeout passed.
	var a []testweb.Entry
	for _, e := range holdingEntries {
		if e.Target == "/a" {
			a = append(a, e)
		}
	}
	if len(a) != 2 || processOf(a[0]) != victim || a[0].Status != 0 || processOf(a[1]) == victim || a[1].Start.Before(killedAt.Add(lease*4/5-slack)) {
		t.Errorf("/a requests %+v; want the killed process's, unanswered, then a survivor's once its liveness timeout passed", a)
	}
	// Taken back within the timeout and a few seconds, not a lease
	// of minutes — plus the failover's outage, if it came within that
	// time: while a primary is down, the heartbeats and the reclaim that
	// reach its slots (the job's own slot, where heartbeats live, among
	// them) wait for its replica.
	bound := lease + 5*time.Second
	if primaryDown.Before(killedAt.Add(bound)) {
		bound += primaryUp.Sub(primaryDown)
	}
	if len(a) == 2 && a[1].Start.After(killedAt.Add(bound)) {
		t.Errorf("/a fetched again %v after the kill: over the liveness timeout (%v), 5 s and the failover's outage (%v)",
			a[1].Start.Sub(killedAt).Round(time.Millisecond), lease, primaryUp.Sub(primaryDown).Round(time.Millisecond))
	}

	// The outputs: every reachable page in one.
	records := map[string]int{}
	for n := 1; n <= 3; n++ {
		for u, c := range readOutputKeys(t, out(n)).count {
			records[u] += c
			if c > 1 {
				t.Errorf("%s recorded %d times in the output of process %d", u, c, n)
			}
		}
	}
	for _, u := range truth.Reachable {
		if records[u] == 0 {
			t.Errorf("no record of %s in any output", u)
		}
	}
	code, stdout, stderr := runCmd(t, "", "status", "-redis", url, "-job", job)
	if want := "job " + job + " on " + url + ": complete\n"; code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("crawl status: exit %d, stderr %q, stdout:\n%s\nwant %q", code, stderr, stdout, want)
	}
}

// untilPresumedDead waits until, more than lease after stoppedAt, the
// members of job alive are the processes running and none is dead with
// leases still to take back: the process stopped then was declared dead
// by the others, and its leases taken back.
func untilPresumedDead(t *testing.T, ctx context.Context, c redis.UniversalClient, job string, running []*crawlRun, stoppedAt time.Time, lease time.Duration) {
	t.Helper()
	store, err := redisstore.New(c, job, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	untilTrue(t, "the stopped process declared dead", running, func() bool {
		if time.Since(stoppedAt) <= lease {
			return false
		}
		ms, err := store.Members(ctx)
		if err != nil {
			return false // the failover under way
		}
		alive, dead := 0, 0
		for _, m := range ms {
			if m.Dead {
				dead++
			} else {
				alive++
			}
		}
		return alive == len(running) && dead == 0
	})
}

// failedShards is what one primary held of a job before it was killed:
// the politeness keys with queued items in its shards, and the
// authorities of its robots.txt entries.
type failedShards struct {
	anyKey string // a key of the primary's, which names its slot
	keys   map[string]bool
	robots map[string]bool
}

// owns reports whether e's host had its queue or its robots.txt entry on
// the failed primary.
func (f failedShards) owns(e testweb.Entry) bool {
	if isRobots(e) {
		return f.robots[e.Host]
	}
	return f.keys[e.Host]
}

// queuedOnBusiestPrimary returns what the primary with the most queued
// politeness keys of job holds of it.
func queuedOnBusiestPrimary(t *testing.T, c *redistest.Cluster, job string) failedShards {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var (
		mu   sync.Mutex
		best failedShards
	)
	err := c.Client().ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		f := failedShards{keys: map[string]bool{}, robots: map[string]bool{}}
		prefix := "heed:{" + job + "/"
		iter := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			_, rest, ok := strings.Cut(k, "}:")
			if !ok {
				continue
			}
			if name, ok := strings.CutPrefix(rest, "q:"); ok {
				f.keys[name], f.anyKey = true, k
			} else if name, ok := strings.CutPrefix(rest, "robots:"); ok {
				f.robots[name] = true
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(f.keys) > len(best.keys) {
			best = f
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if best.anyKey == "" {
		t.Fatal("no primary holds a queue of the job")
	}
	return best
}
