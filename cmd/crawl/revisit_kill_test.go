package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/heedcrawl/heed/internal/testweb"
)

// revisitWeb is the changing web of the revisit tests: a few hosts whose
// pages change every second or so (some never), with honest validators,
// weak ones or none, and nothing gone, moved or new. Each host has more
// pages than it can revisit within -max-revisit at -delay, so that its
// whole budget is always due: a crawler that let go of the pace would
// burst at once.
func revisitWeb(t *testing.T, hosts, pages int) *testweb.ChangingLoopback {
	t.Helper()
	web, err := testweb.ListenChangingLoopback(testweb.ChangingConfig{
		Hosts: hosts, PagesPerHost: pages, Seed: 20,
		MinChangeInterval: 300 * time.Millisecond, MaxChangeInterval: 10 * time.Second,
		StaticShare: 0.2, WeakETagShare: 0.2, NoValidatorShare: 0.3,
		BodyBytes: 200,
	}, 0, nil)
	if err != nil {
		t.Fatalf("cannot listen on loopback addresses: %v", err)
	}
	t.Cleanup(func() { web.Close() })
	return web
}

// homes are the seeds of a changing web: each host's home page.
func homes(web *testweb.ChangingLoopback) []string {
	var seeds []string
	for _, h := range web.Web.Hosts() {
		seeds = append(seeds, "http://"+h.Authority+"/")
	}
	return seeds
}

// recordsByURL reads a -o file, every line of which must be a record of a
// page, and returns them by final URL, in the order written.
func recordsByURL(t *testing.T, name string) map[string][]record {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("%s ends in a cut line", name)
	}
	recs := map[string][]record{}
	eachRecord(t, data, func(line int, rec record) {
		if rec.Error != "" {
			t.Errorf("%s line %d: error record %s: %s", name, line, rec.URL, rec.Error)
		}
		recs[rec.FinalURL] = append(recs[rec.FinalURL], rec)
	})
	return recs
}

// hostBursts checks that in the window after a restart each host got no
// more requests from the run started at restart than its delay allows
// (one per delay, and one more for the edges): the schedule and the pace
// were resumed, not the overdue pages fetched at once.
func hostBursts(t *testing.T, entries []testweb.Entry, ua string, restart time.Time, window, delay time.Duration) {
	t.Helper()
	allowed := int(window/delay) + 1
	perHost := map[string]int{}
	for _, e := range entries {
		if e.UserAgent == ua && !e.Start.Before(restart) && e.Start.Before(restart.Add(window)) {
			perHost[e.Host]++
		}
	}
	if len(perHost) == 0 {
		t.Errorf("%s: no request in the %v after its start", ua, window)
	}
	for host, n := range perHost {
		t.Logf("%s: %d requests to %s in the %v after its start (allowed %d)", ua, n, host, window, allowed)
		if n > allowed {
			t.Errorf("%s: %d requests to %s in the %v after its start; its delay %v allows %d", ua, n, host, window, delay, allowed)
		}
	}
}

// TestRevisitStateKill9 kills a revisiting `crawl -state DIR -o FILE`
// with SIGKILL twice, and runs it a third time for a while (-for): each
// restart resumes the schedule — no host gets more requests after it than
// its delay allows, and each page's next record follows on from its last
// one (previous_fetch) — and FILE has one record per fetch, none lost,
// none twice.
func TestRevisitStateKill9(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on Windows")
	}
	const (
		hosts, pages = 3, 6
		delay        = 150 * time.Millisecond
		window       = time.Second
	)
	web := revisitWeb(t, hosts, pages)
	bin := buildCrawl(t)
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "pages.jsonl")
	args := []string{"-revisit", "-min-revisit", "300ms", "-max-revisit", "1s", "-delay", delay.String(),
		"-sitemaps=false", "-progress", "off", "-state", state, "-o", out, writeSeeds(t, homes(web)...)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ua := func(run int) string { return fmt.Sprintf("heed-revisit-kill/%d", run) }
	ranBy := func(run int) func() int {
		return func() (n int) {
			for _, e := range web.Log.Entries() {
				if e.UserAgent == ua(run) {
					n++
				}
			}
			return n
		}
	}
	conditional := func() (n int) {
		for _, e := range web.Log.Entries() {
			if e.Conditional {
				n++
			}
		}
		return n
	}

	// Run 1: until every host is being revisited.
	r := startCrawl(t, ctx, bin, append([]string{"-ua", ua(1)}, args...)...)
	untilTrue(t, "revisits of every host", []*crawlRun{r}, func() bool { return conditional() >= 3*hosts && ranBy(1)() >= 3*hosts*(pages+1) })
	r.signal(t, syscall.SIGKILL)
	if err := <-r.exited; exitCode(err) != -1 {
		t.Fatalf("run 1 ended by itself (%v) as it was killed; stderr:\n%s", err, r.stderr)
	}

	// Run 2: resumed, watched for a window after its start, and killed.
	restart2 := time.Now()
	stderr2 := newWatchWriter("crawl: resuming the crawl in " + state)
	r = startCrawlTo(t, ctx, nil, stderr2, bin, append([]string{"-ua", ua(2)}, args...)...)
	waitOrFail(t, stderr2.seen, "run 2's resuming line")
	untilTrue(t, "a window of requests after the restart", []*crawlRun{r}, func() bool {
		hostsPast := map[string]bool{}
		for _, e := range web.Log.Entries() {
			if e.UserAgent == ua(2) && e.Start.After(restart2.Add(window)) {
				hostsPast[e.Host] = true
			}
		}
		return len(hostsPast) == hosts
	})
	r.signal(t, syscall.SIGKILL)
	if err := <-r.exited; exitCode(err) != -1 {
		t.Fatalf("run 2 ended by itself (%v) as it was killed; stderr:\n%s", err, r.stderr)
	}

	// Run 3: resumed for a while longer than the window, then stopped by
	// -for, keeping its state.
	restart3 := time.Now()
	code, stderr3 := runBin(t, bin, append([]string{"-ua", ua(3), "-for", "1500ms"}, args...)...)
	if code != 0 || !strings.Contains(stderr3, "crawl: state kept in "+state) || !strings.Contains(stderr3, "crawl: revisits: ") {
		t.Fatalf("run 3: exit %d, want 0, the state kept and a revisit summary; stderr:\n%s", code, stderr3)
	}

	entries := web.Log.Entries()
	hostBursts(t, entries, ua(2), restart2, window, delay)
	hostBursts(t, entries, ua(3), restart3, window, delay)
	rep, err := web.Web.Judge(entries, testweb.FreshnessOptions{MinDelay: delay, Tolerance: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.PolitenessViolations) > 0 {
		t.Errorf("%d politeness violations across the runs, e.g. %v", len(rep.PolitenessViolations), rep.PolitenessViolations[:min(3, len(rep.PolitenessViolations))])
	}
	t.Logf("%d requests over 3 runs; %d conditional; freshness %.2f", len(entries), conditional(), rep.Measured)

	// The output: each page's records a chain of fetches across the runs,
	// with revisits in each run after a restart.
	recs := recordsByURL(t, out)
	if len(recs) != hosts*(pages+1) {
		t.Errorf("records of %d URLs, want %d", len(recs), hosts*(pages+1))
	}
	resumed := map[time.Time]int{} // restart → records of revisits after it of pages fetched before it
	for u, list := range recs {
		checkChain(t, u, list, 100*time.Millisecond)
		for _, rec := range list {
			for _, at := range []time.Time{restart2, restart3} {
				if rec.FetchedAt.After(at) && rec.PreviousFetch != nil && rec.PreviousFetch.Before(at) {
					resumed[at]++
				}
			}
		}
	}
	for i, at := range []time.Time{restart2, restart3} {
		if resumed[at] == 0 {
			t.Errorf("run %d revisited no page fetched before it: the schedule was not resumed", i+2)
		}
	}
}

// TestRevisitRedisTwoProcesses runs two revisiting processes of one
// -redis job: they share one schedule — no page is fetched again within
// -min-revisit of its last fetch, by either, and each page's records, in
// the two outputs together, follow on from one another across the
// processes — and the hosts see one polite crawler.
func TestRevisitRedisTwoProcesses(t *testing.T) {
	const (
		hosts, pages = 3, 4
		delay        = 100 * time.Millisecond
		minRevisit   = 500 * time.Millisecond
	)
	srv := redistest.Start(t)
	web := revisitWeb(t, hosts, pages)
	bin := buildCrawl(t)
	dir := t.TempDir()
	base := []string{"-redis", srv.URL(), "-job", "fresh", "-revisit", "-min-revisit", minRevisit.String(), "-max-revisit", "1500ms",
		"-delay", delay.String(), "-sitemaps=false", "-progress", "off"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	outs := []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}
	ua := []string{"heed-revisit-redis/a", "heed-revisit-redis/b"}
	a := startCrawl(t, ctx, bin, append(base, "-process", "a", "-ua", ua[0], "-o", outs[0], writeSeeds(t, homes(web)...))...)
	// b joins the job a started: a has stored it once it sends a request.
	untilTrue(t, "the first process's first request", []*crawlRun{a}, func() bool { return web.Log.Len() > 0 })
	b := startCrawl(t, ctx, bin, append(base, "-process", "b", "-ua", ua[1], "-o", outs[1])...)
	runs := []*crawlRun{a, b}
	untilTrue(t, "revisits by both processes", runs, func() bool {
		n := map[string]int{}
		for _, e := range web.Log.Entries() {
			if e.Conditional {
				n[e.UserAgent]++
			}
		}
		return n[ua[0]] >= 2*hosts && n[ua[1]] >= 2*hosts
	})
	for i, r := range runs {
		r.signal(t, os.Interrupt)
		if err := <-r.exited; exitCode(err) != 130 || !strings.Contains(r.stderr.String(), "crawl: revisits: ") {
			t.Errorf("process %d: exit %v, want 130 and a revisit summary; stderr:\n%s", i+1, err, r.stderr)
		}
	}

	entries := web.Log.Entries()
	rep, err := web.Web.Judge(entries, testweb.FreshnessOptions{MinDelay: delay, Tolerance: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.PolitenessViolations) > 0 {
		t.Errorf("%d politeness violations across the processes, e.g. %v", len(rep.PolitenessViolations), rep.PolitenessViolations[:min(3, len(rep.PolitenessViolations))])
	}
	last := map[string]testweb.Entry{}
	for _, e := range entries {
		if isRobots(e) {
			continue
		}
		if p, ok := last[e.URL()]; ok && e.Start.Sub(p.Start) < minRevisit-20*time.Millisecond {
			t.Errorf("%s fetched by %s %v after %s fetched it, within -min-revisit %v", e.URL(), e.UserAgent, e.Start.Sub(p.Start).Round(time.Millisecond), p.UserAgent, minRevisit)
		}
		last[e.URL()] = e
	}

	// Each page's records from both outputs, in the order fetched, are one
	// chain; some follow on from the other process's fetch.
	type fetchOf struct {
		rec record
		by  int
	}
	byURL := map[string][]fetchOf{}
	for i, out := range outs {
		for u, list := range recordsByURL(t, out) {
			for _, rec := range list {
				byURL[u] = append(byURL[u], fetchOf{rec, i})
			}
		}
	}
	if len(byURL) != hosts*(pages+1) {
		t.Errorf("records of %d URLs, want %d", len(byURL), hosts*(pages+1))
	}
	across := 0
	for u, list := range byURL {
		slices.SortFunc(list, func(x, y fetchOf) int { return x.rec.FetchedAt.Compare(y.rec.FetchedAt) })
		recs := make([]record, len(list))
		for i, f := range list {
			recs[i] = f.rec
			if i > 0 && f.by != list[i-1].by {
				across++
			}
		}
		checkChain(t, u, recs, 100*time.Millisecond)
	}
	if across == 0 {
		t.Error("no page revisited by one process after the other: they do not share one schedule")
	}
	t.Logf("%d requests; %d revisits following the other process's fetch", len(entries), across)
}
