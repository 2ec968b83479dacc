package crawler_test

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/warc"
	"github.com/heedcrawl/heed/frontier"
)

// failingStore is a MemoryStore whose Add fails after the first n calls.
type failingStore struct {
	frontier.MemoryStore
	mu    sync.Mutex
	left  int
	fails int
}

var errDiskFull = errors.New("disk full")

func (s *failingStore) Add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	s.mu.Lock()
	if s.left == 0 {
		s.fails++
		s.mu.Unlock()
		return nil, errDiskFull
	}
	s.left--
	s.mu.Unlock()
	return s.MemoryStore.Add(ctx, batch, lim)
}

func TestStoreFailureEndsRunWithTheError(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  htmlPage("home", "/a", "/b"),
		"/a": htmlPage("a"),
		"/b": htmlPage("b"),
	})
	store := &failingStore{left: 1} // the seed only
	c := newCrawler(t, crawler.WithStore(store))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.Run(ctx, s.URL+"/")
	if !errors.Is(err, frontier.ErrStore) || !errors.Is(err, errDiskFull) {
		t.Fatalf("Run = %v, want an error wrapping frontier.ErrStore and the store's error", err)
	}
	if s.count("/a")+s.count("/b") != 0 {
		t.Error("pages fetched after the store failed")
	}
}

func TestPanickingExtractorIsRecovered(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  htmlPage("home", "/a"),
		"/a": htmlPage("a"),
	})
	boom := fetch.ExtractorFunc(func(ctx context.Context, p *fetch.Page) ([]fetch.Link, error) {
		panic("extractor bug")
	})
	c := newCrawler(t, crawler.WithExtractor("text/html", boom))
	errs := recordErrors(c)
	runCrawl(t, c, s.URL+"/")
	if s.count("/a") != 1 {
		t.Errorf("/a requested %d times: the default extractor's links were lost", s.count("/a"))
	}
	if got := statsOf(t, c).Errors["extractor-panic"]; got != 2 {
		t.Errorf("Errors[extractor-panic] = %d, want 2 (one per page)", got)
	}
	if es := errs.find("/a"); len(es) != 1 || !errors.Is(es[0], fetch.ErrExtractorPanic) {
		t.Errorf("OnError for /a: %v, want one error wrapping fetch.ErrExtractorPanic", es)
	}
}

func TestRelativeLinkWithSchemeInQuery(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":                       htmlPage("home"),
		"/go?to=https://x.test/y": htmlPage("redirector"),
	})
	rel := fetch.ExtractorFunc(func(ctx context.Context, p *fetch.Page) ([]fetch.Link, error) {
		return []fetch.Link{{URL: "/go?to=https://x.test/y"}}, nil
	})
	c := newCrawler(t, crawler.WithExtractor("text/html", rel), crawler.WithCanonicalizer(frontier.Canonicalizer{}))
	runCrawl(t, c, s.URL+"/")
	if n := s.count("/go?to=https://x.test/y"); n != 1 {
		t.Errorf("/go?to=https://x.test/y requested %d times, want 1; server saw %q", n, s.targets())
	}
}

func TestSeedRedirectTargetJoinsSeedHosts(t *testing.T) {
	target := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":      htmlPage("www home", "/about"),
		"/about": htmlPage("about"),
	})
	seed := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": redirectTo(http.StatusMovedPermanently, target.URL+"/"),
	})
	c := newCrawler(t)
	runCrawl(t, c, seed.URL+"/")
	if target.count("/") != 1 || target.count("/about") != 1 {
		t.Errorf("redirect target site: server saw %q, want / and /about", target.targets())
	}
}

func TestCancelDuringGraceStartsNoNewFetch(t *testing.T) {
	robotsAsked := make(chan struct{})
	unblock := make(chan struct{})
	var once sync.Once
	s := newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() { close(robotsAsked) })
			select {
			case <-unblock:
			case <-r.Context().Done():
			}
			fmt.Fprint(w, defaultRobots)
		},
		"/":  htmlPage("home"),
		"/a": htmlPage("a"),
	})
	// Two workers take the host's two URLs at once (per-host 2): one
	// fetches robots.txt, the other waits for it in the gate. The crawl is
	// cancelled while both wait, with a long grace period; robots.txt then
	// arrives, but no page request may start.
	c := newCrawler(t, crawler.WithPerHost(2), crawler.WithGracePeriod(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, s.URL+"/", s.URL+"/a") }()
	if !waitFor(t, robotsAsked, "the robots.txt request") {
		cancel()
		close(unblock)
		<-done
		return
	}
	cancel()
	close(unblock)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if n := s.count("/") + s.count("/a"); n != 0 {
		t.Errorf("%d pages fetched after cancellation; server saw %q", n, s.targets())
	}
}

// sitemapTrap serves an endless chain of sitemap indexes: each names the
// next, and one page.
func sitemapTrap(requests *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`+
			`<sitemap><loc>http://%s/sm/%d.xml</loc></sitemap></sitemapindex>`, r.Host, n)
	}
}

func TestSitemapChainsAreBounded(t *testing.T) {
	var smRequests atomic.Int64
	var s *testSite
	routes := map[string]http.HandlerFunc{"/": htmlPage("home")}
	s = newSite(t, "User-agent: *\nAllow: /\n", routes)
	s.mu.Lock()
	routes["/sitemap.xml"] = sitemapTrap(&smRequests)
	for i := range 200 {
		routes[fmt.Sprintf("/sm/%d.xml", i+1)] = sitemapTrap(&smRequests)
	}
	s.mu.Unlock()
	c := newCrawler(t, crawler.WithSitemaps(true), crawler.WithMaxSitemaps(100), crawler.WithMaxSitemapURLs(1000), crawler.WithMaxSitemapDepth(100))
	runCrawl(t, c, s.URL+"/")
	if n := smRequests.Load(); n != 100 {
		t.Errorf("%d sitemaps fetched, want the budget of 100", n)
	}
	if got := statsOf(t, c).SkippedLinks["sitemap-limit"]; got != 1 {
		t.Errorf("Skipped[sitemap-limit] = %d, want 1", got)
	}

	t.Run("nesting", func(t *testing.T) {
		smRequests.Store(0)
		c := newCrawler(t, crawler.WithSitemaps(true), crawler.WithMaxSitemaps(crawler.NoLimit), crawler.WithMaxSitemapURLs(crawler.NoLimit), crawler.WithMaxSitemapDepth(3), crawler.WithMaxDepth(1))
		runCrawl(t, c, s.URL+"/")
		if n := smRequests.Load(); n != 4 { // the root and three levels below
			t.Errorf("%d sitemaps fetched, want 4", n)
		}
		if got := statsOf(t, c).SkippedLinks["sitemap-depth"]; got != 1 {
			t.Errorf("Skipped[sitemap-depth] = %d, want 1", got)
		}
	})
}

func TestPageLimitEndsTheCrawlDespiteSitemaps(t *testing.T) {
	var smRequests atomic.Int64
	routes := map[string]http.HandlerFunc{"/": htmlPage("home", "/1", "/2", "/3")}
	for i := range 3 {
		routes[fmt.Sprintf("/%d", i+1)] = htmlPage("p")
	}
	s := newSite(t, "User-agent: *\nAllow: /\n", routes)
	s.mu.Lock()
	routes["/sitemap.xml"] = sitemapTrap(&smRequests)
	for i := range 200 {
		routes[fmt.Sprintf("/sm/%d.xml", i+1)] = sitemapTrap(&smRequests)
	}
	s.mu.Unlock()
	c := newCrawler(t, crawler.WithSitemaps(true), crawler.WithMaxPages(2), crawler.WithMaxSitemaps(crawler.NoLimit), crawler.WithMaxSitemapURLs(crawler.NoLimit), crawler.WithMaxSitemapDepth(1000))
	runCrawl(t, c, s.URL+"/")
	// The limit is reached by the seed and its first link, before any
	// sitemap is read; at most the one sitemap already in flight is.
	if n := smRequests.Load(); n > 1 {
		t.Errorf("%d sitemaps fetched after the page limit was reached", n)
	}
}

func TestSitemapNestingDoesNotUseDepth(t *testing.T) {
	s := newSite(t, "User-agent: *\nAllow: /\n", map[string]http.HandlerFunc{
		"/": htmlPage("home"),
		"/sitemap.xml": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<sitemapindex><sitemap><loc>http://%s/a.xml</loc></sitemap></sitemapindex>`, r.Host)
		},
		"/a.xml": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<sitemapindex><sitemap><loc>http://%s/b.xml</loc></sitemap></sitemapindex>`, r.Host)
		},
		"/b.xml": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<urlset><url><loc>http://%s/listed</loc></url></urlset>`, r.Host)
		},
		"/listed": htmlPage("listed"),
	})
	c := newCrawler(t, crawler.WithSitemaps(true), crawler.WithMaxDepth(1))
	runCrawl(t, c, s.URL+"/")
	if n := s.count("/listed"); n != 1 {
		t.Errorf("/listed (two indexes deep, max depth 1) requested %d times, want 1", n)
	}
}

func TestSitemapRedirectsObeyMaxRedirects(t *testing.T) {
	s := newSite(t, "User-agent: *\nAllow: /\n", map[string]http.HandlerFunc{
		"/":            htmlPage("home"),
		"/sitemap.xml": redirectTo(http.StatusFound, "/r1"),
		"/r1":          redirectTo(http.StatusFound, "/r2"),
		"/r2":          redirectTo(http.StatusFound, "/r3"),
		"/r3":          redirectTo(http.StatusFound, "/r4"),
	})
	c := newCrawler(t, crawler.WithSitemaps(true), crawler.WithMaxRedirects(2))
	runCrawl(t, c, s.URL+"/")
	if n := s.count("/r3"); n != 0 {
		t.Errorf("/r3, a third redirect hop, was requested with WithMaxRedirects(2); server saw %q", s.targets())
	}
	if got := statsOf(t, c).Errors["redirect"]; got != 1 {
		t.Errorf("Errors[redirect] = %d, want 1", got)
	}
}

func TestFailingHostIsGivenUp(t *testing.T) {
	var pages []string
	routes := map[string]http.HandlerFunc{}
	for i := range 20 {
		p := fmt.Sprintf("/%d", i)
		pages = append(pages, p)
		routes[p] = func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) }
	}
	routes["/"] = htmlPage("home", pages...)
	s := newSite(t, defaultRobots, routes)
	c := newCrawler(t, crawler.WithHostFailures(3), crawler.WithRetries(1), crawler.WithMaxDelay(10*time.Millisecond))
	errs := recordErrors(c)
	runCrawl(t, c, s.URL+"/")
	requested := 0
	for _, p := range pages {
		requested += s.count(p)
	}
	if requested != 3 {
		t.Errorf("%d requests to the failing pages, want 3 (then the host is given up)", requested)
	}
	st := statsOf(t, c)
	if got := st.Errors["host-given-up"]; got < 17 {
		t.Errorf("Errors[host-given-up] = %d, want the 17+ pages still queued", got)
	}
	given := 0
	for _, es := range errs.all() {
		for _, e := range es {
			if errors.Is(e, frontier.ErrGivenUp) {
				given++
			}
		}
	}
	if int64(given) != st.Errors["host-given-up"] {
		t.Errorf("%d URLs reported given up to OnError, Stats says %d", given, st.Errors["host-given-up"])
	}
}

func TestRetryAfterIsCappedByMaxDelay(t *testing.T) {
	var calls atomic.Int64
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", "40")
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			}
			htmlPage("ok")(w, r)
		},
	})
	c := newCrawler(t, crawler.WithMaxDelay(100*time.Millisecond))
	runCrawl(t, c, s.URL+"/")
	at := s.requests("/")
	if len(at) != 2 {
		t.Fatalf("/ requested %d times, want 2", len(at))
	}
	// Generous: the cap is 100 ms; Retry-After asked for 40 s.
	if gap := at[1].Sub(at[0]); gap > 20*time.Second {
		t.Errorf("retry after %v: Retry-After was not capped by WithMaxDelay", gap)
	}
}

func TestPathologicalAndCappedLinks(t *testing.T) {
	var links []string
	for i := range 50 {
		links = append(links, fmt.Sprintf("/l%d", i))
	}
	routes := map[string]http.HandlerFunc{
		"/": htmlPage("home", append([]string{"/a/a/a/a/", "/x/y/x/y/x/y/z"}, links...)...),
	}
	for _, l := range links {
		routes[l] = htmlPage("l")
	}
	s := newSite(t, defaultRobots, routes)
	c := newCrawler(t, crawler.WithMaxLinks(12))
	runCrawl(t, c, s.URL+"/")
	st := statsOf(t, c)
	if got := st.SkippedLinks["pathological"]; got != 2 {
		t.Errorf("Skipped[pathological] = %d, want 2", got)
	}
	if got := st.SkippedLinks["max-links"]; got != 40 {
		t.Errorf("Skipped[max-links] = %d, want 40 (52 links, 12 kept)", got)
	}
	fetched := 0
	for _, target := range s.targets() {
		if strings.HasPrefix(target, "/l") {
			fetched++
		}
	}
	if fetched != 10 {
		t.Errorf("%d linked pages fetched, want 10 (12 links kept, 2 of them pathological)", fetched)
	}
}

func TestCheckpointTravelsWithEachAck(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  htmlPage("home", "/a", "/b", "/private/x", "/missing"),
		"/a": htmlPage("a"),
		"/b": htmlPage("b"),
	})
	store := new(frontier.MemoryStore)
	var mu sync.Mutex
	records, inHandler := 0, 0
	write := func() {
		mu.Lock()
		defer mu.Unlock()
		inHandler++
		if inHandler > 1 {
			t.Error("handlers of two URLs ran at once under WithCheckpoint")
		}
		records++
		inHandler--
	}
	c := newCrawler(t, crawler.WithStore(store), crawler.WithWorkers(8), crawler.WithCheckpoint(func() []byte {
		mu.Lock()
		defer mu.Unlock()
		return []byte(fmt.Sprint(records))
	}))
	c.OnPage(func(context.Context, *crawler.Page) { write() })
	c.OnDisallowed(func(context.Context, *url.URL, crawler.DisallowReason) { write() })
	c.OnError(func(context.Context, *url.URL, error) { write() })
	runCrawl(t, c, s.URL+"/")
	// /, /a, /b and /missing (a 404 page) reach OnPage, /private/x
	// OnDisallowed: five records, and the last acknowledgement carries 5.
	cp, err := store.Checkpoint(context.Background())
	if err != nil || string(cp) != "5" || records != 5 {
		t.Errorf("Checkpoint = %q, %v after %d records; want 5", cp, err, records)
	}
}

func TestWARCRecordsEveryExchange(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":      htmlPage("home", "/moved", "/gone"),
		"/moved": redirectTo(http.StatusMovedPermanently, "/a"),
		"/a":     htmlPage("a"),
	})
	dir := t.TempDir()
	w, err := warc.NewWriter(dir, warc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newCrawler(t, crawler.WithWARC(w))
	runCrawl(t, c, s.URL+"/")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, name := range w.Files() {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f) // multistream: every member
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(&all, zr); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for _, path := range []string{"/robots.txt", "/", "/moved", "/a", "/gone"} {
		for _, typ := range []string{"request", "response"} {
			want := "WARC-Type: " + typ + "\r\n"
			found := false
			for _, rec := range strings.Split(all.String(), "WARC/1.1\r\n") {
				if strings.Contains(rec, want) && strings.Contains(rec, "WARC-Target-URI: "+s.URL+path+"\r\n") {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s record for %s", typ, path)
			}
		}
	}
	if _, err := crawler.New(crawler.WithWARC(w), crawler.WithTransport(http.DefaultTransport)); !errors.Is(err, crawler.ErrInvalidOption) {
		t.Errorf("WithWARC with WithTransport: %v, want ErrInvalidOption", err)
	}
}

// TestMaxRedirectsZeroFollowsNone: WithMaxRedirects(0) follows no redirect
// (it used to mean the default, ten): the redirect is reported, its target
// never requested.
func TestMaxRedirectsZeroFollowsNone(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  redirectTo(http.StatusMovedPermanently, "/a"),
		"/a": htmlPage("A"),
	})
	c := newCrawler(t, crawler.WithMaxRedirects(0))
	errs := recordErrors(c)
	runCrawl(t, c, s.URL+"/")
	if n := s.count("/a"); n != 0 {
		t.Errorf("/a requested %d times, want none", n)
	}
	if n := s.count("/"); n != 1 {
		t.Errorf("/ requested %d times, want once", n)
	}
	got := errs.errs[s.URL+"/"]
	if len(got) != 1 || kindOf(got[0]) != "redirect" || !errors.Is(got[0], fetch.ErrTooManyRedirects) {
		t.Errorf("errors of /: %v, want one redirect error wrapping ErrTooManyRedirects", got)
	}
}
