package fetch_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/heedcrawl/heed/fetch"
)

// benchPage generates a realistic article page: a head with metadata,
// stylesheets and scripts, a navigation menu, a long article with inline
// links and images, a sidebar, comments with rel="ugc" links, a footer.
func benchPage() []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Understanding distributed crawlers — Example News</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="A long article about crawling the web politely.">
<link rel="canonical" href="https://news.example.com/2024/05/understanding-crawlers">
<link rel="alternate" hreflang="de" href="https://news.example.com/de/2024/05/crawler-verstehen">
<link rel="alternate" type="application/rss+xml" href="/feed.xml">
<link rel="next" href="/2024/05/understanding-crawlers?page=2">
<link rel="stylesheet" href="/static/css/main.3f9a.css"><link rel="icon" href="/favicon.ico">
<script src="/static/js/vendor.91ab.js"></script>
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());</script>
<style>body{font-family:sans-serif}.nav a{padding:4px}</style>
</head><body><header class="site-header"><nav class="nav"><ul>`)
	for i := range 40 {
		fmt.Fprintf(&b, `<li><a href="/section/%d/" class="nav-link">Section %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></nav></header><main><article><h1>Understanding distributed crawlers</h1>`)
	for i := range 120 {
		fmt.Fprintf(&b, `<p>Paragraph %d discusses politeness, robots.txt and rate limits in some depth, `+
			`with a reference to <a href="/2023/%02d/related-story-%d">a related story</a> and `+
			`<a href="https://external%d.example.org/paper.pdf?ref=news#page=%d">an external paper</a>. `+
			`Crawlers that ignore Crawl-delay cause trouble; heed does not. More prose follows here to `+
			`make the paragraph as long as a real one, with &amp; entities &lt;and&gt; markup <em>emphasis</em>.</p>`,
			i, i%12+1, i, i%30, i)
		if i%10 == 0 {
			fmt.Fprintf(&b, `<figure><a href="/images/full/%d.jpg"><img src="/images/thumb/%d.jpg" alt="Figure %d"></a><figcaption>Figure %d</figcaption></figure>`, i, i, i, i)
		}
	}
	b.WriteString(`</article><aside class="sidebar"><h2>Most read</h2><ol>`)
	for i := range 30 {
		fmt.Fprintf(&b, `<li><a href="https://news.example.com/2024/04/popular-%d">Popular story number %d</a></li>`, i, i)
	}
	b.WriteString(`</ol><iframe src="https://ads.example.net/slot?id=42"></iframe></aside><section class="comments">`)
	for i := range 40 {
		fmt.Fprintf(&b, `<div class="comment"><p>Comment %d by a reader <a rel="ugc nofollow" href="https://blog%d.example.net/">my blog</a></p>`+
			`<a href="javascript:reply(%d)">Reply</a> <a href="#comment-%d">link</a></div>`, i, i, i, i)
	}
	b.WriteString(`</section></main><footer>`)
	for i := range 30 {
		fmt.Fprintf(&b, `<a href="/about/page-%d">Footer link %d</a> | `, i, i)
	}
	b.WriteString(`<a href="mailto:editors@news.example.com">Contact</a></footer></body></html>`)
	return []byte(b.String())
}

func benchHTMLPage(b *testing.B, body []byte) *fetch.Page {
	u, _ := url.Parse("https://news.example.com/2024/05/understanding-crawlers")
	return &fetch.Page{URL: u, ContentType: "text/html", Body: body}
}

// BenchmarkExtract measures link extraction on a generated 70 KB article
// page: parse+extract is the crawler's cost per page (a token pass for the
// page's directives and base URL, another for its links); extract-only is
// HTMLExtractor on a Page whose directives are known, so the links pass
// alone; goquery-find is the usual goquery approach (one Find per page,
// attribute, resolve) on an already parsed tree, for comparison.
func BenchmarkExtract(b *testing.B) {
	body := benchPage()
	ctx := context.Background()
	reg := fetch.NewRegistry()
	b.Run("parse+extract", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		links := 0
		for b.Loop() {
			ls, err := reg.Extract(ctx, benchHTMLPage(b, body))
			if err != nil {
				b.Fatal(err)
			}
			links += len(ls)
		}
		b.ReportMetric(float64(links)/b.Elapsed().Seconds(), "links/s")
	})
	b.Run("extract-only", func(b *testing.B) {
		p := benchHTMLPage(b, body)
		p.Directives()
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		links := 0
		for b.Loop() {
			ls, err := fetch.HTMLExtractor{}.Extract(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			links += len(ls)
		}
		b.ReportMetric(float64(links)/b.Elapsed().Seconds(), "links/s")
	})
	b.Run("goquery-find", func(b *testing.B) {
		p := benchHTMLPage(b, body)
		doc, _ := p.Document()
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		links := 0
		for b.Loop() {
			var out []string
			doc.Find("a[href], area[href], link[href], iframe[src], frame[src]").Each(func(_ int, s *goquery.Selection) {
				href, ok := s.Attr("href")
				if !ok {
					href, _ = s.Attr("src")
				}
				if u, err := p.URL.Parse(href); err == nil {
					out = append(out, u.String())
				}
			})
			links += len(out)
		}
		b.ReportMetric(float64(links)/b.Elapsed().Seconds(), "links/s")
	})
}

func benchSitemap(n int) []byte {
	var buf bytes.Buffer
	g := &sitemapGenerator{n: n}
	buf.ReadFrom(g)
	return buf.Bytes()
}

// BenchmarkParseSitemap parses a protocol-maximum sitemap (50,000 URLs,
// about 9 MB): streamed plain and gzip, against xml.Unmarshal of the whole
// document into structs (what a non-streaming parser does).
func BenchmarkParseSitemap(b *testing.B) {
	doc := benchSitemap(fetch.MaxSitemapURLs)
	zdoc := gz(b, doc)
	base, _ := url.Parse("https://example.com/sitemap.xml")
	run := func(b *testing.B, in []byte) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		urls := 0
		for b.Loop() {
			st, err := fetch.ParseSitemap(bytes.NewReader(in), base, fetch.SitemapOptions{}, func(fetch.SitemapEntry) bool { return true })
			if err != nil {
				b.Fatal(err)
			}
			urls += st.URLs
		}
		b.ReportMetric(float64(urls)/b.Elapsed().Seconds(), "urls/s")
	}
	b.Run("stream", func(b *testing.B) { run(b, doc) })
	b.Run("stream-gzip", func(b *testing.B) { run(b, zdoc) })
	b.Run("xml.Unmarshal", func(b *testing.B) {
		type urlEntry struct {
			Loc        string `xml:"loc"`
			Lastmod    string `xml:"lastmod"`
			Changefreq string `xml:"changefreq"`
			Priority   string `xml:"priority"`
		}
		var set struct {
			URLs []urlEntry `xml:"url"`
		}
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		urls := 0
		for b.Loop() {
			set.URLs = nil
			if err := xml.Unmarshal(doc, &set); err != nil {
				b.Fatal(err)
			}
			urls += len(set.URLs)
		}
		b.ReportMetric(float64(urls)/b.Elapsed().Seconds(), "urls/s")
	})
}

// manyLinksPage generates a page of about size bytes that is nothing but
// links, each to a distinct URL: the shape of the 10 MiB, 423,873-link page
// that once took half a gigabyte to extract.
func manyLinksPage(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 64)
	b.WriteString(`<!DOCTYPE html><html><head><title>Links</title></head><body>`)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "<a href=\"/p/%d\">L%d</a>\n", i, i)
	}
	b.WriteString(`</body></html>`)
	return b.Bytes()
}

// BenchmarkExtractManyLinks extracts a 10 MiB page of about 400,000 links
// and reports the bytes allocated per byte of body, the figure that must
// stay small for a crawl to survive such pages several at a time.
func BenchmarkExtractManyLinks(b *testing.B) {
	body := manyLinksPage(10 << 20)
	ctx := context.Background()
	reg := fetch.NewRegistry()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	links := 0
	for b.Loop() {
		ls, err := reg.Extract(ctx, benchHTMLPage(b, body))
		if err != nil {
			b.Fatal(err)
		}
		links = len(ls)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(body)), "alloc-B/body-B")
	b.ReportMetric(float64(links), "links/page")
}
