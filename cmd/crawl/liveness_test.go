package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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

	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/heedcrawl/heed/internal/testweb"
)

// livenessJob is one crawl of a fresh loopback web by three processes of
// the built command sharing a job on srv, with a liveness timeout
// (-lease) of liveTimeout.
type livenessJob struct {
	t     *testing.T
	web   *testweb.Loopback
	truth *testweb.Truth
	runs  []*crawlRun
	dir   string
	start time.Time
}

const (
	liveTimeout  = 3 * time.Second
	liveMinDelay = 50 * time.Millisecond
)

func startLivenessJob(t *testing.T, ctx context.Context, bin string, srv *redistest.Server, job string, seed uint64) *livenessJob {
	t.Helper()
	web, truth := loopbackWeb(t, testweb.Config{Hosts: 12, PagesPerHost: 15, CrawlDelay: 200 * time.Millisecond,
		Latency: 10 * time.Millisecond, Seed: seed, NoBrokenHosts: true})
	j := &livenessJob{t: t, web: web, truth: truth, dir: t.TempDir(), start: time.Now()}
	seeds := writeSeeds(t, web.Web.Seeds()...)
	for n := 1; n <= 3; n++ {
		a := []string{"-redis", srv.URL(), "-job", job, "-process", "p" + strconv.Itoa(n), "-ua", fmt.Sprintf("heed-live-test/%d", n),
			"-o", j.out(n), "-log", filepath.Join(j.dir, fmt.Sprintf("log%d.jsonl", n)), "-scope", "any",
			"-delay", liveMinDelay.String(), "-max-delay", "1s", "-timeout", "2s", "-lease", liveTimeout.String(), "-progress", "off", seeds}
		j.runs = append(j.runs, startCrawl(t, ctx, bin, a...))
	}
	return j
}

// untilMidCrawl waits until process 1 made 15 requests: it holds hosts,
// and has fetched pages of its runs whose Dones it holds back.
func (j *livenessJob) untilMidCrawl() {
	j.t.Helper()
	untilTrue(j.t, "15 requests by process 1", j.runs, func() bool {
		n := 0
		for _, e := range j.web.Log.Entries() {
			if e.UserAgent == "heed-live-test/1" {
				n++
			}
		}
		return n >= 15
	})
}

func (j *livenessJob) out(n int) string { return filepath.Join(j.dir, fmt.Sprintf("out%d.jsonl", n)) }

// processOf returns the number of the process that made request e.
func (j *livenessJob) processOf(e testweb.Entry) int {
	n, err := strconv.Atoi(strings.TrimPrefix(e.UserAgent, "heed-live-test/"))
	if err != nil {
		j.t.Fatalf("request with User-Agent %q, from no process of the test", e.UserAgent)
	}
	return n
}

// wait waits for the processes but skip (killed) to exit, each with
// status 0, and returns when the last did.
func (j *livenessJob) wait(skip int) time.Time {
	j.t.Helper()
	for i, r := range j.runs {
		if i+1 == skip {
			continue
		}
		select {
		case err := <-r.exited:
			if code := exitCode(err); code != 0 {
				j.t.Errorf("process %d: exit %v; stderr:\n%s", i+1, err, r.stderr)
			}
		case <-time.After(2 * time.Minute):
			j.t.Fatalf("process %d did not end within two minutes; stderr:\n%s", i+1, r.stderr)
		}
	}
	return time.Now()
}

// check judges the crawl: complete and polite across the processes,
// robots.txt once per host, and every page recorded once in each output
// and in one output at least; it returns the pages fetched more than once,
// each with the request before.
func (j *livenessJob) check() (again [][2]testweb.Entry) {
	j.t.Helper()
	entries := j.web.Log.Entries()
	checkSharedCrawl(j.t, j.truth.Analyze(entries, testweb.AnalyzeOptions{MinDelay: liveMinDelay}))
	robots := map[string]int{}
	last := map[string]testweb.Entry{}
	for _, e := range entries {
		if isRobots(e) {
			if !answerFailed(e) {
				robots[e.Host+e.Target]++
			}
			continue
		}
		c, err := testweb.Canonical(e.URL())
		if err != nil {
			j.t.Fatal(err)
		}
		if prev, ok := last[c]; ok && !answerFailed(prev) {
			again = append(again, [2]testweb.Entry{prev, e})
		}
		last[c] = e
	}
	for h, n := range robots {
		if n > 1 {
			j.t.Errorf("%s fetched %d times for the job", h, n)
		}
	}
	records := map[string]int{}
	for n := 1; n <= 3; n++ {
		if _, err := os.Stat(j.out(n)); err != nil {
			continue
		}
		for u, c := range readOutputKeys(j.t, j.out(n)).count {
			if c > 1 {
				j.t.Errorf("%s recorded %d times in the output of process %d", u, c, n)
			}
			records[u] += c
		}
	}
	for _, u := range j.truth.Reachable {
		if records[u] == 0 {
			j.t.Errorf("no record of %s in any output", u)
		}
	}
	return again
}

// TestRedisLiveness: three processes share a job on a real Redis, with a
// liveness timeout of 3 s. Killed with SIGKILL mid-crawl, one process's
// hosts go to the others once its heartbeat is older than the timeout:
// the job ends within the timeout and a few seconds of the same job
// without the kill, complete and polite, with robots.txt once per host,
// and the only pages fetched twice the dead process's last of their host
// (its leases). Stopped with SIGSTOP past the timeout and then continued,
// a process makes no request under the leases it lost — no two requests
// to one host at once, no rest cut short, no page twice in one output —
// says in its log that it was presumed dead, joins again as a new member
// and ends with the others. (Stopped at a random point, the process is
// mostly fenced by its Store — the rejoin at its next Claim — so the
// worker's own check of a lease's Expires is guarded by
// TestRedisLivenessPausedMidLease, which stops it with an item in hand.)
func TestRedisLiveness(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL nor SIGSTOP on Windows")
	}
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The same job without a death: how long it takes.
	base := startLivenessJob(t, ctx, bin, srv, "base", 31)
	baseTook := base.wait(0).Sub(base.start)
	if again := base.check(); len(again) > 0 {
		t.Errorf("without a death, %d pages fetched twice, e.g. %s", len(again), again[0][1].URL())
	}

	t.Run("kill", func(t *testing.T) {
		j := startLivenessJob(t, ctx, bin, srv, "kill", 31)
		j.untilMidCrawl()
		j.runs[0].signal(t, syscall.SIGKILL)
		killedAt := time.Now()
		<-j.runs[0].exited
		took := j.wait(1).Sub(j.start)
		t.Logf("without a death %v, with process 1 killed %v in: %v (liveness timeout %v)", baseTook.Round(time.Millisecond),
			killedAt.Sub(j.start).Round(time.Millisecond), took.Round(time.Millisecond), liveTimeout)
		if limit := baseTook + liveTimeout + 5*time.Second; took > limit {
			t.Errorf("the job took %v with a death, over %v: the timeout and five seconds more than without", took, limit)
		}
		victimStarts := map[string][]time.Time{}
		for _, e := range j.web.Log.Entries() {
			if j.processOf(e) == 1 {
				if e.Start.After(killedAt.Add(serverReadLag)) {
					t.Errorf("process 1, killed, made a request %v after its death: %s", e.Start.Sub(killedAt), e.URL())
				}
				victimStarts[e.Host] = append(victimStarts[e.Host], e.Start)
			}
		}
		again := j.check()
		for _, p := range again {
			prev, e := p[0], p[1]
			s := victimStarts[prev.Host]
			i := slices.IndexFunc(s, prev.Start.Equal)
			switch {
			case j.processOf(prev) != 1 || i < len(s)-2*runMax:
				t.Errorf("%s fetched again (process %d, then %d) with no death to explain it", e.URL(), j.processOf(prev), j.processOf(e))
			case e.Start.Before(killedAt.Add(liveTimeout * 4 / 5)):
				// The heartbeat before the death was a fifth of the
				// timeout before it at most.
				t.Errorf("%s fetched again %v after the death, before the liveness timeout could have passed", e.URL(), e.Start.Sub(killedAt))
			}
		}
		t.Logf("fetched again: %d pages the killed process held", len(again))
	})

	t.Run("pause", func(t *testing.T) {
		j := startLivenessJob(t, ctx, bin, srv, "pause", 32)
		j.untilMidCrawl()
		j.runs[0].signal(t, syscall.SIGSTOP)
		stoppedAt := time.Now()
		untilPresumedDead(t, ctx, srv.Client(), "pause", j.runs[1:], stoppedAt, liveTimeout)
		// crawl status lists the two members alive, with what they hold.
		code, stdout, stderr := runCmd(t, "", "status", "-redis", srv.URL(), "-job", "pause")
		if code != 0 || !strings.Contains(stdout, "members:    2 alive\n") || strings.Count(stdout, "last heartbeat") != 2 {
			t.Errorf("crawl status while process 1 is stopped: exit %d, stderr %q, stdout:\n%s\nwant two members alive", code, stderr, stdout)
		}
		j.runs[0].signal(t, syscall.SIGCONT)
		resumedAt := time.Now()
		j.wait(0)
		t.Logf("process 1 stopped %v in, for %v", stoppedAt.Sub(j.start).Round(time.Millisecond), resumedAt.Sub(stoppedAt).Round(time.Millisecond))
		again := j.check()
		for _, p := range again {
			// A request sent just before the stop may be read by the
			// server (its Start) a little after it.
			if j.processOf(p[0]) != 1 || p[0].Start.After(stoppedAt.Add(serverReadLag)) {
				t.Errorf("%s fetched again (process %d, then %d) with no pause to explain it", p[1].URL(), j.processOf(p[0]), j.processOf(p[1]))
			}
		}
		log, err := os.ReadFile(filepath.Join(j.dir, "log1.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), "presumed dead") {
			t.Errorf("process 1's log does not say it was presumed dead:\n%s", log)
		}
		t.Logf("fetched again: %d pages the paused process held", len(again))
	})
}

// heldSite is a site whose first robots.txt request is held: its handler
// tells arrived the request's User-Agent and answers only once release is
// closed. Every request is logged, with its User-Agent.
type heldSite struct {
	*httptest.Server
	arrived chan string
	release chan struct{}
	mu      sync.Mutex
	held    bool
	log     []string // "UA TARGET"
}

func newHeldSite(t *testing.T, pages int) *heldSite {
	t.Helper()
	s := &heldSite{arrived: make(chan string, 1), release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.UserAgent()+" "+r.URL.RequestURI())
		hold := r.URL.Path == "/robots.txt" && !s.held
		s.held = s.held || hold
		s.mu.Unlock()
		if hold {
			s.arrived <- r.UserAgent()
			<-s.release
		}
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			return
		}
		if r.URL.Path == "/" {
			for i := range pages {
				fmt.Fprintf(w, "<a href=\"/p%d\">p%d</a>\n", i, i)
			}
		}
		fmt.Fprint(w, "<p>page</p>")
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
	})
	return s
}

// requests returns the targets the process whose User-Agent is ua asked for.
func (s *heldSite) requests(ua string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.log {
		if target, ok := strings.CutPrefix(l, ua+" "); ok {
			out = append(out, target)
		}
	}
	return out
}

// TestRedisLivenessPausedMidLease: a process stopped with an item in hand
// — its lease granted, its robots.txt request under that lease in flight,
// the page's request not yet made — and continued after another process
// took the host over and crawled it makes no request under that lease: the
// answer to robots.txt comes in, and the page's request is refused by the
// lease's Expires, which passed while it was stopped. Only the worker's
// own check stands between the answer and the request: the Store's fences
// (the rejoin at the next Claim, the Done refused) come after it. The
// site answers at once and without Crawl-delay (-delay 0s), so that no
// rest sends the item back to the queue first.
func TestRedisLivenessPausedMidLease(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGSTOP on Windows")
	}
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	site := newHeldSite(t, 5)
	seeds := writeSeeds(t, site.URL+"/")
	dir := t.TempDir()
	args := func(n int) []string {
		// The fetch timeouts outlast the stop: the answer held for the
		// stopped process is read, not timed out, when it goes on.
		return []string{"-redis", srv.URL(), "-job", "held", "-process", "p" + strconv.Itoa(n), "-ua", fmt.Sprintf("heed-live-test/%d", n),
			"-o", filepath.Join(dir, fmt.Sprintf("out%d.jsonl", n)), "-log", filepath.Join(dir, fmt.Sprintf("log%d.jsonl", n)),
			"-scope", "any", "-delay", "0s", "-max-delay", "1s", "-timeout", "1m", "-header-timeout", "1m",
			"-lease", liveTimeout.String(), "-progress", "off", seeds}
	}
	p1 := startCrawl(t, ctx, bin, args(1)...)
	var ua string
	select {
	case ua = <-site.arrived:
	case err := <-p1.exited:
		t.Fatalf("process 1 ended (%v) before asking for robots.txt; stderr:\n%s", err, p1.stderr)
	case <-ctx.Done():
		t.Fatal("process 1 did not ask for robots.txt")
	}
	if ua != "heed-live-test/1" {
		t.Fatalf("robots.txt asked for by %q", ua)
	}
	p1.signal(t, syscall.SIGSTOP)
	stoppedAt := time.Now()
	// Process 2 finds process 1 dead once the timeout passed, takes its
	// lease back, and crawls the site to the end of the job.
	p2 := startCrawl(t, ctx, bin, args(2)...)
	select {
	case err := <-p2.exited:
		if code := exitCode(err); code != 0 {
			t.Fatalf("process 2: exit %v; stderr:\n%s", err, p2.stderr)
		}
	case <-ctx.Done():
		t.Fatalf("process 2 did not end; stderr:\n%s", p2.stderr)
	}
	if got := site.requests("heed-live-test/2"); !slices.Contains(got, "/") || !slices.Contains(got, "/p4") {
		t.Errorf("process 2 did not crawl the site: %q", got)
	}
	if time.Since(stoppedAt) <= liveTimeout {
		t.Fatalf("process 2 crawled the site within the liveness timeout of process 1's stop")
	}
	before := len(site.requests("heed-live-test/1"))
	close(site.release)
	p1.signal(t, syscall.SIGCONT)
	select {
	case err := <-p1.exited:
		if code := exitCode(err); code != 0 {
			t.Errorf("process 1: exit %v; stderr:\n%s", err, p1.stderr)
		}
	case <-ctx.Done():
		t.Fatalf("process 1 did not end once continued; stderr:\n%s", p1.stderr)
	}
	if got := site.requests("heed-live-test/1"); before != 1 || len(got) != 1 {
		t.Errorf("process 1, stopped with its robots.txt request in flight, made requests %q once continued, under a lease another process had taken over", got[before:])
	}
	for n := 1; n <= 2; n++ {
		out := filepath.Join(dir, fmt.Sprintf("out%d.jsonl", n))
		if _, err := os.Stat(out); err != nil {
			continue
		}
		for u, c := range readOutputKeys(t, out).count {
			if c > 1 {
				t.Errorf("%s recorded %d times in the output of process %d", u, c, n)
			}
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, "log1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "presumed dead") {
		t.Errorf("process 1's log does not say it was presumed dead:\n%s", log)
	}
}
