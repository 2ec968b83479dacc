package fetch_test

import (
	"net/url"
	"slices"
	"testing"

	"github.com/heedcrawl/heed/fetch"
)

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
