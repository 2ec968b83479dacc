package crawler_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
)

// expiringStore is a MemoryStore whose first lease comes expired already,
// as a shared Store's does to a process that was paused past its
// liveness timeout; it notes when it hands out a lease that is not.
type expiringStore struct {
	frontier.MemoryStore
	mu    sync.Mutex
	n     int
	valid time.Time // when the first lease not expired was handed out
}

func (s *expiringStore) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	c, err := s.MemoryStore.Claim(ctx, now, opt)
	if err != nil || c.Lease == nil {
		return c, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.n == 1 {
		c.Lease.Expires = now.Add(-time.Second)
	} else if s.valid.IsZero() {
		s.valid = time.Now()
	}
	return c, nil
}

// A worker makes no request under a lease past its Expires — not the
// page, nor the robots.txt the page needs: the item goes back, and the
// robots.txt is fetched under the next lease.
func TestNoRequestOnExpiredLease(t *testing.T) {
	var mu sync.Mutex
	var robotsAt []time.Time
	s := newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			robotsAt = append(robotsAt, time.Now())
			mu.Unlock()
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
		},
		"/": htmlPage("home"),
	})
	store := new(expiringStore)
	c := newCrawler(t, crawler.WithStore(store))
	runCrawl(t, c, s.URL+"/")
	mu.Lock()
	defer mu.Unlock()
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(robotsAt) != 1 || store.valid.IsZero() || robotsAt[0].Before(store.valid) {
		t.Errorf("robots.txt requested at %v, the first lease not expired handed out at %v: want one request, under that lease", robotsAt, store.valid)
	}
	if n := s.count("/"); n != 1 {
		t.Errorf("/ fetched %d times, want once", n)
	}
}

// takenBackStore is a MemoryStore that takes back the lease of path's
// first Done, as a shared Store does from a process presumed dead: the
// item goes back to the queue and the Done gets ErrLeaseLost.
type takenBackStore struct {
	frontier.MemoryStore
	path string
	mu   sync.Mutex
	took bool
}

func (s *takenBackStore) Done(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	s.mu.Lock()
	take := !s.took && strings.HasSuffix(l.URL, s.path)
	s.took = s.took || take
	s.mu.Unlock()
	if take {
		if err := s.MemoryStore.Requeue(ctx, l, now, frontier.Outcome{Pace: o.Pace}); err != nil {
			return err
		}
		return frontier.ErrLeaseLost
	}
	return s.MemoryStore.Done(ctx, l, now, o)
}

// A page reported under a lease the Store took back, then handed to the
// same crawl again, is fetched again — the Store's to decide — but
// reported once: a process presumed dead and back writes one record of
// a URL.
func TestLostLeaseReportedOnce(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": htmlPage("home", "/a"), "/a": htmlPage("a", "/b"), "/b": htmlPage("b"),
	})
	store := &takenBackStore{path: "/a"}
	c := newCrawler(t, crawler.WithStore(store))
	pages := recordPages(c)
	runCrawl(t, c, s.URL+"/")
	if !store.took {
		t.Fatal("the Store never took a lease back")
	}
	if n := s.count("/a"); n != 2 {
		t.Errorf("/a fetched %d times, want 2: again once its lease was taken back", n)
	}
	for _, path := range []string{"/", "/a", "/b"} {
		if n := pages.count(path); n != 1 {
			t.Errorf("%s reported %d times, want once", path, n)
		}
	}
}

// overlapStore is a MemoryStore that takes back the first lease of path
// while its page is being fetched, as a shared Store does from a process
// presumed dead while paused mid-fetch: the item is handed out again at
// once — here to another worker of the same crawl — and the first
// lease's Done gets ErrLeaseLost.
type overlapStore struct {
	frontier.MemoryStore
	path  string
	mu    sync.Mutex
	first *frontier.Lease
}

func (s *overlapStore) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	c, err := s.MemoryStore.Claim(ctx, now, opt)
	if err == nil && c.Lease != nil && strings.HasSuffix(c.Lease.URL, s.path) {
		s.mu.Lock()
		if s.first == nil {
			s.first = c.Lease
		}
		s.mu.Unlock()
	}
	return c, err
}

// PollInterval makes the crawl ask the Store again while its workers
// wait, as of a Store other processes change: the item taken back is
// claimed without a Done of this crawl to wake a worker.
func (s *overlapStore) PollInterval() time.Duration { return 10 * time.Millisecond }

// takeBack puts the first lease's item back in the queue.
func (s *overlapStore) takeBack(ctx context.Context) error {
	s.mu.Lock()
	l := s.first
	s.mu.Unlock()
	return s.MemoryStore.Requeue(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace})
}

// Two workers of one crawl fetching the same page at once — the first
// under a lease the Store took back while it fetched, the second under
// the lease the Store handed out again — make one report of it, whichever
// ends first: a process presumed dead while paused mid-fetch, then back,
// writes one record of the URL.
func TestOverlappingLeasesReportedOnce(t *testing.T) {
	store := &overlapStore{path: "/a"}
	reported := make(chan struct{})
	var once sync.Once
	var fetches sync.Mutex
	n := 0
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": htmlPage("home", "/a"),
		"/a": func(w http.ResponseWriter, r *http.Request) {
			fetches.Lock()
			n++
			first := n == 1
			fetches.Unlock()
			if first {
				// Taken back mid-fetch; this answer comes only once the
				// second fetch of /a has been reported.
				if err := store.takeBack(r.Context()); err != nil {
					t.Errorf("takeBack: %v", err)
				}
				select {
				case <-reported:
				case <-time.After(10 * time.Second):
					t.Error("the page was not fetched again while its first fetch was under way")
				}
			}
			htmlPage("a")(w, r)
		},
	})
	c := newCrawler(t, crawler.WithStore(store), crawler.WithWorkers(4))
	pages := recordPages(c)
	c.OnPage(func(_ context.Context, p *crawler.Page) {
		if p.URL.Path == "/a" {
			once.Do(func() { close(reported) })
		}
	})
	runCrawl(t, c, s.URL+"/")
	if got := s.count("/a"); got != 2 {
		t.Errorf("/a fetched %d times, want 2: again while its first fetch was under way", got)
	}
	for _, path := range []string{"/", "/a"} {
		if n := pages.count(path); n != 1 {
			t.Errorf("%s reported %d times, want once", path, n)
		}
	}
}
