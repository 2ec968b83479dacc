package codec_test

import (
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
	"github.com/heedcrawl/heed/ratelimit"
)

// The items of the benchmarks; pebblestore and redisstore measured their
// own encodings with the same ones before this package.
var benchItems = []struct {
	name string
	it   frontier.Item
}{
	// A link found on a page: the common case.
	{"link", frontier.Item{URL: "https://books.toscrape.com/catalogue/a-light-in-the-attic_1000/index.html", Key: "books.toscrape.com",
		Referrer: "https://books.toscrape.com/catalogue/page-2.html", Depth: 3}},
	// A page listed by a sitemap.
	{"sitemap", frontier.Item{URL: "https://example.com/products/widget-42", Key: "example.com", Referrer: "https://example.com/sitemap.xml",
		Depth: 1, FromSitemap: true, Priority: 0.8, Lastmod: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}},
	// A retried redirect target with metadata.
	{"history", frontier.Item{URL: "https://example.com/b", Key: "example.com", Referrer: "https://example.com/", Depth: 2, Retries: 1,
		Redirects: []string{"http://example.com/a"}, Meta: map[string]string{"product": "widget", "list": "spring"}}},
}

var benchHost = ratelimit.HostState{NextAllowed: time.Date(2025, 6, 1, 12, 0, 0, 5, time.UTC), Delay: time.Second,
	RTT: 80 * time.Millisecond, CrawlDelay: 2 * time.Second, HasCrawlDelay: true}

// BenchmarkAppendItem encodes into a reused buffer, as pebblestore does
// (encoded-bytes is the encoding's size).
func BenchmarkAppendItem(b *testing.B) {
	for _, bi := range benchItems {
		b.Run(bi.name, func(b *testing.B) {
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				buf = codec.AppendItem(buf[:0], &bi.it)
			}
			b.ReportMetric(float64(len(buf)), "encoded-bytes")
		})
	}
}

// BenchmarkAppendItemNew encodes into a new buffer, as redisstore does.
func BenchmarkAppendItemNew(b *testing.B) {
	for _, bi := range benchItems {
		b.Run(bi.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				codec.AppendItem(nil, &bi.it)
			}
		})
	}
}

func BenchmarkDecodeItem(b *testing.B) {
	for _, bi := range benchItems {
		b.Run(bi.name, func(b *testing.B) {
			enc := codec.AppendItem(nil, &bi.it)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := codec.DecodeItem(enc, bi.it.Key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendHost(b *testing.B) {
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = codec.AppendHost(buf[:0], &benchHost)
	}
	b.ReportMetric(float64(len(buf)), "encoded-bytes")
}

func BenchmarkDecodeHost(b *testing.B) {
	enc := codec.AppendHost(nil, &benchHost)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.DecodeHost(enc); err != nil {
			b.Fatal(err)
		}
	}
}
