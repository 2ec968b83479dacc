package fetch_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heedcrawl/heed/fetch"
)

// Seeds beyond those in testdata/fuzz: one of each format and a few broken
// ones, so the fuzzer starts from every branch of the parser.
var sitemapSeeds = []string{
	urlsetDoc,
	`<sitemapindex><sitemap><loc>https://example.com/s.xml</loc><lastmod>2024-01-01</lastmod></sitemap></sitemapindex>`,
	"https://example.com/a\nhttps://example.com/b\n",
	`<rss><channel><item><link>https://example.com/p</link><pubDate>Tue, 05 Mar 2024 10:00:00 GMT</pubDate></item></channel></rss>`,
	`<feed><entry><link href="/x"/><updated>2024-02-01T12:00:00Z</updated></entry></feed>`,
	`<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>https://example.com/caf` + "\xe9" + `</loc></url></urlset>`,
	`<!DOCTYPE html><html><body>404</body></html>`,
	`<urlset><url><loc>https://example.com/1</loc></url><url><loc>http`,
}

func FuzzParseSitemap(f *testing.F) {
	for _, s := range sitemapSeeds {
		f.Add([]byte(s), false)
		f.Add(gz(f, []byte(s)), true)
	}
	f.Fuzz(func(t *testing.T, doc []byte, crossSubmitted bool) {
		opts := fetch.SitemapOptions{MaxBytes: 1 << 20, MaxURLs: 1000}
		if crossSubmitted {
			opts.RobotsURL = "https://other.example/robots.txt"
		}
		base, _ := url.Parse("https://example.com/maps/sitemap.xml")
		n := 0
		st, err := fetch.ParseSitemap(bytes.NewReader(doc), base, opts, func(e fetch.SitemapEntry) bool {
			n++
			u, perr := url.Parse(e.Loc)
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
				t.Fatalf("entry %q is not an absolute http(s) URL without fragment", e.Loc)
			}
			if e.Priority < 0 || e.Priority > 1 {
				t.Fatalf("priority %v out of range", e.Priority)
			}
			return true
		})
		if st.URLs+st.Sitemaps != n {
			t.Fatalf("stats count %d entries, yield saw %d", st.URLs+st.Sitemaps, n)
		}
		if n > opts.MaxURLs || st.Bytes > opts.MaxBytes {
			t.Fatalf("limits exceeded: %d entries, %d bytes", n, st.Bytes)
		}
		_ = err
	})
}

var htmlSeeds = []string{
	`<html><head><base href="/b/"><link rel="canonical" href="/c"><meta name="robots" content="nofollow"></head>
<body><a href="x">x</a><a href="#f">f</a><a href="javascript:1">j</a><area href="/a" alt="A"><iframe src="/i"></iframe></body></html>`,
	`<frameset><frame src="left.html"></frameset>`,
	`<a href="  //h.example/p?q#f  " rel="ugc nofollow"><img alt="pic"></a>`,
	`<base href="http://[::1]:80/"><a href="%zz">bad</a><a href="http://a b/">space</a>`,
	`<meta name="heedbot" content="none"><a href="/x">` + strings.Repeat("long ", 100) + `</a>`,
	`<svg><a href="/svg">svg</a></svg><template><a href="/t">t</a></template>`,
}

func FuzzHTMLExtractor(f *testing.F) {
	for _, s := range htmlSeeds {
		f.Add([]byte(s), "heedbot: nofollow")
		f.Add([]byte(s), "noindex, unavailable_after: 25 Jun 2010 15:00:00 PST")
	}
	reg := fetch.NewRegistry()
	sel, err := fetch.SelectorExtractor("a.next, div a, [src]")
	if err != nil {
		f.Fatal(err)
	}
	reg.Register("text/html", sel)
	f.Fuzz(func(t *testing.T, body []byte, xRobotsTag string) {
		u, _ := url.Parse("https://example.com/dir/page.html")
		p := &fetch.Page{
			URL: u, ContentType: "text/html", Body: body,
			Header: http.Header{"X-Robots-Tag": {xRobotsTag}},
			Policy: fetch.DirectivePolicy{ReturnNofollow: true},
		}
		links, err := reg.Extract(context.Background(), p)
		if err != nil {
			t.Fatalf("extract: %v", err)
		}
		seen := map[string]bool{}
		d := p.Directives()
		for _, l := range links {
			lu, perr := url.Parse(l.URL)
			if perr != nil || (lu.Scheme != "http" && lu.Scheme != "https") || lu.Host == "" || lu.Fragment != "" {
				t.Fatalf("link %q is not an absolute http(s) URL without fragment", l.URL)
			}
			if seen[l.URL] {
				t.Fatalf("duplicate link %q", l.URL)
			}
			seen[l.URL] = true
			if utf8.RuneCountInString(l.Text) > fetch.DefaultMaxLinkText {
				t.Fatalf("text of %d runes", utf8.RuneCountInString(l.Text))
			}
			if d.Nofollow && !l.Nofollow {
				t.Fatalf("page nofollow but link %q not marked", l.URL)
			}
		}
	})
}
