package render_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
	"github.com/heedcrawl/heed/internal/chromiumtest"
	"go.uber.org/goleak"
)

// site is a small application: a shell whose script builds the links, a
// fetch() to a path the policy refuses, images, and a request log.
type site struct {
	*httptest.Server
	mu  sync.Mutex
	log []string
}

func newSite(t *testing.T) *site {
	s := &site{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><html><head><script src="/app.js"></script></head><body><img src="/logo.png"><div id="app"></div></body></html>`)
	})
	mux.HandleFunc("/app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprint(w, `addEventListener('DOMContentLoaded', async () => {
  const app = document.getElementById('app');
  try { await fetch('/private/secret'); } catch (e) { app.insertAdjacentHTML('beforeend', '<p id="refused">refused</p>'); }
  const r = await fetch('/api/items');
  for (const it of await r.json()) app.insertAdjacentHTML('beforeend', '<a href="/item/' + it + '">' + it + '</a>');
  history.pushState({}, '', '/app/list/');
  app.insertAdjacentHTML('beforeend', '<a href="rel">rel</a>');
});`)
	})
	mux.HandleFunc("/api/items", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `["a","b","c"]`)
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.URL.Path+" "+r.UserAgent())
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.log {
		if strings.HasPrefix(l, path+" ") {
			n++
		}
	}
	return n
}

// politeTest fetches with a Fetcher and refuses /private/.
func politeTest(f *fetch.Fetcher) render.Policy {
	return render.PolicyFunc(func(ctx context.Context, req render.Request) (*fetch.Page, error) {
		if strings.HasPrefix(req.URL.Path, "/private/") {
			return nil, render.ErrRefused
		}
		return f.Fetch(ctx, fetch.Request{URL: req.URL.String(), Header: req.Header})
	})
}

func TestRenderBuildsLinksAndRefuses(t *testing.T) {
	bin := chromiumtest.Path(t)
	s := newSite(t)
	f := &fetch.Fetcher{UserAgent: "heedtest/1"}
	doc, err := f.Fetch(context.Background(), fetch.Request{URL: s.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	r := &render.Renderer{ExecPath: bin, Tabs: 2}
	defer r.Close()
	res, err := r.Render(context.Background(), doc, politeTest(f))
	if err != nil {
		t.Fatal(err)
	}
	html := string(res.Page.Body)
	for _, want := range []string{`href="/item/a"`, `href="/item/c"`, `id="refused"`, `<base href="` + s.URL + `/app/list/">`} {
		if !strings.Contains(html, want) {
			t.Errorf("rendered DOM lacks %s:\n%s", want, html)
		}
	}
	if got := s.requests("/private/secret"); got != 0 {
		t.Errorf("refused path reached the server %d times", got)
	}
	if got := s.requests("/logo.png"); got != 0 {
		t.Errorf("image reached the server %d times", got)
	}
	if got := s.requests("/"); got != 1 {
		t.Errorf("document fetched %d times, want once (by heed)", got)
	}
	if res.Refused != 1 || res.Blocked < 1 || res.Requests != 2 {
		t.Errorf("counts: %+v", res)
	}
	s.mu.Lock()
	for _, l := range s.log {
		if !strings.HasSuffix(l, " heedtest/1") {
			t.Errorf("request not made by heed's fetcher: %s", l)
		}
	}
	s.mu.Unlock()

	// A second page shares app.js through the cache.
	res2, err := r.Render(context.Background(), doc, politeTest(f))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.requests("/app.js"); got != 1 {
		t.Errorf("app.js fetched %d times for two pages, want 1", got)
	}
	if res2.Cached != 1 {
		t.Errorf("second render: %d cached, want 1", res2.Cached)
	}
}

// pollingDoc is a page that polls its API forever.
func pollingSite(t *testing.T) (*httptest.Server, *fetch.Page, *fetch.Fetcher) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!DOCTYPE html><html><body><p id="n">0</p><script>
let n = 0; setInterval(() => fetch('/poll').then(() => document.getElementById('n').textContent = ++n), 20);
</script></body></html>`)
	})
	mux.HandleFunc("/poll", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	f := new(fetch.Fetcher)
	doc, err := f.Fetch(context.Background(), fetch.Request{URL: s.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	return s, doc, f
}

func TestRenderEndlessPollingEndsWithinItsCaps(t *testing.T) {
	bin := chromiumtest.Path(t)
	_, doc, f := pollingSite(t)
	r := &render.Renderer{ExecPath: bin, Tabs: 1, Timeout: time.Minute, MaxRequests: 10}
	defer r.Close()
	// The request budget ends it, long before its wall time.
	res, err := r.Render(context.Background(), doc, politeTest(f))
	if err != nil {
		t.Fatal(err)
	}
	if !res.OverBudget || res.Requests > 10 || res.Refused == 0 || res.TimedOut {
		t.Errorf("the budget did not end it: %+v", res)
	}
	if !strings.Contains(string(res.Page.Body), `<p id="n">`) {
		t.Errorf("no DOM: %s", res.Page.Body)
	}
	// The wall time ends it when the budget does not. 8 s keeps the full
	// snapshotReserve (2 s) for reading the DOM: a shorter wall keeps a
	// quarter of itself, which a loaded machine's busy page can outlast.
	r2 := &render.Renderer{ExecPath: bin, Tabs: 1, Timeout: 8 * time.Second, MaxRequests: 1 << 20}
	defer r2.Close()
	res, err = r2.Render(context.Background(), doc, politeTest(f))
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Duration > 8*time.Second+5*time.Second {
		t.Errorf("the wall time did not end it: %+v", res)
	}
}

// TestRenderCancelled cancels a render of a page that never goes quiet:
// Render returns at once, every paused request is answered (or the
// browser's close would hang), and nothing is left running.
func TestRenderCancelled(t *testing.T) {
	bin := chromiumtest.Path(t)
	before := goleak.IgnoreCurrent()
	s, doc, f := pollingSite(t)
	r := &render.Renderer{ExecPath: bin, Tabs: 1, Timeout: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	polled := make(chan struct{})
	var once sync.Once
	pol := render.PolicyFunc(func(ctx context.Context, req render.Request) (*fetch.Page, error) {
		once.Do(func() { close(polled) })
		return politeTest(f).Fetch(ctx, req)
	})
	done := make(chan error, 1)
	go func() {
		_, err := r.Render(ctx, doc, pol)
		done <- err
	}()
	<-polled // mid-render: the page is polling
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Render after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Render did not return after its context was cancelled")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	f.CloseIdleConnections()
	s.Close()
	goleak.VerifyNone(t, before)
}

// siteDoc fetches a newSite's home.
func siteDoc(t *testing.T) (*fetch.Page, *fetch.Fetcher) {
	t.Helper()
	s := newSite(t)
	f := new(fetch.Fetcher)
	doc, err := f.Fetch(context.Background(), fetch.Request{URL: s.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	return doc, f
}

// TestRenderBrowserCrashRetried kills the browser mid-render: the page is
// rendered again in a new browser.
func TestRenderBrowserCrashRetried(t *testing.T) {
	bin := chromiumtest.Path(t)
	doc, f := siteDoc(t)
	r := &render.Renderer{ExecPath: bin, Tabs: 1}
	defer r.Close()
	var once sync.Once
	pol := render.PolicyFunc(func(ctx context.Context, req render.Request) (*fetch.Page, error) {
		if req.URL.Path == "/api/items" {
			once.Do(func() { killBrowsers(t) })
		}
		return politeTest(f).Fetch(ctx, req)
	})
	res, err := r.Render(context.Background(), doc, pol)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Retried || !strings.Contains(string(res.Page.Body), `href="/item/a"`) {
		t.Errorf("retried %v, DOM:\n%s", res.Retried, res.Page.Body)
	}
	if st := r.Stats(); st.Browsers != 2 || st.Crashes != 1 {
		t.Errorf("stats %+v, want 2 browsers, 1 crash", st)
	}
}

// killBrowsers kills this process's chromium children.
func killBrowsers(t *testing.T) {
	for pid, p := range chromiumtest.Procs() {
		if p.PPID == os.Getpid() && strings.Contains(p.Comm, "chromium") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestRenderRecyclesBrowser replaces the browser after PagesPerBrowser
// pages.
func TestRenderRecyclesBrowser(t *testing.T) {
	bin := chromiumtest.Path(t)
	doc, f := siteDoc(t)
	r := &render.Renderer{ExecPath: bin, Tabs: 1, PagesPerBrowser: 2}
	defer r.Close()
	for range 3 {
		if _, err := r.Render(context.Background(), doc, politeTest(f)); err != nil {
			t.Fatal(err)
		}
	}
	if st := r.Stats(); st.Browsers != 2 || st.Pages != 3 || st.PeakRSS == 0 {
		t.Errorf("stats %+v, want 3 pages in 2 browsers", st)
	}
}

// TestRenderRecyclesBrowserPastMemory replaces a browser once its memory
// is past MaxBrowserRSS (one byte here: every browser is): each page is
// still rendered, each in a browser of its own, and no process of the
// browsers is left, even before Close.
func TestRenderRecyclesBrowserPastMemory(t *testing.T) {
	bin := chromiumtest.Path(t)
	doc, f := siteDoc(t)
	r := &render.Renderer{ExecPath: bin, Tabs: 1, MaxBrowserRSS: 1}
	defer r.Close()
	var mu sync.Mutex
	groups := map[int]bool{} // the process groups of the browsers, seen mid-render
	pol := render.PolicyFunc(func(ctx context.Context, req render.Request) (*fetch.Page, error) {
		mu.Lock()
		for _, pg := range chromiumGroups() {
			groups[pg] = true
		}
		mu.Unlock()
		return politeTest(f).Fetch(ctx, req)
	})
	for range 2 {
		res, err := r.Render(context.Background(), doc, pol)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res.Page.Body), `href="/item/a"`) {
			t.Errorf("page not rendered:\n%s", res.Page.Body)
		}
	}
	if st := r.Stats(); st.Browsers != 2 || st.Recycled != 2 || st.OverMemory != 2 || st.Pages != 2 || st.PeakRSS <= 1 {
		t.Errorf("stats %+v, want 2 pages in 2 browsers, both recycled past their memory", st)
	}
	if len(groups) != 2 {
		t.Errorf("saw %d browser process groups, want 2", len(groups))
	}
	for pg := range groups {
		if left := processesIn(pg); len(left) > 0 {
			t.Errorf("browser group %d still has processes %v after its recycling", pg, left)
		}
	}
}

// chromiumGroups lists the process groups of this process's chromium
// children.
func chromiumGroups() []int {
	var out []int
	for _, p := range chromiumtest.Procs() {
		if p.PPID == os.Getpid() && strings.Contains(p.Comm, "chromium") {
			out = append(out, p.PGID)
		}
	}
	return out
}

// processesIn lists the live (not zombie) processes of group pgid.
func processesIn(pgid int) []int {
	var out []int
	for pid, p := range chromiumtest.Procs() {
		if p.PGID == pgid && !p.Zombie {
			out = append(out, pid)
		}
	}
	return out
}
