package crawler_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
)

// writtenStore is a MemoryStore that is a frontier.ReportWriter: it
// notes the URLs it is told reported, and what OnDisallowed had reported
// by then. A lease of a URL ending in /pending comes refused
// RefusedSeenOnly, as a shared Store hands out a link found disallowed
// by a process that died before its report was known written.
type writtenStore struct {
	frontier.MemoryStore
	mu       sync.Mutex
	reported map[string]bool
	early    []string // told written before OnDisallowed ran
	written  []string
}

func (s *writtenStore) ReportsWritten(items []frontier.Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		if !s.reported[it.URL] {
			s.early = append(s.early, it.URL)
		}
		s.written = append(s.written, it.URL)
	}
}

func (s *writtenStore) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	c, err := s.MemoryStore.Claim(ctx, now, opt)
	if err == nil && c.Lease != nil && strings.HasSuffix(c.Lease.URL, "/pending") {
		c.Lease.Refused = frontier.RefusedSeenOnly
	}
	return c, err
}

// TestReportsWritten: the crawl tells a frontier.ReportWriter Store of
// each link it found disallowed once its report is made, never before;
// and a lease refused RefusedSeenOnly is reported disallowed, not fetched.
func TestReportsWritten(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":        htmlPage("home", "/private/a", "/a"),
		"/a":       htmlPage("a", "/private/a", "/private/b"),
		"/pending": htmlPage("never fetched"),
	})
	st := &writtenStore{reported: map[string]bool{}}
	c := newCrawler(t, crawler.WithStore(st))
	var got []string
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.reported[u.String()] = true
		got = append(got, u.String())
	})
	runCrawl(t, c, s.URL+"/", s.URL+"/pending")
	st.mu.Lock()
	defer st.mu.Unlock()
	slices.Sort(got)
	if want := []string{s.URL + "/pending", s.URL + "/private/a", s.URL + "/private/b"}; !slices.Equal(got, want) {
		t.Errorf("OnDisallowed calls %v, want %v", got, want)
	}
	slices.Sort(st.written)
	if want := []string{s.URL + "/private/a", s.URL + "/private/b"}; !slices.Equal(st.written, want) {
		t.Errorf("reports told written: %v, want %v", st.written, want)
	}
	if len(st.early) > 0 {
		t.Errorf("told written before their reports: %v", st.early)
	}
	if n := s.count("/pending"); n != 0 {
		t.Errorf("/pending fetched %d times, want none", n)
	}
}
