package crawler_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

// RunFeed crawls seeds as they arrive: the second seed is sent only once the
// first page has been fetched, and the crawl ends when the feed closes.
func TestRunFeed(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/one": htmlPage("one"),
		"/two": htmlPage("two"),
	})
	c := newCrawler(t, crawler.WithFollowLinks(false))
	fetched := make(chan string, 4)
	c.OnPage(func(_ context.Context, p *crawler.Page) { fetched <- p.URL.Path })
	feed := make(chan crawler.Seed)
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { done <- c.RunFeed(ctx, feed) }()
	feed <- crawler.Seed{URL: s.URL + "/one"}
	if got := <-fetched; got != "/one" {
		t.Fatalf("first page %q", got)
	}
	select {
	case err := <-done:
		t.Fatalf("RunFeed returned (%v) with the feed still open", err)
	default:
	}
	feed <- crawler.Seed{URL: s.URL + "/two", Meta: map[string]string{"k": "v"}}
	if got := <-fetched; got != "/two" {
		t.Fatalf("second page %q", got)
	}
	close(feed)
	if err := <-done; err != nil {
		t.Fatalf("RunFeed = %v", err)
	}
	if err := c.RunFeed(ctx, closedFeed()); !errors.Is(err, crawler.ErrNoSeeds) {
		t.Errorf("RunFeed on an empty feed = %v, want ErrNoSeeds", err)
	}
}

func closedFeed() chan crawler.Seed {
	ch := make(chan crawler.Seed)
	close(ch)
	return ch
}

// WithFollowLinks(false) fetches the seeds and where they redirect, not
// their links nor the sitemaps.
func TestFollowLinksOff(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":            htmlPage("home", "/linked"),
		"/moved":       redirectTo(http.StatusMovedPermanently, "/target"),
		"/target":      htmlPage("target", "/linked"),
		"/linked":      htmlPage("linked"),
		"/sitemap.xml": htmlPage("not read"),
	})
	c := newCrawler(t, crawler.WithFollowLinks(false), crawler.WithSitemaps(true))
	var mu sync.Mutex
	links := 0
	c.OnPage(func(_ context.Context, p *crawler.Page) {
		mu.Lock()
		links += len(p.Links)
		mu.Unlock()
	})
	runCrawl(t, c, s.URL+"/", s.URL+"/moved")
	if s.count("/target") != 1 || s.count("/linked") != 0 || s.count("/sitemap.xml") != 0 {
		t.Errorf("server saw %q; want the seeds and the redirect target only", s.targets())
	}
	if links != 2 {
		t.Errorf("Page.Links listed %d links in all, want 2 (reported, not followed)", links)
	}
}
