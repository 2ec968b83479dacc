package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// holdingSite is a loopback site with a chain of pages / → /x → /y → /a,
// paced by its robots.txt's Crawl-delay, whose /a answers its first
// request only when the client goes away: the page a process is killed
// on. Every request is logged as testweb logs them.
type holdingSite struct {
	*httptest.Server
	entered chan struct{} // closed when /a is first requested
	mu      sync.Mutex
	log     []testweb.Entry
	held    bool
	holder  string // the User-Agent of the request held
}

const holdingDelay = 300 * time.Millisecond

func newHoldingSite(t *testing.T) *holdingSite {
	t.Helper()
	s := &holdingSite{entered: make(chan struct{})}
	pages := map[string]string{
		"/":  `<title>Home</title><a href="/x">x</a>`,
		"/x": `<title>X</title><a href="/y">y</a>`,
		"/y": `<title>Y</title><a href="/a">a</a> <a href="/b">b</a>`,
		"/a": `<title>A</title>`,
		"/b": `<title>B</title>`,
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := testweb.Entry{Start: time.Now(), Host: strings.ToLower(r.Host), Method: r.Method, Target: r.URL.RequestURI(), UserAgent: r.UserAgent()}
		defer func() {
			e.End = time.Now()
			s.mu.Lock()
			s.log = append(s.log, e)
			s.mu.Unlock()
		}()
		s.mu.Lock()
		hold := r.URL.Path == "/a" && !s.held
		if hold {
			s.held, s.holder = true, r.UserAgent()
		}
		s.mu.Unlock()
		if hold {
			close(s.entered)
			<-r.Context().Done()
			return // status 0: no answer
		}
		if r.URL.Path == "/robots.txt" {
			e.Status = http.StatusOK
			fmt.Fprintf(w, "User-agent: *\nCrawl-delay: %g\nDisallow: /private/\n", holdingDelay.Seconds())
			return
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			e.Status = http.StatusNotFound
			http.NotFound(w, r)
			return
		}
		e.Status = http.StatusOK
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *holdingSite) entries() []testweb.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// TestRedisThreeProcesses crawls a loopback web with three processes of the
// built command sharing a job on a real redis-server (AOF, appendfsync
// always): two given the seeds, one joining without any. One process is
// SIGKILLed while it holds a page; Redis is SIGKILLed and restarted on its
// directory. The survivors carry on and exit 0 when nothing is left; the
// server's log must show a complete, polite crawl — as if by one crawler —
// with robots.txt fetched once per host for the cluster, and no page
// fetched again but those the killed process held, once their lease had
// ended.
func TestRedisThreeProcesses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on Windows")
	}
	const (
		hosts, pagesPerHost = 12, 15
		crawlDelay          = 200 * time.Millisecond
		minDelay            = 50 * time.Millisecond
		timeout             = 2 * time.Second
		lease               = 2 * timeout
		// slack covers what the server's log cannot see: a lease is
		// granted before its request starts (a robots.txt lookup, a
		// pacing check), and the test notices a death a little late.
		slack = 500 * time.Millisecond
	)
	srv := redistest.Start(t)
	web, truth := loopbackWeb(t, testweb.Config{Hosts: hosts, PagesPerHost: pagesPerHost, CrawlDelay: crawlDelay, Latency: 10 * time.Millisecond, Seed: 10})
	holding := newHoldingSite(t)
	bin := buildCrawl(t)
	dir := t.TempDir()
	seeds := writeSeeds(t, append(web.Web.Seeds(), holding.URL+"/")...)

	ua := func(n int) string { return fmt.Sprintf("heed-redis-test/%d", n) }
	out := func(n int) string { return filepath.Join(dir, fmt.Sprintf("out%d.jsonl", n)) }
	args := func(n int, withSeeds bool) []string {
		a := []string{"-redis", srv.URL(), "-job", "e2e", "-process", "p" + strconv.Itoa(n), "-ua", ua(n), "-o", out(n),
			"-log", filepath.Join(dir, fmt.Sprintf("log%d.jsonl", n)), "-scope", "any", "-delay", minDelay.String(), "-max-delay", "1s",
			"-timeout", timeout.String(), "-lease", lease.String(), "-progress", "off"}
		if withSeeds {
			a = append(a, seeds)
		}
		return a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runs, survivors, victim, killedAt := crashHolder(t, ctx, bin, web, holding, "heed-redis-test/", args)

	// Redis dies and comes back while the survivors crawl on.
	target := web.Log.Len() + 20
	untilTrue(t, "20 more requests", survivors, func() bool { return web.Log.Len() >= target })
	redisDown := time.Now()
	srv.Kill()
	srv.Restart()
	redisUp := time.Now()

	for i, r := range runs {
		if i+1 == victim {
			continue
		}
		select {
		case err := <-r.exited:
			if code := exitCode(err); code != 0 {
				t.Errorf("process %d: exit %v; stderr:\n%s", i+1, err, r.stderr)
			}
			noGoRedisLines(t, r.stderr.String())
		case <-time.After(time.Minute):
			t.Fatalf("process %d did not end within a minute of Redis's restart; stderr:\n%s", i+1, r.stderr)
		}
	}
	t.Logf("process %d killed %v into the crawl; Redis down for %v", victim, killedAt.Sub(holding.entries()[0].Start).Round(time.Millisecond), redisUp.Sub(redisDown).Round(time.Millisecond))

	entries := web.Log.Entries()
	processOf := func(e testweb.Entry) int {
		n, err := strconv.Atoi(strings.TrimPrefix(e.UserAgent, "heed-redis-test/"))
		if err != nil || n < 1 || n > 3 {
			t.Fatalf("request with User-Agent %q, from no process of the test", e.UserAgent)
		}
		return n
	}
	byProcess := map[int]int{}
	afterRestart := 0
	for _, e := range entries {
		p := processOf(e)
		if p == victim && e.Start.After(killedAt.Add(serverReadLag)) {
			t.Errorf("process %d, killed, made a request %v after its death: %s", p, e.Start.Sub(killedAt), e.URL())
		}
		if p != victim || e.Start.Before(killedAt) {
			byProcess[p]++
		}
		if e.Start.After(redisUp) {
			afterRestart++
		}
	}
	t.Logf("requests by process: %v; %d after Redis came back", byProcess, afterRestart)
	if byProcess[victim] < 5 {
		t.Errorf("process %d made %d requests before it was killed; the test wants a kill mid-crawl", victim, byProcess[victim])
	}
	if byProcess[3] == 0 {
		t.Errorf("the process without seeds made no request")
	}
	if afterRestart == 0 {
		t.Errorf("no request after Redis came back: the kill came too late to test anything")
	}

	checkSharedCrawl(t, truth.Analyze(entries, testweb.AnalyzeOptions{MinDelay: minDelay}))

	// Every request made again must be one a death explains: the killed
	// process's page, whose lease was never ended (then not before its
	// liveness timeout could have passed), or a survivor's, whose end could not be
	// told to Redis while it was away.
	holdingEntries := holding.entries()
	all := append(slices.Clone(entries), holdingEntries...)
	slices.SortStableFunc(all, func(a, b testweb.Entry) int { return a.Start.Compare(b.Start) })
	type refetch struct{ prev, next testweb.Entry }
	var byKill, byRestart []refetch
	victimStarts := map[string][]time.Time{}
	for _, e := range all {
		if processOf(e) == victim {
			victimStarts[e.Host] = append(victimStarts[e.Host], e.Start)
		}
	}
	robotsAgain := 0
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
		if isRobots(e) {
			robotsAgain++
		}
		switch {
		case answerFailed(prev):
			// A retry: the fail-once pages of the broken hosts, or a
			// request the killed process left hanging.
		case processOf(prev) == victim && heldAtDeath(prev, victimStarts, killedAt, lease, slack):
			byKill = append(byKill, refetch{prev, e})
			if e.Start.Before(killedAt.Add(lease*4/5 - slack)) {
				t.Errorf("%s fetched again %v after the killed process's death, before its liveness timeout (%v, its last heartbeat a fifth of it before the death at most) could have passed", e.URL(), e.Start.Sub(killedAt).Round(time.Millisecond), lease)
			}
		case !prev.End.Before(redisDown.Add(-slack)) && !prev.End.After(redisUp.Add(slack)):
			byRestart = append(byRestart, refetch{prev, e})
		default:
			t.Errorf("%s fetched again (by process %d, %v after process %d's request) with no death to explain it", e.URL(), processOf(e), e.Start.Sub(prev.Start).Round(time.Millisecond), processOf(prev))
		}
	}
	// The leases taken back: the killed process held one per host at
	// most — a run of up to runMax of its URLs — and only on hosts it had
	// asked within a run's lease of its death.
	killedHosts := map[string]bool{}
	for _, e := range all {
		if processOf(e) == victim && e.Start.After(killedAt.Add(-lease*5/4-slack)) {
			killedHosts[e.Host] = true
		}
	}
	perHost := map[string]int{}
	for _, r := range byKill {
		if !isRobots(r.next) {
			perHost[r.next.Host]++
		}
	}
	for h, n := range perHost {
		if n > runMax {
			t.Errorf("%d pages of %s fetched again after the kill: the killed process held one run of %d of them at most", n, h, runMax)
		}
	}
	if len(perHost) > len(killedHosts) {
		t.Errorf("pages of %d hosts fetched again after the kill, more than the %d hosts the killed process could hold", len(perHost), len(killedHosts))
	}
	var again []string
	for _, r := range append(byKill, byRestart...) {
		again = append(again, fmt.Sprintf("%s (process %d, then %d after %v)", r.next.URL(), processOf(r.prev), processOf(r.next), r.next.Start.Sub(r.prev.Start).Round(time.Millisecond)))
	}
	t.Logf("fetched again: %d after the kill (the killed process had asked %d hosts within a lease of its death), %d after Redis's restart; robots.txt %d times in all: %v",
		len(byKill), len(killedHosts), len(byRestart), robotsAgain, again)

	// The held page: fetched again, by a survivor, once the lease ran out.
	var a []testweb.Entry
	for _, e := range holdingEntries {
		if e.Target == "/a" {
			a = append(a, e)
		}
	}
	if len(a) != 2 || processOf(a[0]) != victim || a[0].Status != 0 || processOf(a[1]) == victim || a[1].Status != http.StatusOK {
		t.Errorf("/a requests %+v; want the killed process's, unanswered, then a survivor's", a)
	}
	holdingRobots := 0
	for i, e := range holdingEntries {
		if isRobots(e) {
			holdingRobots++
		}
		if i > 0 && e.Start.Sub(holdingEntries[i-1].Start) < holdingDelay-testweb.DefaultTolerance {
			t.Errorf("%s requested %v after the previous request to its host; Crawl-delay %v", e.Target, e.Start.Sub(holdingEntries[i-1].Start).Round(time.Millisecond), holdingDelay)
		}
	}
	if holdingRobots != 1 {
		t.Errorf("the holding site's robots.txt fetched %d times", holdingRobots)
	}

	// The outputs: every line a record; every reachable page in one; a
	// page in two only if it was fetched again.
	records := map[string]int{}
	for n := 1; n <= 3; n++ {
		for u, c := range readOutputKeys(t, out(n)).count {
			records[u] += c
		}
	}
	for _, u := range truth.Reachable {
		if records[u] == 0 {
			t.Errorf("no record of %s in any output", u)
		}
	}
	twice := 0
	for _, c := range records {
		twice += c - 1
	}
	if twice > len(byKill)+len(byRestart) {
		t.Errorf("%d records more than pages, more than the %d pages fetched again", twice, len(byKill)+len(byRestart))
	}

	// What crawl status says of it now.
	code, stdout, stderr := runCmd(t, "", "status", "-redis", srv.URL(), "-job", "e2e")
	wants := []string{"job e2e on " + srv.URL() + ": complete\n", "queued:     0 URLs, 0 held by processes\n", "processes:  3 seen in the last minute\n"}
	for n := 1; n <= 3; n++ {
		how := "exited: done"
		if n == victim {
			how = "crawling" // its last heartbeat
		}
		wants = append(wants, fmt.Sprintf("  p%d  %s, seen ", n, how))
	}
	for _, want := range wants {
		if !strings.Contains(stdout, want) {
			t.Errorf("crawl status lacks %q:\n%s", want, stdout)
		}
	}
	if code != 0 || stderr != "" {
		t.Errorf("crawl status: exit %d, stderr %q", code, stderr)
	}
}

// crashHolder starts three crawl processes of one job with args —
// processes 1 and 2 with seeds, 3 without once the job has begun — and
// kills with SIGKILL, at once, whichever of them holds the holding site's
// /a: its worker is waiting for the answer, under a lease. Processes tell
// themselves apart by their user agent, uaPrefix and their number. It
// returns the three processes, the two survivors, the victim's number
// and when it died.
func crashHolder(t *testing.T, ctx context.Context, bin string, web *testweb.Loopback, holding *holdingSite, uaPrefix string, args func(n int, withSeeds bool) []string) (runs, survivors []*crawlRun, victim int, killedAt time.Time) {
	t.Helper()
	runs = []*crawlRun{startCrawl(t, ctx, bin, args(1, true)...), startCrawl(t, ctx, bin, args(2, true)...)}
	untilTrue(t, "the first request", runs, func() bool { return web.Log.Len() > 0 })
	runs = append(runs, startCrawl(t, ctx, bin, args(3, false)...))
	select {
	case <-holding.entered:
	case <-time.After(time.Minute):
		t.Fatal("/a was not requested within a minute")
	}
	holding.mu.Lock()
	victim, _ = strconv.Atoi(strings.TrimPrefix(holding.holder, uaPrefix))
	holding.mu.Unlock()
	if victim < 1 || victim > len(runs) {
		t.Fatalf("/a requested by %q, no process of the test", holding.holder)
	}
	runs[victim-1].signal(t, syscall.SIGKILL)
	if err := <-runs[victim-1].exited; exitCode(err) != -1 {
		t.Fatalf("process %d ended by itself (%v) as it was being killed; stderr:\n%s", victim, err, runs[victim-1].stderr)
	}
	killedAt = time.Now()
	for i, r := range runs {
		if i+1 != victim {
			survivors = append(survivors, r)
		}
	}
	return runs, survivors, victim, killedAt
}

// checkSharedCrawl fails t unless rep, the judgement of a crawl several
// processes shared, is complete and clean: every reachable page, no robots
// or politeness violation, nothing past a 503 robots.txt, no nofollow-only
// or unknown URL, and never two requests at once to one host.
func checkSharedCrawl(t *testing.T, rep *testweb.Report) {
	t.Helper()
	t.Logf("%s", rep)
	if rep.Coverage != 1 {
		t.Errorf("coverage %.3f; missing %v", rep.Coverage, rep.Missing)
	}
	for name, list := range map[string][]string{
		"robots.txt violations":         rep.RobotsViolations,
		"fetches past a 503 robots.txt": rep.UnavailableHostFetches,
		"politeness violations":         politenessViolations(rep),
		"nofollow-only pages fetched":   rep.NofollowOnlyFetched,
		"URLs the web never linked":     rep.NotFound,
	} {
		if len(list) > 0 {
			t.Errorf("%d %s, e.g. %v", len(list), name, list[:min(3, len(list))])
		}
	}
	if rep.PeakInFlightPerHost > 1 {
		t.Errorf("%d requests at once to one host: the processes overlapped", rep.PeakInFlightPerHost)
	}
}
