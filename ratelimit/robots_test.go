package ratelimit_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots"
)

// The limiter plugs into the robots gate without glue.
var (
	_ robots.Pacer = (*ratelimit.HostLimiter)(nil)
	_              = robots.GateConfig{Key: (*ratelimit.HostLimiter)(nil).Key}
)

func TestGateFetchSpendsTheHostsToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /private\nCrawl-delay: 4\n")
	}))
	defer srv.Close()
	lim, clock := newLimiter(t, ratelimit.Config{})
	gate, err := robots.NewGate(robots.GateConfig{Agent: "heedbot", Pacer: lim, Key: lim.Key, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	u := mustURL(t, srv.URL+"/page")
	key := lim.Key(u)

	v, err := gate.Check(context.Background(), u)
	if err != nil || !v.Allowed || !v.Fetched {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	// The crawler hands the Crawl-delay on, then asks when the page may go.
	lim.SetCrawlDelay(key, v.Entry.CrawlDelay)
	if s := lim.Status(key); s.InFlight != 0 || !s.ReadyAt.Equal(t0.Add(4*time.Second)) || s.Reason != ratelimit.ReasonCrawlDelay {
		t.Fatalf("after the robots.txt fetch: %+v", s)
	}
}

func TestGateRobots503PausesTheHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	lim, clock := newLimiter(t, ratelimit.Config{})
	gate, _ := robots.NewGate(robots.GateConfig{Agent: "heedbot", Pacer: lim, Key: lim.Key, Clock: clock})
	u := mustURL(t, srv.URL+"/page")

	v, err := gate.Check(context.Background(), u)
	if err != nil || v.Allowed || v.RetryAt.IsZero() {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	if s := lim.Status(lim.Key(u)); !s.PausedUntil.Equal(t0.Add(120 * time.Second)) {
		t.Fatalf("limiter not paused by the robots.txt 503: %+v", s)
	}
}
