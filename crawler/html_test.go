package crawler_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
)

func TestOnHTMLAndFollowWithMeta(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": rawHTML("home", `<base href="/shop/">`,
			`<div class="product"><a class="name" href="teapot">Teapot</a><span class="price"> 12 € </span></div>`,
			`<div class="product"><a class="name" href="cup">Cup</a><span class="price">3 €</span></div>`,
			`<a class="next" href="/page/2">next</a>`),
		"/shop/teapot": htmlPage("teapot"),
		"/shop/cup":    htmlPage("cup"),
		"/page/2":      htmlPage("page 2"),
	})
	// Only OnHTML follows links: the default extractor is off for HTML.
	c := newCrawler(t, crawler.WithExtractors("text/html"))
	var mu sync.Mutex
	prices := map[string]string{}
	metas := map[string]map[string]string{}
	c.OnHTML(selector(t, "div.product"), func(ctx context.Context, e *crawler.Element) {
		name := e.Selection.Find("a.name")
		href, _ := name.Attr("href")
		mu.Lock()
		prices[e.Selection.Find("a.name").Text()] = strings.TrimSpace(e.Selection.Find(".price").Text())
		mu.Unlock()
		if e.Name != "div" || e.AbsURL(href) != s.URL+"/shop/"+href {
			t.Errorf("element %q, AbsURL(%q) = %q", e.Name, href, e.AbsURL(href))
		}
		if err := e.Follow(ctx, href, map[string]string{"product": name.Text(), "from": e.Page.Meta["origin"]}); err != nil {
			t.Errorf("Follow(%q): %v", href, err)
		}
	})
	c.OnHTML(selector(t, "a.next"), func(ctx context.Context, e *crawler.Element) {
		if e.Text != "next" || e.Attr("href") != "/page/2" {
			t.Errorf("a.next: text %q href %q", e.Text, e.Attr("href"))
		}
		// Enqueue takes a relative URL with the page it is on.
		if err := c.Enqueue(ctx, e.Attr("href"), e.Page, nil); err != nil {
			t.Errorf("Enqueue: %v", err)
		}
	})
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		mu.Lock()
		metas[p.URL.Path] = p.Meta
		mu.Unlock()
	})
	ctx := context.Background()
	if err := c.RunSeeds(ctx, crawler.Seed{URL: s.URL + "/", Meta: map[string]string{"origin": "seeds.txt"}}); err != nil {
		t.Fatal(err)
	}
	if prices["Teapot"] != "12 €" || prices["Cup"] != "3 €" {
		t.Errorf("prices %v", prices)
	}
	for _, target := range []string{"/shop/teapot", "/shop/cup", "/page/2"} {
		if s.count(target) != 1 {
			t.Errorf("%s requested %d times, want 1", target, s.count(target))
		}
	}
	if m := metas["/"]; m["origin"] != "seeds.txt" {
		t.Errorf("seed's Page.Meta = %v", m)
	}
	if m := metas["/shop/teapot"]; m["product"] != "Teapot" || m["from"] != "seeds.txt" {
		t.Errorf("followed page's Meta = %v", m)
	}
	if m := metas["/page/2"]; m != nil {
		t.Errorf("page enqueued without meta has Meta %v", m)
	}
}

// selector compiles css, failing the test if it does not compile.
func selector(t *testing.T, css string) crawler.Selector {
	t.Helper()
	sel, err := crawler.CompileSelector(css)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestCompileSelector(t *testing.T) {
	if sel, err := crawler.CompileSelector("a[href"); err == nil || !strings.Contains(err.Error(), `"a[href"`) {
		t.Errorf("CompileSelector of a broken selector: %v, %v; want an error quoting it", sel, err)
	}
	if sel, err := crawler.CompileSelector("h1, a.next"); err != nil || sel.String() != "h1, a.next" {
		t.Errorf("CompileSelector(\"h1, a.next\") = %q, %v", sel, err)
	}
}

// The zero Selector matches no element, as documented; a compiled one
// registered beside it still matches.
func TestOnHTMLZeroSelector(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": htmlPage("home")})
	c := newCrawler(t)
	var zero, titles atomic.Int32
	c.OnHTML(crawler.Selector{}, func(context.Context, *crawler.Element) { zero.Add(1) })
	c.OnHTML(selector(t, "title"), func(context.Context, *crawler.Element) { titles.Add(1) })
	runCrawl(t, c, s.URL+"/")
	if zero.Load() != 0 || titles.Load() != 1 {
		t.Errorf("zero Selector matched %d elements, title %d; want 0 and 1", zero.Load(), titles.Load())
	}
}

// Meta given to a URL survives a resumed crawl: it is kept by the Store.
func TestMetaSurvivesResume(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": htmlPage("home"),
	})
	store := new(frontier.MemoryStore)
	// A first run is stopped as it asks for robots.txt, leaving its seed
	// queued.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopAtRobots := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == "/robots.txt" {
			cancel()
			return nil, context.Canceled
		}
		return http.DefaultTransport.RoundTrip(r)
	})
	c := newCrawler(t, crawler.WithStore(store), crawler.WithTransport(stopAtRobots))
	if err := c.RunSeeds(ctx, crawler.Seed{URL: s.URL + "/", Meta: map[string]string{"k": "v"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
	if s.count("/") != 0 {
		t.Fatal("the first run fetched the page")
	}
	var got map[string]string
	c2 := newCrawler(t, crawler.WithStore(store))
	c2.OnPage(func(_ context.Context, p *crawler.Page) { got = p.Meta })
	runCrawl(t, c2) // no seeds: resume what the store holds
	if got["k"] != "v" {
		t.Errorf("resumed page's Meta = %v, want k=v", got)
	}
}

func TestStatsString(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": htmlPage("home", "/private/x", "/gone")})
	c := newCrawler(t)
	runCrawl(t, c, s.URL+"/")
	str := statsOf(t, c).String()
	for _, want := range []string{"2 pages", "200×1", "404×1", "1 disallowed", "queue: 0 queued"} {
		if !strings.Contains(str, want) {
			t.Errorf("Stats.String() lacks %q:\n%s", want, str)
		}
	}
}

// TestOnScrapedAfterEveryCallback: OnScraped is called once per page, any
// status, after the page's OnPage handlers and all its OnHTML callbacks,
// even those registered after it; one that panics is counted, and the
// crawl goes on.
func TestOnScrapedAfterEveryCallback(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":  htmlPage("home", "/a", "/b", "/gone"),
		"/a": htmlPage("a"),
		"/b": htmlPage("b"),
	})
	anchor, err := crawler.CompileSelector("a")
	if err != nil {
		t.Fatal(err)
	}
	c := newCrawler(t)
	var mu sync.Mutex
	events := map[string][]string{} // page path → its callbacks, in order
	note := func(p *crawler.Page, what string) {
		mu.Lock()
		events[p.URL.Path] = append(events[p.URL.Path], what)
		mu.Unlock()
	}
	c.OnScraped(func(ctx context.Context, p *crawler.Page) {
		note(p, "scraped")
		if p.URL.Path == "/b" {
			panic("boom")
		}
	})
	c.OnPage(func(ctx context.Context, p *crawler.Page) { note(p, "page") })
	c.OnHTML(anchor, func(ctx context.Context, e *crawler.Element) { note(e.Page, "a") })
	runCrawl(t, c, s.URL+"/")
	want := map[string][]string{
		"/":     {"page", "a", "a", "a", "scraped"},
		"/a":    {"page", "scraped"},
		"/b":    {"page", "scraped"},
		"/gone": {"page", "scraped"}, // a 404: no OnHTML, still scraped
	}
	for path, w := range want {
		if got := events[path]; strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("%s: callbacks %v, want %v", path, got, w)
		}
	}
	if n := statsOf(t, c).Errors[crawler.FailedHandlerPanic]; n != 1 {
		t.Errorf("Errors[handler-panic] = %d, want 1 (the OnScraped of /b)", n)
	}
}
