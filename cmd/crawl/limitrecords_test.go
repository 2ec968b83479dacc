package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/redistest"
)

// limitsWeb is the web of the page-limit records tests: two sites, a and
// b. a's home links to five of its pages and to four of b's; a's pages
// link on to pages found nowhere else, one of them from two pages, and
// back to URLs found before. Which pages a limit lets in depends only on
// the order of the links on a page, never on timing, so that the URLs a
// crawl meets are the same every run.
type limitsWeb struct {
	a, b *site
	// entered closes when a/p3 is asked for; it answers once release
	// closes (when block).
	entered, release chan struct{}
}

func newLimitsWeb(t *testing.T, block bool) *limitsWeb {
	t.Helper()
	w := &limitsWeb{entered: make(chan struct{}), release: make(chan struct{})}
	w.b = newSite(t, map[string]http.HandlerFunc{
		"/":   page(`<title>B</title><a href="/b4">b4</a>`),
		"/b1": page(`<title>B1</title><a href="/b4">b4</a>`),
		"/b2": page(`<title>B2</title><a href="/b4">b4</a>`),
		"/b3": page(`<title>B3</title>`),
		"/b4": page(`<title>B4</title>`),
	})
	b := w.b.URL
	p3 := page(`<title>P3</title><a href="/q4">q4</a>`)
	if block {
		p3 = blockingPage(w.entered, w.release, `<title>P3</title><a href="/q4">q4</a>`)
	} else {
		close(w.entered)
		close(w.release)
	}
	leaf := page(`<title>leaf</title><a href="/r">r</a>`)
	w.a = newSite(t, map[string]http.HandlerFunc{
		"/": page(`<title>A</title><a href="/p1">1</a> <a href="/p2">2</a> <a href="/p3">3</a> <a href="/p4">4</a> <a href="/p5">5</a>` +
			` <a href="` + b + `/">b</a> <a href="` + b + `/b1">b1</a> <a href="` + b + `/b2">b2</a> <a href="` + b + `/b3">b3</a>`),
		"/p1": page(`<title>P1</title><a href="/q1">q1</a> <a href="/q2">q2</a> <a href="/p5">5</a> <a href="` + b + `/b3">b3</a>`),
		"/p2": page(`<title>P2</title><a href="/q2">q2</a> <a href="/q3">q3</a>`),
		"/p3": p3,
		"/p4": leaf, "/p5": leaf, "/q1": leaf, "/q2": leaf, "/q3": leaf, "/q4": leaf, "/r": leaf,
	})
	return w
}

func (w *limitsWeb) args() []string {
	return []string{"-delay", "0s", "-scope", "any", "-retries", "0", "-sitemaps=false", "-progress", "off", w.a.URL + "/"}
}

// maxPages is what a crawl of the web with -max-pages 4 meets: a's home and
// first three pages are fetched, every other URL found on them is
// skipped.
func (w *limitsWeb) maxPages() map[string]string {
	a, b := w.a.URL, w.b.URL
	want := map[string]string{a + "/": "", a + "/p1": "", a + "/p2": "", a + "/p3": ""}
	for _, u := range []string{a + "/p4", a + "/p5", a + "/q1", a + "/q2", a + "/q3", a + "/q4", b + "/", b + "/b1", b + "/b2", b + "/b3"} {
		want[u] = "max-pages"
	}
	return want
}

// maxPagesPerHost is what a crawl of the web with -max-pages-per-host 3
// meets: three pages of each site fetched, the rest found skipped.
func (w *limitsWeb) maxPagesPerHost() map[string]string {
	a, b := w.a.URL, w.b.URL
	want := map[string]string{a + "/": "", a + "/p1": "", a + "/p2": "", b + "/": "", b + "/b1": "", b + "/b2": ""}
	for _, u := range []string{a + "/p3", a + "/p4", a + "/p5", a + "/q1", a + "/q2", a + "/q3", b + "/b3", b + "/b4"} {
		want[u] = "max-pages-per-host"
	}
	return want
}

// checkLimitRecords fails the test unless outputs hold, together, exactly
// one record of each URL of want — a 200 page for "", else a skip with
// that reason — and none of any other URL. It returns the number of skip
// records.
func checkLimitRecords(t *testing.T, want map[string]string, outputs ...string) int {
	t.Helper()
	is := map[string]func(record) bool{}
	skips := 0
	for u, why := range want {
		if why == "" {
			is[u] = func(r record) bool { return r.Status == http.StatusOK && r.Skipped == "" && r.Error == "" }
			continue
		}
		skips++
		is[u] = func(r record) bool { return r.Skipped == why && r.Status == 0 }
	}
	checkOnePerURL(t, is, outputs...)
	return skips
}

// checkOnePerURL fails the test unless outputs hold, together, exactly one
// record of each URL of want, for which want's function is true, and none
// of any other URL.
func checkOnePerURL(t *testing.T, want map[string]func(record) bool, outputs ...string) {
	t.Helper()
	got := map[string][]record{}
	for _, name := range outputs {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		eachRecord(t, data, func(_ int, rec record) { got[rec.URL] = append(got[rec.URL], rec) })
	}
	for _, u := range slices.Sorted(maps.Keys(want)) {
		recs := got[u]
		switch {
		case len(recs) != 1:
			t.Errorf("%d records of %s, want 1: %+v", len(recs), u, recs)
		case !want[u](recs[0]):
			t.Errorf("record of %s: %+v: not what it must be", u, recs[0])
		}
	}
	for u, recs := range got {
		if want[u] == nil {
			t.Errorf("%d records of %s, which the crawl must not meet: %+v", len(recs), u, recs)
		}
	}
}

// killThenRerun runs bin with args, kills it with SIGKILL once entered
// closes, closes release, and runs it again to its end, which must be
// exit 0.
func killThenRerun(t *testing.T, bin string, args []string, entered, release chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startCrawl(t, ctx, bin, args...)
	waitOrFail(t, entered, "the blocking request")
	r.signal(t, syscall.SIGKILL)
	<-r.exited
	close(release)
	if code, stderr := runBin(t, bin, args...); code != 0 {
		t.Fatalf("rerun: exit %d; stderr:\n%s", code, stderr)
	}
}

// twoProcesses runs two processes of a -redis job, bin with base: the
// first, with seeds, writes to out(1); the second, without, joins once
// entered closes, and writes to out(2); release closes once both run.
// It fails the test unless both exit 0.
func twoProcesses(t *testing.T, bin string, base []string, out func(int) string, seeds string, entered, release chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := startCrawl(t, ctx, bin, append(base, "-process", "p1", "-o", out(1), seeds)...)
	waitOrFail(t, entered, "the blocking request")
	second := startCrawl(t, ctx, bin, append(base, "-process", "p2", "-o", out(2))...)
	close(release)
	for i, r := range []*crawlRun{first, second} {
		if err := <-r.exited; exitCode(err) != 0 {
			t.Errorf("p%d: exit %v; stderr:\n%s", i+1, err, r.stderr)
		}
	}
}

// TestLimitRecordsEveryRun crawls the web with -max-pages, then with
// -max-pages-per-host, three times each, in memory: every run's output
// holds one record of each URL met, a page or a skip naming the limit —
// a URL found on two pages, or found again after it was refused, once —
// the same set every run; the summary counts the skips as the records do.
func TestLimitRecordsEveryRun(t *testing.T) {
	bin := buildCrawl(t)
	w := newLimitsWeb(t, false)
	dir := t.TempDir()
	for _, tc := range []struct {
		flag string
		n    int
		want map[string]string
	}{
		{"-max-pages", 4, w.maxPages()},
		{"-max-pages-per-host", 3, w.maxPagesPerHost()},
	} {
		for run := range 3 {
			out := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", tc.flag, run))
			code, stderr := runBin(t, bin, append([]string{tc.flag, fmt.Sprint(tc.n), "-o", out}, w.args()...)...)
			if code != 0 {
				t.Fatalf("%s, run %d: exit %d; stderr:\n%s", tc.flag, run, code, stderr)
			}
			skips := checkLimitRecords(t, tc.want, out)
			if line := fmt.Sprintf("crawl: %d URLs not scheduled: %s %d reached\n", skips, tc.flag, tc.n); !strings.Contains(stderr, line) {
				t.Errorf("%s, run %d: the summary does not count the %d skips (%q):\n%s", tc.flag, run, skips, line, stderr)
			}
			// Stats.SkippedLinks counts each refused URL once, as reported.
			if counted := regexp.MustCompile(`(?m)^crawl: links skipped, .*\b` + tc.flag[1:] + ` (\d+)\b`).FindStringSubmatch(stderr); counted == nil || counted[1] != fmt.Sprint(skips) {
				t.Errorf("%s, run %d: the skipped-links line counts %v, want %d:\n%s", tc.flag, run, counted, skips, stderr)
			}
		}
	}
}

// TestLimitRecordsStateKill9 kills a -state crawl with -max-pages with
// SIGKILL while it fetches a/p3, when the URLs the limit refused are
// marked seen, some reported, the rest still to be, and reruns it: over
// both runs the output holds one record of each URL met, none lost with
// the killed process, none twice.
func TestLimitRecordsStateKill9(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on Windows")
	}
	bin := buildCrawl(t)
	w := newLimitsWeb(t, true)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	args := append([]string{"-max-pages", "4", "-state", filepath.Join(dir, "state"), "-o", out}, w.args()...)
	killThenRerun(t, bin, args, w.entered, w.release)
	checkLimitRecords(t, w.maxPages(), out)
}

// TestLimitRecordsRedis: two processes of a -redis job with -max-pages,
// the second joining while the first fetches a/p3, write one record of
// each URL met between them.
func TestLimitRecordsRedis(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	w := newLimitsWeb(t, true)
	dir := t.TempDir()
	base := []string{"-max-pages", "4", "-delay", "0s", "-scope", "any", "-retries", "0", "-sitemaps=false", "-progress", "off", "-redis", srv.URL(), "-job", "limits"}
	out := func(p int) string { return filepath.Join(dir, fmt.Sprintf("p%d.jsonl", p)) }
	twoProcesses(t, bin, base, out, w.a.URL+"/", w.entered, w.release)
	checkLimitRecords(t, w.maxPages(), out(1), out(2))
}
