package fetch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/heedcrawl/heed/fetch"
)

// sitemapSite serves documents by path, with a content type each, and
// records the requests it gets.
type sitemapSite struct {
	mu   sync.Mutex
	docs map[string]sitemapDoc
	hits []string
}

type sitemapDoc struct {
	contentType string
	status      int
	location    string
	body        []byte
}

func (s *sitemapSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits = append(s.hits, r.URL.Path)
	d, ok := s.docs[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if d.location != "" {
		http.Redirect(w, r, d.location, http.StatusMovedPermanently)
		return
	}
	w.Header().Set("Content-Type", d.contentType)
	if d.status != 0 {
		w.WriteHeader(d.status)
	}
	w.Write(d.body)
}

func (s *sitemapSite) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hits)
}

func xmlDoc(body string) sitemapDoc {
	return sitemapDoc{contentType: "application/xml", body: []byte(body)}
}

func index(urls ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, u := range urls {
		fmt.Fprintf(&b, "<sitemap><loc>%s</loc></sitemap>", u)
	}
	b.WriteString("</sitemapindex>")
	return b.String()
}

func urlset(urls ...string) string {
	var b strings.Builder
	b.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, u := range urls {
		fmt.Fprintf(&b, "<url><loc>%s</loc></url>", u)
	}
	b.WriteString("</urlset>")
	return b.String()
}

// gatedWalker returns a walker whose Fetch goes through a stand-in robots
// gate (refusing /private/) and counts the requests it lets through.
func gatedWalker(t *testing.T, w *fetch.SitemapWalker) (*fetch.SitemapWalker, *[]string) {
	t.Helper()
	f := newFetcher(t, nil)
	var checked []string
	w.Fetch = func(ctx context.Context, req fetch.Request) (*fetch.Page, io.ReadCloser, error) {
		checked = append(checked, req.URL)
		if strings.Contains(req.URL, "/private/") {
			return nil, nil, errDisallowed
		}
		return f.Stream(ctx, req)
	}
	return w, &checked
}

func walk(t *testing.T, w *fetch.SitemapWalker, roots []string, robotsURL string) ([]string, fetch.SitemapWalkStats) {
	t.Helper()
	var got []string
	st, err := w.Walk(context.Background(), roots, robotsURL, func(e fetch.SitemapEntry) bool {
		got = append(got, e.Loc)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, st
}

// TestWalkIndexGzipText follows index → gzip index → text sitemap, and an
// index → gzip urlset branch, with a redirect on the way.
func TestWalkIndexGzipText(t *testing.T) {
	site := &sitemapSite{}
	srv := newServer(t, site)
	u := func(p string) string { return srv.URL + p }
	site.docs = map[string]sitemapDoc{
		"/sitemap_index.xml": xmlDoc(index(u("/maps/nested.idx"), u("/maps/pages.xml.gz"), u("/old-location.xml"), u("/private/sitemap.xml"))),
		// Served as a download, with a name that does not say gzip: only
		// the magic bytes do.
		"/maps/nested.idx":   {contentType: "application/octet-stream", body: gz(t, []byte(index(u("/lists/pages.txt"))))},
		"/maps/pages.xml.gz": {contentType: "application/x-gzip", body: gz(t, []byte(urlset(u("/p/1"), u("/p/2"))))},
		"/lists/pages.txt":   {contentType: "text/plain; charset=utf-8", body: []byte(u("/t/1") + "\n" + u("/t/2") + "\n")},
		"/old-location.xml":  {location: "/new-location.xml"},
		"/new-location.xml":  xmlDoc(urlset(u("/moved/1"))),
	}
	w, checked := gatedWalker(t, &fetch.SitemapWalker{})
	got, st := walk(t, w, []string{u("/sitemap_index.xml")}, u("/robots.txt"))

	slices.Sort(got)
	want := []string{u("/moved/1"), u("/p/1"), u("/p/2"), u("/t/1"), u("/t/2")}
	if !slices.Equal(got, want) {
		t.Errorf("urls %v\nwant %v", got, want)
	}
	if st.Fetched != 5 || st.URLs != 5 || st.Redirects != 1 || st.Failed != 1 {
		t.Errorf("stats %+v", st)
	}
	for _, p := range site.requests() {
		if strings.HasPrefix(p, "/private/") {
			t.Errorf("refused sitemap %s was fetched", p)
		}
	}
	// Every request, the redirect hop included, passed the gate.
	if !slices.Contains(*checked, u("/new-location.xml")) || !slices.Contains(*checked, u("/private/sitemap.xml")) {
		t.Errorf("gate saw %v", *checked)
	}
}

func TestWalkLoopsDepthBudget(t *testing.T) {
	site := &sitemapSite{}
	srv := newServer(t, site)
	u := func(p string) string { return srv.URL + p }
	site.docs = map[string]sitemapDoc{
		"/a.xml":     xmlDoc(index(u("/b.xml"))),
		"/b.xml":     xmlDoc(index(u("/a.xml"), u("/c.xml"), u("/B.xml#frag"))),
		"/c.xml":     xmlDoc(urlset(u("/page"))),
		"/B.xml":     xmlDoc(urlset(u("/capital"))), // paths are case-sensitive: not a loop
		"/r1.xml":    {location: "/r2.xml"},
		"/r2.xml":    {location: "/r1.xml"},
		"/d0.xml":    xmlDoc(index(u("/d1.xml"))),
		"/d1.xml":    xmlDoc(index(u("/d2.xml"))),
		"/d2.xml":    xmlDoc(index(u("/d3.xml"))),
		"/d3.xml":    xmlDoc(urlset(u("/deep"))),
		"/wide.xml":  xmlDoc(index(u("/w1.xml"), u("/w2.xml"), u("/w3.xml"), u("/w4.xml"))),
		"/w1.xml":    xmlDoc(urlset(u("/w/1"))),
		"/w2.xml":    xmlDoc(urlset(u("/w/2"))),
		"/w3.xml":    xmlDoc(urlset(u("/w/3"))),
		"/w4.xml":    xmlDoc(urlset(u("/w/4"))),
		"/self.xml":  xmlDoc(index(u("/self.xml"))),
		"/empty.xml": xmlDoc(urlset()),
	}
	w, _ := gatedWalker(t, &fetch.SitemapWalker{})
	got, st := walk(t, w, []string{u("/a.xml")}, "")
	slices.Sort(got)
	if !slices.Equal(got, []string{u("/capital"), u("/page")}) || st.Loops != 1 || st.Fetched != 4 {
		t.Errorf("index loop: %v %+v", got, st)
	}
	if n := strings.Count(strings.Join(site.requests(), " "), "/a.xml"); n != 1 {
		t.Errorf("/a.xml fetched %d times", n)
	}

	_, st = walk(t, w, []string{u("/r1.xml"), u("/self.xml")}, "")
	if st.Loops != 2 || st.Fetched != 1 {
		t.Errorf("redirect and self loops: %+v", st)
	}

	w.MaxDepth = 2
	got, st = walk(t, w, []string{u("/d0.xml")}, "")
	if len(got) != 0 || st.TooDeep != 1 || st.Fetched != 3 {
		t.Errorf("depth: %v %+v", got, st)
	}
	w.MaxDepth = 0

	w.MaxSitemaps = 3
	got, st = walk(t, w, []string{u("/wide.xml")}, "")
	if len(got) != 2 || st.OverBudget != 2 || st.Fetched != 3 {
		t.Errorf("budget: %v %+v", got, st)
	}
	w.MaxSitemaps = 0

	// yield returning false ends the walk.
	n := 0
	_, err := w.Walk(context.Background(), []string{u("/wide.xml")}, "", func(fetch.SitemapEntry) bool { n++; return false })
	if err != nil || n != 1 {
		t.Errorf("stop: %d entries, err %v", n, err)
	}
}

func TestWalkSkipsBadDocuments(t *testing.T) {
	site := &sitemapSite{}
	srv := newServer(t, site)
	u := func(p string) string { return srv.URL + p }
	var logs bytes.Buffer
	site.docs = map[string]sitemapDoc{
		"/image.xml":       {contentType: "image/png", body: []byte(urlset(u("/never")))},
		"/error.xml":       {contentType: "text/html", body: []byte("<!DOCTYPE html><html><body><h1>Sitemap moved</h1><a href='/x'>x</a></body></html>")},
		"/soft.xml":        {contentType: "text/html", status: 500, body: []byte("oops")},
		"/broken.xml":      xmlDoc(`<urlset><url><loc>` + u("/kept/1") + `</loc></url><url><loc>` + u("/kept/2") + `</loc></url><url><loc>http`),
		"/html-as-xml.xml": {contentType: "application/xml", body: []byte(`<html><body>Not here</body></html>`)},
		"/other-dir/s.xml": xmlDoc(urlset(u("/other-dir/ok"), u("/elsewhere"), "http://foreign.example/x")),
		"/tiny.xml":        xmlDoc(urlset(u("/t/1"), u("/t/2"), u("/t/3"))),
	}
	w, _ := gatedWalker(t, &fetch.SitemapWalker{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	got, st := walk(t, w, []string{u("/image.xml"), u("/error.xml"), u("/soft.xml"), u("/missing.xml"), u("/broken.xml"), u("/html-as-xml.xml"), u("/other-dir/s.xml")}, "")
	slices.Sort(got)
	if !slices.Equal(got, []string{u("/kept/1"), u("/kept/2"), u("/other-dir/ok")}) {
		t.Errorf("urls %v", got)
	}
	if st.Skipped != 3 || st.Failed != 2 || st.Malformed != 1 || st.OutOfScope != 2 || st.Fetched != 2 {
		t.Errorf("stats %+v", st)
	}
	for _, want := range []string{"wrong content type", "not a sitemap", "bad status", "malformed"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}

	w.Options.MaxURLs = 2
	got, st = walk(t, w, []string{u("/tiny.xml")}, "")
	if len(got) != 2 || st.TooLarge != 1 {
		t.Errorf("limit: %v %+v", got, st)
	}

	// Cross-submission: the same sitemap, named in this host's robots.txt,
	// may list the rest of the host.
	w.Options.MaxURLs = 0
	got, st = walk(t, w, []string{u("/other-dir/s.xml")}, u("/robots.txt"))
	if len(got) != 2 || st.OutOfScope != 1 {
		t.Errorf("named in robots.txt: %v %+v", got, st)
	}
}

func TestWalkContextAndConfig(t *testing.T) {
	var w fetch.SitemapWalker
	if _, err := w.Walk(context.Background(), []string{"http://e.com/s.xml"}, "", func(fetch.SitemapEntry) bool { return true }); err == nil {
		t.Error("walker without Fetch did not fail")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.Fetch = func(ctx context.Context, req fetch.Request) (*fetch.Page, io.ReadCloser, error) {
		return nil, nil, ctx.Err()
	}
	if _, err := w.Walk(ctx, []string{"http://e.com/s.xml"}, "", func(fetch.SitemapEntry) bool { return true }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled walk: err = %v", err)
	}
	st, err := w.Walk(context.Background(), []string{"not a url", "ftp://e.com/x"}, "", func(fetch.SitemapEntry) bool { return true })
	if err != nil || st.Failed != 2 {
		t.Errorf("bad roots: %+v %v", st, err)
	}
}

func TestSitemapURLs(t *testing.T) {
	base, _ := url.Parse("https://example.com")
	got := fetch.SitemapURLs(base, []string{
		"https://example.com/sitemap_index.xml",
		" https://cdn.example.net/maps/site.xml.gz ",
		"https://example.com/sitemap_index.xml",
		"/relative-map.xml",
		"ftp://example.com/map.xml",
	}, true)
	want := []string{"https://example.com/sitemap_index.xml", "https://cdn.example.net/maps/site.xml.gz", "https://example.com/relative-map.xml"}
	if !slices.Equal(got, want) {
		t.Errorf("from robots: %v", got)
	}
	if got := fetch.SitemapURLs(base, nil, true); !slices.Equal(got, []string{"https://example.com/sitemap.xml"}) {
		t.Errorf("default: %v", got)
	}
	port, _ := url.Parse("http://example.com:8080/some/page")
	if got := fetch.SitemapURLs(port, []string{"ftp://x/y"}, true); !slices.Equal(got, []string{"http://example.com:8080/sitemap.xml"}) {
		t.Errorf("default with port: %v", got)
	}
	if got := fetch.SitemapURLs(base, nil, false); len(got) != 0 {
		t.Errorf("no default: %v", got)
	}
}
