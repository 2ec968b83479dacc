package crawler_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/chromiumtest"
	"github.com/heedcrawl/heed/internal/testweb"
)

// renderedCrawl crawls a shell web with rendering always on and returns
// the pages by URL.
func renderedCrawl(t *testing.T, w *testweb.ShellWeb, r *render.Renderer, opts ...crawler.Option) (map[string]*crawler.Page, crawler.Stats) {
	t.Helper()
	opts = append([]crawler.Option{
		crawler.WithRenderer(r, crawler.RenderAlways),
		crawler.WithScope(frontier.ScopeAny),
		crawler.WithDelay(50 * time.Millisecond),
		crawler.WithRobotsWait(0),
		// The hanging robots.txt is found unreachable after this long.
		crawler.WithHeaderTimeout(2 * time.Second),
	}, opts...)
	c, err := crawler.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	pages := map[string]*crawler.Page{}
	c.OnPage(func(_ context.Context, p *crawler.Page) {
		mu.Lock()
		pages[p.URL.String()] = p
		mu.Unlock()
	})
	c.OnError(func(_ context.Context, u *url.URL, err error) { t.Logf("error: %s: %v", u, err) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Run(ctx, w.Seed()); err != nil {
		t.Fatal(err)
	}
	st, _ := c.Stats(ctx)
	return pages, st
}

func TestRenderPolitely(t *testing.T) {
	bin := chromiumtest.Path(t)
	w := testweb.NewShellWeb(testweb.ShellConfig{Items: 10})
	defer w.Close()
	r := &render.Renderer{ExecPath: bin, Tabs: 2, Timeout: 30 * time.Second, RequestTimeout: 10 * time.Second, Quiet: 300 * time.Millisecond, Scroll: 8}
	defer r.Close()
	pages, st := renderedCrawl(t, w, r)

	app := w.Apps[0].URL
	home := pages[app+"/"]
	if home == nil || home.Render == nil {
		t.Fatalf("the app's home was not rendered: %v", home)
	}
	// Links the script built — one relative to the URL it pushed — were
	// found and crawled.
	for _, want := range []string{app + "/item/0", app + "/item/9", app + "/home/about"} {
		if pages[want] == nil {
			t.Errorf("%s, linked by script, was not crawled", want)
		}
	}
	if !strings.Contains(string(home.Body), "Text the script wrote") {
		t.Errorf("rendered body lacks the script's text:\n%s", home.Body)
	}
	// Infinite scroll: the items loaded by scrolling were found.
	for _, want := range []string{app + "/item/s0-a", app + "/item/s1-b"} {
		if pages[want] == nil {
			t.Errorf("%s, loaded by scrolling, was not crawled", want)
		}
	}
	// The page that polls forever ended within its cap.
	if p := pages[app+"/poll"]; p == nil || p.Render == nil || p.Render.Duration > r.Timeout+2*time.Second {
		t.Errorf("polling page: %+v", p)
	}

	rep := w.Judge(50 * time.Millisecond)
	if len(rep.RobotsViolations) > 0 {
		t.Errorf("robots violations: %v", rep.RobotsViolations)
	}
	if len(rep.PaceViolations) > 0 {
		t.Errorf("politeness violations: %v", rep.PaceViolations)
	}
	if n := rep.AppJS[strings.TrimPrefix(app, "http://")]; n != 1 {
		t.Errorf("app.js fetched %d times, want once for all pages", n)
	}
	if rep.Paths["/lib.js"] != 1 || rep.Paths["/style.css"] != 1 {
		t.Errorf("CDN resources fetched %d and %d times, want once each", rep.Paths["/lib.js"], rep.Paths["/style.css"])
	}
	if rep.CookieLeaks != 0 {
		t.Errorf("%d requests carried another page's cookie", rep.CookieLeaks)
	}
	if rep.Paths["/logo.png"] != 0 {
		t.Errorf("images fetched %d times, want none", rep.Paths["/logo.png"])
	}
	if st.Rendered == 0 || st.SubrequestsRefused == 0 || st.SubrequestsCached == 0 {
		t.Errorf("stats: rendered %d, refused %d, cached %d", st.Rendered, st.SubrequestsRefused, st.SubrequestsCached)
	}
	t.Logf("%d requests, %d pages rendered in %v, %d subrequests, %d cached, %d refused; cookies kept within a page %d",
		rep.Requests, st.Rendered, st.RenderTime, st.Subrequests, st.SubrequestsCached, st.SubrequestsRefused, rep.CookiesKept)
}

// urlRecorder keeps the URLs of the exchanges recorded.
type urlRecorder struct {
	mu   sync.Mutex
	urls []string
}

func (r *urlRecorder) Record(_ context.Context, x *fetch.Exchange) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.urls = append(r.urls, x.URL)
	return nil
}

// TestRenderArchivesSubrequests: with WithWARC, the exchanges a page's
// browser caused are recorded like the page's own.
func TestRenderArchivesSubrequests(t *testing.T) {
	bin := chromiumtest.Path(t)
	w := testweb.NewShellWeb(testweb.ShellConfig{Items: 1})
	defer w.Close()
	r := &render.Renderer{ExecPath: bin, Tabs: 2, Timeout: 30 * time.Second, Quiet: 300 * time.Millisecond}
	defer r.Close()
	rec := new(urlRecorder)
	c, err := crawler.New(crawler.WithRenderer(r, crawler.RenderAlways), crawler.WithWARC(rec),
		crawler.WithFollowLinks(false), crawler.WithDelay(50*time.Millisecond), crawler.WithHeaderTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	app := w.Apps[0].URL
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Run(ctx, app+"/"); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, want := range []string{app + "/", app + "/app.js", app + "/api/whoami?page=%2F", w.CDN.URL + "/robots.txt", w.CDN.URL + "/lib.js"} {
		if !slices.Contains(rec.urls, want) {
			t.Errorf("%s not archived; archived: %v", want, rec.urls)
		}
	}
}

// TestRenderCrossHostSubrequests renders two app hosts whose pages each
// load a script from the other, two pages at once: a render holds its
// page's lease for seconds, so a subrequest waiting for a lease of the
// other host would wait for the other render, which waits for it — until
// both requests time out, refused. Every page's cross-host script must be
// served, and politely.
func TestRenderCrossHostSubrequests(t *testing.T) {
	bin := chromiumtest.Path(t)
	w := testweb.NewShellWeb(testweb.ShellConfig{Apps: 2, Items: 3, CrossScripts: true})
	defer w.Close()
	r := &render.Renderer{ExecPath: bin, Tabs: 2, Timeout: 30 * time.Second, RequestTimeout: 4 * time.Second, Quiet: 300 * time.Millisecond}
	defer r.Close()
	c, err := crawler.New(crawler.WithRenderer(r, crawler.RenderAlways), crawler.WithDelay(50*time.Millisecond),
		crawler.WithRobotsWait(0), crawler.WithHeaderTimeout(2*time.Second), crawler.WithSitemaps(false))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.Run(ctx, w.Apps[0].URL+"/", w.Apps[1].URL+"/"); err != nil {
		t.Fatal(err)
	}
	st, _ := c.Stats(ctx)
	rep := w.Judge(50 * time.Millisecond)
	// Each render asks for the other host's uncacheable script once.
	if st.Rendered < 8 || rep.Paths["/widget.js"] != int(st.Rendered) {
		t.Errorf("%d pages rendered (%d subrequests refused), the cross-host script served %d times: want once a render", st.Rendered, st.SubrequestsRefused, rep.Paths["/widget.js"])
	}
	if len(rep.RobotsViolations) > 0 {
		t.Errorf("robots violations: %v", rep.RobotsViolations)
	}
	if len(rep.PaceViolations) > 0 {
		t.Errorf("politeness violations: %v", rep.PaceViolations)
	}
}
