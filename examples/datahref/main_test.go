package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

func TestLocalSite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, nil, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, &stderr)
	}
	want := "200 /\n200 /orders\n200 /orders/40\n200 /orders/41\n200 /orders/42\n200 /orders?page=2\n"
	if stdout.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", &stdout, want)
	}
	if !strings.Contains(stderr.String(), "datahref: 6 pages in ") {
		t.Errorf("summary on stderr:\n%s", &stderr)
	}
}

// TestDefaultExtractorAlone crawls the test site without dataHref: the
// orders are out of reach, which is what the example adds.
func TestDefaultExtractorAlone(t *testing.T) {
	site := httptest.NewServer(testSite())
	defer site.Close()
	c, err := crawler.New(crawler.WithDelay(0), crawler.WithSitemaps(false))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var paths []string
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		mu.Lock()
		paths = append(paths, p.URL.RequestURI())
		mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Run(ctx, site.URL+"/"); err != nil {
		t.Fatal(err)
	}
	slices.Sort(paths)
	if want := []string{"/", "/orders"}; !slices.Equal(paths, want) {
		t.Errorf("the default extractor alone fetched %q, want %q", paths, want)
	}
}

// TestReadmeShowsThisExample: the code the README's "Extending heed" shows
// is this program's, word for word, so it is what the tests above run.
func TestReadmeShowsThisExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Extending heed\n")
	if !ok {
		t.Fatal(`README.md has no "## Extending heed" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "\n```go\n")
	if !ok {
		t.Fatal(`README.md's "Extending heed" has no Go code block`)
	}
	block, _, ok = strings.Cut(block, "\n```\n")
	if !ok {
		t.Fatal(`README.md's "Extending heed" code block does not end`)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	for part := range strings.SplitSeq(block, "\n\n// …\n\n") {
		if !strings.Contains(string(src), part) {
			t.Errorf("README.md's \"Extending heed\" shows code that examples/datahref/main.go lacks:\n%s", part)
		}
	}
}
