package fetch_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/heedcrawl/heed/fetch"
)

// htmlPage builds a Page by hand, as a crawler test or a user with content
// from elsewhere would.
func htmlPage(t testing.TB, rawURL, body string) *fetch.Page {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return &fetch.Page{URL: u, Status: 200, ContentType: "text/html", Header: http.Header{}, Body: []byte(body)}
}

func urls(links []fetch.Link) []string {
	out := make([]string, len(links))
	for i, l := range links {
		out[i] = l.URL
	}
	return out
}

func TestHTMLExtractorSources(t *testing.T) {
	p := htmlPage(t, "http://example.com/dir/page.html", `<!DOCTYPE html>
<html><head>
  <link rel="canonical" href="/canonical">
  <link rel="alternate" hreflang="de" href="http://de.example.com/seite">
  <link rel="next" href="page2.html">
  <link rel="prev" href="page0.html">
  <link rel="stylesheet" href="/style.css">
  <link rel="alternate stylesheet" href="/alt.css">
  <link rel="icon" href="/favicon.ico">
</head><body>
  <a href="rel/a.html">  Relative
     link  </a>
  <a href="/abs">Absolute</a>
  <a href="https://other.example/x?q=1#section">Other host</a>
  <a href="//proto.example/rel">Protocol-relative</a>
  <a href=" /spaced
  ">Spaced</a>
  <a href="#top">Fragment only</a>
  <a href="">Empty</a>
  <a href="javascript:void(0)">JS</a>
  <a href="JavaScript:alert(1)">JS caps</a>
  <a href="mailto:someone@example.com">Mail</a>
  <a href="tel:+123">Phone</a>
  <a href="data:text/html,hi">Data</a>
  <a href="ftp://files.example/f">FTP</a>
  <a href="http://[bad">Bad URL</a>
  <a name="anchor">No href</a>
  <a href="/img"><img src="x.png" alt="Picture link"></a>
  <map><area href="/area" alt="Area  text"></map>
  <iframe src="/frame-inline"></iframe>
  <frameset><frame src="/frame"></frameset>
  <a href="/abs#again">Duplicate of absolute</a>
  <template><a href="/inert">Inert template content</a></template>
</body></html>`)

	links, err := fetch.HTMLExtractor{}.Extract(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := []fetch.Link{
		{URL: "http://example.com/canonical", Tag: "link", Rel: "canonical"},
		{URL: "http://de.example.com/seite", Tag: "link", Rel: "alternate"},
		{URL: "http://example.com/dir/page2.html", Tag: "link", Rel: "next"},
		{URL: "http://example.com/dir/page0.html", Tag: "link", Rel: "prev"},
		{URL: "http://example.com/dir/rel/a.html", Tag: "a", Text: "Relative link"},
		{URL: "http://example.com/abs", Tag: "a", Text: "Absolute"},
		{URL: "https://other.example/x?q=1", Tag: "a", Text: "Other host"},
		{URL: "http://proto.example/rel", Tag: "a", Text: "Protocol-relative"},
		{URL: "http://example.com/spaced", Tag: "a", Text: "Spaced"},
		{URL: "http://example.com/img", Tag: "a", Text: "Picture link"},
		{URL: "http://example.com/area", Tag: "area", Text: "Area text"},
		{URL: "http://example.com/frame-inline", Tag: "iframe"},
	}
	// The HTML parser drops <frameset> inside a <body> that has content,
	// as browsers do; frames are checked separately below.
	if len(links) != len(want) {
		t.Fatalf("got %d links:\n%v\nwant %d:\n%v", len(links), urls(links), len(want), urls(want))
	}
	for i := range want {
		if links[i] != want[i] {
			t.Errorf("link %d = %+v\n        want %+v", i, links[i], want[i])
		}
	}

	frames := htmlPage(t, "http://example.com/f/", `<html><frameset><frame src="left.html"><frame src="javascript:x"></frameset></html>`)
	links, _ = fetch.HTMLExtractor{}.Extract(context.Background(), frames)
	if got := urls(links); len(got) != 1 || got[0] != "http://example.com/f/left.html" || links[0].Tag != "frame" {
		t.Errorf("frames: %+v", links)
	}
}

func TestHTMLExtractorBase(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"absolute base", `<base href="http://cdn.example/root/"><a href="x">x</a>`, "http://cdn.example/root/x"},
		{"relative base", `<base href="/other/"><a href="x">x</a>`, "http://example.com/other/x"},
		{"first base wins", `<base href="/one/"><base href="/two/"><a href="x">x</a>`, "http://example.com/one/x"},
		{"base after links still applies", `<a href="x">x</a><base href="/late/">`, "http://example.com/late/x"},
		{"javascript base ignored", `<base href="javascript:alert(1)"><a href="x">x</a>`, "http://example.com/dir/x"},
		{"base without href ignored", `<base target="_blank"><base href="/b/"><a href="x">x</a>`, "http://example.com/b/x"},
	}
	for _, c := range cases {
		links, err := fetch.HTMLExtractor{}.Extract(context.Background(), htmlPage(t, "http://example.com/dir/page", c.body))
		if err != nil || len(links) != 1 || links[0].URL != c.want {
			t.Errorf("%s: %v %v, want %s", c.name, urls(links), err, c.want)
		}
	}
}

func TestHTMLExtractorTextBound(t *testing.T) {
	long := strings.Repeat("wörd ", 1000)
	p := htmlPage(t, "http://example.com/", `<a href="/a">`+long+`</a><a href="/b"><script>var x;</script> <b>bold</b>
	<i>italic</i> </a>`)
	links, _ := fetch.HTMLExtractor{MaxTextLen: 20}.Extract(context.Background(), p)
	if got := links[0].Text; got != "wörd wörd wörd wörd" || len([]rune(got)) > 20 {
		t.Errorf("bounded text = %q", got)
	}
	if got := links[1].Text; got != "bold italic" {
		t.Errorf("nested text = %q", got)
	}
	links, _ = fetch.HTMLExtractor{}.Extract(context.Background(), p)
	if n := len([]rune(links[0].Text)); n != fetch.DefaultMaxLinkText {
		t.Errorf("default bound: %d runes, want %d", n, fetch.DefaultMaxLinkText)
	}
}

func TestRelNofollow(t *testing.T) {
	body := `<a href="/plain">plain</a>
<a href="/nf" rel="nofollow">nf</a>
<a href="/ugc" rel="UGC">ugc</a>
<a href="/sp" rel="noopener sponsored">sp</a>
<a href="/both" rel="nofollow">both</a><a href="/both">both again</a>
<link rel="next nofollow" href="/next">`
	reg := fetch.NewRegistry()

	p := htmlPage(t, "http://example.com/", body)
	links, err := reg.Extract(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// A URL linked once with and once without nofollow is followable.
	if got := strings.Join(urls(links), " "); got != "http://example.com/plain http://example.com/both" {
		t.Errorf("followable links = %s", got)
	}

	p = htmlPage(t, "http://example.com/", body)
	p.Policy.ReturnNofollow = true
	links, _ = reg.Extract(context.Background(), p)
	marked := map[string]bool{}
	for _, l := range links {
		marked[strings.TrimPrefix(l.URL, "http://example.com")] = l.Nofollow
	}
	want := map[string]bool{"/plain": false, "/nf": true, "/ugc": true, "/sp": true, "/both": false, "/next": true}
	for path, nf := range want {
		if got, ok := marked[path]; !ok || got != nf {
			t.Errorf("%s: present %v nofollow %v, want nofollow %v", path, ok, got, nf)
		}
	}
	if links[1].Rel != "nofollow" || links[3].Rel != "noopener sponsored" {
		t.Errorf("rel not carried: %+v", links)
	}

	p = htmlPage(t, "http://example.com/", body)
	p.Policy.IgnoreRel = true
	links, _ = reg.Extract(context.Background(), p)
	if len(links) != 6 {
		t.Errorf("IgnoreRel: %d links, want all 6: %v", len(links), urls(links))
	}
}

func TestMetaRobots(t *testing.T) {
	cases := []struct {
		name, head   string
		policy       fetch.DirectivePolicy
		noindex, nof bool
	}{
		{"none", ``, fetch.DirectivePolicy{}, false, false},
		{"robots nofollow", `<meta name="robots" content="nofollow">`, fetch.DirectivePolicy{}, false, true},
		{"robots noindex", `<meta name="ROBOTS" content="NoIndex">`, fetch.DirectivePolicy{}, true, false},
		{"robots none", `<meta name="robots" content="none">`, fetch.DirectivePolicy{}, true, true},
		{"robots all", `<meta name="robots" content="all">`, fetch.DirectivePolicy{}, false, false},
		{"comma list", `<meta name="robots" content="noarchive, noindex,nofollow">`, fetch.DirectivePolicy{}, true, true},
		{"our agent", `<meta name="HeedBot" content="nofollow">`, fetch.DirectivePolicy{}, false, true},
		{"product token", `<meta name="heed" content="noindex">`, fetch.DirectivePolicy{}, true, false},
		{"other agent", `<meta name="googlebot" content="noindex, nofollow">`, fetch.DirectivePolicy{}, false, false},
		{"custom agent list", `<meta name="mybot" content="nofollow">`, fetch.DirectivePolicy{Agents: []string{"MyBot"}}, false, true},
		{"custom list drops default", `<meta name="heedbot" content="nofollow">`, fetch.DirectivePolicy{Agents: []string{"mybot"}}, false, false},
		{"in body", `</head><body><meta name="robots" content="nofollow">`, fetch.DirectivePolicy{}, false, true},
		{"ignored", `<meta name="robots" content="none">`, fetch.DirectivePolicy{IgnoreMeta: true}, false, false},
	}
	reg := fetch.NewRegistry()
	for _, c := range cases {
		p := htmlPage(t, "http://example.com/", `<html><head>`+c.head+`</head><body><a href="/x">x</a></body></html>`)
		p.Policy = c.policy
		d := p.Directives()
		if d.Noindex != c.noindex || d.Nofollow != c.nof {
			t.Errorf("%s: %+v, want noindex %v nofollow %v", c.name, d, c.noindex, c.nof)
		}
		links, _ := reg.Extract(context.Background(), p)
		if (len(links) == 0) != c.nof {
			t.Errorf("%s: %d links returned with nofollow %v", c.name, len(links), c.nof)
		}
	}
}

func TestPageNofollowLinksAvailableOnRequest(t *testing.T) {
	p := htmlPage(t, "http://example.com/", `<meta name="robots" content="nofollow"><a href="/a">a</a><a href="/b">b</a>`)
	p.Policy.ReturnNofollow = true
	links, _ := fetch.NewRegistry().Extract(context.Background(), p)
	if len(links) != 2 || !links[0].Nofollow || !links[1].Nofollow {
		t.Errorf("links = %+v, want both marked Nofollow", links)
	}
	// The extractor on its own always returns them, marked.
	links, _ = fetch.HTMLExtractor{}.Extract(context.Background(), htmlPage(t, "http://example.com/", `<meta name="robots" content="nofollow"><a href="/a">a</a>`))
	if len(links) != 1 || !links[0].Nofollow {
		t.Errorf("HTMLExtractor links = %+v", links)
	}
}

func TestXRobotsTag(t *testing.T) {
	cases := []struct {
		name         string
		values       []string
		policy       fetch.DirectivePolicy
		noindex, nof bool
	}{
		{"plain", []string{"noindex"}, fetch.DirectivePolicy{}, true, false},
		{"comma list", []string{"noarchive, NOFOLLOW"}, fetch.DirectivePolicy{}, false, true},
		{"none", []string{"none"}, fetch.DirectivePolicy{}, true, true},
		{"multiple headers", []string{"noindex", "nofollow"}, fetch.DirectivePolicy{}, true, true},
		{"our agent", []string{"heedbot: nofollow"}, fetch.DirectivePolicy{}, false, true},
		{"our agent list", []string{"HeedBot: noindex, nofollow"}, fetch.DirectivePolicy{}, true, true},
		{"other agent", []string{"googlebot: noindex, nofollow"}, fetch.DirectivePolicy{}, false, false},
		{"other then ours", []string{"googlebot: noindex, heedbot: nofollow"}, fetch.DirectivePolicy{}, false, true},
		{"ours then other", []string{"heedbot: noindex, otherbot: nofollow"}, fetch.DirectivePolicy{}, true, false},
		{"scoped and unscoped headers", []string{"googlebot: nofollow", "noindex"}, fetch.DirectivePolicy{}, true, false},
		{"unavailable_after ignored", []string{"unavailable_after: 25 Jun 2010 15:00:00 PST"}, fetch.DirectivePolicy{}, false, false},
		{"unavailable_after with comma date", []string{"unavailable_after: Friday, 25-Jun-10 15:00:00 GMT, noindex"}, fetch.DirectivePolicy{}, true, false},
		{"max-snippet", []string{"max-snippet: 20, nofollow"}, fetch.DirectivePolicy{}, false, true},
		{"ignored", []string{"none"}, fetch.DirectivePolicy{IgnoreHeader: true}, false, false},
		{"all", []string{"all"}, fetch.DirectivePolicy{}, false, false},
	}
	for _, c := range cases {
		p := &fetch.Page{Header: http.Header{"X-Robots-Tag": c.values}, ContentType: "application/pdf", Policy: c.policy}
		if d := p.Directives(); d.Noindex != c.noindex || d.Nofollow != c.nof {
			t.Errorf("%s %q: %+v, want noindex %v nofollow %v", c.name, c.values, d, c.noindex, c.nof)
		}
	}
}

// TestDirectivesOverHTTP checks the fetch path end to end: headers and meta
// reach Page.Directives, and the registry returns no links to follow.
func TestDirectivesOverHTTP(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/header":
			w.Header().Add("X-Robots-Tag", "googlebot: noindex")
			w.Header().Add("X-Robots-Tag", "heedbot: nofollow")
		case "/meta":
			w.Write([]byte(`<meta name="robots" content="noindex">`))
		}
		w.Write([]byte(`<a href="/next">next</a>`))
	}))
	f := newFetcher(t, nil)
	reg := fetch.NewRegistry()

	p := mustFetch(t, f, srv.URL+"/header")
	if d := p.Directives(); d.Noindex || !d.Nofollow {
		t.Errorf("/header: %+v", d)
	}
	if links, _ := reg.Extract(context.Background(), p); len(links) != 0 {
		t.Errorf("/header: links %v returned despite nofollow", urls(links))
	}

	p = mustFetch(t, f, srv.URL+"/meta")
	if d := p.Directives(); !d.Noindex || d.Nofollow {
		t.Errorf("/meta: %+v", d)
	}
	if links, _ := reg.Extract(context.Background(), p); len(links) != 1 {
		t.Errorf("/meta: noindex alone must not stop links: %v", urls(links))
	}

	off := newFetcher(t, &fetch.Fetcher{Directives: fetch.DirectivePolicy{IgnoreHeader: true}})
	p = mustFetch(t, off, srv.URL+"/header")
	if links, _ := reg.Extract(context.Background(), p); len(links) != 1 {
		t.Errorf("IgnoreHeader: links %v", urls(links))
	}
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	static := func(tag string, us ...string) fetch.Extractor {
		return fetch.ExtractorFunc(func(ctx context.Context, p *fetch.Page) ([]fetch.Link, error) {
			var out []fetch.Link
			for _, u := range us {
				out = append(out, fetch.Link{URL: u, Tag: tag})
			}
			return out, nil
		})
	}
	boom := errors.New("boom")
	reg := fetch.NewRegistry()
	reg.Register("text/html", static("x", "http://example.com/a", "http://example.com/extra"))
	reg.Register("application/json", static("json", "http://example.com/api/1", "http://example.com/api/1"))
	reg.Register("application/*", static("any-app", "http://example.com/app"))
	reg.Register("*/*", static("all", "http://example.com/all"))

	p := htmlPage(t, "http://example.com/", `<a href="/a">a</a>`)
	links, err := reg.Extract(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// HTML extractor first (registered first), then the custom one; /a
	// appears once, with the first extractor's attribution.
	if got := strings.Join(urls(links), " "); got != "http://example.com/a http://example.com/extra http://example.com/all" {
		t.Errorf("html links: %s", got)
	}
	if links[0].Tag != "a" {
		t.Errorf("merged link attributed to %q, want the first extractor's", links[0].Tag)
	}

	jp := &fetch.Page{URL: p.URL, ContentType: "application/json", Body: []byte(`{}`)}
	links, _ = reg.Extract(ctx, jp)
	if got := strings.Join(urls(links), " "); got != "http://example.com/api/1 http://example.com/app http://example.com/all" {
		t.Errorf("json links: %s", got)
	}

	// Replacing the default HTML extractor.
	reg.Set("text/html", static("only", "http://example.com/only"))
	links, _ = reg.Extract(ctx, htmlPage(t, "http://example.com/", `<a href="/a">a</a>`))
	if got := strings.Join(urls(links), " "); got != "http://example.com/only http://example.com/all" {
		t.Errorf("after Set: %s", got)
	}

	// A failing extractor does not cost the others' links.
	reg.Register("text/html", fetch.ExtractorFunc(func(context.Context, *fetch.Page) ([]fetch.Link, error) { return nil, boom }))
	links, err = reg.Extract(ctx, htmlPage(t, "http://example.com/", ``))
	if !errors.Is(err, boom) || len(links) != 2 {
		t.Errorf("with failing extractor: %v, err %v", urls(links), err)
	}

	reg.Set("*/*")
	reg.Set("text/html")
	if links, _ := reg.Extract(ctx, htmlPage(t, "http://example.com/", `<a href="/a">a</a>`)); len(links) != 0 {
		t.Errorf("after removing all: %v", urls(links))
	}
	var zero fetch.Registry
	if links, err := zero.Extract(ctx, p); len(links) != 0 || err != nil {
		t.Errorf("zero Registry: %v %v", links, err)
	}

	redirect := htmlPage(t, "http://example.com/", `<a href="/a">a</a>`)
	redirect.Redirect = redirect.URL
	if links, _ := fetch.NewRegistry().Extract(ctx, redirect); len(links) != 0 {
		t.Errorf("redirect page yielded %v", urls(links))
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := fetch.NewRegistry().Extract(cancelled, p); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestSelectorExtractor(t *testing.T) {
	if _, err := fetch.SelectorExtractor("a[href"); err == nil {
		t.Error("invalid selector accepted")
	}
	ex, err := fetch.SelectorExtractor("a.next, .product a, .gallery")
	if err != nil {
		t.Fatal(err)
	}
	p := htmlPage(t, "http://shop.example/list?page=1", `<base href="/catalog/">
<a href="/about">About</a>
<a class="next" href="?page=2">Next page</a>
<div class="product"><a href="p/1">One</a><span>no link</span></div>
<div class="product"><a href="mailto:x@y">mail</a><a rel="sponsored" href="p/2">Two</a></div>
<div class="gallery"><a href="g/1">G1</a><area href="g/map"></div>`)
	links, err := ex.Extract(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"http://shop.example/catalog/?page=2",
		"http://shop.example/catalog/p/1",
		"http://shop.example/catalog/p/2",
		"http://shop.example/catalog/g/1",
		"http://shop.example/catalog/g/map",
	}
	if got := strings.Join(urls(links), " "); got != strings.Join(want, " ") {
		t.Errorf("got  %s\nwant %s", got, strings.Join(want, " "))
	}
	if !links[2].Nofollow || links[1].Nofollow || links[0].Text != "Next page" {
		t.Errorf("marks and text: %+v", links)
	}

	// Registered next to the default extractor, links are merged.
	reg := fetch.NewRegistry()
	reg.Register("text/html", ex)
	all, _ := reg.Extract(context.Background(), p)
	if len(all) != 5 { // /about plus the four followable ones above
		t.Errorf("merged: %v", urls(all))
	}
}

func TestDocumentParsedOnce(t *testing.T) {
	p := htmlPage(t, "http://example.com/", `<title>T</title><a href="/a">a</a>`)
	var wg sync.WaitGroup
	docs := make([]any, 8)
	for i := range docs {
		wg.Go(func() {
			d, err := p.Document()
			if err != nil {
				t.Error(err)
			}
			docs[i] = d
			if _, err := (fetch.HTMLExtractor{}).Extract(context.Background(), p); err != nil {
				t.Error(err)
			}
			_ = p.Directives()
		})
	}
	wg.Wait()
	for _, d := range docs[1:] {
		if d != docs[0] {
			t.Fatal("Document returned different documents")
		}
	}
	d, _ := p.Document()
	if d.Find("title").Text() != "T" || d.Url.String() != "http://example.com/" {
		t.Errorf("document: title %q url %v", d.Find("title").Text(), d.Url)
	}
}
