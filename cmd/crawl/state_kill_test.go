package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// crawlRun is one run of the built command, started by startCrawl.
type crawlRun struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	exited chan error
}

func startCrawl(t *testing.T, ctx context.Context, bin string, args ...string) *crawlRun {
	t.Helper()
	r := &crawlRun{cmd: exec.CommandContext(ctx, bin, args...), stderr: new(bytes.Buffer), exited: make(chan error, 1)}
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	return r
}

// exitCode is the status of an ended command, -1 if it was killed by a
// signal it did not handle.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}

// untilLogged waits until the server has logged n requests, or the run has
// ended (ended true, with its error). The server log is what the test waits
// on: polling it is the only way to see it grow.
func (r *crawlRun) untilLogged(t *testing.T, log *testweb.Log, n int) (exitErr error, ended bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-r.exited:
			return err, true
		case <-tick.C:
			if log.Len() >= n {
				return nil, false
			}
		case <-deadline:
			r.cmd.Process.Kill()
			t.Fatalf("the crawl made neither %d requests nor an end within 60s; stderr:\n%s", n, r.stderr)
		}
	}
}

// outputKeys counts the records of an output by the URL they are of.
type outputKeys struct {
	count map[string]int // canonical URL of each record → records
	lines int
}

// readOutputKeys reads a -o file: every line must be a JSON record; each is
// keyed by the canonical URL it is the record of (the final URL of a page,
// the URL of an error).
func readOutputKeys(t *testing.T, name string) outputKeys {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	k := outputKeys{count: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k.lines++
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("output line %d is not a JSON record: %v: %q", k.lines, err, sc.Text())
		}
		u := rec.FinalURL
		if u == "" {
			u = rec.URL
		}
		c, err := testweb.Canonical(u)
		if err != nil {
			t.Fatalf("output line %d: %v", k.lines, err)
		}
		k.count[c]++
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("the output ends in a cut line: %q", data[max(0, len(data)-80):])
	}
	return k
}

// isRobots reports whether a logged request is for a robots.txt file
// (redirected ones included).
func isRobots(e testweb.Entry) bool {
	return strings.HasSuffix(strings.SplitN(e.Target, "?", 2)[0], "robots.txt")
}

// TestStateKill9 kills `crawl -state DIR -o FILE` with SIGKILL at
// seeded-random moments and reruns it until it completes: the server's log
// over all runs must show a complete, polite crawl with few refetches, and
// FILE every record exactly once.
func TestStateKill9(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on Windows")
	}
	const (
		hosts, pages = 20, 20
		crawlDelay   = 200 * time.Millisecond
		minDelay     = 50 * time.Millisecond
		kills        = 6
	)
	web, err := testweb.ListenLoopback(testweb.Config{Hosts: hosts, PagesPerHost: pages, CrawlDelay: crawlDelay, Seed: 9}, 0, nil)
	if err != nil {
		t.Fatalf("cannot listen on loopback addresses: %v", err)
	}
	defer web.Close()
	truth, err := web.Web.Truth(testweb.TruthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bin := buildCrawl(t)
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "pages.jsonl")
	args := []string{"-state", state, "-o", out, "-scope", "any", "-delay", minDelay.String(), "-max-delay", "1s", "-progress", "off", writeSeeds(t, web.Web.Seeds()...)}

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HEED_KILL_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("kill moments from seed %d (HEED_KILL_SEED=%d reproduces them)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Each run sends its own User-Agent (-ua is not bound to the state),
	// so the server's log says which run sent each request, even one a
	// dying process sent as it was killed.
	runUA := func(run int) string { return fmt.Sprintf("heed-kill-test/%d", run) }
	var killedAt []time.Time // when each killed run was known dead
	var startedAt []time.Time
	runs := 0
	for done := false; !done; {
		if runs > kills+5 {
			t.Fatalf("not complete after %d runs", runs)
		}
		runs++
		startedAt = append(startedAt, time.Now())
		r := startCrawl(t, ctx, bin, append([]string{"-ua", runUA(runs)}, args...)...)
		if len(killedAt) == kills {
			err := <-r.exited
			if code := exitCode(err); code != 0 {
				t.Fatalf("run %d: exit %v; stderr:\n%s", runs, err, r.stderr)
			}
			done = true
			break
		}
		// Kill after a random number of further requests: few enough that
		// every kill falls inside the crawl.
		target := web.Log.Len() + 5 + rng.IntN(40)
		err, ended := r.untilLogged(t, web.Log, target)
		if ended {
			if code := exitCode(err); code != 0 {
				t.Fatalf("run %d: exit %v before it was killed; stderr:\n%s", runs, err, r.stderr)
			}
			t.Logf("run %d completed before request %d", runs, target)
			done = true
			break
		}
		if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := <-r.exited; exitCode(err) != -1 {
			t.Fatalf("run %d ended by itself (%v) as it was being killed; stderr:\n%s", runs, err, r.stderr)
		}
		killedAt = append(killedAt, time.Now())
	}
	if len(killedAt) < 5 {
		t.Fatalf("only %d kills before the crawl completed; the test proves too little", len(killedAt))
	}

	entries := web.Log.Entries()
	rep := truth.Analyze(entries, testweb.AnalyzeOptions{MinDelay: minDelay})
	t.Logf("%d runs, %d kills; %s", runs, len(killedAt), rep)
	if rep.Coverage != 1 {
		t.Errorf("coverage %.3f; missing %v", rep.Coverage, rep.Missing)
		logHostsOf(t, entries, startedAt[1:], rep.Missing[:1])
	}
	for name, list := range map[string][]string{
		"robots.txt violations":               rep.RobotsViolations,
		"fetches past a 503 robots.txt":       rep.UnavailableHostFetches,
		"politeness violations (across runs)": politenessViolations(rep),
		"nofollow-only pages fetched":         rep.NofollowOnlyFetched,
		"URLs the web never linked":           rep.NotFound,
	} {
		if len(list) > 0 {
			t.Errorf("%d %s, e.g. %v", len(list), name, list[:min(3, len(list))])
		}
	}

	// Refetches, by the kill that caused them. A page is fetched again
	// only if its acknowledgement had not reached the Store's log when the
	// run before was killed: it was in flight in the crawler (answered,
	// not yet acknowledged), or acknowledged within the last commit
	// interval. The server sees both as answered shortly before the
	// kill, so the bound per kill is the pages answered in that window,
	// and, with one request per host at a time and a commit interval
	// shorter than any host's delay, about one per host.
	const window = 250 * time.Millisecond // pebblestore's 100ms sync interval, the sync, and slack
	// A refetch is charged to the kill that ended the run of the page's
	// previous request: the run right after may itself be killed before
	// it gets to the page.
	runOf := func(e testweb.Entry) int {
		n, err := strconv.Atoi(strings.TrimPrefix(e.UserAgent, "heed-kill-test/"))
		if err != nil {
			t.Fatalf("request with User-Agent %q, from no run of the test", e.UserAgent)
		}
		return n
	}
	lastRun := map[string]int{}
	refetches := make([]int, len(killedAt)+1) // by run, from 1
	for _, e := range entries {
		if isRobots(e) {
			continue
		}
		c, err := testweb.Canonical(e.URL())
		if err != nil {
			t.Fatal(err)
		}
		run := runOf(e)
		prev, again := lastRun[c]
		lastRun[c] = run
		switch {
		case !again:
		case prev == run:
			t.Errorf("%s requested twice in run %d", e.URL(), run)
		default:
			refetches[prev]++
		}
	}
	// The crawl's pace, in pages per commit interval (pebblestore's
	// 100ms), for the second bound: a request in flight per host, plus a
	// commit interval's pages.
	pageRequests := 0
	for _, e := range entries {
		if !isRobots(e) {
			pageRequests++
		}
	}
	perInterval := int(math.Ceil(float64(pageRequests) / rep.Makespan.Seconds() / 10))
	total, worst := 0, 0
	for k, dead := range killedAt {
		run := k + 1
		answered := 0
		for _, e := range entries {
			if !isRobots(e) && runOf(e) == run && (e.Status == 0 || e.End.After(dead.Add(-window))) {
				answered++
			}
		}
		got := refetches[run]
		total, worst = total+got, max(worst, got)
		t.Logf("kill %d: %d pages refetched after it; %d answered in the %v before it", run, got, answered, window)
		if got > answered {
			t.Errorf("kill %d: %d pages refetched, more than the %d answered in the last %v before it", run, got, answered, window)
		}
		if got > hosts+perInterval {
			t.Errorf("kill %d: %d pages refetched, more than one per host (%d) and a commit interval's pages (%d)", run, got, hosts, perInterval)
		}
	}
	t.Logf("refetches: %d over %d kills (%.1f per kill, at most %d; bound %d hosts + %d pages per 100ms); robots.txt refetched %d times", total, len(killedAt), float64(total)/float64(len(killedAt)), worst, hosts, perInterval, rep.RobotsRefetches)

	// The output: every line a record, each page's record once, every
	// reachable page's there.
	keys := readOutputKeys(t, out)
	for u, n := range keys.count {
		if n != 1 {
			t.Errorf("%d records of %s", n, u)
		}
	}
	for _, u := range truth.Reachable {
		if keys.count[u] == 0 {
			t.Errorf("no record of %s", u)
		}
	}
}
