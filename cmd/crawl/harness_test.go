package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// The harness of the command's tests: the command run in this process
// (runCmd) or built and run as a process of its own (buildCrawl,
// startCrawl, runBin); the seeds and the loopback sites it crawls; and
// readers of what it writes.

// runCmd runs the command in this process, stdin its standard input, and
// returns its exit status and what it wrote.
func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// watchWriter is a concurrency-safe buffer that closes a channel once its
// content contains a given text.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func newWatchWriter(want string) *watchWriter {
	return &watchWriter{want: want, seen: make(chan struct{})}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.want != "" && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
		w.want = ""
	}
	return n, err
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitOrFail waits for ch; the limit only keeps a broken command from
// hanging the test run.
func waitOrFail(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// built is the command buildCrawl built; TestMain removes it.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// buildCrawl builds the command, once per test process, skipping the
// test when that is not possible here.
func buildCrawl(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		dir, err := os.MkdirTemp("", "crawl-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		bin := filepath.Join(dir, "crawl")
		if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("%v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatalf("cannot build the crawl command: %v", built.err)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// crawlRun is one run of the built command, started by startCrawl.
type crawlRun struct {
	cmd    *exec.Cmd
	stderr output
	exited chan error // its end: cmd.Wait's error
}

// output is where a run's standard error goes: a buffer, read once the run
// has ended, or a watchWriter, read meanwhile.
type output interface {
	io.Writer
	String() string
}

// startCrawl starts the built command, bin, with args, its standard error
// kept in a buffer; ctx kills it.
func startCrawl(t *testing.T, ctx context.Context, bin string, args ...string) *crawlRun {
	t.Helper()
	return startCrawlTo(t, ctx, nil, new(bytes.Buffer), bin, args...)
}

// startCrawlTo starts the built command, bin, with args, its standard
// output going to stdout (nil: discarded) and its standard error to
// stderr; ctx kills it.
func startCrawlTo(t *testing.T, ctx context.Context, stdout io.Writer, stderr output, bin string, args ...string) *crawlRun {
	t.Helper()
	r := &crawlRun{cmd: exec.CommandContext(ctx, bin, args...), stderr: stderr, exited: make(chan error, 1)}
	r.cmd.Stdout, r.cmd.Stderr = stdout, stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	return r
}

// signal sends sig to the run.
func (r *crawlRun) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
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

// runBin runs the built command to its end and returns its exit status
// and standard error.
func runBin(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startCrawl(t, ctx, bin, args...)
	err := <-r.exited
	if ctx.Err() != nil {
		t.Fatalf("crawl %s did not end within a minute; stderr:\n%s", strings.Join(args, " "), r.stderr)
	}
	return exitCode(err), r.stderr.String()
}

// untilLogged waits until the server has logged n requests, or the run has
// ended (ended true, with its error).
func (r *crawlRun) untilLogged(t *testing.T, log *testweb.Log, n int) (exitErr error, ended bool) {
	t.Helper()
	i, err := poll(t, fmt.Sprintf("%d requests", n), []*crawlRun{r}, func() bool { return log.Len() >= n })
	return err, i >= 0
}

// untilTrue waits until cond holds. A run that ends first fails the test.
func untilTrue(t *testing.T, what string, runs []*crawlRun, cond func() bool) {
	t.Helper()
	if i, err := poll(t, what, runs, cond); i >= 0 {
		t.Fatalf("waiting for %s: process %d ended (%v); stderr:\n%s", what, i+1, err, runs[i].stderr)
	}
}

// poll checks, every millisecond, whether one of runs has ended, and
// returns its index and its error if one has, -1 once cond holds. A
// minute fails the test. What the tests wait for is a server's log: polling
// it is the only way to see it grow.
func poll(t *testing.T, what string, runs []*crawlRun, cond func() bool) (ended int, exitErr error) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		for i, r := range runs {
			select {
			case err := <-r.exited:
				return i, err
			default:
			}
		}
		if cond() {
			return -1, nil
		}
		select {
		case <-tick.C:
		case <-deadline:
			for _, r := range runs {
				r.cmd.Process.Kill()
			}
			t.Fatalf("waiting for %s: neither that nor an end within a minute; stderr:\n%s", what, runs[0].stderr)
		}
	}
}

// loopbackWeb serves the web cfg describes, each host on a loopback
// address of its own, until the test ends, and returns it with the ground
// truth of a crawl of its seeds.
func loopbackWeb(t *testing.T, cfg testweb.Config) (*testweb.Loopback, *testweb.Truth) {
	t.Helper()
	web, err := testweb.ListenLoopback(cfg, 0, nil)
	if err != nil {
		t.Fatalf("cannot listen on loopback addresses: %v", err)
	}
	t.Cleanup(func() { web.Close() })
	truth, err := web.Web.Truth(testweb.TruthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return web, truth
}

// writeSeeds writes a seeds file of the given lines, and returns its name.
func writeSeeds(t *testing.T, seeds ...string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(f, []byte(strings.Join(seeds, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// site is a loopback web site for the command's tests: robots.txt
// disallows /private/, pages are served by path, and every request is
// logged.
type site struct {
	*httptest.Server
	mu    sync.Mutex
	log   []string
	pages map[string]http.HandlerFunc
}

// newSite serves pages, by path, until the test ends.
func newSite(t *testing.T, pages map[string]http.HandlerFunc) *site {
	t.Helper()
	s := &site{pages: pages}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.URL.RequestURI())
		s.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		h, ok := s.pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// requested is how many requests the site has logged for target.
func (s *site) requested(target string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.log {
		if t == target {
			n++
		}
	}
	return n
}

// requests is how many requests the site has logged.
func (s *site) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// page serves body as an HTML page.
func page(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
}

// blockingPage answers only after release closes (or the client leaves),
// and closes entered when the request arrives.
func blockingPage(entered, release chan struct{}, body string) http.HandlerFunc {
	var once sync.Once
	return func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(entered) })
		select {
		case <-release:
			page(body)(w, r)
		case <-r.Context().Done():
		}
	}
}

// chainSite serves an endless chain of pages, /p/0 → /p/1 → …, so that a
// crawl of it ends only if something stops it.
func chainSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<title>%d</title><a href="/p/%d">next</a>`, n, n+1)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// readRecords parses JSON Lines output, failing on any line that is not a
// record, and returns the records by URL.
func readRecords(t *testing.T, out []byte) map[string]record {
	t.Helper()
	recs := map[string]record{}
	eachRecord(t, out, func(_ int, rec record) { recs[rec.URL] = rec })
	return recs
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
	eachRecord(t, data, func(line int, rec record) {
		k.lines = line
		u := rec.FinalURL
		if u == "" {
			u = rec.URL
		}
		c, err := testweb.Canonical(u)
		if err != nil {
			t.Fatalf("output line %d: %v", line, err)
		}
		k.count[c]++
	})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("the output ends in a cut line: %q", data[max(0, len(data)-80):])
	}
	return k
}

// eachRecord calls fn with each line of JSON Lines output, numbered from 1,
// failing the test on a line that is not a record.
func eachRecord(t *testing.T, out []byte, fn func(line int, rec record)) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("output line %d is not a JSON record: %v: %q", n, err, sc.Text())
		}
		fn(n, rec)
	}
}

// checkOnce fails the test unless the output file holds, once each,
// records of exactly the given URLs.
func checkOnce(t *testing.T, out string, urls ...string) {
	t.Helper()
	keys := readOutputKeys(t, out)
	want := map[string]bool{}
	for _, u := range urls {
		c, err := testweb.Canonical(u)
		if err != nil {
			t.Fatal(err)
		}
		want[c] = true
		if n := keys.count[c]; n != 1 {
			t.Errorf("%d records of %s in the output, want 1", n, u)
		}
	}
	for u, n := range keys.count {
		if !want[u] {
			t.Errorf("%d records of %s in the output, want none", n, u)
		}
	}
}

// isRobots reports whether a logged request is for a robots.txt file
// (redirected ones included).
func isRobots(e testweb.Entry) bool {
	return strings.HasSuffix(strings.SplitN(e.Target, "?", 2)[0], "robots.txt")
}

// politenessViolations are a report's politeness violations but for the
// redirect hop of a redirected robots.txt, which the crawler paces by its
// own delay since the host's Crawl-delay is not known until it is read: a
// crawl without -state does the same, and it is not about resuming.
// runMax is how many of a host's URLs a process may hold at once: with
// -per-host 1, frontier/redisstore leases up to 16 items of a key
// together (a run), for 5/4 of -lease.
const runMax = 16

// heldAtDeath reports whether a process killed at killedAt could still
// hold the lease of its request prev when it died — which a later fetch
// of the same URL by another process then explains: prev started within
// a run's lease of the death and was among the process's last requests
// to its host (those of its run, with their robots.txt and redirects),
// starts: the starts of each of the process's requests, by host, in
// order.
func heldAtDeath(prev testweb.Entry, starts map[string][]time.Time, killedAt time.Time, lease, slack time.Duration) bool {
	s := starts[prev.Host]
	i := slices.IndexFunc(s, prev.Start.Equal)
	return i >= 0 && i >= len(s)-2*runMax && prev.Start.After(killedAt.Add(-lease*5/4-slack))
}

// serverReadLag is how long after a signal the test web may read (the
// Entry's Start) a request the signalled process sent before it: on two
// loaded cores the server's goroutine can wait that long for a turn.
const serverReadLag = 500 * time.Millisecond

func politenessViolations(rep *testweb.Report) []string {
	var v []string
	for _, s := range rep.PolitenessViolations {
		if !strings.HasSuffix(s, "GET /config/robots.txt") {
			v = append(v, s)
		}
	}
	return v
}

// logHostsOf logs, for diagnosis, every request to the hosts of urls,
// numbering the runs by the times in marks, when each run after the first
// began.
func logHostsOf(t *testing.T, entries []testweb.Entry, marks []time.Time, urls []string) {
	t.Helper()
	hosts := map[string]bool{}
	for _, u := range urls {
		if i := strings.Index(u, "://"); i >= 0 {
			hosts[strings.SplitN(u[i+3:], "/", 2)[0]] = true
		}
	}
	var b strings.Builder
	for _, e := range entries {
		if !hosts[e.Host] {
			continue
		}
		run := 1
		for _, m := range marks {
			if e.Start.After(m) {
				run++
			}
		}
		fmt.Fprintf(&b, "  run %d %s +%v %d %s %s\n", run, e.Start.Format("15:04:05.000"), e.End.Sub(e.Start).Round(time.Microsecond), e.Status, e.Host, e.Target)
	}
	t.Logf("requests to the hosts of %v:\n%s", urls, b.String())
}

// closedPort returns a loopback address no one listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// noGoRedisLines fails the test if go-redis printed to stderr on its own:
// its default logger's lines begin "redis: " and a date.
func noGoRedisLines(t *testing.T, stderr string) {
	t.Helper()
	for line := range strings.SplitSeq(stderr, "\n") {
		if strings.HasPrefix(line, "redis: ") {
			t.Errorf("go-redis wrote to stderr itself: %q", line)
		}
	}
}
