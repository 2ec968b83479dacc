package crawler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/robots/gate"
)

func TestRunReturnsWhenFrontierExhausted(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  htmlPage("home", "/a", "/b"),
		"/a": htmlPage("a", "/b", "/c", "/"),
		"/b": htmlPage("b", "/a"),
		"/c": htmlPage("c", "/", "/a?"),
	})
	c := newCrawler(t)
	pages := recordPages(c)
	runCrawl(t, c, s.URL+"/")
	if got, want := pages.targets(), []string{"/", "/a", "/b", "/c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("OnPage saw %q, want %q", got, want)
	}
	for _, p := range []string{"/", "/a", "/b", "/c"} {
		if n := s.count(p); n != 1 {
			t.Errorf("%s requested %d times, want 1", p, n)
		}
	}
	st := statsOf(t, c)
	if st.Queued != 0 || st.InFlight != 0 || st.Pages != 4 {
		t.Errorf("after Run: Queued %d, InFlight %d, Pages %d; want 0, 0, 4", st.Queued, st.InFlight, st.Pages)
	}
}

func TestRunLeavesNoGoroutines(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  htmlPage("home", "/a", "/b"),
		"/a": htmlPage("a"),
		"/b": htmlPage("b"),
	})
	// The site's listener goroutine is older than the snapshot; connection
	// goroutines on both sides must be gone once Run has closed its idle
	// connections.
	before := goleak.IgnoreCurrent()
	c := newCrawler(t, crawler.WithSitemaps(true))
	runCrawl(t, c, s.URL+"/")
	goleak.VerifyNone(t, before)
}

// TestCancelLetsInFlightFetchFinish: cancelling stops the crawler from
// taking work, but the page being fetched arrives and reaches OnPage, and
// Run returns ctx's error as soon as the fetches in flight are over.
func TestCancelLetsInFlightFetchFinish(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/slow": func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-release
			htmlPage("slow", "/next")(w, r)
		},
		"/next": htmlPage("next"),
	})
	const grace = time.Minute
	c := newCrawler(t, crawler.WithGracePeriod(grace))
	pages := recordPages(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, s.URL+"/slow") }()

	if !waitFor(t, started, "the fetch of /slow") {
		close(release)
		<-done
		return
	}
	cancel()
	close(release)
	begin := time.Now()
	var err error
	select {
	case err = <-done:
	case <-time.After(grace / 2):
		t.Fatalf("Run did not return within %v of the last fetch finishing (grace %v)", grace/2, grace)
	}
	t.Logf("Run returned %v after the fetch was released", time.Since(begin))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	p := pages.get("/slow")
	if p == nil || p.Status != http.StatusOK {
		t.Fatalf("the page in flight at cancellation did not reach OnPage (got %+v)", p)
	}
	if n := s.count("/next"); n != 0 {
		t.Errorf("/next requested %d times after cancellation", n)
	}
}

// TestCancelStalledFetchAfterGrace: a server that never answers is given
// the grace period, then the fetch is abandoned and Run returns.
func TestCancelStalledFetchAfterGrace(t *testing.T) {
	started := make(chan struct{})
	stop := make(chan struct{})
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/stall": func(w http.ResponseWriter, r *http.Request) {
			close(started)
			select {
			case <-r.Context().Done(): // the crawler gave up
			case <-stop:
			}
		},
	})
	defer close(stop)
	const grace = 300 * time.Millisecond
	c := newCrawler(t, crawler.WithGracePeriod(grace))
	pages := recordPages(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, s.URL+"/stall") }()
	if !waitFor(t, started, "the fetch of /stall") {
		cancel()
		<-done
		return
	}
	cancel()
	begin := time.Now()
	var err error
	select {
	case err = <-done:
	case <-time.After(grace + 20*time.Second):
		t.Fatalf("Run did not return within %v of cancellation (grace %v)", grace+20*time.Second, grace)
	}
	elapsed := time.Since(begin)
	t.Logf("Run returned %v after cancellation", elapsed)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if elapsed < grace {
		t.Errorf("Run returned %v after cancellation, before the grace period %v was over", elapsed, grace)
	}
	if p := pages.get("/stall"); p != nil {
		t.Errorf("the abandoned page reached OnPage: status %d", p.Status)
	}
}

// TestOnPageHandlerOrder: the handlers of one page run one after the other
// in registration order, and Run returns after all of them.
func TestOnPageHandlerOrder(t *testing.T) {
	routes := map[string]http.HandlerFunc{}
	var links []string
	for i := range 12 {
		p := fmt.Sprintf("/p%d", i)
		links = append(links, p)
		routes[p] = htmlPage(p)
	}
	routes["/"] = htmlPage("home", links...)
	s := newSite(t, defaultRobots, routes)
	c := newCrawler(t, crawler.WithPerHost(4))
	var mu sync.Mutex
	order := map[string][]int{}
	running := map[string]int{}
	var returned atomic.Int64
	for i := range 3 {
		c.OnPage(func(ctx context.Context, p *crawler.Page) {
			u := p.URL.String()
			mu.Lock()
			running[u]++
			if running[u] != 1 {
				t.Errorf("%d handlers of %s running at once", running[u], u)
			}
			order[u] = append(order[u], i)
			mu.Unlock()
			// Let other pages' handlers interleave.
			for range 10 {
				runtime.Gosched()
			}
			mu.Lock()
			running[u]--
			mu.Unlock()
			returned.Add(1)
		})
	}
	runCrawl(t, c, s.URL+"/")
	if len(order) != 13 {
		t.Errorf("handlers ran for %d pages, want 13", len(order))
	}
	for u, o := range order {
		if !reflect.DeepEqual(o, []int{0, 1, 2}) {
			t.Errorf("handlers of %s ran in order %v, want [0 1 2]", u, o)
		}
	}
	if n := returned.Load(); n != 3*13 {
		t.Errorf("%d handler calls returned before Run did, want %d", n, 3*13)
	}
}

// TestOnPageHandlersOfDifferentPagesRunConcurrently: each handler waits for
// the other page's handler to start, which only works if they overlap.
func TestOnPageHandlersOfDifferentPagesRunConcurrently(t *testing.T) {
	a := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": htmlPage("a")})
	b := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": htmlPage("b")})
	inA, inB := make(chan struct{}), make(chan struct{})
	c := newCrawler(t)
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		mine, other := inA, inB
		if p.URL.Host == strings.TrimPrefix(b.URL, "http://") {
			mine, other = inB, inA
		}
		close(mine)
		select {
		case <-other:
		case <-time.After(10 * time.Second):
			t.Errorf("handler of %s: the other page's handler did not start while this one ran", p.URL)
		}
	})
	runCrawl(t, c, a.URL+"/", b.URL+"/")
}

// TestPanickingHandlersAreRecovered: panics in OnPage and Filter handlers
// are counted, reported to OnError, and the crawl goes on.
func TestPanickingHandlersAreRecovered(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":      htmlPage("home", "/boom", "/a"),
		"/boom":  htmlPage("boom", "/after"),
		"/a":     htmlPage("a", "/filter-boom"),
		"/after": htmlPage("after"),
	})
	c := newCrawler(t)
	errs := recordErrors(c)
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		if p.URL.Path == "/boom" {
			panic("page handler failed")
		}
	})
	pages := recordPages(c) // registered after the panicking handler
	c.Filter(func(u, from *url.URL, depth int) bool {
		if u.Path == "/filter-boom" {
			panic("filter failed")
		}
		return true
	})
	runCrawl(t, c, s.URL+"/")
	if got := statsOf(t, c).Errors["handler-panic"]; got != 2 {
		t.Errorf("Stats.Errors[handler-panic] = %d, want 2", got)
	}
	for _, want := range []struct{ url, text string }{{"/boom", "page handler failed"}, {"/filter-boom", "filter failed"}} {
		es := errs.find(want.url)
		if len(es) != 1 || !strings.Contains(es[0].Error(), want.text) {
			t.Errorf("OnError for %s: %v, want one error mentioning %q", want.url, es, want.text)
		}
	}
	// The crawl went on: the panicking page's links were followed and the
	// handlers after the panicking one still ran for it.
	if s.count("/after") != 1 {
		t.Errorf("/after requested %d times, want 1", s.count("/after"))
	}
	if pages.get("/boom") == nil {
		t.Error("the handler registered after a panicking one did not run for the page")
	}
}

func TestOnDisallowed(t *testing.T) {
	down := newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		},
		"/":  htmlPage("down"),
		"/x": htmlPage("x"),
	})
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":          htmlPage("home", "/private/a", "/public", down.URL+"/x"),
		"/public":    htmlPage("public", "/private/b?q=1"),
		"/private/a": htmlPage("private"),
	})
	c := newCrawler(t, crawler.WithScope(frontier.ScopeAny)) // any host: the link to the 503 host is followed
	errs := recordErrors(c)
	var mu sync.Mutex
	got := map[string]crawler.DisallowReason{}
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		mu.Lock()
		got[u.String()] = why
		mu.Unlock()
	})
	runCrawl(t, c, s.URL+"/", down.URL+"/")
	want := map[string]crawler.DisallowReason{
		s.URL + "/private/a":     crawler.DisallowedByRules,
		s.URL + "/private/b?q=1": crawler.DisallowedByRules,
		down.URL + "/":           crawler.DisallowedUnavailable,
		down.URL + "/x":          crawler.DisallowedUnavailable,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OnDisallowed got %v, want %v", got, want)
	}
	for _, target := range s.targets() {
		if strings.HasPrefix(target, "/private/") {
			t.Errorf("disallowed %s requested", target)
		}
	}
	if got := down.targets(); !reflect.DeepEqual(got, []string{"/robots.txt"}) {
		t.Errorf("requests to the host whose robots.txt answers 503: %q, want only /robots.txt", got)
	}
	st := statsOf(t, c)
	// A URL is counted once: by the rules as disallowed, for an unreachable
	// robots.txt as an error.
	if st.Disallowed != 2 || st.Errors["robots-unavailable"] != 2 {
		t.Errorf("Stats.Disallowed = %d, Errors[robots-unavailable] = %d; want 2 and 2", st.Disallowed, st.Errors["robots-unavailable"])
	}
	for _, u := range []string{down.URL + "/", down.URL + "/x"} {
		if es := errs.find(strings.TrimPrefix(u, down.URL)); len(es) == 0 {
			t.Errorf("%s not reported to OnError", u)
		}
	}
	for _, e := range errs.find(down.URL[len("http://"):] + "/x") {
		if !errors.Is(e, crawler.ErrRobotsUnavailable) || kindOf(e) != "robots-unavailable" || !strings.Contains(e.Error(), "503") {
			t.Errorf("OnError for the 503 host: %v (kind %q), want ErrRobotsUnavailable naming the 503", e, kindOf(e))
		}
	}
	if st.RobotsOutcomes["ok"] != 1 || st.RobotsOutcomes["unreachable"] != 1 {
		t.Errorf("Stats.RobotsOutcomes = %v, want ok 1, unreachable 1", st.RobotsOutcomes)
	}
}

func TestFilterBlocksLinks(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":          htmlPage("home", "/keep", "/blocked/1"),
		"/keep":      htmlPage("keep", "/blocked/2", "/deeper"),
		"/deeper":    htmlPage("deeper"),
		"/blocked/1": htmlPage("blocked"),
		"/blocked/2": htmlPage("blocked"),
	})
	c := newCrawler(t)
	type call struct {
		from  string
		depth int
	}
	var mu sync.Mutex
	calls := map[string]call{}
	c.Filter(func(u, from *url.URL, depth int) bool {
		mu.Lock()
		calls[u.Path] = call{from.Path, depth}
		mu.Unlock()
		return !strings.HasPrefix(u.Path, "/blocked/")
	})
	runCrawl(t, c, s.URL+"/")
	for _, p := range []string{"/blocked/1", "/blocked/2"} {
		if n := s.count(p); n != 0 {
			t.Errorf("%s requested %d times though the filter refused it", p, n)
		}
	}
	if s.count("/deeper") != 1 {
		t.Error("/deeper, which the filter allows, was not fetched")
	}
	want := map[string]call{"/keep": {"/", 1}, "/blocked/1": {"/", 1}, "/blocked/2": {"/keep", 2}, "/deeper": {"/keep", 2}}
	for p, w := range want {
		if got := calls[p]; got != w {
			t.Errorf("filter called for %s with from %q, depth %d; want %q, %d", p, got.from, got.depth, w.from, w.depth)
		}
	}
	if got := statsOf(t, c).SkippedLinks["filter"]; got != 2 {
		t.Errorf("Stats.SkippedLinks[filter] = %d, want 2", got)
	}
}

func TestEnqueue(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":       htmlPage("home"),
		"/hidden": htmlPage("hidden"),
	})
	c := newCrawler(t)
	if err := c.Enqueue(context.Background(), s.URL+"/hidden", nil, nil); !errors.Is(err, crawler.ErrNotRunning) {
		t.Errorf("Enqueue before Run = %v, want ErrNotRunning", err)
	}
	pages := recordPages(c)
	var enqueueErr, privateErr error
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		if p.URL.Path == "/" {
			enqueueErr = c.Enqueue(ctx, s.URL+"/hidden", p, nil)
			privateErr = c.Enqueue(ctx, s.URL+"/private/x", p, nil)
		}
	})
	var disallowed atomic.Int64
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) { disallowed.Add(1) })
	runCrawl(t, c, s.URL+"/")
	if enqueueErr != nil || privateErr != nil {
		t.Errorf("Enqueue from OnPage = %v, %v; want nil", enqueueErr, privateErr)
	}
	p := pages.get("/hidden")
	if p == nil {
		t.Fatal("the URL enqueued from OnPage was not fetched")
	}
	if p.Depth != 1 || p.Referrer != s.URL+"/" {
		t.Errorf("enqueued page has depth %d, referrer %q; want 1, %q", p.Depth, p.Referrer, s.URL+"/")
	}
	if s.count("/private/x") != 0 || disallowed.Load() != 1 {
		t.Errorf("an enqueued URL robots.txt forbids was requested %d times, reported %d times; want 0 and 1", s.count("/private/x"), disallowed.Load())
	}
	if err := c.Enqueue(context.Background(), s.URL+"/hidden", nil, nil); !errors.Is(err, crawler.ErrNotRunning) {
		t.Errorf("Enqueue after Run = %v, want ErrNotRunning", err)
	}
}

// jsonLinks reads {"links": ["/a", ...]} relative to the page URL.
var jsonLinks = fetch.ExtractorFunc(func(ctx context.Context, p *fetch.Page) ([]fetch.Link, error) {
	var doc struct{ Links []string }
	if err := json.Unmarshal(p.Body, &doc); err != nil {
		return nil, err
	}
	var out []fetch.Link
	for _, l := range doc.Links {
		u, err := p.URL.Parse(l)
		if err != nil {
			continue
		}
		out = append(out, fetch.Link{URL: u.String(), Tag: "json"})
	}
	return out, nil
})

// dataHref finds links in data-href attributes, which the HTML extractor
// does not read.
var dataHref = fetch.ExtractorFunc(func(ctx context.Context, p *fetch.Page) ([]fetch.Link, error) {
	doc, err := p.Document()
	if err != nil {
		return nil, err
	}
	var out []fetch.Link
	for _, n := range doc.Find("[data-href]").Nodes {
		for _, a := range n.Attr {
			if a.Key == "data-href" {
				if u, err := p.URL.Parse(a.Val); err == nil {
					out = append(out, fetch.Link{URL: u.String(), Tag: "div"})
				}
			}
		}
	}
	return out, nil
})

func TestCustomExtractors(t *testing.T) {
	routes := map[string]http.HandlerFunc{
		"/": htmlPage("home", "/api/list", "/anchor", `<div data-href="/data"></div>`),
		"/api/list": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"links": ["/api/item/1", "/api/item/2"]}`)
		},
		"/api/item/1": htmlPage("item 1"),
		"/api/item/2": htmlPage("item 2"),
		"/anchor":     htmlPage("anchor"),
		"/data":       htmlPage("data"),
	}

	t.Run("added", func(t *testing.T) {
		s := newSite(t, defaultRobots, routes)
		c := newCrawler(t, crawler.WithExtractor("application/json", jsonLinks), crawler.WithExtractor("text/html", dataHref))
		pages := recordPages(c)
		runCrawl(t, c, s.URL+"/")
		// The default HTML extractor's links and the added one's are
		// merged; JSON pages get their own.
		want := []string{"/", "/anchor", "/api/item/1", "/api/item/2", "/api/list", "/data"}
		if got := pages.targets(); !reflect.DeepEqual(got, want) {
			t.Errorf("fetched %q, want %q", got, want)
		}
		if p := pages.get("/api/list"); p == nil || len(p.Links) != 2 || p.Links[0].Tag != "json" {
			t.Errorf("Page.Links of the JSON page: %+v, want the two JSON links", p)
		}
	})

	t.Run("replaced", func(t *testing.T) {
		s := newSite(t, defaultRobots, routes)
		c := newCrawler(t, crawler.WithExtractors("text/html", dataHref))
		pages := recordPages(c)
		runCrawl(t, c, s.URL+"/")
		// No JSON extractor and no anchors: only data-href is followed.
		want := []string{"/", "/data"}
		if got := pages.targets(); !reflect.DeepEqual(got, want) {
			t.Errorf("fetched %q, want %q", got, want)
		}
	})

	t.Run("none", func(t *testing.T) {
		s := newSite(t, defaultRobots, routes)
		c := newCrawler(t, crawler.WithExtractors("text/html"))
		pages := recordPages(c)
		runCrawl(t, c, s.URL+"/")
		if got := pages.targets(); !reflect.DeepEqual(got, []string{"/"}) {
			t.Errorf("fetched %q with no HTML extractor, want only the seed", got)
		}
	})
}

func TestNofollow(t *testing.T) {
	routes := map[string]http.HandlerFunc{
		"/":            htmlPage("home", `<a rel="nofollow" href="/nf">nf</a>`, `<a rel="ugc" href="/ugc">ugc</a>`, "/meta"),
		"/meta":        rawHTML("meta", `<meta name="robots" content="nofollow">`, "/behind-meta"),
		"/nf":          htmlPage("nf"),
		"/ugc":         htmlPage("ugc"),
		"/behind-meta": htmlPage("behind"),
	}
	t.Run("respected by default", func(t *testing.T) {
		s := newSite(t, defaultRobots, routes)
		c := newCrawler(t)
		pages := recordPages(c)
		runCrawl(t, c, s.URL+"/")
		if got, want := pages.targets(), []string{"/", "/meta"}; !reflect.DeepEqual(got, want) {
			t.Errorf("fetched %q, want %q", got, want)
		}
		if n := statsOf(t, c).Nofollow; n != 1 {
			t.Errorf("Stats.Nofollow = %d, want 1 (the meta nofollow page)", n)
		}
		if p := pages.get("/meta"); p == nil || len(p.Links) != 0 {
			t.Errorf("Page.Links of a nofollow page: %+v, want none", p)
		}
	})
	t.Run("ignored when off", func(t *testing.T) {
		s := newSite(t, defaultRobots, routes)
		c := newCrawler(t, crawler.WithRespectNofollow(false))
		pages := recordPages(c)
		runCrawl(t, c, s.URL+"/")
		if got, want := pages.targets(), []string{"/", "/behind-meta", "/meta", "/nf", "/ugc"}; !reflect.DeepEqual(got, want) {
			t.Errorf("fetched %q, want %q", got, want)
		}
	})
}

// TestRedirectIntoDisallowedPath: a redirect's target goes through
// robots.txt like any URL.
// claimRecorder is a MemoryStore that records the URLs it hands out.
type claimRecorder struct {
	*frontier.MemoryStore
	mu     sync.Mutex
	leased []string
}

func (s *claimRecorder) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	c, err := s.MemoryStore.Claim(ctx, now, opt)
	if c.Lease != nil {
		s.mu.Lock()
		s.leased = append(s.leased, c.Lease.URL)
		s.mu.Unlock()
	}
	return c, err
}

// TestDisallowedLinksNotQueued: a link that the robots.txt the crawler
// holds disallows is never queued or leased, only reported, once, under
// its canonical URL, however many pages link to it; a link to a host
// whose robots.txt is not known yet is checked when it is claimed, as
// before.
func TestDisallowedLinksNotQueued(t *testing.T) {
	other := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": htmlPage("other"),
	})
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":        htmlPage("home", "/private/a#top", "/a", "/b", other.URL+"/private/x"),
		"/a":       htmlPage("a", "/private/a", "/private/b"),
		"/b":       htmlPage("b", "/private/a", "/private/b"),
		"/private": htmlPage("not under /private/"),
	})
	st := &claimRecorder{MemoryStore: new(frontier.MemoryStore)}
	c := newCrawler(t, crawler.WithStore(st), crawler.WithScope(frontier.ScopeAny))
	var mu sync.Mutex
	got := map[string]int{}
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		mu.Lock()
		defer mu.Unlock()
		if why != crawler.DisallowedByRules {
			t.Errorf("OnDisallowed(%s): %s, want %s", u, why, crawler.DisallowedByRules)
		}
		got[u.String()]++
	})
	runCrawl(t, c, s.URL+"/")
	want := map[string]int{s.URL + "/private/a": 1, s.URL + "/private/b": 1, other.URL + "/private/x": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OnDisallowed calls %v, want %v", got, want)
	}
	var leased []string
	for _, u := range st.leased {
		if strings.Contains(u, "/private/") {
			leased = append(leased, u)
		}
	}
	// other's robots.txt was not known when its link was found: that one
	// URL is leased, checked, and reported.
	if !slices.Equal(leased, []string{other.URL + "/private/x"}) {
		t.Errorf("disallowed URLs leased: %v, want only %s", leased, other.URL+"/private/x")
	}
	for _, target := range append(s.targets(), other.targets()...) {
		if strings.HasPrefix(target, "/private/") {
			t.Errorf("disallowed %s requested", target)
		}
	}
	if n := statsOf(t, c).Disallowed; n != 3 {
		t.Errorf("Stats.Disallowed = %d, want 3", n)
	}
}

// TestDisallowedLinksNotCounted: a link the robots.txt already fetched
// disallows uses none of WithMaxPages.
func TestDisallowedLinksNotCounted(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  htmlPage("home", "/private/a", "/private/b", "/a", "/b"),
		"/a": htmlPage("a"),
		"/b": htmlPage("b"),
	})
	c := newCrawler(t, crawler.WithMaxPages(3))
	runCrawl(t, c, s.URL+"/")
	got := s.targets()
	slices.Sort(got)
	if want := []string{"/", "/a", "/b", "/robots.txt"}; !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q: the three pages allowed", got, want)
	}
	if st := statsOf(t, c); st.Disallowed != 2 || st.SkippedLinks[crawler.SkippedMaxPages] != 0 {
		t.Errorf("Stats.Disallowed = %d, Skipped[max-pages] = %d; want 2 and 0", st.Disallowed, st.SkippedLinks[crawler.SkippedMaxPages])
	}
}

func TestRedirectIntoDisallowedPath(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":               htmlPage("home", "/go/secret", "/go/open"),
		"/go/secret":      redirectTo(http.StatusFound, "/private/secret"),
		"/go/open":        redirectTo(http.StatusMovedPermanently, "/landing"),
		"/private/secret": htmlPage("secret"),
		"/landing":        htmlPage("landing"),
	})
	c := newCrawler(t)
	pages := recordPages(c)
	var mu sync.Mutex
	var disallowed []string
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		mu.Lock()
		disallowed = append(disallowed, u.Path+" "+string(why))
		mu.Unlock()
	})
	runCrawl(t, c, s.URL+"/")
	if n := s.count("/private/secret"); n != 0 {
		t.Errorf("redirect target robots.txt forbids was requested %d times", n)
	}
	if want := []string{"/private/secret rules"}; !reflect.DeepEqual(disallowed, want) {
		t.Errorf("OnDisallowed got %q, want %q", disallowed, want)
	}
	if p := pages.get("/go/secret"); p == nil || p.Redirect == nil || p.Redirect.Path != "/private/secret" {
		t.Errorf("the redirect itself should reach OnPage with its target, got %+v", p)
	}
	if p := pages.get("/landing"); p == nil || len(p.RedirectChain) != 1 || !strings.HasSuffix(p.RedirectChain[0], "/go/open") {
		t.Errorf("redirect target /landing: %+v, want it fetched with the chain [/go/open]", p)
	}
}

func TestRedirectLoopAndLongChainAreBounded(t *testing.T) {
	var hops atomic.Int64
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":       htmlPage("home", "/loop/a", "/chain/0"),
		"/loop/a": redirectTo(http.StatusFound, "/loop/b"),
		"/loop/b": redirectTo(http.StatusFound, "/loop/a"),
	})
	// An endless chain: /chain/n redirects to /chain/n+1.
	for i := range 50 {
		s.routes[fmt.Sprintf("/chain/%d", i)] = func(w http.ResponseWriter, r *http.Request) {
			hops.Add(1)
			redirectTo(http.StatusFound, fmt.Sprintf("/chain/%d", i+1))(w, r)
		}
	}
	const maxRedirects = 3
	c := newCrawler(t, crawler.WithMaxRedirects(maxRedirects))
	errs := recordErrors(c)
	runCrawl(t, c, s.URL+"/")
	if a, b := s.count("/loop/a"), s.count("/loop/b"); a != 1 || b != 1 {
		t.Errorf("redirect loop: /loop/a requested %d times, /loop/b %d; want once each", a, b)
	}
	if n := hops.Load(); n != maxRedirects+1 {
		t.Errorf("endless redirect chain: %d requests, want %d (the first and %d hops)", n, maxRedirects+1, maxRedirects)
	}
	// Both are reported: the loop when /loop/b points back into its own
	// chain, the chain when it grows past the limit.
	var tooMany, loop bool
	for _, es := range errs.all() {
		for _, err := range es {
			tooMany = tooMany || errors.Is(err, fetch.ErrTooManyRedirects)
			loop = loop || errors.Is(err, fetch.ErrRedirectLoop)
		}
	}
	if !tooMany || !loop {
		t.Errorf("OnError got ErrTooManyRedirects %v, ErrRedirectLoop %v; want both: %v", tooMany, loop, errs.all())
	}
	if n := statsOf(t, c).Errors["redirect"]; n != 2 {
		t.Errorf("Stats.Errors[redirect] = %d, want 2", n)
	}
}

// TestRetryAfter: 429 and 503 answers with Retry-After pause the host and
// the page is tried again after the pause, as often as WithRetries allows.
func TestRetryAfter(t *testing.T) {
	var busyCalls atomic.Int64
	busy := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": func(w http.ResponseWriter, r *http.Request) {
			if busyCalls.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			}
			htmlPage("finally")(w, r)
		},
	})
	down := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "down", http.StatusServiceUnavailable)
		},
	})
	c := newCrawler(t, crawler.WithRetries(1))
	var mu sync.Mutex
	statuses := map[string][]int{}
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		mu.Lock()
		statuses[p.URL.Host] = append(statuses[p.URL.Host], p.Status)
		mu.Unlock()
	})
	runCrawl(t, c, busy.URL+"/", down.URL+"/")
	for _, s := range []*testSite{busy, down} {
		at := s.requests("/")
		if len(at) != 2 {
			t.Errorf("%s: / requested %d times, want 2 (one retry)", s.URL, len(at))
			continue
		}
		// The server saw the first request before the crawler read the
		// answer and started the pause, so the gap is at least the pause.
		if gap := at[1].Sub(at[0]); gap < time.Second {
			t.Errorf("%s: retry %v after the first request, before Retry-After's 1s", s.URL, gap)
		}
	}
	host := func(s *testSite) string { return strings.TrimPrefix(s.URL, "http://") }
	if got := statuses[host(busy)]; !reflect.DeepEqual(got, []int{200}) {
		t.Errorf("OnPage statuses for the 429 host: %v, want [200] (the retried answer only)", got)
	}
	if got := statuses[host(down)]; !reflect.DeepEqual(got, []int{503}) {
		t.Errorf("OnPage statuses for the 503 host: %v, want [503] once retries ran out", got)
	}
	st := statsOf(t, c)
	if st.Retries != 2 || st.Statuses[200] != 1 || st.Statuses[503] != 1 || st.Statuses[429] != 0 {
		t.Errorf("Stats: Retries %d, Statuses %v; want 2 retries, one 200 and one 503", st.Retries, st.Statuses)
	}

	t.Run("no retries", func(t *testing.T) {
		down := newSite(t, defaultRobots, map[string]http.HandlerFunc{
			"/": func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) },
		})
		c := newCrawler(t, crawler.WithRetries(0))
		runCrawl(t, c, down.URL+"/")
		if n := down.count("/"); n != 1 {
			t.Errorf("/ requested %d times with WithRetries(0), want 1", n)
		}
	})
}

func TestBodyLimitTruncates(t *testing.T) {
	big := strings.Repeat("x", 10_000)
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":      htmlPage("home", "/big", "/small"),
		"/big":   htmlPage(big),
		"/small": htmlPage("small"),
	})
	const limit = 1024
	c := newCrawler(t, crawler.WithBodyLimit(limit))
	pages := recordPages(c)
	runCrawl(t, c, s.URL+"/")
	p := pages.get("/big")
	if p == nil || !p.Truncated || len(p.Body) > limit {
		t.Fatalf("big page: %+v, want it truncated to at most %d bytes", p, limit)
	}
	if p := pages.get("/small"); p == nil || p.Truncated {
		t.Errorf("small page: %+v, want it whole", p)
	}
}

func TestNoSeeds(t *testing.T) {
	c := newCrawler(t)
	errs := recordErrors(c)
	if err := c.Run(context.Background()); !errors.Is(err, crawler.ErrNoSeeds) {
		t.Errorf("Run() = %v, want ErrNoSeeds", err)
	}
	if err := c.Run(context.Background(), "ftp://example.com/", "/relative", "http://"); !errors.Is(err, crawler.ErrNoSeeds) {
		t.Errorf("Run(bad seeds) = %v, want ErrNoSeeds", err)
	}
	if n := len(errs.all()); n != 3 {
		t.Errorf("OnError got %d bad seeds, want 3: %v", n, errs.all())
	}
}

func TestRunWhileRunning(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": htmlPage("home")})
	c := newCrawler(t)
	var inner error
	c.OnPage(func(ctx context.Context, p *crawler.Page) { inner = c.Run(ctx, s.URL+"/") })
	runCrawl(t, c, s.URL+"/")
	if !errors.Is(inner, crawler.ErrRunning) {
		t.Errorf("Run during Run = %v, want ErrRunning", inner)
	}
	// The Crawler can run again once the first Run is over.
	runCrawl(t, c, s.URL+"/")
	if n := s.count("/"); n != 2 {
		t.Errorf("/ requested %d times over two Runs, want 2", n)
	}
}

// TestStats checks the counters of a small crawl whose every outcome is
// known.
func TestStats(t *testing.T) {
	var s *testSite
	s = newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "User-agent: *\nDisallow: /private/\nSitemap: %s/sitemap.xml\n", s.URL)
		},
		"/sitemap.xml": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>%[1]s/only-in-sitemap</loc></url>
<url><loc>%[1]s/a</loc></url>
</urlset>`, s.URL)
		},
		"/":                htmlPage("home", "/a", "/missing", "/go", "/private/x", "/a#frag"),
		"/a":               htmlPage("a", "/"),
		"/go":              redirectTo(http.StatusFound, "/a"),
		"/only-in-sitemap": htmlPage("sitemap only"),
	})
	c := newCrawler(t, crawler.WithSitemaps(true))
	var live crawler.Stats
	var once sync.Once
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		once.Do(func() { live = statsOf(t, c) })
	})
	runCrawl(t, c, s.URL+"/")
	st := statsOf(t, c)
	t.Logf("%+v", st)
	if live.InFlight < 1 || live.Started.IsZero() {
		t.Errorf("live Stats in OnPage: InFlight %d, Started %v; want the page in flight and a start time", live.InFlight, live.Started)
	}
	// /, /a, /missing, /go, /only-in-sitemap
	if st.Pages != 5 {
		t.Errorf("Pages = %d, want 5", st.Pages)
	}
	if want := map[int]int64{200: 3, 302: 1, 404: 1}; !reflect.DeepEqual(st.Statuses, want) {
		t.Errorf("Statuses = %v, want %v", st.Statuses, want)
	}
	if got := st.StatusCodes(); !reflect.DeepEqual(got, []int{200, 302, 404}) {
		t.Errorf("StatusCodes() = %v", got)
	}
	if st.Bytes <= 0 || st.Elapsed <= 0 {
		t.Errorf("Bytes %d, Elapsed %v; want both positive", st.Bytes, st.Elapsed)
	}
	if st.Disallowed != 1 {
		t.Errorf("Disallowed = %d, want 1", st.Disallowed)
	}
	if want := map[string]int64{"ok": 1}; !reflect.DeepEqual(st.RobotsOutcomes, want) {
		t.Errorf("RobotsOutcomes = %v, want %v", st.RobotsOutcomes, want)
	}
	if st.Sitemaps != 1 || st.SitemapURLs != 2 {
		t.Errorf("Sitemaps %d, SitemapURLs %d; want 1 and 2", st.Sitemaps, st.SitemapURLs)
	}
	// /a is met four more times: the fragment spelling, /a's link back
	// to /, the redirect from /go and the sitemap (in some order).
	if st.SkippedLinks["seen"] < 3 {
		t.Errorf("Skipped[seen] = %d, want at least 3", st.SkippedLinks["seen"])
	}
	if st.ErrorCount() != 0 {
		t.Errorf("Errors = %v, want none", st.Errors)
	}
	if st.Queued != 0 || st.InFlight != 0 {
		t.Errorf("after Run: Queued %d, InFlight %d", st.Queued, st.InFlight)
	}
	if s.count("/private/x") != 0 {
		t.Error("/private/x requested")
	}
}

// TestPerHostConcurrency: WithPerHost(2) lets two requests to a host run at
// once, never three. The pages answer only once two are in flight.
func TestPerHostConcurrency(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	two := make(chan struct{})
	var twoOnce sync.Once
	routes := map[string]http.HandlerFunc{}
	var links []string
	for i := range 6 {
		p := fmt.Sprintf("/p%d", i)
		links = append(links, p)
		routes[p] = func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			inFlight++
			peak = max(peak, inFlight)
			if inFlight == 2 {
				twoOnce.Do(func() { close(two) })
			}
			mu.Unlock()
			select {
			case <-two:
			case <-time.After(10 * time.Second):
				t.Errorf("%s: a second request never joined this one", r.URL.Path)
			}
			mu.Lock()
			inFlight--
			mu.Unlock()
			htmlPage(r.URL.Path)(w, r)
		}
	}
	routes["/"] = htmlPage("home", links...)
	s := newSite(t, defaultRobots, routes)
	c := newCrawler(t, crawler.WithPerHost(2))
	runCrawl(t, c, s.URL+"/")
	if peak != 2 {
		t.Errorf("at most %d requests in flight to the host, want 2", peak)
	}
	if st := statsOf(t, c); st.Pages != 7 {
		t.Errorf("Pages = %d, want 7", st.Pages)
	}
}

func TestHeaderTimeout(t *testing.T) {
	stop := make(chan struct{})
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":   htmlPage("home", "/hang", "/ok"),
		"/ok": htmlPage("ok"),
		"/hang": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		},
	})
	defer close(stop)
	c := newCrawler(t, crawler.WithHeaderTimeout(200*time.Millisecond), crawler.WithRetries(0))
	errs := recordErrors(c)
	pages := recordPages(c)
	runCrawl(t, c, s.URL+"/")
	if es := errs.find("/hang"); len(es) != 1 {
		t.Errorf("OnError for /hang: %v, want one timeout", es)
	}
	if n := statsOf(t, c).Errors["timeout"]; n != 1 {
		t.Errorf("Stats.Errors[timeout] = %d, want 1", n)
	}
	if pages.get("/ok") == nil || pages.get("/hang") != nil {
		t.Errorf("pages %q, want /ok and not /hang", pages.targets())
	}
}

// TestRobotsWait: with WithRobotsWait, URLs of a host whose robots.txt is
// unreachable wait for it to come back instead of being skipped.
func TestRobotsWait(t *testing.T) {
	var robotsCalls atomic.Int64
	s := newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			if robotsCalls.Add(1) == 1 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, defaultRobots)
		},
		"/": htmlPage("home", "/private/x"),
	})
	c := newCrawler(t, crawler.WithRobotsWait(5*time.Second))
	pages := recordPages(c)
	var mu sync.Mutex
	var reasons []crawler.DisallowReason
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		mu.Lock()
		reasons = append(reasons, why)
		mu.Unlock()
	})
	runCrawl(t, c, s.URL+"/")
	if robotsCalls.Load() != 2 {
		t.Errorf("robots.txt requested %d times, want 2 (503, then 200)", robotsCalls.Load())
	}
	if pages.get("/") == nil {
		t.Error("the seed was skipped instead of waiting for robots.txt to come back")
	}
	if !reflect.DeepEqual(reasons, []crawler.DisallowReason{crawler.DisallowedByRules}) {
		t.Errorf("OnDisallowed reasons %v, want only /private/x by rules", reasons)
	}
	st := statsOf(t, c)
	if st.Errors["robots-unavailable"] != 0 || st.RobotsOutcomes["unreachable"] != 1 || st.RobotsOutcomes["ok"] != 1 {
		t.Errorf("Stats: Errors %v, RobotsOutcomes %v; want no robots-unavailable skip, unreachable 1, ok 1", st.Errors, st.RobotsOutcomes)
	}
}

// TestHTTPClientAndUserAgent: every request, robots.txt included, goes
// through the caller's client and carries the User-Agent.
func TestHTTPClientAndUserAgent(t *testing.T) {
	var mu sync.Mutex
	agents := map[string]string{}
	s := newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			agents["/robots.txt"] = r.UserAgent()
			mu.Unlock()
			fmt.Fprint(w, "User-agent: mybot\nDisallow: /mine/\n\nUser-agent: *\nDisallow: /\n")
		},
		"/": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			agents["/"] = r.UserAgent()
			mu.Unlock()
			htmlPage("home", "/mine/x", "/go")(w, r)
		},
		"/go": redirectTo(http.StatusFound, "/"),
	})
	var through atomic.Int64
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		through.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	const ua = "MyBot/2.0 (+https://example.com/bot)"
	c := newCrawler(t, crawler.WithHTTPClient(client), crawler.WithAgent("MyBot"), crawler.WithUserAgent(ua))
	runCrawl(t, c, s.URL+"/")
	for _, p := range []string{"/robots.txt", "/"} {
		if agents[p] != ua {
			t.Errorf("User-Agent of %s = %q, want %q", p, agents[p], ua)
		}
	}
	// robots.txt, / and /go: the redirect is not followed inline, and
	// /mine/x is for mybot's group only (matched by the agent token).
	if n := len(s.targets()); through.Load() != int64(n) || n != 3 {
		t.Errorf("%d requests through the client, %d at the server (%q); want 3 each", through.Load(), n, s.targets())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestMaxDepth(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  htmlPage("0", "/1"),
		"/1": htmlPage("1", "/2"),
		"/2": htmlPage("2", "/3"),
		"/3": htmlPage("3"),
	})
	c := newCrawler(t, crawler.WithMaxDepth(2))
	pages := recordPages(c)
	runCrawl(t, c, s.URL+"/")
	if got := pages.targets(); !reflect.DeepEqual(got, []string{"/", "/1", "/2"}) {
		t.Errorf("fetched %q with max depth 2, want /, /1, /2", got)
	}
	if n := statsOf(t, c).SkippedLinks["depth"]; n != 1 {
		t.Errorf("Stats.SkippedLinks[depth] = %d, want 1", n)
	}
}

// TestRobotsOutcomesCountFetches: with several workers on one host, all
// wait for the same robots.txt fetch; Stats counts the fetch once.
func TestRobotsOutcomesCountFetches(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/a": htmlPage("a"), "/b": htmlPage("b"), "/c": htmlPage("c"), "/d": htmlPage("d"),
	})
	c := newCrawler(t, crawler.WithPerHost(4))
	runCrawl(t, c, s.URL+"/a", s.URL+"/b", s.URL+"/c", s.URL+"/d")
	if got, fetched := statsOf(t, c).RobotsOutcomes, s.count("/robots.txt"); !reflect.DeepEqual(got, map[string]int64{"ok": int64(fetched)}) {
		t.Errorf("Stats.RobotsOutcomes = %v after %d robots.txt fetches", got, fetched)
	}
}

func TestRunWithEndedContext(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": htmlPage("home")})
	c := newCrawler(t)
	errs := recordErrors(c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx, s.URL+"/"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context = %v, want context.Canceled", err)
	}
	if got := s.targets(); len(got) != 0 {
		t.Errorf("requests %q after Run with a cancelled context", got)
	}
	if got := errs.all(); len(got) != 0 {
		t.Errorf("OnError got %v; the seeds are not at fault", got)
	}
}

func TestHostInfoAndDelayStats(t *testing.T) {
	s := newSite(t, "User-agent: *\nCrawl-delay: 0.05\nDisallow: /private/\n", map[string]http.HandlerFunc{
		"/":  htmlPage("home", "/a"),
		"/a": htmlPage("a"),
	})
	c := newCrawler(t)
	if _, err := c.Host(context.Background(), s.URL+"/"); !errors.Is(err, crawler.ErrNotRunning) {
		t.Fatalf("Host outside Run: %v, want ErrNotRunning", err)
	}
	var mu sync.Mutex
	var info crawler.HostInfo
	var live crawler.Stats
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		if p.URL.Path != "/a" {
			return
		}
		got, err := c.Host(ctx, p.URL.String())
		if err != nil {
			t.Errorf("Host: %v", err)
		}
		mu.Lock()
		info, live = got, statsOf(t, c)
		mu.Unlock()
	})
	runCrawl(t, c, s.URL+"/")
	mu.Lock()
	defer mu.Unlock()
	if info.Robots == nil || info.Robots.Outcome != gate.OutcomeOK || !info.Robots.HasCrawlDelay {
		t.Fatalf("HostInfo.Robots = %+v, want the fetched robots.txt with its Crawl-delay", info.Robots)
	}
	if info.Pace.CrawlDelay != 50*time.Millisecond || info.Pace.Delay < 50*time.Millisecond {
		t.Errorf("HostInfo.Pace = %+v, want the 50 ms Crawl-delay in force", info.Pace)
	}
	if info.Key == "" {
		t.Error("HostInfo.Key is empty")
	}
	if live.HostsActive != 1 || live.Hosts != 1 || live.HostsWaiting != 0 {
		t.Errorf("live Stats: %d hosts, %d active, %d waiting; want the one host active", live.Hosts, live.HostsActive, live.HostsWaiting)
	}
	if st := statsOf(t, c); st.CrawlDelayHosts != 1 || st.MaxCrawlDelay != 50*time.Millisecond {
		t.Errorf("Stats: CrawlDelayHosts %d, MaxCrawlDelay %v; want 1 and 50ms", st.CrawlDelayHosts, st.MaxCrawlDelay)
	}
}
