package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestInterrupt runs the built command against a site whose second page
// answers only when the test says so, and interrupts it while that page is
// in flight.
func TestInterrupt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("os.Interrupt cannot be sent to a process on Windows")
	}
	bin := buildCrawl(t)

	t.Run("once: in-flight fetch finishes, output and summary written", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		s := newSite(t, map[string]http.HandlerFunc{
			"/":     page(`<title>Home</title><a href="/slow">slow</a>`),
			"/slow": blockingPage(entered, release, `<title>Slow</title><a href="/next">next</a>`),
			"/next": page(`<title>Next</title>`),
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var stdout bytes.Buffer
		stderr := newWatchWriter("interrupted")
		r := startCrawlTo(t, ctx, &stdout, stderr, bin, "-delay", "0s", "-sitemaps=false", "-grace", "30s", "-progress", "off", writeSeeds(t, s.URL+"/"))
		waitOrFail(t, entered, "the fetch of /slow")
		r.signal(t, os.Interrupt)
		// Let /slow answer only once the command has taken the interrupt,
		// so the page is one in flight at cancellation.
		waitOrFail(t, stderr.seen, "the command to report the interrupt")
		close(release)
		if err := <-r.exited; exitCode(err) != 130 {
			t.Fatalf("exit: %v, want status 130; stderr:\n%s", err, stderr)
		}
		recs := readRecords(t, stdout.Bytes())
		for _, p := range []string{"/", "/slow"} {
			rec, ok := recs[s.URL+p]
			if !ok || rec.Status != http.StatusOK {
				t.Errorf("no record with status 200 for %s in the output:\n%s", p, stdout.String())
			}
		}
		if recs[s.URL+"/slow"].Title != "Slow" {
			t.Errorf("record of the in-flight page: %+v", recs[s.URL+"/slow"])
		}
		if n := s.requested("/next"); n != 0 {
			t.Errorf("/next requested %d times after the interrupt", n)
		}
		if !strings.Contains(stderr.String(), "crawl: 2 pages") {
			t.Errorf("no summary of 2 pages on stderr:\n%s", stderr)
		}
	})

	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run("twice: quits at once with what was fetched: "+signalName(sig), func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			defer close(release)
			s := newSite(t, map[string]http.HandlerFunc{
				"/":      page(`<title>Home</title><a href="/stall">stall</a>`),
				"/stall": blockingPage(entered, release, `<title>Never</title>`),
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// With a long grace period only the second signal ends the
			// command before the guard deadline.
			var stdout bytes.Buffer
			stderr := newWatchWriter("finishing fetches in flight")
			r := startCrawlTo(t, ctx, &stdout, stderr, bin, "-delay", "0s", "-sitemaps=false", "-grace", "10m", "-progress", "off", writeSeeds(t, s.URL+"/"))
			waitOrFail(t, entered, "the fetch of /stall")
			r.signal(t, sig)
			waitOrFail(t, stderr.seen, "the command to report the first signal")
			r.signal(t, sig)
			err := <-r.exited
			if ctx.Err() != nil {
				t.Fatalf("the second signal did not end the command: %v; stderr:\n%s", err, stderr)
			}
			if want := signalStatus(sig); exitCode(err) != want {
				t.Fatalf("exit: %v, want status %d; stderr:\n%s", err, want, stderr)
			}
			if want := "second signal (" + signalName(sig) + "): quitting"; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
			if !strings.Contains(stderr.String(), "crawl: 1 pages") {
				t.Errorf("no summary of the 1 page fetched on stderr:\n%s", stderr)
			}
			recs := readRecords(t, stdout.Bytes())
			if _, ok := recs[s.URL+"/"]; !ok {
				t.Errorf("the page fetched before the signals is not in the output:\n%s", stdout.String())
			}
		})
	}
}

// TestTerminateAndHangUp stops the built command with SIGTERM or SIGHUP
// while a page is in flight: like a first Ctrl-C, it lets the page finish,
// writes every page fetched, prints the summary, and exits with 128 plus
// the signal's number.
func TestTerminateAndHangUp(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGTERM and SIGHUP cannot be sent to a process on Windows")
	}
	bin := buildCrawl(t)
	for _, tc := range []struct {
		sig  os.Signal
		exit int
	}{{syscall.SIGTERM, 143}, {syscall.SIGHUP, 129}} {
		t.Run(signalName(tc.sig), func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			s := newSite(t, map[string]http.HandlerFunc{
				"/":     page(`<title>Home</title><a href="/a">a</a><a href="/b">b</a><a href="/slow">slow</a>`),
				"/a":    page(`<title>A</title>`),
				"/b":    page(`<title>B</title>`),
				"/slow": blockingPage(entered, release, `<title>Slow</title><a href="/next">next</a>`),
				"/next": page(`<title>Next</title>`),
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var stdout bytes.Buffer
			stderr := newWatchWriter(signalName(tc.sig) + ": finishing fetches in flight")
			r := startCrawlTo(t, ctx, &stdout, stderr, bin, "-delay", "0s", "-sitemaps=false", "-grace", "30s", "-progress", "off", writeSeeds(t, s.URL+"/"))
			waitOrFail(t, entered, "the fetch of /slow")
			r.signal(t, tc.sig)
			waitOrFail(t, stderr.seen, "the command to report the signal")
			close(release)
			if err := <-r.exited; exitCode(err) != tc.exit {
				t.Fatalf("exit: %v, want status %d; stderr:\n%s", err, tc.exit, stderr)
			}
			recs := readRecords(t, stdout.Bytes())
			s.mu.Lock()
			fetched := slices.Clone(s.log)
			s.mu.Unlock()
			pages := 0
			for _, target := range fetched {
				if target == "/robots.txt" {
					continue
				}
				pages++
				if rec, ok := recs[s.URL+target]; !ok || rec.Status != http.StatusOK {
					t.Errorf("%s was fetched but has no record with status 200 in the output:\n%s", target, stdout.String())
				}
			}
			if n := s.requested("/next"); n != 0 {
				t.Errorf("/next requested %d times after the signal", n)
			}
			if want := fmt.Sprintf("crawl: %d pages", pages); !strings.Contains(stderr.String(), want) {
				t.Errorf("no summary %q on stderr:\n%s", want, stderr)
			}
		})
	}
}

// TestRecordsStreamThroughPipe reads the built command's first record from
// a pipe while the crawl still runs: the site answers its second page only
// once the test has that record, which is flushed at once, not with the
// once-a-second batch.
func TestRecordsStreamThroughPipe(t *testing.T) {
	bin := buildCrawl(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	s := newSite(t, map[string]http.HandlerFunc{
		"/":     page(`<title>Home</title><a href="/next">next</a>`),
		"/next": blockingPage(entered, release, `<title>Next</title>`),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	var stderr bytes.Buffer
	r := startCrawlTo(t, ctx, pw, &stderr, bin, "-delay", "0s", "-sitemaps=false", "-progress", "off", writeSeeds(t, s.URL+"/"))
	pw.Close() // the command holds its own copy

	// The record of / is written before its links are scheduled, so once
	// /next is asked for it is in the pipe — unless it waits in a buffer
	// for the once-a-second flush.
	waitOrFail(t, entered, "the request for /next")
	if n, ok := pipeBuffered(t, pr); ok && n == 0 {
		t.Error("nothing in the pipe when /next was asked for: the first record was not flushed at once")
	}
	out := bufio.NewReader(pr)
	first := make(chan string, 1)
	go func() {
		line, _ := out.ReadString('\n')
		first <- line
	}()
	var line string
	select {
	case line = <-first:
	case <-time.After(30 * time.Second):
		r.cmd.Process.Kill()
		t.Fatal("no record on the pipe within 30s while the crawl waits for /next")
	}
	var rec record
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.URL != s.URL+"/" || rec.Title != "Home" {
		t.Fatalf("first line %q (%v), want the record of /", line, err)
	}
	releaseOnce.Do(func() { close(release) })
	rest, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-r.exited; err != nil {
		t.Fatalf("exit: %v; stderr:\n%s", err, &stderr)
	}
	if recs := readRecords(t, rest); recs[s.URL+"/next"].Title != "Next" {
		t.Errorf("the rest of the output lacks /next:\n%s", rest)
	}
}

// TestClosedPipeStopsCrawl closes the reading end of the built command's
// output after one record, as "crawl seeds.txt | head -1" does: the crawl
// of an endless site stops, says why, prints the summary and exits 1.
func TestClosedPipeStopsCrawl(t *testing.T) {
	bin := buildCrawl(t)
	srv := chainSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	r := startCrawlTo(t, ctx, pw, &stderr, bin, "-delay", "0s", "-sitemaps=false", "-progress", "off", writeSeeds(t, srv.URL+"/p/0"))
	pw.Close()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first record: %v", err)
	}
	if !strings.Contains(line, srv.URL+"/p/0") {
		t.Errorf("first record %q, want /p/0's", line)
	}
	pr.Close()
	err = <-r.exited
	if ctx.Err() != nil {
		t.Fatalf("the crawl went on after its output was closed; stderr:\n%s", &stderr)
	}
	if exitCode(err) != 1 {
		t.Fatalf("exit: %v, want status 1; stderr:\n%s", err, &stderr)
	}
	for _, want := range []string{"crawl: output closed by its reader; stopping the crawl\n", " pages, "} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, &stderr)
		}
	}
}

func TestProgressOn(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":     page(`<a href="/slow">slow</a>`),
		"/slow": blockingPage(entered, release, `done`),
	})
	// The progress line is written once a second; /slow keeps the crawl
	// going until one has been.
	stderr := newWatchWriter("queue ")
	var stdout bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(context.Background(), []string{"-delay", "0s", "-sitemaps=false", "-progress", "on", "-"}, strings.NewReader(s.URL+"/\n"), &stdout, stderr)
	}()
	waitOrFail(t, entered, "the fetch of /slow")
	select {
	case <-stderr.seen:
	case <-time.After(30 * time.Second):
		t.Error("no progress line on stderr within 30s")
	}
	close(release)
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	out := stderr.String()
	for _, want := range []string{"pages", "/s", "queue", "hosts", "errors"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress line lacks %q:\n%q", want, out)
		}
	}
	if !strings.Contains(out, "crawl: 2 pages") {
		t.Errorf("no summary after the progress line:\n%q", out)
	}

	// Off, or auto with a stderr that is not a terminal: no progress line.
	for _, mode := range []string{"off", "auto"} {
		var errb bytes.Buffer
		code := run(context.Background(), []string{"-delay", "0s", "-sitemaps=false", "-progress", mode, "-"}, strings.NewReader(s.URL+"/\n"), &bytes.Buffer{}, &errb)
		if code != 0 || strings.Contains(errb.String(), "\r") {
			t.Errorf("-progress %s: exit %d, stderr %q; want 0 and no progress line", mode, code, errb.String())
		}
	}
}

func TestOutputRecordsAndBody(t *testing.T) {
	home := `<html><head><title>Home  page</title></head><body><a href="/a">a</a><a href="/private/x">x</a></body></html>`
	a := `<html><head><title>A</title><meta name="robots" content="noindex"></head><body>é</body></html>`
	s := newSite(t, map[string]http.HandlerFunc{"/": page(home), "/a": page(a)})
	for _, withBody := range []bool{false, true} {
		args := []string{"-delay", "0s", "-sitemaps=false", "-progress", "off"}
		if withBody {
			args = append(args, "-body")
		}
		code, out, stderr := runCmd(t, s.URL+"/\n", append(args, "-")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		recs := readRecords(t, []byte(out))
		if len(recs) != 3 {
			t.Fatalf("%d records, want 3 (/, /a and /private/x, disallowed):\n%s", len(recs), out)
		}
		if rx := recs[s.URL+"/private/x"]; rx.Skipped != "disallowed" || rx.Error != "" || rx.Status != 0 || rx.Body != nil {
			t.Errorf("record of /private/x: %+v, want a skip record, disallowed", rx)
		}
		r, ra := recs[s.URL+"/"], recs[s.URL+"/a"]
		if r.Status != 200 || r.Title != "Home page" || r.Links != 2 || r.Depth != 0 || r.ContentType != "text/html" || r.Bytes != len(home) {
			t.Errorf("record of /: %+v", r)
		}
		if ra.Depth != 1 || ra.Referrer != s.URL+"/" || !ra.Noindex || ra.Nofollow {
			t.Errorf("record of /a: %+v", ra)
		}
		if !withBody {
			if r.Body != nil || strings.Contains(out, `"body"`) {
				t.Errorf("body written without -body:\n%s", out)
			}
			continue
		}
		if r.Body == nil || *r.Body != home || ra.Body == nil || *ra.Body != a {
			t.Errorf("-body: bodies %v, %v; want the pages as served", r.Body, ra.Body)
		}
	}
}

// TestTitleOfDeeplyNestedPage gives a page nested deeper than an HTML
// parser goes: its record still has its title.
func TestTitleOfDeeplyNestedPage(t *testing.T) {
	deep := "<html><head><title>Deep\n  down</title></head><body>" + strings.Repeat("<div>", 5000) + "bottom</body></html>"
	s := newSite(t, map[string]http.HandlerFunc{"/": page(deep)})
	code, out, stderr := runCmd(t, s.URL+"/\n", "-delay", "0s", "-sitemaps=false", "-progress", "off", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if rec := readRecords(t, []byte(out))[s.URL+"/"]; rec.Status != http.StatusOK || rec.Title != "Deep down" {
		t.Errorf("record of the nested page: %+v; want status 200 and title %q", rec, "Deep down")
	}
}

func TestLogFileHasDisallowedDecisions(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{
		"/": page(`<a href="/private/x">x</a><a href="/open">open</a>`),
	})
	logFile := filepath.Join(t.TempDir(), "decisions.jsonl")
	code, _, stderr := runCmd(t, s.URL+"/\n", "-delay", "0s", "-sitemaps=false", "-log", logFile, "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := s.requested("/private/x"); n != 0 {
		t.Errorf("/private/x requested %d times", n)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var entry map[string]any
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			t.Fatalf("log line is not JSON: %v: %q", err, sc.Text())
		}
		if entry["msg"] == "disallowed by robots.txt" && entry["url"] == s.URL+"/private/x" && entry["reason"] == "rules" {
			found = true
		}
	}
	if !found {
		t.Errorf("the -log file has no disallowed decision for /private/x:\n%s", data)
	}
}

func TestSeedsFromStdin(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{
		"/":      page(`<title>Home</title>`),
		"/other": page(`<title>Other</title>`),
	})
	stdin := "# seeds on standard input\n" + s.URL + "/\n\nnot a url\n" + s.URL + "/other  # second\n"
	code, out, stderr := runCmd(t, stdin, "-delay", "0s", "-sitemaps=false", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs := readRecords(t, []byte(out))
	if recs[s.URL+"/"].Title != "Home" || recs[s.URL+"/other"].Title != "Other" {
		t.Errorf("records %v, want both seeds from standard input crawled", recs)
	}
	if !strings.Contains(stderr, "-: skipped line 4") {
		t.Errorf("stderr does not report the bad line 4 of standard input:\n%s", stderr)
	}
}
