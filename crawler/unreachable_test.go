package crawler_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
)

// brokenRobots are the ways a real host's robots.txt is unreachable, each
// a complete disallow under RFC 9309 §2.3.1.4.
var brokenRobots = map[string]http.HandlerFunc{
	"503 Retry-After seconds": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	},
	"503 Retry-After date": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	},
	"429 Retry-After": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	},
	"503": func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	},
	"hangs past the header timeout": func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	},
}

// brokenWeb is a healthy host A whose pages link to five pages of host B,
// three from A's home page and two from a page found after B's robots.txt
// was asked for. It returns A's home page and B's five URLs.
func brokenWeb(t *testing.T, b string) (seed string, bURLs []string) {
	t.Helper()
	for i := range 5 {
		bURLs = append(bURLs, fmt.Sprintf("%s/b%d", b, i))
	}
	a := newSite(t, defaultRobots, map[string]http.HandlerFunc{
		"/":       htmlPage("A", append([]string{"/a/next"}, bURLs[:3]...)...),
		"/a/next": htmlPage("A next", bURLs[3:]...),
	})
	return a.URL + "/", bURLs
}

// TestUnreachableRobotsHoldsNothing: the URLs of a host whose robots.txt
// is unreachable — queued or found later — are each reported
// robots-unavailable once, at once: the crawl does not wait out the host's
// rest (here up to WithMaxDelay, a minute) nor ask for robots.txt again.
// Before the fix it took a minute per URL.
func TestUnreachableRobotsHoldsNothing(t *testing.T) {
	faults := map[string]func(t *testing.T) (b string, robotsCalls func() int, pageCalls func() int){
		"connection refused": func(t *testing.T) (string, func() int, func() int) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			zero := func() int { return 0 }
			return "http://" + addr, zero, zero
		},
	}
	for name, h := range brokenRobots {
		faults[name] = func(t *testing.T) (string, func() int, func() int) {
			routes := map[string]http.HandlerFunc{"/robots.txt": h}
			b := newSite(t, "", routes)
			pages := func() int { return len(b.log) - b.count("/robots.txt") }
			return b.URL, func() int { return b.count("/robots.txt") }, pages
		}
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			b, robotsCalls, pageCalls := fault(t)
			seed, bURLs := brokenWeb(t, b)
			c := newCrawler(t, crawler.WithMaxDelay(time.Minute), crawler.WithRetries(2),
				crawler.WithConnectTimeout(time.Second), crawler.WithHeaderTimeout(500*time.Millisecond), crawler.WithFetchTimeout(5*time.Second))
			errs := recordErrors(c)
			pages := recordPages(c)
			start := time.Now()
			runCrawl(t, c, seed)
			// Generous: the host's rest is a minute, each URL used to
			// wait for one.
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the crawl took %v: it waited for the broken host", took)
			}
			if n := robotsCalls(); n > 1 {
				t.Errorf("B's robots.txt requested %d times, want once", n)
			}
			if n := pageCalls(); n != 0 {
				t.Errorf("%d requests to B's pages, want none", n)
			}
			if pages.get("/") == nil || pages.get("/a/next") == nil {
				t.Error("A's pages were not fetched")
			}
			for _, u := range bURLs {
				got := errs.errs[u]
				if len(got) != 1 {
					t.Errorf("%s reported %d times (%v), want once", u, len(got), got)
					continue
				}
				if !errors.Is(got[0], crawler.ErrRobotsUnavailable) || kindOf(got[0]) != "robots-unavailable" {
					t.Errorf("%s: %v, want robots-unavailable", u, got[0])
				}
			}
			if n := statsOf(t, c).Errors["robots-unavailable"]; n != int64(len(bURLs)) {
				t.Errorf("Stats.Errors[robots-unavailable] = %d, want %d", n, len(bURLs))
			}
		})
	}
}

// TestRobotsWaitIsBounded: with WithRobotsWait, a URL waits for an
// unreachable robots.txt only while its retry is due within the wait;
// robots.txt that asks for an hour's rest has its host's URLs reported at
// once.
func TestRobotsWaitIsBounded(t *testing.T) {
	b := newSite(t, "", map[string]http.HandlerFunc{"/robots.txt": brokenRobots["503 Retry-After seconds"]})
	seed, bURLs := brokenWeb(t, b.URL)
	c := newCrawler(t, crawler.WithMaxDelay(time.Minute), crawler.WithRobotsWait(5*time.Second))
	errs := recordErrors(c)
	start := time.Now()
	runCrawl(t, c, seed)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the crawl took %v: URLs waited longer than WithRobotsWait", took)
	}
	for _, u := range bURLs {
		if got := errs.errs[u]; len(got) != 1 || kindOf(got[0]) != "robots-unavailable" {
			t.Errorf("%s: %v, want one robots-unavailable", u, got)
		}
	}
	if n := b.count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt requested %d times, want once", n)
	}
}

// TestRobotsWaitRetryAfter: a robots.txt that asks for a short rest, due
// within WithRobotsWait, is asked for again once the rest is over, and the
// host's URLs are fetched then.
func TestRobotsWaitRetryAfter(t *testing.T) {
	var b *testSite
	b = newSite(t, "", map[string]http.HandlerFunc{
		"/robots.txt": func(w http.ResponseWriter, r *http.Request) {
			if b.count("/robots.txt") == 1 {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, defaultRobots)
		},
		"/b0": htmlPage("b0"), "/b1": htmlPage("b1"), "/b2": htmlPage("b2"), "/b3": htmlPage("b3"), "/b4": htmlPage("b4"),
	})
	seed, bURLs := brokenWeb(t, b.URL)
	c := newCrawler(t, crawler.WithMaxDelay(time.Minute), crawler.WithRobotsWait(4*time.Second))
	errs := recordErrors(c)
	pages := recordPages(c)
	runCrawl(t, c, seed)
	for _, u := range bURLs {
		if got := errs.errs[u]; len(got) != 0 {
			t.Errorf("%s reported %v, want it fetched after the retry", u, got)
		}
		if pages.get(strings.TrimPrefix(u, b.URL)) == nil {
			t.Errorf("%s not fetched", u)
		}
	}
	at := b.requests("/robots.txt")
	if len(at) != 2 {
		t.Fatalf("robots.txt requested %d times, want twice", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < 900*time.Millisecond {
		t.Errorf("robots.txt asked again after %v, before its Retry-After of 1 s", gap)
	}
}

// TestGivenUpHostReportsEachURLOnce: a host given up after failing has every
// URL it still had queued reported once, through the Store like any item.
func TestGivenUpHostReportsEachURLOnce(t *testing.T) {
	var paths []string
	routes := map[string]http.HandlerFunc{}
	for i := range 30 {
		p := fmt.Sprintf("/%d", i)
		paths = append(paths, p)
		routes[p] = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3600")
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}
	routes["/"] = htmlPage("home", paths...)
	s := newSite(t, defaultRobots, routes)
	c := newCrawler(t, crawler.WithHostFailures(3), crawler.WithRetries(1), crawler.WithMaxDelay(100*time.Millisecond))
	errs := recordErrors(c)
	pages := recordPages(c)
	runCrawl(t, c, s.URL+"/")
	given := 0
	for _, p := range paths {
		got := errs.errs[s.URL+p]
		if n := len(got) + pages.count(p); n != 1 {
			t.Errorf("%s reported %d times (errors %v), want once", p, n, got)
			continue
		}
		if len(got) == 1 && errors.Is(got[0], frontier.ErrGivenUp) {
			given++
		}
	}
	if st := statsOf(t, c); int64(given) != st.Errors["host-given-up"] || given < 27 {
		t.Errorf("%d URLs reported given up, Stats says %d; want the 27+ still queued", given, st.Errors["host-given-up"])
	}
}
