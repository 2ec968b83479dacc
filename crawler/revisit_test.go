package crawler_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/internal/testweb"
	"github.com/heedcrawl/heed/robots/gate"
)

// revisitTolerance absorbs the gap between an answer the crawler's delay
// counts from and the next request's arrival at the server's log, as
// e2eTolerance does.
const revisitTolerance = 15 * time.Millisecond

// changeLog records, per request target, what OnPage was told of each
// fetch.
type changeLog struct {
	mu   sync.Mutex
	seen map[string][]*crawler.Page
	stop func(target string, n int) bool // cancels the crawl when true
}

func recordChanges(c *crawler.Crawler, cancel context.CancelFunc, stop func(target string, n int) bool) *changeLog {
	l := &changeLog{seen: map[string][]*crawler.Page{}, stop: stop}
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		l.mu.Lock()
		defer l.mu.Unlock()
		target := p.URL.RequestURI()
		l.seen[target] = append(l.seen[target], p)
		if l.stop != nil && l.stop(target, len(l.seen[target])) {
			cancel()
		}
	})
	return l
}

func (l *changeLog) kinds(target string) []crawler.ChangeKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []crawler.ChangeKind
	for _, p := range l.seen[target] {
		out = append(out, p.Change)
	}
	return out
}

func (l *changeLog) pages(target string) []*crawler.Page {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen[target])
}

// runRevisiting runs c on seeds until ctx ends (or the crawl runs out of
// pages to revisit), within a guard against a hanging crawler.
func runRevisiting(t *testing.T, ctx context.Context, c *crawler.Crawler, seeds ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := c.Run(ctx, seeds...)
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

func TestRevisitOption(t *testing.T) {
	for _, rv := range []crawler.Revisit{{}, {Min: -time.Second, Max: time.Second}, {Min: time.Second, Max: time.Millisecond}} {
		_, err := crawler.New(crawler.WithRevisit(rv))
		var oe *crawler.OptionError
		if !errors.As(err, &oe) || oe.Option != "WithRevisit" {
			t.Errorf("WithRevisit(%+v): %v, want an *OptionError for WithRevisit", rv, err)
		}
	}
	if _, err := crawler.New(crawler.WithRevisit(crawler.Revisit{Min: time.Second, Max: time.Second})); err != nil {
		t.Errorf("Min = Max: %v", err)
	}
}

// A revisit sends the validators held; a 304 is an unchanged page without
// a body, counted, and the host's delay holds between revisits.
func TestRevisitConditional304(t *testing.T) {
	const etag = `"v1"`
	lastMod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	var conds []http.Header
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			conds = append(conds, r.Header.Clone())
			mu.Unlock()
			w.Header().Set("ETag", etag)
			w.Header().Set("Last-Modified", lastMod.Format(http.TimeFormat))
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			rawHTML("home", "", "<p>some text worth saving</p>")(w, r)
		},
	})
	const delay = 60 * time.Millisecond
	c := newCrawler(t, crawler.WithFollowLinks(false), crawler.WithDelay(delay),
		crawler.WithRevisit(crawler.Revisit{Min: time.Millisecond, Max: 20 * time.Millisecond}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := recordChanges(c, cancel, func(target string, n int) bool { return n == 4 })
	runRevisiting(t, ctx, c, s.URL+"/")

	if got, want := log.kinds("/"), []crawler.ChangeKind{"new", "unchanged", "unchanged", "unchanged"}; !slices.Equal(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
	pages := log.pages("/")
	if pages[0].Previous != nil {
		t.Errorf("first fetch has Previous %+v", pages[0].Previous)
	}
	for _, p := range pages[1:] {
		if p.Status != http.StatusNotModified || len(p.Body) != 0 {
			t.Errorf("revisit: status %d, %d body bytes; want a 304 without a body", p.Status, len(p.Body))
		}
		if p.Previous == nil || p.Previous.ETag != etag || !p.Previous.LastModified.Equal(lastMod) {
			t.Errorf("revisit's Previous %+v, want the held validators", p.Previous)
		}
		if p.Held == nil || p.Held.ETag != etag || p.Held.Digest != pages[0].Held.Digest || p.Held.Digest == 0 {
			t.Errorf("after a 304, Held %+v, want the version held since the first fetch (%+v)", p.Held, pages[0].Held)
		}
	}
	mu.Lock()
	for i, h := range conds[1:4] {
		if h.Get("If-None-Match") != etag || h.Get("If-Modified-Since") != lastMod.Format(http.TimeFormat) {
			t.Errorf("revisit %d sent If-None-Match %q, If-Modified-Since %q", i+1, h.Get("If-None-Match"), h.Get("If-Modified-Since"))
		}
	}
	if conds[0].Get("If-None-Match") != "" {
		t.Errorf("first fetch was conditional: %v", conds[0])
	}
	mu.Unlock()
	st := statsOf(t, c)
	if st.Revisits < 3 || st.NotModified < 3 || st.RevisitChanges != 0 {
		t.Errorf("stats: %d revisits, %d not modified, %d changes; want ≥3, ≥3, 0",
			st.Revisits, st.NotModified, st.RevisitChanges)
	}
	// Each 304 saved the body of the version held.
	if size := pages[0].TransferSize; size <= 0 || st.BytesSaved != st.NotModified*size {
		t.Errorf("%d bytes saved by %d 304s, want %d each (the held version's body)", st.BytesSaved, st.NotModified, size)
	}
	if !strings.Contains(st.String(), "revisits: ") {
		t.Errorf("Stats.String has no revisits line:\n%s", st)
	}
	at := s.requests("/")
	at = append(at, s.requests("/robots.txt")...)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < delay-revisitTolerance {
			t.Errorf("requests %d and %d %v apart, under the delay %v", i-1, i, gap, delay)
		}
	}
}

// Validators that lie — an ETag new every time, a Last-Modified always
// now — do not make a page changed: its content digest judges it.
func TestRevisitLyingValidatorsJudgedByDigest(t *testing.T) {
	var mu sync.Mutex
	served := map[string]int{}
	page := func(bodyAt func(n int) string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			served[r.URL.Path]++
			n := served[r.URL.Path]
			mu.Unlock()
			if r.URL.Path == "/etag" {
				w.Header().Set("ETag", fmt.Sprintf(`"%d"`, n))
			} else {
				w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
			}
			// Markup that differs on every response is not content.
			rawHTML("t", fmt.Sprintf(`<meta name="nonce" content="%d">`, n), "<p>"+bodyAt(n)+"</p>")(w, r)
		}
	}
	content := func(n int) string {
		if n <= 2 {
			return "first version"
		}
		return "second version"
	}
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/etag": page(content), "/lm": page(content)})
	c := newCrawler(t, crawler.WithFollowLinks(false),
		crawler.WithRevisit(crawler.Revisit{Min: time.Millisecond, Max: 10 * time.Millisecond}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done sync.Map
	log := recordChanges(c, cancel, func(target string, n int) bool {
		if n == 3 {
			done.Store(target, true)
		}
		_, etag := done.Load("/etag")
		_, lm := done.Load("/lm")
		return etag && lm
	})
	runRevisiting(t, ctx, c, s.URL+"/etag", s.URL+"/lm")
	want := []crawler.ChangeKind{"new", "unchanged", "changed"}
	for _, target := range []string{"/etag", "/lm"} {
		if got := log.kinds(target); len(got) < 3 || !slices.Equal(got[:3], want) {
			t.Errorf("%s: changes %q, want %q first", target, got, want)
		}
	}
	if st := statsOf(t, c); st.RevisitChanges < 2 {
		t.Errorf("RevisitChanges %d, want at least 2", st.RevisitChanges)
	}
}

// A page gone is asked again until GoneLimit answers in a row say so; a
// page that moved is not revisited, its target is crawled as a new URL.
// With nothing left to revisit, the crawl ends.
func TestRevisitGoneAndMoved(t *testing.T) {
	var mu sync.Mutex
	served := map[string]int{}
	firstThen := func(later http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			served[r.URL.Path]++
			n := served[r.URL.Path]
			mu.Unlock()
			if n == 1 {
				htmlPage(r.URL.Path)(w, r)
				return
			}
			later(w, r)
		}
	}
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/gone":  firstThen(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }),
		"/moved": firstThen(redirectTo(http.StatusMovedPermanently, "/target")),
		// /target answers 404 from the start: gone on its first fetch.
	})
	c := newCrawler(t, crawler.WithFollowLinks(false),
		crawler.WithRevisit(crawler.Revisit{Min: time.Millisecond, Max: 10 * time.Millisecond}))
	log := recordChanges(c, nil, nil)
	runRevisiting(t, context.Background(), c, s.URL+"/gone", s.URL+"/moved")

	for target, want := range map[string][]crawler.ChangeKind{
		"/gone":   {"new", "gone", "gone", "gone"},
		"/moved":  {"new", "moved"},
		"/target": {"gone", "gone", "gone"},
	} {
		if got := log.kinds(target); !slices.Equal(got, want) {
			t.Errorf("%s: changes %q, want %q", target, got, want)
		}
		if n := s.count(target); n != len(want) {
			t.Errorf("%s requested %d times, want %d", target, n, len(want))
		}
	}
	if p := log.pages("/gone"); len(p) == 4 && (p[3].Previous == nil || p[3].Previous.Gone != 2) {
		t.Errorf("third gone answer's Previous %+v, want Gone 2", p[3].Previous)
	}
	if st := statsOf(t, c); st.RevisitsDropped != 3 {
		t.Errorf("RevisitsDropped %d, want 3 (gone, moved, target)", st.RevisitsDropped)
	}
}

// A crawl revisiting a changing web keeps within every host's delay and
// revisits pages with honest validators conditionally.
func TestRevisitChangingWeb(t *testing.T) {
	cfg := testweb.TypicalChangingConfig(2, 12, 5)
	cfg.MinChangeInterval, cfg.MaxChangeInterval = 300*time.Millisecond, 20*time.Second
	cfg.FateWithin, cfg.NewPageInterval = 3*time.Second, 2*time.Second
	cfg.CrawlDelay = 40 * time.Millisecond
	cfg.BodyBytes = 256
	v, err := testweb.NewChangingVirtual(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	const delay = 20 * time.Millisecond
	c, err := crawler.New(crawler.WithTransport(v.Transport()), crawler.WithDelay(delay),
		crawler.WithRevisit(crawler.Revisit{Min: 200 * time.Millisecond, Max: 3 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Run(ctx, v.Web.Seeds()...); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v, want the deadline", err)
	}
	rep, err := v.Judge(testweb.FreshnessOptions{MinDelay: delay, Tolerance: revisitTolerance})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if len(rep.PolitenessViolations) != 0 || len(rep.RobotsViolations) != 0 {
		t.Errorf("violations: politeness %v, robots %v", rep.PolitenessViolations, rep.RobotsViolations)
	}
	if rep.Revisits < 10 || rep.ConditionalShare < 0.99 {
		t.Errorf("%d revisits of pages with honest validators, %.3f conditional; want ≥ 10, ≥ 0.99", rep.Revisits, rep.ConditionalShare)
	}
	st := statsOf(t, c)
	t.Log(st)
	var sent304 int64 // home pages' too, which the report's NotModified leaves out
	for _, e := range v.Log.Entries() {
		if e.Status == http.StatusNotModified {
			sent304++
		}
	}
	if st.NotModified != sent304 || st.NotModified == 0 {
		t.Errorf("crawler counted %d 304s, the server sent %d", st.NotModified, sent304)
	}
	if st.Revisits == 0 || st.RevisitChanges == 0 || st.BytesSaved == 0 {
		t.Errorf("stats: %d revisits, %d changes, %d bytes saved; want some of each", st.Revisits, st.RevisitChanges, st.BytesSaved)
	}
}

// A page the site's robots.txt disallows by the time it is revisited is
// reported once, to OnDisallowed, and no longer revisited: with nothing
// else to revisit, the crawl ends.
func TestRevisitNowDisallowed(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	robots := "User-agent: *\nAllow: /\n"
	s := newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprint(w, robots)
		},
		"/page": htmlPage("page"),
	})
	c := newCrawler(t, crawler.WithFollowLinks(false), crawler.WithClock(clock),
		crawler.WithRevisit(crawler.Revisit{Min: time.Hour, Max: 2 * time.Hour}))
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		// Once the page is fetched, the site disallows it, and a day
		// passes: its robots.txt is read again before its revisit.
		mu.Lock()
		robots = "User-agent: *\nDisallow: /page\n"
		mu.Unlock()
		clock.Advance(gate.DefaultTTL + 2*time.Hour)
	})
	var disallowed atomic.Int32
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) { disallowed.Add(1) })
	runRevisiting(t, context.Background(), c, s.URL+"/page")
	if n := s.count("/page"); n != 1 {
		t.Errorf("/page requested %d times, want once", n)
	}
	if n := s.count("/robots.txt"); n != 2 {
		t.Errorf("robots.txt requested %d times, want twice", n)
	}
	st := statsOf(t, c)
	if n := disallowed.Load(); n != 1 || st.Disallowed != 1 || st.RevisitsDropped != 1 {
		t.Errorf("reported disallowed %d times, counted %d, dropped %d; want 1 each", n, st.Disallowed, st.RevisitsDropped)
	}
}

// A revisit that fails (the body cut short) is reported, and the page
// is revisited again rather than dropped.
func TestRevisitFailureKeepsPage(t *testing.T) {
	var mu sync.Mutex
	served := 0
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			served++
			n := served
			mu.Unlock()
			if n == 2 {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					// A body cut short: a failure the transport does not retry.
					fmt.Fprint(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\nshort")
					conn.Close()
				}
				return
			}
			htmlPage("home")(w, r)
		},
	})
	c := newCrawler(t, crawler.WithFollowLinks(false), crawler.WithRetries(0),
		crawler.WithRevisit(crawler.Revisit{Min: time.Millisecond, Max: 10 * time.Millisecond}))
	errs := recordErrors(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := recordChanges(c, cancel, func(target string, n int) bool { return n == 2 })
	runRevisiting(t, ctx, c, s.URL+"/")
	if got, want := log.kinds("/"), []crawler.ChangeKind{"new", "unchanged"}; !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if n := len(errs.find("/")); n != 1 {
		t.Errorf("%d errors reported, want the one failed revisit", n)
	}
	if n := s.count("/"); n < 3 {
		t.Errorf("/ requested %d times, want a revisit after the failed one", n)
	}
}

// The host's revisit state lives in the Store, beside its pacing state:
// a crawl resumed on the Store, or another process sharing it, goes on
// from what the policy learnt.
func TestRevisitHostStateInStore(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": htmlPage("home")})
	store := &frontier.MemoryStore{}
	c := newCrawler(t, crawler.WithFollowLinks(false), crawler.WithStore(store),
		crawler.WithRevisit(crawler.Revisit{Min: time.Millisecond, Max: 10 * time.Millisecond}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recordChanges(c, cancel, func(target string, n int) bool { return n == 3 })
	runRevisiting(t, ctx, c, s.URL+"/")
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := store.ClaimKey(context.Background(), u.Host, time.Now().Add(time.Hour), frontier.ClaimOptions{})
	if err != nil || l == nil {
		t.Fatalf("ClaimKey(%s) = %v, %v", u.Host, l, err)
	}
	if l.Revisiting.Span <= 0 || l.Revisiting.LastRevisit.IsZero() {
		t.Errorf("the Store holds the host's revisit state %+v, want what two revisits taught the policy", l.Revisiting)
	}
}

// A revisiting crawl reads each sitemap again (every SitemapInterval,
// within Max), conditionally: a page the site added to it since is
// crawled, and an unchanged sitemap answered 304 costs no reading.
func TestRevisitSitemapAgain(t *testing.T) {
	var s *testSite
	var mu sync.Mutex
	served := 0
	var ifNoneMatch []string
	s = newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "User-agent: *\nSitemap: %s/sitemap.xml\n", s.URL)
		},
		"/sitemap.xml": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			ifNoneMatch = append(ifNoneMatch, r.Header.Get("If-None-Match"))
			served++
			// The first read lists /a; from the second on the site has
			// added /b.
			version := min(served, 2)
			etag := fmt.Sprintf(`"v%d"`, version)
			w.Header().Set("ETag", etag)
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/a</loc></url>`, s.URL)
			if version == 2 {
				fmt.Fprintf(w, `<url><loc>%s/b</loc></url>`, s.URL)
			}
			fmt.Fprint(w, `</urlset>`)
		},
		"/a": htmlPage("a"),
		"/b": htmlPage("b"),
	})
	c := newCrawler(t, crawler.WithSitemaps(true),
		crawler.WithRevisit(crawler.Revisit{Min: time.Millisecond, Max: 30 * time.Millisecond}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		mu.Lock()
		defer mu.Unlock()
		if served >= 3 && s.count("/b") > 0 {
			cancel()
		}
	})
	runRevisiting(t, ctx, c, s.URL+"/a")
	if n := s.count("/b"); n == 0 {
		t.Fatal("/b, added to the sitemap after its first read, was never crawled")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ifNoneMatch) < 3 || ifNoneMatch[0] != "" || ifNoneMatch[1] != `"v1"` || ifNoneMatch[2] != `"v2"` {
		t.Errorf("sitemap requests sent If-None-Match %q, want none, then each read's ETag", ifNoneMatch)
	}
	st := statsOf(t, c)
	if st.NotModified == 0 {
		t.Errorf("no 304 counted: %+v", st)
	}
	if n := len(st.Errors); n != 0 {
		t.Errorf("errors %v, want none (a 304 sitemap is not a failure)", st.Errors)
	}
}
