package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// crawl runs the example in local mode and returns its output lines, the
// site's address replaced by SITE, the page lines sorted (their order is the
// crawl's) and the summary last.
func crawl(t *testing.T, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, &stderr)
	}
	out := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).ReplaceAllString(stdout.String(), "SITE")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	slices.Sort(lines[:len(lines)-1])
	return lines
}

func TestLocalSite(t *testing.T) {
	got := crawl(t)
	want := []string{
		"200 SITE/ found by seed",
		"200 SITE/about found by link on SITE/",
		"200 SITE/archive/2023 found by sitemap SITE/sitemap-archive.xml",
		"200 SITE/archive/2024 found by sitemap SITE/sitemap-archive.xml",
		"200 SITE/offers/spring found by sitemap SITE/sitemap-offers.txt.gz",
		// The index and its two sitemaps; "/" is listed too but already
		// fetched, /private/drafts is listed but robots.txt forbids it.
		"5 pages; 3 sitemaps read, listing 5 page URLs; robots.txt refused 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLocalSiteSitemapOnly(t *testing.T) {
	got := crawl(t, "-sitemap-only")
	want := []string{
		"200 SITE/ found by seed",
		"200 SITE/archive/2023 found by sitemap SITE/sitemap-archive.xml",
		"200 SITE/archive/2024 found by sitemap SITE/sitemap-archive.xml",
		"200 SITE/offers/spring found by sitemap SITE/sitemap-offers.txt.gz",
		"4 pages; 3 sitemaps read, listing 5 page URLs; robots.txt refused 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
