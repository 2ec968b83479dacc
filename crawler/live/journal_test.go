package live

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots"
	"github.com/heedcrawl/heed/robots/gate"
)

func robotsEntry(body string, at time.Time) *gate.Entry {
	r := robots.Parse([]byte(body))
	g := r.Group("heed")
	d, has := g.CrawlDelay()
	return &gate.Entry{Outcome: gate.OutcomeOK, Status: 200, Robots: r, Group: g, CrawlDelay: d, HasCrawlDelay: has, CheckedAt: at, FetchedAt: at}
}

// A host's journal has, on one timeline, its robots.txt versions with
// what changed, its 429s with their Retry-After, and its delay backing
// off and recovering; /api/host serves it, and refuses a host never met.
func TestJournal(t *testing.T) {
	c, _ := crawler.New()
	r := NewRecorder(c)
	now := time.Now()
	ctx := context.Background()
	r.robots(ctx, "a.example", robotsEntry("User-agent: *\nDisallow: /private/\n", now))
	answer := func(at time.Time, status int, retryAfter string, pace ratelimit.HostStatus) {
		req := &crawler.Request{Key: "a.example", URL: "http://a.example/p", Started: at}
		r.request(ctx, req)
		end := *req
		end.Answered, end.Status, end.RetryAfter, end.Pace = at, status, retryAfter, pace
		if status == 429 {
			end.Failure = ratelimit.FailureThrottled
		}
		r.request(ctx, &end)
	}
	answer(now.Add(time.Second), 200, "", ratelimit.HostStatus{Delay: time.Second, Reason: ratelimit.ReasonMinDelay})
	answer(now.Add(2*time.Second), 429, "5", ratelimit.HostStatus{Delay: 4 * time.Second, Reason: ratelimit.ReasonBackoff, PausedUntil: now.Add(7 * time.Second)})
	answer(now.Add(9*time.Second), 200, "", ratelimit.HostStatus{Delay: time.Second, Reason: ratelimit.ReasonMinDelay})
	r.robots(ctx, "a.example", robotsEntry("User-agent: *\nDisallow: /private/\nDisallow: /tmp/\nCrawl-delay: 2\n", now.Add(10*time.Second)))

	_, journal, ok := r.Journal("a.example")
	if !ok {
		t.Fatal("no journal for a.example")
	}
	var lines []string
	for _, e := range journal {
		lines = append(lines, e.Kind+": "+e.Text)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"robots: robots.txt ok (200)",
		"throttled: page answered 429 Too Many Requests, Retry-After: 5",
		"delay: backing off: delay 1s → 4s (back-off); paused by Retry-After until",
		"delay: recovering: delay 4s → 1s (min-delay)",
		"robots: robots.txt ok (200), Crawl-delay 2s; changed: Crawl-delay none → 2s; + Disallow: /tmp/",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("journal lacks %q:\n%s", want, text)
		}
	}
	row, _, _ := r.Journal("a.example")
	if row.Recent429 != 1 || row.RobotsOutcome != "ok" || row.CrawlDelayMS != 2000 {
		t.Errorf("row %+v", row)
	}

	srv := httptest.NewServer(NewHandler(r, Options{}))
	defer srv.Close()
	for path, want := range map[string]int{"/api/host?key=a.example": 200, "/api/host?key=never.example": 404} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
}
