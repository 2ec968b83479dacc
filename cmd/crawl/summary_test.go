package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
)

// TestNothingFetched crawls seeds that give no page: the summary says why
// with an example, and the last line the cause, then what to try. A seed whose robots.txt
// could not be fetched is an error, with a record of its own; one that
// robots.txt rules keep out is neither.
func TestNothingFetched(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close() // nothing listens there now: connections are refused

	robots500 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "never asked for")
	}))
	defer robots500.Close()
	disallowAll := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /\n")
	}))
	defer disallowAll.Close()

	for _, tc := range []struct {
		name    string
		seeds   []string
		exit    int
		counts  string // in the first line of the summary
		example string // in the summary
		records string // the error of each seed's record, or its skipped reason
		last    string // the last line of stderr
	}{
		{
			"connection refused", []string{"http://" + refused + "/", "http://" + refused + "/other"}, 1,
			"; 0 disallowed by robots.txt; 2 errors; ",
			"\ncrawl: errors: 2 robots-unavailable, e.g. http://" + refused + "/ (robots.txt unreachable: dial tcp " + refused + ": connect: connection refused)\n",
			"robots.txt unreachable: fetch http://" + refused + "/robots.txt: ",
			"crawl: no seed could be fetched: robots.txt unreachable: dial tcp " + refused + ": connect: connection refused; offline? try `go run ./examples/titles`, which serves its own site",
		},
		{
			"robots.txt answers 500", []string{robots500.URL + "/"}, 1,
			"; 0 disallowed by robots.txt; 1 errors; ",
			"\ncrawl: errors: 1 robots-unavailable, e.g. " + robots500.URL + "/ (robots.txt unreachable: answered 500 Internal Server Error)\n",
			"robots.txt unreachable: answered 500 Internal Server Error",
			"crawl: no seed could be fetched: robots.txt unreachable: answered 500 Internal Server Error",
		},
		{
			"robots.txt disallows", []string{disallowAll.URL + "/"}, 0,
			"; 1 disallowed by robots.txt; 0 errors; ",
			"",
			"disallowed",
			"crawl: no page fetched: robots.txt disallows the seeds; `crawl robots URL` shows its rules",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCmd(t, strings.Join(tc.seeds, "\n"), "-delay", "0s", "-sitemaps=false", "-progress", "off", "-")
			if code != tc.exit {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.exit, stderr)
			}
			first, _, _ := strings.Cut(stderr, "\n")
			if !strings.Contains(first, tc.counts) {
				t.Errorf("summary's first line %q lacks %q", first, tc.counts)
			}
			if !strings.Contains(stderr, tc.example) {
				t.Errorf("stderr lacks the example %q:\n%s", tc.example, stderr)
			}
			if m := regexp.MustCompile(`(?m)^crawl: [a-z-]+: e\.g\. .*$`).FindString(stderr); m != "" {
				t.Errorf("an example under a kind the crawler did not count: %s\nstderr:\n%s", m, stderr)
			}
			if !strings.HasSuffix(stderr, "\n"+tc.last+"\n") {
				t.Errorf("stderr does not end with the line %q:\n%s", tc.last, stderr)
			}
			recs := readRecords(t, []byte(out))
			if len(recs) != len(tc.seeds) {
				t.Errorf("%d records, want one per seed:\n%s", len(recs), out)
			}
			for _, seed := range tc.seeds {
				rec := recs[seed]
				if rec.Skipped != "" && rec.Skipped == tc.records && rec.Error == "" && rec.Status == 0 {
					continue // robots.txt rules keep it out: a skip record
				}
				if !strings.HasPrefix(rec.Error, tc.records) || rec.Status != 0 || rec.Skipped != "" {
					t.Errorf("record of %s: %+v; want an error record starting %q", seed, rec, tc.records)
				}
			}
		})
	}
}

func slicesContains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// TestErrorExamples checks that each kind of error the crawler counts gets
// its example, under the crawler's own name for it.
func TestErrorExamples(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := newSite(t, map[string]http.HandlerFunc{
		"/": page(`<a href="/hang">hang</a><a href="/cut">cut</a>`),
		"/hang": func(w http.ResponseWriter, r *http.Request) { // headers never come
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
		"/cut": func(w http.ResponseWriter, r *http.Request) { // the connection closes before an answer
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		},
	})
	code, out, stderr := runCmd(t, s.URL+"/\n", "-delay", "0s", "-sitemaps=false", "-retries", "0", "-max-failures", "none", "-header-timeout", "200ms", "-progress", "off", "-")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"crawl: errors: 1 other, e.g. " + s.URL + "/cut (EOF)\n",
		"crawl: errors: 1 timeout, e.g. " + s.URL + "/hang (fetch: timeout awaiting response headers)\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// An example the command sorted under a kind the crawler did not count
	// gets a line of its own: there should be none.
	if m := regexp.MustCompile(`(?m)^crawl: [a-z-]+: e\.g\. .*$`).FindString(stderr); m != "" {
		t.Errorf("an example under a kind the crawler did not count: %s\nstderr:\n%s", m, stderr)
	}
	recs := readRecords(t, []byte(out))
	if recs[s.URL+"/cut"].Error == "" || recs[s.URL+"/hang"].Error == "" {
		t.Errorf("no error records for /cut and /hang:\n%s", out)
	}
}

// TestSummaryExampleOfDNSFailure gives the summary what a crawl without
// internet meets: each seed reported to OnError because its robots.txt
// could not be fetched, then to OnDisallowed as unavailable.
func TestSummaryExampleOfDNSFailure(t *testing.T) {
	// The robots.txt fetch's error as the fetcher wraps it, and as the
	// crawler reports it for the URLs it kept out.
	dnsErr := &net.DNSError{Err: "no such host", Name: "books.toscrape.com", Server: "10.255.255.53:53", IsNotFound: true}
	fetchErr := &fetch.Error{URL: "https://books.toscrape.com/robots.txt", Err: &url.Error{
		Op: "Get", URL: "https://books.toscrape.com/robots.txt",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: dnsErr},
	}}
	reported := &crawler.Error{Kind: crawler.FailedRobotsUnavailable, Err: fmt.Errorf("%w: %w", crawler.ErrRobotsUnavailable, fetchErr)}
	if got, want := causeText(fetchErr), "lookup books.toscrape.com: no such host"; got != want {
		t.Errorf("causeText(the fetch's error) = %q, want %q", got, want)
	}
	if got, want := causeText(reported), "robots.txt unreachable: lookup books.toscrape.com: no such host"; got != want {
		t.Errorf("causeText(the error reported) = %q, want %q", got, want)
	}
	fails := newFailures()
	for _, u := range []string{"https://books.toscrape.com/", "https://books.toscrape.com/catalogue/"} {
		if !fails.failed(u, reported) {
			t.Errorf("failed(%s) = false: no error record for a URL robots.txt kept out by being unreachable", u)
		}
		fails.disallowed(crawler.DisallowedUnavailable)
	}
	var b bytes.Buffer
	summary(&b, crawler.Stats{Errors: map[crawler.ErrorKind]int64{crawler.FailedRobotsUnavailable: 2}}, fails, &flags{})
	for _, want := range []string{
		"; 0 disallowed by robots.txt; 2 errors; ",
		"\ncrawl: errors: 2 robots-unavailable, e.g. https://books.toscrape.com/ (robots.txt unreachable: lookup books.toscrape.com: no such host)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary:\n%s\nwant it to contain\n%s", &b, want)
		}
	}
	if m := regexp.MustCompile(`(?m)^crawl: [a-z-]+: e\.g\. .*$`).FindString(b.String()); m != "" {
		t.Errorf("an example under a kind the crawler did not count: %s", m)
	}
	if msg, failed := fails.nothingFetched(crawler.Stats{}); !failed || msg != "no seed could be fetched: robots.txt unreachable: lookup books.toscrape.com: no such host; offline? try `go run ./examples/titles`, which serves its own site" {
		t.Errorf("nothingFetched = %q, %v", msg, failed)
	}
}

// TestSeedsBeyondMaxPages gives more seeds than -max-pages: the ones left
// out have a skip record each, and are one line of the summary.
func TestSeedsBeyondMaxPages(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title>`),
		"/x": page(`<title>X</title>`),
		"/y": page(`<title>Y</title>`),
	})
	code, out, stderr := runCmd(t, s.URL+"/\n"+s.URL+"/x\n"+s.URL+"/y\n", "-delay", "0s", "-sitemaps=false", "-max-pages", "1", "-progress", "off", "-")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	recs := readRecords(t, []byte(out))
	if len(recs) != 3 || recs[s.URL+"/"].Title != "Home" || recs[s.URL+"/x"].Skipped != "max-pages" || recs[s.URL+"/y"].Skipped != "max-pages" {
		t.Errorf("records %v, want the first seed's page and a max-pages skip of each other", recs)
	}
	if !strings.Contains(stderr, "crawl: 2 URLs not scheduled: -max-pages 1 reached\n") {
		t.Errorf("stderr does not count the seeds left out:\n%s", stderr)
	}
}

// failingWriter fails every write, as a full disk does.
type failingWriter struct{ err error }

func (w failingWriter) Write(p []byte) (int, error) { return 0, w.err }

// TestWriteErrorStopsCrawl crawls an endless site into an output that
// cannot be written: the crawl stops, says why and prints the summary.
func TestWriteErrorStopsCrawl(t *testing.T) {
	srv := chainSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	code := run(ctx, []string{"-delay", "0s", "-sitemaps=false", "-progress", "off", "-"}, strings.NewReader(srv.URL+"/p/0\n"), failingWriter{syscall.ENOSPC}, &stderr)
	if ctx.Err() != nil {
		t.Fatalf("the crawl went on after its output failed; stderr:\n%s", &stderr)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"crawl: writing output: no space left on device; stopping the crawl\n", " pages, "} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, &stderr)
		}
	}
}

func TestRecorderFlushing(t *testing.T) {
	rec := &record{URL: "https://example.com/"}
	var b bytes.Buffer
	r := newRecorder(&b, false, true)
	r.write(rec)
	if !strings.Contains(b.String(), `"url":"https://example.com/"`) {
		t.Errorf("writing to a terminal: record not written at once: %q", b.String())
	}
	b.Reset()
	r = newRecorder(&b, false, false)
	r.write(rec)
	if !strings.Contains(b.String(), `"url":"https://example.com/"`) {
		t.Errorf("writing to a pipe: first record not written at once: %q", b.String())
	}
	b.Reset()
	r.write(rec)
	if b.Len() != 0 {
		t.Errorf("writing to a pipe: second record written before a flush: %q", b.String())
	}
	var failed []error
	r.onFail = func(err error) { failed = append(failed, err) }
	if err := r.flush(); err != nil || !strings.Contains(b.String(), `"url":"https://example.com/"`) {
		t.Errorf("flush: %v, output %q", err, b.String())
	}
	r.w.Reset(failingWriter{syscall.EPIPE})
	r.write(rec)
	if err := r.flush(); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("flush into a closed pipe: %v, want EPIPE", err)
	}
	r.write(rec)
	r.flush()
	if len(failed) != 1 || !errors.Is(failed[0], syscall.EPIPE) {
		t.Errorf("onFail called with %v, want EPIPE once", failed)
	}
	if got := outputErrorText(failed[0]); got != "output closed by its reader" {
		t.Errorf("outputErrorText(EPIPE) = %q", got)
	}
}

func TestOutputFlag(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": page(`<title>Home</title>`)})
	dir := t.TempDir()
	seeds := filepath.Join(dir, "seeds.txt")
	content := s.URL + "/\n"
	if err := os.WriteFile(seeds, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"-delay", "0s", "-sitemaps=false", "-progress", "off"}

	code, out, stderr := runCmd(t, "", append(base, "-o", "-", seeds)...)
	if code != 0 || readRecords(t, []byte(out))[s.URL+"/"].Title != "Home" {
		t.Errorf("-o -: exit %d, output %q, want the record on standard output; stderr:\n%s", code, out, stderr)
	}

	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(seeds, link); err != nil {
		link = seeds
	}
	other := filepath.Join(dir, "out.jsonl")
	for _, tc := range []struct {
		name  string
		args  []string
		stdin bool
		want  string
	}{
		{"-o the seeds file", []string{"-o", seeds, seeds}, false, "crawl: -o " + seeds + " is the seeds file: refusing to overwrite it\n"},
		{"-o a link to the seeds file", []string{"-o", link, seeds}, false, "crawl: -o " + link + " is the seeds file: refusing to overwrite it\n"},
		{"-log the seeds file", []string{"-log", seeds, seeds}, false, "crawl: -log " + seeds + " is the seeds file: refusing to overwrite it\n"},
		{"-o the seeds on standard input", []string{"-o", seeds, "-"}, true, "crawl: -o " + seeds + " is the seeds file: refusing to overwrite it\n"},
		{"-o and -log one file", []string{"-o", other, "-log", other, seeds}, false, "crawl: -o and -log both name " + other + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdin io.Reader = strings.NewReader("")
			if tc.stdin {
				f, err := os.Open(seeds)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				stdin = f
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), append(base, tc.args...), stdin, &out, &errb)
			if code != 2 || errb.String() != tc.want {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tc.want)
			}
			if data, err := os.ReadFile(seeds); err != nil || string(data) != content {
				t.Errorf("seeds file now %q (%v)", data, err)
			}
			if _, err := os.Stat(other); err == nil {
				t.Errorf("%s was created", other)
			}
		})
	}
}

// TestSummaryReadsTheOneClassification: what the summary makes of an
// error — the kind it is an example of, whether the network failed, and
// its cause without the URL — comes from the crawler's *Error and
// fetch.Classify, which also decided how the crawl paced and retried the
// URL; nothing is read out of the message.
func TestSummaryReadsTheOneClassification(t *testing.T) {
	const u = "http://site.example/p"
	fetched := func(cause error) error {
		return &fetch.Error{URL: u, Err: &url.Error{Op: "Get", URL: u, Err: cause}}
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	forbidden := &net.OpError{Op: "dial", Net: "tcp", Err: &fetch.AddressError{Host: "site.example", Addr: netip.MustParseAddr("10.0.0.1"), Class: fetch.ClassPrivate}}
	for _, tc := range []struct {
		name    string
		err     error
		kind    string
		network bool
		cause   string
	}{
		{"refused", &crawler.Error{Kind: crawler.FailedConnection, Err: fetched(refused)},
			"connection", true, "dial tcp: connect: connection refused"},
		{"no such host", &crawler.Error{Kind: crawler.FailedDNS, Err: fetched(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "site.example", Server: "10.0.0.53:53"}})},
			"dns", true, "lookup site.example: no such host"},
		{"headers too slow", &crawler.Error{Kind: crawler.FailedTimeout, Err: &fetch.Error{URL: u, Err: fetch.ErrHeaderTimeout}},
			"timeout", true, "fetch: timeout awaiting response headers"},
		{"robots.txt too slow", &crawler.Error{Kind: crawler.FailedRobotsUnavailable, Err: fmt.Errorf("%w: %w", crawler.ErrRobotsUnavailable, &fetch.Error{URL: "http://site.example/robots.txt", Err: fetch.ErrTimeout})},
			"robots-unavailable", true, "robots.txt unreachable: fetch: timeout"},
		{"robots.txt answered 500", &crawler.Error{Kind: crawler.FailedRobotsUnavailable, Err: fmt.Errorf("%w: answered 500 Internal Server Error", crawler.ErrRobotsUnavailable)},
			"robots-unavailable", false, "robots.txt unreachable: answered 500 Internal Server Error"},
		{"undecodable", &crawler.Error{Kind: crawler.FailedEncoding, Err: &fetch.Error{URL: u, Err: fmt.Errorf("%w: unsupported coding %q", fetch.ErrContentEncoding, "zstd")}},
			"encoding", false, `fetch: bad content encoding: unsupported coding "zstd"`},
		{"private address", &crawler.Error{Skipped: crawler.SkippedPrivateAddress, Err: fetched(forbidden)},
			"private-address", false, "dial tcp: fetch: address not allowed: site.example resolves to 10.0.0.1 (private)"},
		{"a handler's panic", &crawler.Error{Kind: crawler.FailedHandlerPanic, Err: errors.New("crawler: handler panicked: bug")},
			"handler-panic", false, "crawler: handler panicked: bug"},
	} {
		fails := newFailures()
		if !fails.failed(u, tc.err) {
			t.Errorf("%s: failed = false, want a record", tc.name)
		}
		if fails.network != tc.network || fails.network != fetch.Classify(0, tc.err).Network() {
			t.Errorf("%s: network %v, want %v, as fetch.Classify (%v) says", tc.name, fails.network, tc.network, fetch.Classify(0, tc.err))
		}
		if got, want := fails.examples[tc.kind], u+" ("+tc.cause+")"; got != want {
			t.Errorf("%s: example %q, want %q under %q (examples %v)", tc.name, got, want, tc.kind, fails.examples)
		}
	}
}

// TestNothingFetchedLeadsWithCause runs the built command on a seed where
// nothing listens: the last line says why first, the hint after it.
func TestNothingFetchedLeadsWithCause(t *testing.T) {
	bin := buildCrawl(t)
	code, stderr := runBin(t, bin, "http://"+closedPort(t)+"/", "-progress", "off")
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	cause, hint, ok := strings.Cut(last, "; offline? ")
	if !ok || !strings.HasPrefix(cause, "crawl: no seed could be fetched: ") || !strings.HasSuffix(cause, "connection refused") || !strings.HasPrefix(hint, "try ") {
		t.Errorf("last line %q; want the cause (connection refused), then the hint", last)
	}
}

// TestSummaryWords runs the built command on a site without robots.txt
// whose pages link to each other, often, and to another host, and on a
// seed where nothing listens: the summary says what each robots.txt
// outcome meant, and that the skips count link occurrences.
func TestSummaryWords(t *testing.T) {
	bin := buildCrawl(t)
	links := `<a href="/">home</a><a href="/a">a</a><a href="/b">b</a><a href="http://elsewhere.invalid/x">elsewhere</a>`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/", "/a", "/b":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, links)
		default:
			http.NotFound(w, r) // robots.txt too: none, all allowed
		}
	}))
	defer srv.Close()
	code, stderr := runBin(t, bin, "-delay", "0s", "-sitemaps=false", "-progress", "off", "-o", filepath.Join(t.TempDir(), "out"),
		srv.URL+"/", "http://"+closedPort(t)+"/")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"\ncrawl: robots.txt: none (4xx, all allowed) 1, unreachable (all disallowed) 1\n",
		// Each of the three pages links to /, /a and /b (seen: 3×3 less
		// the two first sightings) and to the other host (scope: 3).
		"\ncrawl: links skipped, each occurrence counted: scope 3, seen 7\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("summary lacks %q:\n%s", strings.TrimSpace(want), stderr)
		}
	}
}
