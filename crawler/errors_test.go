package crawler_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

// kindOf is the Kind of the *crawler.Error in err's chain, "" if none.
func kindOf(err error) crawler.ErrorKind {
	var e *crawler.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// failingTransport fails the requests for the paths in fail with their
// error, as a transport meeting that failure would, and sends the others
// on to a real transport.
type failingTransport struct {
	next  *http.Transport
	fail  map[string]error
	tries *sync.Map // path → *atomic.Int32, the requests failed
}

func (t failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err, ok := t.fail[r.URL.Path]; ok {
		if t.tries != nil {
			n, _ := t.tries.LoadOrStore(r.URL.Path, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
		}
		return nil, err
	}
	return t.next.RoundTrip(r)
}

func (t failingTransport) CloseIdleConnections() { t.next.CloseIdleConnections() }

// dialFailure is err as a connection attempt meets it.
func dialFailure(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }

// corruptingStore is a MemoryStore that keeps the URLs ending in
// "/corrupt" as "%zz" instead, as a shared Store written by another
// program might: a URL that does not parse.
type corruptingStore struct{ frontier.MemoryStore }

func (s *corruptingStore) Add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	for i := range batch {
		if strings.HasSuffix(batch[i].URL, "/corrupt") {
			batch[i].URL = strings.TrimSuffix(batch[i].URL, "corrupt") + "%zz"
		}
	}
	return s.MemoryStore.Add(ctx, batch, lim)
}

// reportScenario is a crawl in which one kind of failure or reported skip
// befalls a URL.
type reportScenario struct {
	kind   crawler.ErrorKind  // the failure wanted, or
	skip   crawler.SkipReason // the skip wanted
	target string             // the end of the URL it befalls; "" for any
	robots string             // robots.txt, defaultRobots if empty
	routes map[string]http.HandlerFunc
	fail   map[string]error // transport failures by path
	seeds  []string         // paths, or absolute URLs; "/" if none
	opts   []crawler.Option
	hook   func(c *crawler.Crawler)
}

func reportScenarios() []reportScenario {
	failing := func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) }
	noLinks := fetch.ExtractorFunc(func(context.Context, *fetch.Page) ([]fetch.Link, error) {
		return nil, errors.New("no links today")
	})
	boom := fetch.ExtractorFunc(func(context.Context, *fetch.Page) ([]fetch.Link, error) { panic("extractor bug") })
	return []reportScenario{
		{kind: crawler.FailedTimeout, target: "/hang",
			routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/hang"), "/hang": func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done()
			}},
			opts: []crawler.Option{crawler.WithHeaderTimeout(200 * time.Millisecond)}},
		{kind: crawler.FailedDNS, target: "/dns", routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/dns")},
			fail: map[string]error{"/dns": dialFailure(&net.DNSError{Err: "no such host", Name: "gone.example", IsNotFound: true})}},
		{kind: crawler.FailedConnection, target: "/refused", routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/refused")},
			fail: map[string]error{"/refused": dialFailure(os.NewSyscallError("connect", syscall.ECONNREFUSED))}},
		{kind: crawler.FailedTLS, target: "/tls", routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/tls")},
			fail: map[string]error{"/tls": &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}},
		{kind: crawler.FailedCanceled, target: "/canceled", routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/canceled")},
			fail: map[string]error{"/canceled": context.Canceled}},
		{kind: crawler.FailedRedirect, target: "/r2",
			routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/r1"), "/r1": redirectTo(http.StatusFound, "/r2"),
				"/r2": redirectTo(http.StatusFound, "/r3"), "/r3": htmlPage("r3")},
			opts: []crawler.Option{crawler.WithMaxRedirects(1)}},
		{kind: crawler.FailedEncoding, target: "/gzip", routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/gzip"),
			"/gzip": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				fmt.Fprint(w, strings.Repeat("not gzip ", 20))
			}}},
		{kind: crawler.FailedInvalidURL, target: "/%zz", routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/corrupt")},
			opts: []crawler.Option{crawler.WithStore(new(corruptingStore))}},
		{kind: crawler.FailedOther, target: "/cut", routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/cut"),
			"/cut": func(w http.ResponseWriter, r *http.Request) {
				if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
					conn.Close()
				}
			}}},
		{kind: crawler.FailedRobotsUnavailable, target: "/", robots: "-",
			routes: map[string]http.HandlerFunc{"/robots.txt": failing, "/": htmlPage("home")}},
		{kind: crawler.FailedHostGivenUp,
			routes: map[string]http.HandlerFunc{"/": htmlPage("home", "/f1", "/f2", "/f3", "/f4"),
				"/f1": failing, "/f2": failing, "/f3": failing, "/f4": failing},
			opts: []crawler.Option{crawler.WithHostFailures(2)}},
		{kind: crawler.FailedHandlerPanic, target: "/", routes: map[string]http.HandlerFunc{"/": htmlPage("home")},
			hook: func(c *crawler.Crawler) { c.OnPage(func(context.Context, *crawler.Page) { panic("handler bug") }) }},
		{kind: crawler.FailedExtract, target: "/", routes: map[string]http.HandlerFunc{"/": htmlPage("home")},
			opts: []crawler.Option{crawler.WithExtractor("text/html", noLinks)}},
		{kind: crawler.FailedExtractorPanic, target: "/", routes: map[string]http.HandlerFunc{"/": htmlPage("home")},
			opts: []crawler.Option{crawler.WithExtractor("text/html", boom)}},
		{kind: crawler.FailedRender, target: "/",
			routes: map[string]http.HandlerFunc{"/": htmlPage("home")},
			opts:   []crawler.Option{crawler.WithRenderer(failingRenderer{}, crawler.RenderAlways)}},
		{kind: crawler.FailedSitemap, target: "/sitemap.xml",
			routes: map[string]http.HandlerFunc{"/": htmlPage("home"), "/sitemap.xml": htmlPage("not a sitemap")},
			opts:   []crawler.Option{crawler.WithSitemaps(true)}},

		{skip: crawler.SkippedPrivateAddress, target: "http://10.255.255.1/x",
			routes: map[string]http.HandlerFunc{"/": redirectTo(http.StatusFound, "http://10.255.255.1/x")}},
		{skip: crawler.SkippedInvalid, target: "/",
			routes: map[string]http.HandlerFunc{"/": redirectTo(http.StatusFound, "http://127.0.0.1:99999/")}},
		{skip: crawler.SkippedInvalid, target: "mailto:someone@example.com",
			routes: map[string]http.HandlerFunc{"/": htmlPage("home")}, seeds: []string{"/", "mailto:someone@example.com"}},
		{skip: crawler.SkippedMaxPages, target: "/second",
			routes: map[string]http.HandlerFunc{"/": htmlPage("home"), "/second": htmlPage("second")},
			seeds:  []string{"/", "/second"}, opts: []crawler.Option{crawler.WithMaxPages(1)}},
	}
}

// TestOnErrorReportsEveryKind crawls a site on which each kind of failure,
// and each kind of skip reported to OnError, befalls a URL, and holds
// OnError to its word: every error is an *Error with exactly one of Kind
// and Skipped; every count in Stats.Errors is one call with that Kind,
// every call with a Skipped is counted in Stats.SkippedLinks; and every
// ErrorKind the package declares is reached.
func TestOnErrorReportsEveryKind(t *testing.T) {
	reached := map[crawler.ErrorKind]bool{}
	for _, sc := range reportScenarios() {
		name := string(sc.kind)
		if sc.skip != "" {
			name = "skip-" + string(sc.skip) + sc.target
		}
		t.Run(name, func(t *testing.T) {
			delivered := runScenario(t, sc)
			reached[sc.kind] = reached[sc.kind] || delivered
		})
	}
	for _, k := range declared(t, "ErrorKind") {
		if !reached[crawler.ErrorKind(k)] {
			t.Errorf("ErrorKind %q is declared but no scenario delivered it to OnError", k)
		}
	}
}

// runScenario runs sc's crawl, checks what OnError received against Stats,
// and reports whether the scenario's kind or skip reached its target.
func runScenario(t *testing.T, sc reportScenario) bool {
	robots := sc.robots
	switch robots {
	case "":
		robots = defaultRobots
	case "-":
		robots = ""
	}
	s := newSite(t, robots, sc.routes)
	opts := append([]crawler.Option{crawler.WithRetries(0), crawler.WithMaxDelay(10 * time.Millisecond)}, sc.opts...)
	if sc.fail != nil {
		next := http.DefaultTransport.(*http.Transport).Clone()
		opts = append(opts, crawler.WithTransport(failingTransport{next: next, fail: sc.fail}))
	}
	c := newCrawler(t, opts...)
	if sc.hook != nil {
		sc.hook(c)
	}
	var mu sync.Mutex
	var reports []struct {
		u string
		e *crawler.Error
	}
	c.OnError(func(_ context.Context, u *url.URL, err error) {
		e, ok := err.(*crawler.Error)
		if !ok || (e.Kind == "") == (e.Skipped == "") {
			t.Errorf("OnError(%s, %#v): want an *Error with exactly one of Kind and Skipped", u, err)
			return
		}
		mu.Lock()
		reports = append(reports, struct {
			u string
			e *crawler.Error
		}{u.String(), e})
		mu.Unlock()
	})
	seeds := []string{s.URL + "/"}
	if sc.seeds != nil {
		seeds = seeds[:0]
		for _, p := range sc.seeds {
			if strings.HasPrefix(p, "/") {
				p = s.URL + p
			}
			seeds = append(seeds, p)
		}
	}
	runCrawl(t, c, seeds...)

	st, err := c.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[crawler.ErrorKind]int64{}
	skips := map[crawler.SkipReason]int64{}
	delivered := false
	for _, r := range reports {
		kinds[r.e.Kind]++
		skips[r.e.Skipped]++
		if (r.e.Kind == sc.kind && r.e.Skipped == sc.skip) && strings.HasSuffix(r.u, sc.target) {
			delivered = true
		}
	}
	delete(kinds, "")
	delete(skips, "")
	if !mapsEqual(kinds, st.Errors) {
		t.Errorf("OnError got kinds %v, Stats.Errors counts %v: each count must be one report", kinds, st.Errors)
	}
	for reason, n := range skips {
		if st.SkippedLinks[reason] < n {
			t.Errorf("OnError got %d skips %q, Stats.SkippedLinks counts %d", n, reason, st.SkippedLinks[reason])
		}
	}
	if !delivered {
		t.Errorf("no report of kind %q / skip %q for a URL ending %q; reports: %+v", sc.kind, sc.skip, sc.target, reports)
	}
	return delivered
}

func mapsEqual[K comparable](a, b map[K]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// declared returns the values of the constants the package declares with
// the named type.
func declared(t *testing.T, typ string) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok {
						s, _ := strconv.Unquote(lit.Value)
						out = append(out, s)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no constant of type %s found", typ)
	}
	slices.Sort(out)
	return out
}

// TestOneClassificationPacesRetriesAndNames fails a page in each way and
// checks that the three decisions taken on a failure — how the host is
// paced (ratelimit.Policy.Observe), whether the page is tried again, and
// the kind it is reported under — all follow fetch.Classify, the one
// classification they share: a failure that backs off counts in the
// host's Failures, a retryable one is asked twice (WithRetries(1)), and a
// failed page is reported under the classification's name.
func TestOneClassificationPacesRetriesAndNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		want   ratelimit.Failure
		err    error // the transport's, or nil for the site's answer
		answer http.HandlerFunc
	}{
		{name: "dns", want: ratelimit.FailureDNS, err: dialFailure(&net.DNSError{Err: "no such host", Name: "gone.example", IsNotFound: true})},
		{name: "refused", want: ratelimit.FailureConnection, err: dialFailure(os.NewSyscallError("connect", syscall.ECONNREFUSED))},
		{name: "reset", want: ratelimit.FailureConnection, err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}},
		{name: "certificate", want: ratelimit.FailureTLS, err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}},
		{name: "socket deadline", want: ratelimit.FailureTimeout, err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}},
		{name: "canceled below the crawl", want: ratelimit.FailureCanceled, err: context.Canceled},
		{name: "other", want: ratelimit.FailureOther, err: errors.New("transport gave up")},
		{name: "503", want: ratelimit.FailureThrottled, answer: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }},
		{name: "500", want: ratelimit.FailureServerError, answer: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) }},
		{name: "404", want: ratelimit.FailureNone, answer: http.NotFound},
		{name: "undecodable", want: ratelimit.FailureEncoding, answer: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			fmt.Fprint(w, strings.Repeat("not brotli ", 20))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status int // the answer's, 0 without one
			answered := map[string]int{}
			var mu sync.Mutex
			routes := map[string]http.HandlerFunc{"/": htmlPage("home", "/fail", "/after")}
			if tc.answer != nil {
				routes["/fail"] = tc.answer
			}
			failuresAfter := -1
			routes["/after"] = htmlPage("after")
			site := newSite(t, defaultRobots, routes)
			tries := new(sync.Map)
			opts := []crawler.Option{crawler.WithRetries(1), crawler.WithHostFailures(crawler.NoLimit), crawler.WithMaxDelay(10 * time.Millisecond)}
			if tc.err != nil {
				next := http.DefaultTransport.(*http.Transport).Clone()
				opts = append(opts, crawler.WithTransport(failingTransport{next: next, fail: map[string]error{"/fail": tc.err}, tries: tries}))
			}
			c := newCrawler(t, opts...)
			c.OnPage(func(_ context.Context, p *crawler.Page) {
				mu.Lock()
				defer mu.Unlock()
				answered[p.URL.Path]++
				if p.URL.Path == "/fail" {
					status = p.Status
				}
				if p.URL.Path == "/after" {
					// Asked after /fail, on the same host: its pace is what
					// the failure left.
					info, err := c.Host(context.Background(), p.URL.String())
					if err != nil {
						t.Errorf("Host: %v", err)
						return
					}
					failuresAfter = info.Pace.Failures
				}
			})
			errs := recordErrors(c)
			runCrawl(t, c, site.URL+"/")

			requests := site.count("/fail")
			if n, ok := tries.Load("/fail"); ok {
				requests += int(n.(*atomic.Int32).Load())
			}
			reported := errs.find("/fail")
			f := fetch.Classify(status, tc.err)
			if tc.answer != nil && status == 0 && len(reported) == 1 {
				f = fetch.Classify(0, reported[0]) // the answer's body did not decode
			}
			if f != tc.want {
				t.Fatalf("the failure of /fail is classified %v, want %v", f, tc.want)
			}
			wantRequests := 1
			if f.Retryable() {
				wantRequests = 2
			}
			if requests != wantRequests {
				t.Errorf("%v: /fail asked %d times, want %d (Retryable %v)", f, requests, wantRequests, f.Retryable())
			}
			wantFailures := 0
			if f.BacksOff() {
				wantFailures = requests
			}
			if failuresAfter != wantFailures {
				t.Errorf("%v: the host's Failures after /fail = %d, want %d (BacksOff %v)", f, failuresAfter, wantFailures, f.BacksOff())
			}
			switch {
			case status != 0:
				if len(reported) != 0 || answered["/fail"] != 1 {
					t.Errorf("%v: an answer %d reported %v, delivered %d times; want a page, once", f, status, reported, answered["/fail"])
				}
			case len(reported) != 1 || kindOf(reported[0]) != crawler.ErrorKind(f.String()):
				t.Errorf("%v: OnError for /fail: %v; want one report of kind %q", f, reported, f)
			}
		})
	}
}

// failingRenderer fails every render, as a browser that cannot start does.
type failingRenderer struct{}

func (failingRenderer) Render(context.Context, *fetch.Page, render.Policy) (*render.Result, error) {
	return nil, render.ErrBrowser
}
