package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/heedcrawl/heed/internal/testweb"
)

// TestStateSigterm stops a -state crawl with SIGTERM: it stops gracefully
// (143) and says how to resume; the rerun resumes and completes, and over
// both runs every page is fetched once, robots.txt once per host, the
// hosts' delays are kept across the restart, and the output holds each
// record once.
func TestStateSigterm(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	const minDelay = 20 * time.Millisecond
	web, truth := loopbackWeb(t, testweb.Config{Hosts: 6, PagesPerHost: 12, CrawlDelay: 100 * time.Millisecond, Seed: 4})
	bin := buildCrawl(t)
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "pages.jsonl")
	// A robots.txt request the stop cut short (the hanging host's) is not
	// asked again before a -max-delay after it; the header timeout bounds
	// the next. Both short, as a test's minute is.
	args := []string{"-state", state, "-o", out, "-scope", "any", "-delay", minDelay.String(), "-max-delay", "2s", "-header-timeout", "1s", "-progress", "off", writeSeeds(t, web.Web.Seeds()...)}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startCrawl(t, ctx, bin, args...)
	if err, ended := r.untilLogged(t, web.Log, 30); ended {
		t.Fatalf("the crawl ended (%v) before its 30th request; stderr:\n%s", err, r.stderr)
	}
	r.signal(t, syscall.SIGTERM)
	if code := exitCode(<-r.exited); code != 143 {
		t.Fatalf("exit %d after SIGTERM, want 143; stderr:\n%s", code, r.stderr)
	}
	if want := "crawl: state kept in " + state + ": rerun the same command to resume"; !strings.Contains(r.stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	stopped := web.Log.Len()
	if stopped >= len(truth.Reachable) {
		t.Fatalf("%d requests before SIGTERM: the crawl was nearly done, the test proves nothing", stopped)
	}

	restarted := time.Now()
	code, stderr := runBin(t, bin, args...)
	if code != 0 {
		t.Fatalf("rerun: exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "crawl: resuming the crawl in "+state+": ") {
		t.Errorf("the rerun does not say it resumes:\n%s", stderr)
	}
	rep := truth.Analyze(web.Log.Entries(), testweb.AnalyzeOptions{MinDelay: minDelay, MaxDelay: 2 * time.Second})
	t.Logf("stopped after %d requests; %s", stopped, rep)
	if rep.Coverage != 1 {
		t.Errorf("coverage %.3f; missing %v", rep.Coverage, rep.Missing)
		logHostsOf(t, web.Log.Entries(), []time.Time{restarted}, rep.Missing)
	}
	for name, list := range map[string][]string{
		"robots.txt violations":               rep.RobotsViolations,
		"fetches past a 503 robots.txt":       rep.UnavailableHostFetches,
		"politeness violations (across runs)": politenessViolations(rep),
		"duplicate fetches":                   rep.Duplicates,
		"nofollow-only pages fetched":         rep.NofollowOnlyFetched,
		"URLs the web never linked":           rep.NotFound,
	} {
		if len(list) > 0 {
			t.Errorf("%d %s, e.g. %v", len(list), name, list[:min(3, len(list))])
		}
	}
	if n := robotsRefetchedAfterAnswers(web.Log.Entries()); n != 0 {
		t.Errorf("robots.txt fetched again %d times after an answer: the rerun did not keep what the first run read", n)
	}
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

// TestStateCompleteRerun reruns a complete crawl: it says so, exits 0 and
// sends no request; with a new seed in the seeds file, only the new seed's
// site is crawled, its records appended to the output.
func TestStateCompleteRerun(t *testing.T) {
	bin := buildCrawl(t)
	a := newSite(t, map[string]http.HandlerFunc{
		"/":   page(`<title>A</title><a href="/a1">1</a><a href="/a2">2</a>`),
		"/a1": page(`<title>A1</title>`),
		"/a2": page(`<title>A2</title><a href="/private/x">x</a>`),
	})
	b := newSite(t, map[string]http.HandlerFunc{
		"/":   page(`<title>B</title><a href="/b1">1</a>`),
		"/b1": page(`<title>B1</title>`),
	})
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "pages.jsonl")
	seeds := filepath.Join(dir, "seeds.txt")
	writeFile := func(urls ...string) {
		t.Helper()
		if err := os.WriteFile(seeds, []byte(strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-state", state, "-o", out, "-delay", "0s", "-sitemaps=false", "-progress", "off", seeds}
	complete := "crawl: the crawl in " + state + " is complete"

	writeFile(a.URL + "/")
	if code, stderr := runBin(t, bin, args...); code != 0 || strings.Contains(stderr, complete) {
		t.Fatalf("first run: exit %d; stderr:\n%s", code, stderr)
	}
	checkOnce(t, out, a.URL+"/", a.URL+"/a1", a.URL+"/a2", a.URL+"/private/x")
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	requests := a.requests()

	code, stderr := runBin(t, bin, args...)
	if code != 0 || !strings.Contains(stderr, complete) {
		t.Errorf("rerun of the complete crawl: exit %d, stderr:\n%s\nwant 0 and %q", code, stderr, complete)
	}
	if n := a.requests(); n != requests {
		t.Errorf("the rerun of a complete crawl sent %d requests", n-requests)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, first) {
		t.Errorf("the rerun of a complete crawl changed the output:\n%s", again)
	}

	writeFile(a.URL+"/", b.URL+"/")
	code, stderr = runBin(t, bin, args...)
	if code != 0 || strings.Contains(stderr, complete) {
		t.Fatalf("run with a new seed: exit %d; stderr:\n%s", code, stderr)
	}
	if n := a.requests(); n != requests {
		t.Errorf("the run with a new seed on another site sent %d requests to the first", n-requests)
	}
	b.mu.Lock()
	if got := strings.Join(b.log, " "); got != "/robots.txt / /b1" {
		t.Errorf("the new seed's site got %q, want robots.txt, / and /b1", got)
	}
	b.mu.Unlock()
	if now, _ := os.ReadFile(out); !bytes.HasPrefix(now, first) {
		t.Errorf("the output of the first run was not kept:\n%s", now)
	}
	checkOnce(t, out, a.URL+"/", a.URL+"/a1", a.URL+"/a2", a.URL+"/private/x", b.URL+"/", b.URL+"/b1")

	if code, stderr := runBin(t, bin, args...); code != 0 || !strings.Contains(stderr, complete) {
		t.Errorf("rerun after the new seed: exit %d, stderr:\n%s\nwant 0 and %q", code, stderr, complete)
	}
}

// TestStateSettingsMismatch reruns a -state crawl with flags that change
// what it crawls or where it writes: a clear error naming each, exit 2,
// nothing fetched or written; -state-override goes on.
func TestStateSettingsMismatch(t *testing.T) {
	bin := buildCrawl(t)
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title><a href="/a">a</a>`),
		"/a": page(`<title>A</title><a href="/b">b</a>`),
		"/b": page(`<title>B</title>`),
	})
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "pages.jsonl")
	seeds := writeSeeds(t, s.URL+"/")
	base := []string{"-state", state, "-delay", "0s", "-progress", "off"}
	run := func(extra ...string) (int, string) {
		t.Helper()
		return runBin(t, bin, append(append(append([]string{}, base...), extra...), seeds)...)
	}
	if code, stderr := run("-o", out, "-max-depth", "1", "-sitemaps=false"); code != 0 {
		t.Fatalf("first run: exit %d; stderr:\n%s", code, stderr)
	}
	written, _ := os.ReadFile(out)
	requests := s.requests()

	other := filepath.Join(dir, "other.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"limits", []string{"-o", out, "-max-depth", "2", "-sitemaps=false"}, []string{"crawl:   -max-depth 1 (now 2)\n"}},
		{"two flags", []string{"-o", out, "-max-depth", "2", "-sitemaps=true", "-agent", "other"}, []string{"crawl:   -agent heed (now other)\n", "crawl:   -max-depth 1 (now 2)\n", "crawl:   -sitemaps=false (now true)\n"}},
		{"output", []string{"-o", other, "-max-depth", "1", "-sitemaps=false"}, []string{"crawl:   -o " + out + " (now -o " + other + ")\n"}},
		{"standard output", []string{"-max-depth", "1", "-sitemaps=false"}, []string{"crawl:   -o " + out + " (now standard output)\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := run(tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, want := range append(tc.want, "crawl: -state "+state+" holds a crawl started with other settings:\n", "add -state-override to go on with these\n") {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if n := s.requests(); n != requests {
				t.Errorf("%d requests sent", n-requests)
			}
			if now, _ := os.ReadFile(out); !bytes.Equal(now, written) {
				t.Errorf("the output changed:\n%s", now)
			}
			if _, err := os.Stat(other); err == nil {
				t.Errorf("%s was created", other)
			}
		})
	}

	// With the override the crawl goes on, and keeps the new settings.
	code, stderr := run("-o", out, "-max-depth", "2", "-sitemaps=false", "-state-override")
	if code != 0 || !strings.Contains(stderr, "crawl: -state-override: going on with the crawl in "+state+" with -max-depth 1 (now 2)\n") || strings.Contains(stderr, "other settings") {
		t.Fatalf("with -state-override: exit %d; stderr:\n%s", code, stderr)
	}
	if code, stderr := run("-o", out, "-max-depth", "2", "-sitemaps=false"); code != 0 || !strings.Contains(stderr, "is complete") {
		t.Errorf("rerun with the settings the override stored: exit %d; stderr:\n%s", code, stderr)
	}
}

// TestStateLocked starts a second crawl on the state of a running one: it
// names the holder and exits 2 before creating any file.
func TestStateLocked(t *testing.T) {
	bin := buildCrawl(t)
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":     page(`<a href="/slow">slow</a>`),
		"/slow": blockingPage(entered, release, `slow`),
	})
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	seeds := writeSeeds(t, s.URL+"/")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := startCrawl(t, ctx, bin, "-state", state, "-o", filepath.Join(dir, "first.jsonl"), "-delay", "0s", "-sitemaps=false", "-progress", "off", seeds)
	waitOrFail(t, entered, "the first crawl's fetch of /slow")

	second, log := filepath.Join(dir, "second.jsonl"), filepath.Join(dir, "second.log")
	code, stderr := runBin(t, bin, "-state", state, "-o", second, "-log", log, "-delay", "0s", "-progress", "off", seeds)
	if code != 2 {
		t.Errorf("second crawl on the same state: exit %d, want 2; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"crawl: -state " + state + ": ", fmt.Sprintf("in use by pid %d ", first.cmd.Process.Pid), "is another crawl running on it?"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("more than one line on stderr:\n%s", stderr)
	}
	for _, f := range []string{second, log} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("the refused crawl created %s", f)
		}
	}
	close(release)
	if err := <-first.exited; err != nil {
		t.Errorf("first crawl: %v; stderr:\n%s", err, first.stderr)
	}
}

// TestStateStoreFailure makes the disk under the state fail during a
// crawl: the crawl stops with a message that says the state is kept,
// exits 1, and a rerun resumes and completes with each record once.
func TestStateStoreFailure(t *testing.T) {
	var full atomic.Bool
	stateFS = errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return fmt.Errorf("%s: %w", op.Path, syscall.ENOSPC)
		}
		return nil
	}))
	t.Cleanup(func() { stateFS = nil })
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":     page(`<a href="/a">a</a><a href="/slow">slow</a><a href="/c">c</a>`),
		"/a":    page(`a`),
		"/slow": blockingPage(entered, release, `slow`),
		"/c":    page(`c`),
	})
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "pages.jsonl")
	args := []string{"-state", state, "-o", out, "-delay", "0s", "-sitemaps=false", "-progress", "off", "-"}
	stdin := s.URL + "/\n"

	done := make(chan struct{})
	var code int
	var stderr string
	go func() {
		defer close(done)
		code, _, stderr = runCmd(t, stdin, args...)
	}()
	waitOrFail(t, entered, "the fetch of /slow")
	full.Store(true)
	close(release)
	waitOrFail(t, done, "the crawl to stop")
	if code != 1 {
		t.Errorf("exit %d with a failing disk, want 1; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"no space left on device", "crawl: the state in " + state + " is kept as it was last made durable: fix the cause (a full disk?) and rerun the same command to resume\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	full.Store(false)
	code, _, stderr = runCmd(t, stdin, args...)
	if code != 0 {
		t.Fatalf("rerun: exit %d; stderr:\n%s", code, stderr)
	}
	checkOnce(t, out, s.URL+"/", s.URL+"/a", s.URL+"/slow", s.URL+"/c")
}

// TestStateOutputCut reruns a -state crawl whose -o file was cut shorter
// than the crawl left it: an error that says so, exit 2; with
// -state-override the crawl goes on at the file's end.
func TestStateOutputCut(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<a href="/a">a</a>`),
		"/a": page(`a`),
	})
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "pages.jsonl")
	args := []string{"-state", state, "-o", out, "-delay", "0s", "-sitemaps=false", "-progress", "off", "-"}
	if code, _, stderr := runCmd(t, s.URL+"/\n", args...); code != 0 {
		t.Fatalf("first run: exit %d; stderr:\n%s", code, stderr)
	}
	if err := os.WriteFile(out, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, s.URL+"/\n", args...)
	if code != 2 || !strings.Contains(stderr, "crawl: -o "+out+" has 0 bytes, fewer than the ") || !strings.Contains(stderr, "add -state-override to append to it as it is") {
		t.Errorf("rerun on a cut output: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = runCmd(t, s.URL+"/\n", append([]string{"-state-override"}, args...)...)
	if code != 0 || !strings.Contains(stderr, "crawl: -state-override: appending to -o "+out+" as it is (0 bytes;") {
		t.Errorf("rerun with -state-override: exit %d, stderr:\n%s", code, stderr)
	}
	// The override is stored: the next rerun finds the output as it left it.
	if code, _, stderr := runCmd(t, s.URL+"/\n", args...); code != 0 || !strings.Contains(stderr, "is complete") {
		t.Errorf("rerun after the override: exit %d, stderr:\n%s", code, stderr)
	}
}

func TestOutputCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		in       string
		gen, off int64
		ok       bool
	}{
		{"1:0", 1, 0, true},
		{"3:123456789", 3, 123456789, true},
		{"", 0, 0, false},
		{"12", 0, 0, false},
		{"1:-5", 0, 0, false},
		{"x:5", 0, 0, false},
		{"1:5:6", 0, 0, false},
	} {
		gen, off, err := outputCheckpoint([]byte(tc.in))
		if (err == nil) != tc.ok || gen != tc.gen || off != tc.off {
			t.Errorf("outputCheckpoint(%q) = %d, %d, %v", tc.in, gen, off, err)
		}
	}
	r := newRecorder(new(bytes.Buffer), false, false)
	r.base, r.gen = 100, 2
	r.write(&record{URL: "http://x/"})
	cp, err := r.checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	gen, off, err := outputCheckpoint(cp)
	if err != nil || gen != 2 || off != 100+int64(len(`{"url":"http://x/","depth":0,"fetched_at":"0001-01-01T00:00:00Z","duration_ms":0,"bytes":0,"links":0,"noindex":false,"nofollow":false}`)+1) {
		t.Errorf("checkpoint after one record: %q (%v)", cp, err)
	}
}

// TestStateOutputFails writes a -state crawl's records to a device that is
// always full: the crawl stops (exit 1) with no page counted done, since
// none has its record, so a rerun onto a real file writes them all.
func TestStateOutputFails(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<a href="/a">a</a><a href="/b">b</a>`),
		"/a": page(`a`),
		"/b": page(`b`),
	})
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "pages.jsonl")
	args := []string{"-state", state, "-delay", "0s", "-sitemaps=false", "-progress", "off", "-"}
	code, _, stderr := runCmd(t, s.URL+"/\n", append([]string{"-o", "/dev/full"}, args...)...)
	if code != 1 {
		t.Errorf("exit %d writing to /dev/full, want 1; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"crawl: writing output: ", "no space left on device; stopping the crawl\n", "rerun the same command to resume\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, _, stderr = runCmd(t, s.URL+"/\n", append([]string{"-o", out, "-state-override"}, args...)...)
	if code != 0 {
		t.Fatalf("rerun onto a file: exit %d; stderr:\n%s", code, stderr)
	}
	checkOnce(t, out, s.URL+"/", s.URL+"/a", s.URL+"/b")
}

// robotsRefetchedAfterAnswers counts the robots.txt requests made again
// after the host had answered one: a request the stop cut short (the
// hanging host's), or one answered 429 or 5xx, is rightly made again.
func robotsRefetchedAfterAnswers(entries []testweb.Entry) int {
	answered := map[string]bool{}
	n := 0
	for _, e := range entries {
		if !isRobots(e) || e.Target != "/robots.txt" {
			continue
		}
		if answered[e.Host] {
			n++
		}
		answered[e.Host] = answered[e.Host] || !answerFailed(e)
	}
	return n
}
