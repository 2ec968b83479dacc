package fetch_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"golang.org/x/text/encoding/charmap"
)

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// parseAll collects every entry ParseSitemap yields.
func parseAll(t testing.TB, doc []byte, base string, opts fetch.SitemapOptions) ([]fetch.SitemapEntry, fetch.SitemapStats, error) {
	t.Helper()
	var b *url.URL
	if base != "" {
		b = mustURL(t, base)
	}
	var out []fetch.SitemapEntry
	st, err := fetch.ParseSitemap(bytes.NewReader(doc), b, opts, func(e fetch.SitemapEntry) bool {
		out = append(out, e)
		return true
	})
	return out, st, err
}

func locs(es []fetch.SitemapEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Loc
	}
	return out
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

const urlsetDoc = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc>https://example.com/a</loc>
    <lastmod>2024-03-05</lastmod>
    <changefreq>Weekly</changefreq>
    <priority>0.8</priority>
    <image:image><image:loc>https://cdn.example.net/a.jpg</image:loc></image:image>
    <xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/a"/>
  </url>
  <url>
    <loc>
      https://example.com/b?x=1&amp;y=2
    </loc>
    <lastmod>2024-03-05T10:20:30+02:00</lastmod>
    <changefreq>sometimes</changefreq>
    <priority>7</priority>
  </url>
  <url><loc>https://example.com/c?x=1&y=2</loc><lastmod>yesterday</lastmod></url>
  <url><loc>/relative</loc></url>
  <url><loc>ftp://example.com/file</loc></url>
  <url><loc><![CDATA[https://example.com/cdata]]></loc></url>
  <url><lastmod>2024-01-01</lastmod></url>
</urlset>`

func TestParseURLSet(t *testing.T) {
	es, st, err := parseAll(t, []byte(urlsetDoc), "https://example.com/sitemap.xml", fetch.SitemapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []fetch.SitemapEntry{
		{Loc: "https://example.com/a", Lastmod: time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC), Changefreq: "weekly", Priority: 0.8},
		{Loc: "https://example.com/b?x=1&y=2", Lastmod: time.Date(2024, 3, 5, 8, 20, 30, 0, time.UTC), Priority: 0.5},
		{Loc: "https://example.com/c?x=1&y=2", Priority: 0.5},
		{Loc: "https://example.com/cdata", Priority: 0.5},
	}
	if len(es) != len(want) {
		t.Fatalf("entries %v", locs(es))
	}
	for i := range want {
		g, w := es[i], want[i]
		if g.Loc != w.Loc || !g.Lastmod.Equal(w.Lastmod) || g.Changefreq != w.Changefreq || g.Priority != w.Priority || g.Sitemap {
			t.Errorf("entry %d = %+v\n     want %+v", i, g, w)
		}
	}
	if st.Format != fetch.FormatURLSet || st.URLs != 4 || st.Invalid != 3 || st.BadLastmod != 1 || st.Truncated {
		t.Errorf("stats = %+v", st)
	}
	if st.Bytes != int64(len(urlsetDoc)) {
		t.Errorf("Bytes = %d, want %d", st.Bytes, len(urlsetDoc))
	}
}

func TestParseSitemapIndexAndGzipByMagic(t *testing.T) {
	doc := []byte(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://example.com/s1.xml.gz</loc><lastmod>2023-12-31T23:59Z</lastmod></sitemap>
<sitemap><loc>https://example.com/deep/s2.xml</loc></sitemap>
</sitemapindex>`)
	for name, body := range map[string][]byte{"plain": doc, "gzip": gz(t, doc)} {
		// The URL says nothing about compression: only the bytes do.
		es, st, err := parseAll(t, body, "https://example.com/sitemap_index", fetch.SitemapOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Format != fetch.FormatSitemapIndex || st.Sitemaps != 2 || st.URLs != 0 {
			t.Errorf("%s: stats %+v", name, st)
		}
		if len(es) != 2 || !es[0].Sitemap || !es[1].Sitemap || es[1].Loc != "https://example.com/deep/s2.xml" ||
			!es[0].Lastmod.Equal(time.Date(2023, 12, 31, 23, 59, 0, 0, time.UTC)) {
			t.Errorf("%s: entries %+v", name, es)
		}
		if st.Bytes != int64(len(doc)) {
			t.Errorf("%s: Bytes %d counts compressed size, want %d uncompressed", name, st.Bytes, len(doc))
		}
	}
}

func TestParseTextSitemap(t *testing.T) {
	doc := "\xef\xbb\xbfhttps://example.com/one\r\n\r\n  https://example.com/two  \nnot a url\nmailto:x@example.com\n" +
		"https://example.com/" + strings.Repeat("x", 5000) + "\nhttps://example.com/three"
	es, st, err := parseAll(t, []byte(doc), "https://example.com/sitemap.txt", fetch.SitemapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(locs(es), " "); got != "https://example.com/one https://example.com/two https://example.com/three" {
		t.Errorf("entries %s", got)
	}
	if st.Format != fetch.FormatText || st.Invalid != 3 {
		t.Errorf("stats %+v", st)
	}
	// Gzip-compressed text works the same.
	es, _, err = parseAll(t, gz(t, []byte(doc)), "https://example.com/sitemap.txt.gz", fetch.SitemapOptions{})
	if err != nil || len(es) != 3 {
		t.Errorf("gzip text: %v %v", locs(es), err)
	}
}

func TestParseFeeds(t *testing.T) {
	rss := `<?xml version="1.0"?>
<rss version="2.0"><channel>
  <title>News</title><link>https://news.example/</link>
  <item><title>One</title><link>https://news.example/posts/1</link><pubDate>Tue, 05 Mar 2024 10:00:00 GMT</pubDate></item>
  <item><title>Two</title><guid>https://news.example/posts/2</guid><pubDate>Wed, 6 Mar 2024 10:00:00 +0100</pubDate></item>
  <item><title>Three</title><guid isPermaLink="false">tag:news,3</guid></item>
  <item><link>posts/4</link></item>
</channel></rss>`
	es, st, err := parseAll(t, []byte(rss), "https://news.example/feed.xml", fetch.SitemapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(locs(es), " "); got != "https://news.example/posts/1 https://news.example/posts/2 https://news.example/posts/4" {
		t.Errorf("rss entries %s", got)
	}
	if st.Format != fetch.FormatRSS || st.Invalid != 1 {
		t.Errorf("rss stats %+v", st)
	}
	if !es[0].Lastmod.Equal(time.Date(2024, 3, 5, 10, 0, 0, 0, time.UTC)) || !es[1].Lastmod.Equal(time.Date(2024, 3, 6, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("rss dates %v %v", es[0].Lastmod, es[1].Lastmod)
	}

	atom := `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Blog</title><link rel="self" href="https://blog.example/atom.xml"/>
  <entry><title>A</title><link rel="edit" href="https://blog.example/edit/a"/><link href="https://blog.example/a"/><updated>2024-02-01T12:00:00Z</updated></entry>
  <entry><title>B</title><link rel="alternate" type="text/html" href="/b"/><published>2024-02-02T00:00:00Z</published></entry>
  <entry><title>C</title><link rel="enclosure" href="https://blog.example/c.mp3"/></entry>
</feed>`
	es, st, err = parseAll(t, []byte(atom), "https://blog.example/atom.xml", fetch.SitemapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(locs(es), " "); got != "https://blog.example/a https://blog.example/b" {
		t.Errorf("atom entries %s", got)
	}
	if st.Format != fetch.FormatAtom || st.Invalid != 1 || !es[0].Lastmod.Equal(time.Date(2024, 2, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("atom stats %+v, lastmod %v", st, es[0].Lastmod)
	}
}

func TestLastmodFormats(t *testing.T) {
	cases := map[string]time.Time{
		"2024":                          time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		"2024-07":                       time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC),
		"2024-07-16":                    time.Date(2024, 7, 16, 0, 0, 0, 0, time.UTC),
		"2024-07-16T19:20+01:00":        time.Date(2024, 7, 16, 18, 20, 0, 0, time.UTC),
		"2024-07-16T19:20:30+01:00":     time.Date(2024, 7, 16, 18, 20, 30, 0, time.UTC),
		"2024-07-16T19:20:30.45+01:00":  time.Date(2024, 7, 16, 18, 20, 30, 450e6, time.UTC),
		"2024-07-16T19:20:30Z":          time.Date(2024, 7, 16, 19, 20, 30, 0, time.UTC),
		"2024-07-16T19:20:30":           time.Date(2024, 7, 16, 19, 20, 30, 0, time.UTC),
		"2024-07-16 19:20:30":           time.Date(2024, 7, 16, 19, 20, 30, 0, time.UTC),
		"2024-07-16T19:20:30+0100":      time.Date(2024, 7, 16, 18, 20, 30, 0, time.UTC),
		"Tue, 16 Jul 2024 19:20:30 GMT": time.Date(2024, 7, 16, 19, 20, 30, 0, time.UTC),
	}
	for in, want := range cases {
		doc := fmt.Sprintf(`<urlset><url><loc>http://e.com/x</loc><lastmod>%s</lastmod></url></urlset>`, in)
		es, st, err := parseAll(t, []byte(doc), "", fetch.SitemapOptions{})
		if err != nil || len(es) != 1 || st.BadLastmod != 0 || !es[0].Lastmod.Equal(want) {
			t.Errorf("lastmod %q: got %v (bad %d, err %v), want %v", in, es, st.BadLastmod, err, want)
		}
	}
}

func TestSitemapScope(t *testing.T) {
	doc := []byte(`<urlset>
<url><loc>http://example.com/catalog/item1</loc></url>
<url><loc>https://example.com/catalog/item2</loc></url>
<url><loc>http://EXAMPLE.com:80/catalog/item3</loc></url>
<url><loc>http://example.com/catalog</loc></url>
<url><loc>http://example.com/images/x</loc></url>
<url><loc>http://www.example.com/catalog/y</loc></url>
<url><loc>http://other.example/catalog/z</loc></url>
<url><loc>http://example.com:8080/catalog/p</loc></url>
</urlset>`)
	es, st, _ := parseAll(t, doc, "http://example.com/catalog/sitemap.xml", fetch.SitemapOptions{})
	if got := strings.Join(locs(es), " "); got != "http://example.com/catalog/item1 https://example.com/catalog/item2 http://EXAMPLE.com:80/catalog/item3" {
		t.Errorf("in scope: %s", got)
	}
	if st.OutOfScope != 5 {
		t.Errorf("OutOfScope = %d, want 5", st.OutOfScope)
	}

	// Named in example.com's robots.txt: the whole host is open to it.
	es, st, _ = parseAll(t, doc, "http://example.com/catalog/sitemap.xml", fetch.SitemapOptions{RobotsURL: "http://example.com/robots.txt"})
	if len(es) != 5 || st.OutOfScope != 3 {
		t.Errorf("named by own robots.txt: %v, out of scope %d", locs(es), st.OutOfScope)
	}

	// Cross-submission: hosted on sitemaps.example, named by other.example.
	es, st, _ = parseAll(t, doc, "http://sitemaps.example/for-other.xml", fetch.SitemapOptions{RobotsURL: "http://other.example/robots.txt"})
	if got := strings.Join(locs(es), " "); got != "http://other.example/catalog/z" || st.OutOfScope != 7 {
		t.Errorf("cross-submitted: %s, out of scope %d", got, st.OutOfScope)
	}

	// Nested sitemaps need only be on the same host.
	idx := []byte(`<sitemapindex>
<sitemap><loc>http://example.com/other-dir/s.xml</loc></sitemap>
<sitemap><loc>http://evil.example/s.xml</loc></sitemap>
</sitemapindex>`)
	es, st, _ = parseAll(t, idx, "http://example.com/catalog/index.xml", fetch.SitemapOptions{})
	if len(es) != 1 || es[0].Loc != "http://example.com/other-dir/s.xml" || st.OutOfScope != 1 {
		t.Errorf("index scope: %v %+v", locs(es), st)
	}
}

func TestSitemapLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("<urlset>")
	for i := range 20 {
		fmt.Fprintf(&b, "<url><loc>http://e.com/%d</loc></url>\n", i)
	}
	b.WriteString("</urlset>")
	doc := []byte(b.String())

	es, st, err := parseAll(t, doc, "", fetch.SitemapOptions{MaxURLs: 10})
	if !errors.Is(err, fetch.ErrSitemapTooLarge) || len(es) != 10 || !st.Truncated {
		t.Errorf("MaxURLs: %d entries, truncated %v, err %v", len(es), st.Truncated, err)
	}
	es, st, err = parseAll(t, doc, "", fetch.SitemapOptions{MaxBytes: 200})
	if !errors.Is(err, fetch.ErrSitemapTooLarge) || len(es) == 0 || len(es) >= 10 || !st.Truncated || st.Bytes > 200 {
		t.Errorf("MaxBytes: %d entries, truncated %v, %d bytes, err %v", len(es), st.Truncated, st.Bytes, err)
	}
	// The byte limit counts uncompressed bytes.
	es, _, err = parseAll(t, gz(t, doc), "", fetch.SitemapOptions{MaxBytes: 200})
	if !errors.Is(err, fetch.ErrSitemapTooLarge) || len(es) >= 10 {
		t.Errorf("MaxBytes gzip: %d entries, err %v", len(es), err)
	}
	// A document of exactly the limit is fine.
	if _, _, err := parseAll(t, doc, "", fetch.SitemapOptions{MaxBytes: int64(len(doc)), MaxURLs: 20}); err != nil {
		t.Errorf("exactly at limits: %v", err)
	}
	// Text sitemaps obey the same limits.
	text := strings.Repeat("http://e.com/t\n", 20)
	es, _, err = parseAll(t, []byte(text), "", fetch.SitemapOptions{MaxURLs: 5})
	if !errors.Is(err, fetch.ErrSitemapTooLarge) || len(es) != 5 {
		t.Errorf("text MaxURLs: %d, %v", len(es), err)
	}
}

func TestSitemapBadInput(t *testing.T) {
	cases := []struct {
		name    string
		doc     []byte
		wantErr error
		want    int // entries delivered before the error
	}{
		{"truncated xml", []byte(`<urlset><url><loc>http://e.com/1</loc></url><url><loc>http://e.com/2</loc></url><url><loc>http://e.com/3</lo`), fetch.ErrMalformedSitemap, 2},
		{"mismatched tags", []byte(`<urlset><url><loc>http://e.com/1</loc></url><url><loc>http://e.com/2</loc></url></bad></urlset>`), fetch.ErrMalformedSitemap, 2},
		{"html error page", []byte("<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><a href=/>home</a></body></html>"), fetch.ErrNotSitemap, 0},
		{"html fragment", []byte(`<p>Oops<br>`), fetch.ErrNotSitemap, 0},
		{"unknown root", []byte(`<?xml version="1.0"?><config><url><loc>http://e.com/1</loc></url></config>`), fetch.ErrNotSitemap, 0},
		{"json", []byte(`{"urls": ["http://e.com/1"]}`), fetch.ErrNotSitemap, 0},
		{"empty", nil, fetch.ErrNotSitemap, 0},
		{"whitespace", []byte("  \n\t "), fetch.ErrNotSitemap, 0},
		{"corrupt gzip", append(gz(t, []byte(`<urlset><url><loc>http://e.com/1</loc></url></urlset>`))[:20], 0xff, 0xff, 0xff), fetch.ErrMalformedSitemap, 0},
		{"gzip header only", []byte("\x1f\x8b0"), fetch.ErrMalformedSitemap, 0},
		{"deep nesting", []byte(`<urlset>` + strings.Repeat("<a>", 1000)), fetch.ErrMalformedSitemap, 0},
		{"giant text node", []byte(`<urlset><url><loc>http://e.com/1</loc></url><url><loc>http://e.com/` + strings.Repeat("x", 5<<20) + `</loc></url></urlset>`), fetch.ErrMalformedSitemap, 1},
	}
	for _, c := range cases {
		es, _, err := parseAll(t, c.doc, "", fetch.SitemapOptions{})
		if !errors.Is(err, c.wantErr) || len(es) != c.want {
			t.Errorf("%s: %d entries, err %v; want %d, %v", c.name, len(es), err, c.want, c.wantErr)
		}
	}
}

func TestSitemapYieldStopsAndFilters(t *testing.T) {
	doc := []byte(`<urlset>
<url><loc>http://e.com/old</loc><lastmod>2020-01-01</lastmod></url>
<url><loc>http://e.com/new</loc><lastmod>2024-06-01</lastmod></url>
<url><loc>http://e.com/undated</loc></url>
<url><loc>http://e.com/later</loc></url>
</urlset>`)
	es, st, err := parseAll(t, doc, "", fetch.SitemapOptions{ModifiedSince: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil || strings.Join(locs(es), " ") != "http://e.com/new http://e.com/undated http://e.com/later" || st.Old != 1 {
		t.Errorf("ModifiedSince: %v old %d err %v", locs(es), st.Old, err)
	}
	n := 0
	st, err = fetch.ParseSitemap(bytes.NewReader(doc), nil, fetch.SitemapOptions{}, func(fetch.SitemapEntry) bool {
		n++
		return n < 2
	})
	if err != nil || n != 2 || st.URLs != 2 {
		t.Errorf("yield false: called %d times, stats %+v, err %v", n, st, err)
	}
}

func TestSitemapDeclaredEncoding(t *testing.T) {
	doc, _ := charmap.ISO8859_1.NewEncoder().Bytes([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>http://e.com/café</loc></url></urlset>`))
	es, _, err := parseAll(t, doc, "", fetch.SitemapOptions{})
	if err != nil || len(es) != 1 || es[0].Loc != "http://e.com/caf%C3%A9" {
		t.Errorf("ISO-8859-1 sitemap: %v %v", locs(es), err)
	}
}

// sitemapGenerator produces an n-URL sitemap on demand, so the document
// itself never sits in memory and only the parser's footprint is measured.
type sitemapGenerator struct {
	n, i           int
	scratch, buf   []byte
	started, ended bool
}

func (g *sitemapGenerator) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		switch {
		case !g.started:
			g.started = true
			g.scratch = append(g.scratch[:0], `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`+"\n"...)
		case g.i < g.n:
			k := g.i
			g.i++
			g.scratch = fmt.Appendf(g.scratch[:0], "<url><loc>https://example.com/products/category-%d/item-%08d.html</loc><lastmod>2024-05-%02dT10:00:00+00:00</lastmod><changefreq>daily</changefreq><priority>0.%d</priority></url>\n", k%97, k, k%28+1, k%10)
		case !g.ended:
			g.ended = true
			g.scratch = append(g.scratch[:0], "</urlset>\n"...)
		default:
			return 0, io.EOF
		}
		g.buf = g.scratch
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSitemap50kStreamsWithBoundedMemory parses a sitemap one URL over the
// protocol maximum: it must deliver 50,000 entries, stop with
// ErrSitemapTooLarge, and meanwhile never grow the live heap by more than a
// small fraction of the document, i.e. the document is streamed, not loaded.
func TestSitemap50kStreamsWithBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("parses a 9 MB document")
	}
	base := liveHeap()
	var peak uint64
	n := 0
	st, err := fetch.ParseSitemap(&sitemapGenerator{n: fetch.MaxSitemapURLs + 1}, mustURL(t, "https://example.com/sitemap.xml"), fetch.SitemapOptions{},
		func(e fetch.SitemapEntry) bool {
			n++
			if n%10000 == 0 {
				peak = max(peak, liveHeap())
			}
			return true
		})
	if !errors.Is(err, fetch.ErrSitemapTooLarge) || !st.Truncated {
		t.Errorf("50,001 URLs: truncated %v, err %v; want ErrSitemapTooLarge", st.Truncated, err)
	}
	if n != fetch.MaxSitemapURLs || st.URLs != n {
		t.Fatalf("delivered %d entries, stats %+v; want %d", n, st, fetch.MaxSitemapURLs)
	}
	growth := int64(peak) - int64(base)
	t.Logf("document %d bytes, live heap growth %d bytes", st.Bytes, growth)
	if growth > st.Bytes/20 {
		t.Errorf("live heap grew by %d bytes while parsing a %d-byte document; it is not streamed", growth, st.Bytes)
	}
}
