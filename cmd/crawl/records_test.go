package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/internal/redistest"
)

// recordsWeb is the web of the records tests (issue 30): a live site whose
// pages link to one another, to URLs its robots.txt disallows and to a dead
// site, whose pages all answer 503 — given up at its first failure with
// -max-failures 1, its seed's. The live site's pages form a chain, / → /a →
// /a2 → /b → /c, so that the dead site's URLs are found both before and
// after it is given up (/c's is found last), and /b's disallowed link is
// found just before /c.
type recordsWeb struct {
	live, dead *httptest.Server
	// entered closes when /c is asked for; /c answers once release
	// closes (when block).
	entered, release chan struct{}
}

func newRecordsWeb(t *testing.T, block bool) *recordsWeb {
	t.Helper()
	w := &recordsWeb{entered: make(chan struct{}), release: make(chan struct{})}
	w.dead = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(rw, "User-agent: *\nDisallow:\n")
			return
		}
		http.Error(rw, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(w.dead.Close)
	d := w.dead.URL
	c := page(`<title>C</title><a href="` + d + `/3">dead 3</a>`)
	if block {
		c = blockingPage(w.entered, w.release, `<title>C</title><a href="`+d+`/3">dead 3</a>`)
	} else {
		close(w.entered)
		close(w.release)
	}
	w.live = newSite(t, map[string]http.HandlerFunc{
		"/":   page(`<title>Home</title><a href="/a">a</a> <a href="/private/x">x</a> <a href="` + d + `/1">dead 1</a> <a href="` + d + `/2">dead 2</a>`),
		"/a":  page(`<title>A</title><a href="/a2">a2</a>`),
		"/a2": page(`<title>A2</title><a href="/b">b</a>`),
		"/b":  page(`<title>B</title><a href="/private/y">y</a> <a href="/c">c</a>`),
		"/c":  c,
	}).Server
	return w
}

// seeds are the live site's home and the dead site's.
func (w *recordsWeb) seeds(t *testing.T) string {
	return writeSeeds(t, w.live.URL+"/", w.dead.URL+"/")
}

// args are the flags of issue 30's crawl: no delay, no retry, a host given
// up at its first failure.
func (w *recordsWeb) args() []string {
	return []string{"-delay", "0s", "-scope", "any", "-retries", "0", "-max-failures", "1", "-sitemaps=false", "-progress", "off"}
}

// check fails the test unless outputs hold, together, exactly one record
// of each URL the crawl met, of the kind it must be.
func (w *recordsWeb) check(t *testing.T, outputs ...string) {
	t.Helper()
	l, d := w.live.URL, w.dead.URL
	page200 := func(r record) bool { return r.Status == http.StatusOK && r.Error == "" && r.Skipped == "" }
	disallowed := func(r record) bool { return r.Skipped == "disallowed" && r.Error == "" && r.Status == 0 }
	givenUp := func(r record) bool {
		return r.Status == 0 && r.Skipped == "" && strings.Contains(r.Error, "given up")
	}
	want := map[string]func(record) bool{
		l + "/": page200, l + "/a": page200, l + "/a2": page200, l + "/b": page200, l + "/c": page200,
		l + "/private/x": disallowed, l + "/private/y": disallowed,
		d + "/":  func(r record) bool { return r.Status == http.StatusServiceUnavailable && r.Error == "" },
		d + "/1": givenUp, d + "/2": givenUp, d + "/3": givenUp,
	}
	checkOnePerURL(t, want, outputs...)
}

// TestRecordsEveryURL: a crawl in memory writes one record of every URL it
// meets — pages (a 503 too), links robots.txt disallows (`skipped`), URLs
// of a host given up (`error`), found before it was given up or after —
// and none of anything else.
func TestRecordsEveryURL(t *testing.T) {
	bin := buildCrawl(t)
	w := newRecordsWeb(t, false)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code, stderr := runBin(t, bin, append(append(w.args(), "-o", out), w.seeds(t))...)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	w.check(t, out)
}

// TestRecordsStateKill9 kills a -state crawl with SIGKILL while it fetches
// /c, just after /b's links were scheduled, and reruns it: over both runs
// the output holds one record of every URL, none lost with the killed
// process — /b's disallowed link, whose record was written after the
// checkpoint of /b's acknowledgement, included — and none twice; the dead
// host stays given up across the restart, so that the URL of it found only
// by the rerun (on /c) has its record too.
func TestRecordsStateKill9(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on Windows")
	}
	bin := buildCrawl(t)
	w := newRecordsWeb(t, true)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	// A delay between the live site's requests gives the Store time to
	// make /b's acknowledgement durable (a background sync every 100 ms)
	// before /c is asked for: the kill then finds /b done and its
	// disallowed link seen.
	args := append(append(w.args(), "-delay", "300ms", "-state", filepath.Join(dir, "state"), "-o", out), w.seeds(t))
	killThenRerun(t, bin, args, w.entered, w.release)
	w.check(t, out)
}

// TestRecordsRedis: two processes of a -redis job, each with its own
// output, write one record of every URL between them — each URL's by one
// process — the dead host given up for the whole job.
func TestRecordsRedis(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	w := newRecordsWeb(t, true)
	dir := t.TempDir()
	base := append(w.args(), "-redis", srv.URL(), "-job", "records")
	out := func(p int) string { return filepath.Join(dir, fmt.Sprintf("p%d.jsonl", p)) }
	// The first process schedules the seeds; the second joins once /c is
	// asked for, and both crawl what /c leads to.
	twoProcesses(t, bin, base, out, w.seeds(t), w.entered, w.release)
	w.check(t, out(1), out(2))
}
