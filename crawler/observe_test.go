package crawler_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots/gate"
)

// OnRequest hears every request start and end, robots.txt's included, with
// the host's key, the status, the Retry-After and the pacing it led to;
// OnRobots hears the robots.txt fetch.
func TestOnRequest(t *testing.T) {
	s := newSite(t, "User-agent: *\nCrawl-delay: 0\n", map[string]http.HandlerFunc{
		"/": htmlPage("home", "/busy"),
		"/busy": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		},
	})
	c := newCrawler(t, crawler.WithRetries(0))
	var mu sync.Mutex
	var started, ended []crawler.Request
	var robots []*gate.Entry
	c.OnRequest(func(_ context.Context, req *crawler.Request) {
		mu.Lock()
		defer mu.Unlock()
		if req.Answered.IsZero() {
			started = append(started, *req)
		} else {
			ended = append(ended, *req)
		}
	})
	c.OnRobots(func(_ context.Context, key string, e *gate.Entry) {
		mu.Lock()
		defer mu.Unlock()
		if key == "" {
			t.Errorf("OnRobots: empty key")
		}
		robots = append(robots, e)
	})
	runCrawl(t, c, s.URL+"/")
	if len(started) != 3 || len(ended) != 3 {
		t.Fatalf("started %d, ended %d requests; want 3 each (robots.txt, /, /busy)", len(started), len(ended))
	}
	for _, s := range started { // a start's Request holds no earlier request's answer
		if s.Status != 0 || s.Err != nil || s.RetryAfter != "" || s.Size != 0 || s.Failure != ratelimit.FailureNone || s.Pace != (ratelimit.HostStatus{}) {
			t.Errorf("start of %q reported with an answer: %+v", s.URL, s)
		}
	}
	if !ended[0].Robots || ended[0].Status != 200 {
		t.Errorf("first request %+v, want robots.txt answered 200", ended[0])
	}
	if len(robots) != 1 || robots[0].Outcome != gate.OutcomeOK || !robots[0].HasCrawlDelay {
		t.Errorf("OnRobots heard %v, want one fetched robots.txt with its Crawl-delay", robots)
	}
	busy := ended[2]
	if busy.URL != s.URL+"/busy" || busy.Status != 429 || busy.RetryAfter != "0" || busy.Failure != ratelimit.FailureThrottled {
		t.Errorf("/busy ended %+v, want 429 throttled with Retry-After 0", busy)
	}
	if busy.Key == "" || busy.Key != started[2].Key || busy.Started != started[2].Started || !busy.Answered.After(busy.Started) && !busy.Answered.Equal(busy.Started) {
		t.Errorf("/busy: start %+v and end %+v disagree", started[2], busy)
	}
	if busy.Pace.Failures != 1 {
		t.Errorf("/busy: pace after %+v, want one failure counted", busy.Pace)
	}
}

// A paused crawl starts no request — robots.txt included — until resumed,
// then finishes; a pause during a run stops it between pages.
func TestPauseResume(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": htmlPage("home", "/a"), "/a": htmlPage("a", "/b"), "/b": htmlPage("b"),
	})
	c := newCrawler(t, crawler.WithWorkers(1))
	c.Pause()
	if !c.Paused() {
		t.Fatal("Paused() false after Pause")
	}
	var mu sync.Mutex
	var pausedAt time.Time
	pausedNow := make(chan struct{})
	c.OnPage(func(_ context.Context, p *crawler.Page) {
		if p.URL.Path == "/a" {
			c.Pause()
			mu.Lock()
			pausedAt = time.Now()
			mu.Unlock()
			close(pausedNow)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, s.URL+"/") }()

	// Absence is what is tested: a window in which no request may come.
	window := func() {
		select {
		case err := <-done:
			t.Fatalf("Run returned %v while paused", err)
		case <-time.After(300 * time.Millisecond):
		}
	}
	window()
	if n := len(s.targets()); n != 0 {
		t.Fatalf("paused before Run, the site got %d requests: %v", n, s.targets())
	}
	c.Resume()
	<-pausedNow
	window()
	c.Resume()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	at := pausedAt
	mu.Unlock()
	if got := s.requests("/b"); len(got) != 1 || got[0].Sub(at) < 300*time.Millisecond {
		t.Errorf("/b requested at %v, paused at %v: want once, after the pause's window", got, at)
	}
}

// A revisit's Request says when it was due; a page's first fetch has none.
func TestOnRequestRevisitDue(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{"/": htmlPage("home")})
	c := newCrawler(t, crawler.WithFollowLinks(false), crawler.WithDelay(20*time.Millisecond),
		crawler.WithRevisit(crawler.Revisit{Min: time.Millisecond, Max: 20 * time.Millisecond}))
	var mu sync.Mutex
	var pages []crawler.Request
	c.OnRequest(func(_ context.Context, req *crawler.Request) {
		if req.Robots || req.Answered.IsZero() {
			return
		}
		mu.Lock()
		pages = append(pages, *req)
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recordChanges(c, cancel, func(_ string, n int) bool { return n == 3 })
	runRevisiting(t, ctx, c, s.URL+"/")
	mu.Lock()
	defer mu.Unlock()
	if len(pages) < 3 {
		t.Fatalf("%d page requests, want 3", len(pages))
	}
	if !pages[0].Due.IsZero() {
		t.Errorf("first fetch has Due %v, want none", pages[0].Due)
	}
	for _, p := range pages[1:] {
		if p.Due.IsZero() || p.Due.After(p.Answered) {
			t.Errorf("revisit answered %v has Due %v, want one before its answer", p.Answered, p.Due)
		}
	}
}

// Host tells how many of a host's URLs are queued, as a MemoryStore says.
func TestHostQueued(t *testing.T) {
	s := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/": htmlPage("home", "/a", "/b", "/c"), "/a": htmlPage("a"), "/b": htmlPage("b"), "/c": htmlPage("c"),
	})
	c := newCrawler(t, crawler.WithWorkers(1))
	queued := -2
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		if p.URL.Path == "/a" {
			info, err := c.Host(ctx, p.URL.String())
			if err != nil {
				t.Errorf("Host: %v", err)
			}
			queued = info.Queued
		}
	})
	runCrawl(t, c, s.URL+"/")
	if queued != 2 {
		t.Errorf("while /a was handled, Host says %d queued, want 2 (/b, /c)", queued)
	}
}
