package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/redistest"
)

func TestRedisUsageErrors(t *testing.T) {
	seeds := writeSeeds(t, "https://example.invalid/")
	for _, tc := range []struct {
		name string
		args []string
		want string // the whole of stderr
	}{
		{"job without redis", []string{"-job", "j", seeds}, "crawl: -job needs -redis URL, the Redis that holds the job; see crawl -h"},
		{"process without redis", []string{"-process", "p", seeds}, "crawl: -process is for a crawl with -redis; see crawl -h"},
		{"lease without redis", []string{"-lease", "10m", seeds}, "crawl: -lease is for a crawl with -redis; see crawl -h"},
		{"redis without job", []string{"-redis", "redis://127.0.0.1:1", seeds}, "crawl: -redis needs -job NAME, the crawl to start or join; see crawl -h"},
		{"state and redis", []string{"-redis", "redis://127.0.0.1:1", "-job", "j", "-state", t.TempDir(), seeds}, "crawl: -state and -redis both keep the crawl's state: give one of them; see crawl -h"},
		{"zero lease", []string{"-redis", "redis://127.0.0.1:1", "-job", "j", "-lease", "0s", seeds}, "crawl: -lease must be positive, got 0s; see crawl -h"},
		{"negative retry", []string{"-redis", "redis://127.0.0.1:1", "-job", "j", "-redis-retry", "-1s", seeds}, "crawl: -redis-retry must not be negative, got -1s; see crawl -h"},
		{"shards without redis", []string{"-redis-shards", "4", seeds}, "crawl: -redis-shards is for a crawl with -redis; see crawl -h"},
		{"negative shards", []string{"-redis", "redis://127.0.0.1:1", "-job", "j", "-redis-shards", "-1", seeds}, "crawl: -redis-shards must be 0 to 65536, got -1; see crawl -h"},
		{"too many shards", []string{"-redis", "redis://127.0.0.1:1", "-job", "j", "-redis-shards", "65537", seeds}, "crawl: -redis-shards must be 0 to 65536, got 65537; see crawl -h"},
		{"not a redis URL", []string{"-redis", "http://127.0.0.1:1", "-job", "j", seeds}, "crawl: -redis http://127.0.0.1:1: redisstore: bad Redis URL: redis: invalid URL scheme: http"},
		{"bad job", []string{"-redis", "redis://127.0.0.1:1", "-job", "a{b}", seeds}, `crawl: -job "a{b}": not a job name (empty, or with { or }): redisstore: invalid job name: "a{b}"`},
		{"status without job", []string{"status", "-redis", "redis://127.0.0.1:1"}, "crawl status: want -redis URL and -job NAME; see crawl status -h"},
		{"status with argument", []string{"status", "-redis", "redis://127.0.0.1:1", "-job", "j", "extra"}, `crawl status: unexpected argument "extra"; see crawl status -h`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "", tc.args...)
			if code != 2 || stderr != tc.want+"\n" || stdout != "" {
				t.Errorf("exit %d, stderr:\n%s\nstdout %q\nwant exit 2 and the one line:\n%s", code, stderr, stdout, tc.want)
			}
		})
	}
}

// TestRedisUnreachable starts a crawl, and asks for a status, on a Redis
// no one listens for: one line saying so, exit 1, no request and no file.
// The password in the URL is not shown.
func TestRedisUnreachable(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": page("<title>Home</title>")})
	addr := closedPort(t)
	dir := t.TempDir()
	out, logFile := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "log.jsonl")
	url := "redis://heed:s3cret@" + addr
	code, stdout, stderr := runCmd(t, "", "-redis", url, "-job", "j", "-redis-retry", "100ms", "-o", out, "-log", logFile, writeSeeds(t, s.URL+"/"))
	want := "crawl: cannot reach Redis at redis://heed:xxxxx@" + addr + ": "
	if code != 1 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "connection refused") || stdout != "" {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and one line beginning %q, naming the refused connection", code, stderr, want)
	}
	if strings.Contains(stderr, "s3cret") {
		t.Errorf("stderr shows the password: %s", stderr)
	}
	if n := s.requests(); n != 0 {
		t.Errorf("%d requests sent to the site", n)
	}
	for _, name := range []string{out, logFile} {
		if _, err := os.Stat(name); err == nil {
			t.Errorf("%s was created", name)
		}
	}

	// The client's own retries make a second or more of the wait;
	// max_retries=-1 turns them off.
	code, stdout, stderr = runCmd(t, "", "status", "-redis", "redis://"+addr+"?max_retries=-1", "-job", "j", "-redis-retry", "100ms")
	want = "crawl status: cannot reach Redis at redis://" + addr + "?max_retries=-1: "
	if code != 1 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
		t.Errorf("status: exit %d, stderr:\n%s\nstdout %q\nwant exit 1 and one line beginning %q", code, stderr, stdout, want)
	}
}

// TestRedisStatus asks for the status of a job while its one process is
// held on a page, after it completed, and of a job that does not exist.
func TestRedisStatus(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title><a href="/a">a</a> <a href="/b">b</a>`),
		"/a": blockingPage(entered, release, "<title>A</title>"),
		"/b": page("<title>B</title>"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startCrawl(t, ctx, bin, "-redis", srv.URL(), "-job", "st", "-process", "worker-1", "-delay", "0s", "-sitemaps=false", "-progress", "off", "-o", filepath.Join(t.TempDir(), "out.jsonl"), writeSeeds(t, s.URL+"/"))
	waitOrFail(t, entered, "the request for /a")

	code, stdout, stderr := runCmd(t, "", "status", "-redis", srv.URL(), "-job", "st")
	where := "job st on " + srv.URL()
	for _, want := range []string{
		where + ": running\n",
		"queued:     1 URLs, 1 held by processes\n",
		"hosts:      1 with work: 1 busy, 0 ready, 0 resting\n",
		"scheduled:  3 pages\n",
		"processes:  1 seen in the last minute\n",
		"  worker-1  crawling, seen ",
		" (pid " + strconv.Itoa(r.cmd.Process.Pid) + " on ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status during the crawl lacks %q:\n%s", want, stdout)
		}
	}
	if code != 0 || stderr != "" {
		t.Errorf("status during the crawl: exit %d, stderr %q", code, stderr)
	}

	// A second process of the same name is warned of the first (and
	// refused here for its flags, before it does anything).
	code, _, stderr = runCmd(t, "", "-redis", srv.URL(), "-job", "st", "-process", "worker-1", "-max-depth", "9")
	for _, want := range []string{
		"crawl: a process named worker-1 was crawling " + where + " ",
		" ago (pid " + strconv.Itoa(r.cmd.Process.Pid) + " on ",
		"): if it still runs, give each process its own -process name\n",
	} {
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("a namesake: exit %d; stderr lacks %q:\n%s", code, want, stderr)
		}
	}

	close(release)
	if err := <-r.exited; exitCode(err) != 0 {
		t.Fatalf("crawl: exit %v; stderr:\n%s", err, r.stderr)
	}
	code, stdout, stderr = runCmd(t, "", "status", "-redis", srv.URL(), "-job", "st")
	for _, want := range []string{
		where + ": complete\n",
		"queued:     0 URLs, 0 held by processes\n",
		"hosts:      0 with work: 0 busy, 0 ready, 0 resting\n",
		"scheduled:  3 pages\n",
		"fetched:    3 pages, 0 errors (as the processes last reported)\n",
		"  worker-1  exited: done, seen ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status after the crawl lacks %q:\n%s", want, stdout)
		}
	}
	if code != 0 || stderr != "" {
		t.Errorf("status after the crawl: exit %d, stderr %q", code, stderr)
	}

	// More of this in TestStatusNoSuchJob.
	code, stdout, stderr = runCmd(t, "", "status", "-redis", srv.URL(), "-job", "nope")
	if want := "crawl status: there is no job nope on " + srv.URL() + ": "; code != 2 || !strings.HasPrefix(stderr, want) || stdout != "" {
		t.Errorf("status of no job: exit %d, stdout %q, stderr %q; want 2 and a message beginning %q", code, stdout, stderr, want)
	}
	if want := "the jobs on " + srv.URL() + ": st\n"; !strings.Contains(stderr, want) {
		t.Errorf("status of no job: stderr %q lacks %q", stderr, want)
	}
}

// TestRedisSettingsMismatch joins a job with flags that change what it
// crawls or how it paces its hosts: refused, each difference named, exit
// 2, nothing fetched or written; -state-override joins and stores its

// TestRedisShards: -redis-shards sets the shards of a job the process
// starts; without it a job on a single Redis has one, and a job keeps
// the shards it started with whatever a later process asks.
func TestRedisShards(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title><a href="/a">a</a>`),
		"/a": page(`<title>A</title>`),
	})
	seeds := writeSeeds(t, s.URL+"/")
	c := srv.Client()
	shards := func(job string) string {
		t.Helper()
		v, err := c.HGet(context.Background(), "heed:{"+job+"}:n", "shards").Result()
		if err != nil {
			t.Fatalf("job %s: %v", job, err)
		}
		return v
	}
	for _, tc := range []struct {
		job  string
		args []string
		want string
	}{
		{"four", []string{"-redis-shards", "4"}, "4"},
		{"four", []string{"-redis-shards", "8"}, "4"}, // started with 4: kept
		{"default", nil, "1"},
	} {
		args := append([]string{"-redis", srv.URL(), "-job", tc.job, "-delay", "0s", "-sitemaps=false", "-progress", "off", "-o", filepath.Join(t.TempDir(), "out.jsonl")}, tc.args...)
		if code, stderr := runBin(t, bin, append(args, seeds)...); code != 0 {
			t.Fatalf("job %s %v: exit %d; stderr:\n%s", tc.job, tc.args, code, stderr)
		}
		if got := shards(tc.job); got != tc.want {
			t.Errorf("job %s after %v: %s shards, want %s", tc.job, tc.args, got, tc.want)
		}
	}
	if n := s.requests(); n < 2 {
		t.Errorf("%d requests: the site was not crawled", n)
	}
}

// own; a process without seeds needs a job to join.
func TestRedisSettingsMismatch(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title><a href="/a">a</a>`),
		"/a": page(`<title>A</title><a href="/b">b</a>`),
		"/b": page(`<title>B</title>`),
	})
	dir := t.TempDir()
	seeds := writeSeeds(t, s.URL+"/")
	where := "job m on " + srv.URL()
	run := func(extra ...string) (int, string) {
		t.Helper()
		return runBin(t, bin, append([]string{"-redis", srv.URL(), "-job", "m", "-delay", "0s", "-sitemaps=false", "-progress", "off"}, extra...)...)
	}
	code, stderr := run("-process", "none", "-max-depth", "1")
	if want := "crawl: there is no " + where + " to join: start it with seeds (URLs, seeds files, or - for standard input)\n"; code != 2 || stderr != want {
		t.Errorf("seedless process on no job: exit %d, stderr:\n%s\nwant 2 and %q", code, stderr, want)
	}
	if code, stderr := run("-max-depth", "1", "-o", filepath.Join(dir, "first.jsonl"), seeds); code != 0 {
		t.Fatalf("first process: exit %d; stderr:\n%s", code, stderr)
	}
	requests := s.requests()

	other := filepath.Join(dir, "other.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"limit", []string{"-max-depth", "2", seeds}, []string{"crawl:   -max-depth 1 (now 2)\n"}},
		{"without seeds", []string{"-max-depth", "2"}, []string{"crawl:   -max-depth 1 (now 2)\n"}},
		{"pacing", []string{"-max-depth", "1", "-per-host", "2", "-max-delay", "30s"}, []string{"crawl:   -per-host 1 (now 2)\n", "crawl:   -max-delay 1m0s (now 30s)\n"}},
		{"agent and sitemaps", []string{"-max-depth", "1", "-agent", "other", "-sitemaps=true", seeds}, []string{"crawl:   -agent heed (now other)\n", "crawl:   -sitemaps=false (now true)\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := run(append([]string{"-o", other}, tc.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, want := range append(tc.want, "crawl: "+where+" was started with other settings:\n", "add -state-override to go on with these\n") {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if n := s.requests(); n != requests {
				t.Errorf("%d requests sent", n-requests)
			}
			if _, err := os.Stat(other); err == nil {
				t.Errorf("%s was created", other)
			}
		})
	}
	// -ua, -o, -process, -workers and the timeouts are each process's own.
	code, stderr = run("-max-depth", "1", "-ua", "another/1.0", "-workers", "3", "-timeout", "5s", "-lease", "1m", "-process", "p2", "-o", other)
	if want := "crawl: " + where + " is complete: nothing is left to crawl\n"; code != 0 || !strings.HasSuffix(stderr, want) || strings.Contains(stderr, "other settings") {
		t.Errorf("a process with the job's flags: exit %d, stderr:\n%s\nwant 0 ending %q", code, stderr, want)
	}

	// -state-override joins, and the job keeps its flags from then on.
	code, stderr = run("-max-depth", "2", "-state-override", seeds)
	if want := "crawl: -state-override: joining " + where + " with -max-depth 1 (now 2)\n"; code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("with -state-override: exit %d; stderr:\n%s\nwant 0 and %q", code, stderr, want)
	}
	code, stderr = run("-max-depth", "1")
	if code != 2 || !strings.Contains(stderr, "crawl:   -max-depth 2 (now 1)\n") {
		t.Errorf("with the flags the override replaced: exit %d; stderr:\n%s", code, stderr)
	}
	if n := s.requests(); n != requests {
		t.Errorf("%d requests sent after the job completed, for seeds it had crawled", n-requests)
	}

	// Two processes that start a job together with other flags: one
	// starts it, the other is refused.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := []string{"-redis", srv.URL(), "-job", "race", "-delay", "0s", "-sitemaps=false", "-progress", "off", seeds}
	a := startCrawl(t, ctx, bin, append([]string{"-max-depth", "1"}, base...)...)
	b := startCrawl(t, ctx, bin, append([]string{"-max-depth", "2"}, base...)...)
	codeA, codeB := exitCode(<-a.exited), exitCode(<-b.exited)
	if codeA+codeB != 2 || codeA*codeB != 0 {
		t.Errorf("processes started together with other flags: exits %d and %d, want one 0 and one 2; stderr:\n%s\n%s", codeA, codeB, a.stderr, b.stderr)
	}
}

// TestRedisGoneDuringCrawl kills Redis while a page is in flight: the
// process retries for -redis-retry, then stops (exit 1) saying why and how
// to go on, with no request after Redis went away but the one under way,
// and nothing from go-redis on stderr. Run again once Redis is back, it
// rejoins the job and completes it, fetching the page whose lease was
// lost once it has expired.
func TestRedisGoneDuringCrawl(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title><a href="/a">a</a> <a href="/b">b</a>`),
		"/a": blockingPage(entered, release, "<title>A</title>"),
		"/b": page("<title>B</title>"),
	})
	// max_retries=-1: no retries of the client's beneath the Store's, so
	// that -redis-retry alone says how long the process waits.
	url := srv.URL() + "?max_retries=-1"
	where := "job gone on " + url
	args := []string{"-redis", url, "-job", "gone", "-delay", "0s", "-sitemaps=false", "-progress", "off", "-redis-retry", "500ms", "-timeout", "1s", "-lease", "2s"}
	logFile := filepath.Join(t.TempDir(), "log.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startCrawl(t, ctx, bin, append(args, "-log", logFile, writeSeeds(t, s.URL+"/"))...)
	waitOrFail(t, entered, "the request for /a")
	srv.Kill()
	before := s.requests()
	close(release)
	err := <-r.exited
	stderr := r.stderr.String()
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit %v, want 1; stderr:\n%s", err, stderr)
	}
	for _, want := range []string{
		"still failing after 500ms",
		"crawl: " + where + " is kept as Redis holds it: once Redis answers again, run the command again to rejoin it\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	noGoRedisLines(t, stderr)
	if log, _ := os.ReadFile(logFile); !strings.Contains(string(log), `"msg":"redis: `) {
		t.Errorf("go-redis's messages are not in the -log file:\n%s", log)
	}
	if n := s.requests(); n != before {
		t.Errorf("%d requests after Redis went away; the log: %v", n-before, s.log)
	}

	srv.Restart()
	code, stderr := runBin(t, bin, args...)
	if code != 0 || !strings.Contains(stderr, "crawl: process ") || !strings.Contains(stderr, " joining "+where+": 1 URLs queued, 1 held by processes, 3 scheduled so far\n") {
		t.Errorf("rejoining: exit %d; stderr:\n%s", code, stderr)
	}
	for target, want := range map[string]int{"/robots.txt": 1, "/": 1, "/a": 2, "/b": 1} {
		if n := s.requested(target); n != want {
			t.Errorf("%s requested %d times, want %d", target, n, want)
		}
	}
}

// TestRedisStateLost restarts a Redis without persistence under a crawl:
// the process stops (exit 1) saying the job is gone, instead of ending as
// if the crawl were done.
func TestRedisStateLost(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{NoPersistence: true})
	bin := buildCrawl(t)
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title><a href="/a">a</a> <a href="/b">b</a>`),
		"/a": blockingPage(entered, release, "<title>A</title>"),
		"/b": page("<title>B</title>"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startCrawl(t, ctx, bin, "-redis", srv.URL(), "-job", "lost", "-delay", "0s", "-sitemaps=false", "-progress", "off", writeSeeds(t, s.URL+"/"))
	waitOrFail(t, entered, "the request for /a")
	srv.Kill()
	srv.Restart()
	close(release)
	err := <-r.exited
	stderr := r.stderr.String()
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit %v, want 1; stderr:\n%s", err, stderr)
	}
	for _, want := range []string{
		"redisstore: the job's state is gone from Redis\n",
		"crawl: Redis no longer holds job lost on " + srv.URL() + " (restarted without persistence, or its keys deleted): it cannot go on; the outputs keep what was fetched\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "is complete") {
		t.Errorf("the crawl says it is complete:\n%s", stderr)
	}
	if n := s.requested("/b"); n != 0 {
		t.Errorf("/b requested %d times after the job was lost", n)
	}
}

// TestRedisSigterm stops a process of a job with SIGTERM while it holds a
// page: it exits 143 saying how to rejoin, and gives its lease back at
// once — crawl status shows nothing held and no process crawling — so a
// process that rejoins fetches the page without waiting out the lease
// (five minutes by default).
func TestRedisSigterm(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title><a href="/a">a</a> <a href="/b">b</a>`),
		"/a": blockingPage(entered, release, "<title>A</title>"),
		"/b": page("<title>B</title>"),
	})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := []string{"-redis", srv.URL(), "-job", "term", "-process", "p1", "-delay", "0s", "-sitemaps=false", "-progress", "off", "-grace", "100ms", "-o", out}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startCrawl(t, ctx, bin, append(args, writeSeeds(t, s.URL+"/"))...)
	waitOrFail(t, entered, "the request for /a")
	r.signal(t, syscall.SIGTERM)
	err := <-r.exited
	where := "job term on " + srv.URL()
	if want := "crawl: process p1 left " + where + ": its other processes go on, and the same command rejoins it\n"; exitCode(err) != 143 || !strings.HasSuffix(r.stderr.String(), want) {
		t.Fatalf("exit %v, stderr:\n%s\nwant 143 ending %q", err, r.stderr, want)
	}

	_, stdout, _ := runCmd(t, "", "status", "-redis", srv.URL(), "-job", "term")
	for _, want := range []string{
		where + ": stopped: URLs are queued but no process is crawling",
		"queued:     2 URLs, 0 held by processes\n",
		"  p1  exited: stopped, seen ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status after SIGTERM lacks %q:\n%s", want, stdout)
		}
	}

	close(release)
	code, stderr := runBin(t, bin, args...)
	if code != 0 || strings.Contains(stderr, "was crawling") {
		t.Errorf("rejoining: exit %d; stderr:\n%s", code, stderr)
	}
	for target, want := range map[string]int{"/robots.txt": 1, "/": 1, "/a": 2, "/b": 1} {
		if n := s.requested(target); n != want {
			t.Errorf("%s requested %d times, want %d", target, n, want)
		}
	}
	// The rejoining process appended to the output of the first.
	checkOnce(t, out, s.URL+"/", s.URL+"/a", s.URL+"/b")
}

// TestRedisSeedlessWaitsForSeeds starts a process without seeds on a job
// whose settings are stored but whose seeds are not scheduled yet (here,
// because its first process's seed was refused): it waits for them, and
// when another process schedules its seeds it joins with their scope, so
// that the crawl, in the default -scope seeds, is complete.
func TestRedisSeedlessWaitsForSeeds(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title><a href="/a">a</a>`),
		"/a": page(`<title>A</title><a href="/b">b</a>`),
		"/b": page(`<title>B</title>`),
	})
	base := []string{"-redis", srv.URL(), "-job", "wait", "-delay", "0s", "-sitemaps=false", "-progress", "off"}
	// A seed that repeats a path segment is refused: the job is started,
	// its settings stored, and nothing scheduled.
	code, stderr := runBin(t, bin, append(base, writeSeeds(t, s.URL+"/x/x/x/x/"))...)
	if code != 1 || !strings.Contains(stderr, "no valid seed") {
		t.Fatalf("the process with a refused seed: exit %d; stderr:\n%s", code, stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waiting := newWatchWriter("crawl: waiting for the process that started job wait on " + srv.URL() + " to schedule its seeds\n")
	seedless := startCrawlTo(t, ctx, nil, waiting, bin, append(base, "-process", "seedless")...)
	select {
	case <-waiting.seen:
	case err := <-seedless.exited:
		t.Fatalf("the process without seeds ended (%v) instead of waiting; stderr:\n%s", err, waiting)
	case <-ctx.Done():
		t.Fatalf("the process without seeds did not say it waits; stderr:\n%s", waiting)
	}
	if n := s.requests(); n != 0 {
		t.Errorf("%d requests before any seed was scheduled", n)
	}

	if code, stderr := runBin(t, bin, append(base, writeSeeds(t, s.URL+"/"))...); code != 0 {
		t.Errorf("the process with seeds: exit %d; stderr:\n%s", code, stderr)
	}
	if err := <-seedless.exited; exitCode(err) != 0 {
		t.Errorf("the process without seeds: exit %v; stderr:\n%s", err, waiting)
	}
	for _, target := range []string{"/", "/a", "/b"} {
		if n := s.requested(target); n != 1 {
			t.Errorf("%s requested %d times, want once", target, n)
		}
	}
}
