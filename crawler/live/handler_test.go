package live

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/ratelimit"
)

// newTestHandler returns a Handler over a Crawler that has not run, and
// the server serving it.
func newTestHandler(t *testing.T, opt Options) (*Handler, *crawler.Crawler, *httptest.Server) {
	t.Helper()
	c, err := crawler.New()
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(NewRecorder(c), opt)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, c, srv
}

func post(t *testing.T, srv *httptest.Server, path string, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Controls need the token, from this origin, by POST; a refused one
// changes nothing.
func TestControlsRefused(t *testing.T) {
	stops := 0
	_, c, srv := newTestHandler(t, Options{Token: "s3cret", Stop: func() { stops++ }})
	same := srv.URL
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, http.StatusForbidden},
		{"wrong token", map[string]string{TokenHeader: "guess"}, http.StatusForbidden},
		{"cross-site fetch", map[string]string{TokenHeader: "s3cret", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site other origin", map[string]string{TokenHeader: "s3cret", "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"foreign Origin", map[string]string{TokenHeader: "s3cret", "Origin": "http://evil.example"}, http.StatusForbidden},
	} {
		for _, path := range []string{"/api/pause", "/api/stop"} {
			if got := post(t, srv, path, tc.header); got != tc.want {
				t.Errorf("%s: POST %s = %d, want %d", tc.name, path, got, tc.want)
			}
		}
	}
	if c.Paused() || stops != 0 {
		t.Fatalf("refused controls acted: paused %v, stops %d", c.Paused(), stops)
	}
	resp, err := http.Get(srv.URL + "/api/pause?x=" + "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || c.Paused() {
		t.Errorf("GET /api/pause = %d (paused %v), want 405", resp.StatusCode, c.Paused())
	}
	ok := map[string]string{TokenHeader: "s3cret", "Sec-Fetch-Site": "same-origin", "Origin": same}
	if got := post(t, srv, "/api/pause", ok); got != http.StatusNoContent || !c.Paused() {
		t.Fatalf("POST /api/pause with token = %d, paused %v", got, c.Paused())
	}
	if got := post(t, srv, "/api/resume", map[string]string{TokenHeader: "s3cret"}); got != http.StatusNoContent || c.Paused() {
		t.Fatalf("POST /api/resume with token = %d, paused %v", got, c.Paused())
	}
	post(t, srv, "/api/stop", ok)
	post(t, srv, "/api/stop", ok)
	if stops != 1 {
		t.Errorf("two stops called Stop %d times, want once", stops)
	}
}

// Without a token no control is allowed at all.
func TestControlsWithoutToken(t *testing.T) {
	_, c, srv := newTestHandler(t, Options{})
	if got := post(t, srv, "/api/pause", map[string]string{TokenHeader: ""}); got != http.StatusForbidden || c.Paused() {
		t.Errorf("POST /api/pause on a Handler without token = %d", got)
	}
}

// The page is served with a policy that runs only its own script and
// calls nowhere else, and it names no other origin.
func TestPage(t *testing.T) {
	_, _, srv := newTestHandler(t, Options{})
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != 200 || !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("GET / = %d, CSP %q", resp.StatusCode, csp)
	}
	for _, name := range []string{"assets/index.html", "assets/app.js", "assets/app.css", "assets/frontier.js", "assets/job.html", "assets/job.js"} {
		b, _ := assets.ReadFile(name)
		if strings.Contains(string(b), "http://") && !strings.Contains(string(b), "http://www.w3.org/2000/svg") || strings.Contains(string(b), "https://") {
			t.Errorf("%s names another origin", name)
		}
		if strings.Contains(string(b), "innerHTML") || strings.Contains(string(b), "insertAdjacentHTML") {
			t.Errorf("%s writes markup", name)
		}
	}
	for _, path := range []string{"/app.js", "/app.css", "/frontier.js", "/api/status", "/api/chart", "/api/hosts", "/api/errors", "/api/log", "/api/frontier"} {
		r, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Errorf("GET %s = %d", path, r.StatusCode)
		}
	}
}

// testHost returns key's record in r, made on first sight, for a test to
// set its figures before it asks r anything (no shard lock is held).
func testHost(r *Recorder, key, rawURL string) *hostRec {
	return r.hosts.shard(key).host(key, rawURL)
}

// fillHosts gives r n hosts with varied figures.
func fillHosts(r *Recorder, n int, now time.Time) {
	for i := range n {
		h := testHost(r, fmt.Sprintf("h%06d.example", i), fmt.Sprintf("http://h%06d.example/", i))
		h.requests = int64(i % 97)
		h.inFlight = i % 3
		h.pace = ratelimit.HostStatus{Delay: time.Duration(i%7) * time.Second}
		h.last = now.Add(-time.Duration(i%13) * time.Second)
		if i%10 == 0 {
			h.throttled = []time.Time{now}
		}
	}
}

// The host table is filtered, sorted and paged on the server.
func TestHostsQuery(t *testing.T) {
	c, _ := crawler.New()
	r := NewRecorder(c)
	now := time.Now()
	fillHosts(r, 1000, now)
	ctx := context.Background()
	p := r.Hosts(ctx, HostQuery{Search: "H0001", Limit: 5})
	if p.Total != 100 || p.Hosts != 1000 || len(p.Rows) != 5 || p.Rows[0].Key != "h000100.example" || p.Rows[4].Key != "h000104.example" {
		t.Errorf("search h0001: total %d of %d, rows %v", p.Total, p.Hosts, keysOf(p.Rows))
	}
	p = r.Hosts(ctx, HostQuery{Sort: "requests", Desc: true, Limit: 3, Offset: 0})
	if p.Rows[0].Requests != 96 || p.Rows[2].Requests != 96 || p.Rows[0].Key > p.Rows[1].Key {
		t.Errorf("sort requests desc: %+v", p.Rows)
	}
	p = r.Hosts(ctx, HostQuery{Sort: "recent_429", Desc: true, Limit: 200})
	for i, row := range p.Rows {
		if (i < 100) != (row.Recent429 == 1) {
			t.Fatalf("sort recent_429 desc: row %d %+v", i, row)
		}
	}
	p = r.Hosts(ctx, HostQuery{State: StateActive, Limit: 1})
	if p.Total != 666 || p.Rows[0].State != StateActive {
		t.Errorf("state active: %d, %+v", p.Total, p.Rows)
	}
	p = r.Hosts(ctx, HostQuery{Offset: 990, Limit: 50})
	if len(p.Rows) != 10 || p.Rows[9].Key != "h000999.example" {
		t.Errorf("last page: %v", keysOf(p.Rows))
	}
}

func keysOf(rows []HostRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Key
	}
	return out
}

// BenchmarkHosts100k is one request of the host table with 100,000 hosts,
// sorted by a figure, searched, and a page of it.
func BenchmarkHosts100k(b *testing.B) {
	c, _ := crawler.New()
	r := NewRecorder(c)
	fillHosts(r, 100_000, time.Now())
	ctx := context.Background()
	for _, q := range []HostQuery{{Sort: "key"}, {Sort: "load", Desc: true}, {Search: "h0999", Sort: "delay"}} {
		b.Run(fmt.Sprintf("sort=%s,q=%s", q.Sort, q.Search), func(b *testing.B) {
			for b.Loop() {
				p := r.Hosts(ctx, q)
				if len(p.Rows) == 0 {
					b.Fatal("no rows")
				}
			}
		})
	}
}

// A host over the load its delay allows raises an alert; one within it
// does not.
func TestOverloadAlert(t *testing.T) {
	c, _ := crawler.New()
	r := NewRecorder(c)
	now := time.Now()
	r.now = func() time.Time { return now }
	polite, rude := testHost(r, "polite.example", ""), testHost(r, "rude.example", "")
	for i := range 12 {
		polite.starts = append(polite.starts, now.Add(-time.Duration(11-i)*5*time.Second).UnixNano())
	}
	for i := range 20 {
		rude.starts = append(rude.starts, now.Add(-time.Duration(19-i)*time.Second).UnixNano())
	}
	polite.minDelay, rude.minDelay = 5*time.Second, 5*time.Second
	if polite.overloaded(now) || !rude.overloaded(now) {
		t.Fatalf("overloaded: polite %v, rude %v", polite.overloaded(now), rude.overloaded(now))
	}
	s := r.Status(context.Background(), false)
	if len(s.Alerts) == 0 || !strings.Contains(s.Alerts[0], "rude.example") || strings.Contains(s.Alerts[0], "polite.example") {
		t.Errorf("alerts %q", s.Alerts)
	}
	row, _, _ := r.Journal("rude.example")
	if row.LoadPerMin != 20 || row.AllowedPerMin != 12 || row.LoadPct < 166 || !row.Overloaded {
		t.Errorf("rude row %+v", row)
	}
}

// The chart has one point per second since the start, and a second's
// outcomes land in its series.
func TestChart(t *testing.T) {
	c, _ := crawler.New()
	r := NewRecorder(c)
	now := time.Unix(1_800_000_000, 0)
	r.now = func() time.Time { return now }
	start := now.Add(-10 * time.Second)
	r.secs.add(start.Add(2*time.Second), Outcome2xx)
	r.secs.add(start.Add(2*time.Second), Outcome2xx)
	r.secs.add(start.Add(3*time.Second), OutcomeRobots)
	r.secs.add(now, Outcome5xx) // the current second is not complete: not charted
	ch := r.Chart(start)
	b, _ := json.Marshal(ch)
	if len(ch.Series["2xx"]) != 10 || ch.Series["2xx"][2] != 2 || ch.Series["robots"][3] != 1 || ch.Series["5xx"][9] != 0 {
		t.Errorf("chart %s", b)
	}
	// An hour later the ring has moved on: old seconds read as zero.
	now = now.Add(2 * window)
	if ch := r.Chart(start); len(ch.Series["2xx"]) != int(window/time.Second) || ch.Series["2xx"][0] != 0 {
		t.Errorf("chart after two hours: %d points", len(ch.Series["2xx"]))
	}
}

// A host whose revisits wait past the eight delays politeness lets them
// wait is named as one whose freshness cannot be met politely; one whose
// revisits wait less is not.
func TestFreshnessDebt(t *testing.T) {
	c, _ := crawler.New()
	r := NewRecorder(c)
	now := time.Now()
	r.now = func() time.Time { return now }
	for key, wait := range map[string]time.Duration{"busy.example": 20 * time.Second, "easy.example": 2 * time.Second} {
		for i := range 6 {
			at := now.Add(time.Duration(i) * time.Second)
			r.request(context.Background(), &crawler.Request{Key: key, URL: "http://" + key + "/p", Started: at, Answered: at,
				Status: 200, Due: at.Add(-wait), Pace: ratelimit.HostStatus{Delay: time.Second}})
		}
	}
	busy, _, _ := r.Journal("busy.example")
	easy, _, _ := r.Journal("easy.example")
	if !busy.FreshnessCapped || busy.FreshnessDebtPct != 250 || busy.Revisits != 6 || busy.RevisitWaitMS != 20000 {
		t.Errorf("busy host %+v, want capped at 250 %%", busy)
	}
	if easy.FreshnessCapped || easy.FreshnessDebtPct != 25 {
		t.Errorf("easy host %+v, want 25 %%, not capped", easy)
	}
	s := r.Status(context.Background(), false)
	found := false
	for _, a := range s.Alerts {
		if strings.Contains(a, "cannot be kept fresh") {
			found = strings.Contains(a, "busy.example") && !strings.Contains(a, "easy.example")
		}
	}
	if !found {
		t.Errorf("alerts %q do not name busy.example alone", s.Alerts)
	}
	p := r.Hosts(context.Background(), HostQuery{Sort: "freshness", Desc: true})
	if len(p.Rows) != 2 || p.Rows[0].Key != "busy.example" {
		t.Errorf("sorted by freshness debt: %v", keysOf(p.Rows))
	}
}

// /api/frontier counts the queued URLs by due time, names the one overdue
// longest, and escapes it: a URL built to break out of markup comes as
// JSON text.
func TestFrontierAPI(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	t.Cleanup(site.Close)
	c, err := crawler.New()
	if err != nil {
		t.Fatal(err)
	}
	c.Pause() // the seeds stay queued
	h := NewHandler(NewRecorder(c), Options{})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func() (Frontier, string) {
		resp, err := http.Get(srv.URL + "/api/frontier")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		var f Frontier
		if err := json.NewDecoder(io.TeeReader(resp.Body, &b)).Decode(&f); err != nil {
			t.Fatal(err)
		}
		return f, b.String()
	}
	if f, _ := get(); f.Error == "" {
		t.Errorf("before Run: %+v, want an error", f)
	}
	hostile := site.URL + `/a?q="><img src=x onerror=alert(1)>`
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, hostile, site.URL+"/b", site.URL+"/c") }()
	t.Cleanup(func() { cancel(); <-done })
	var f Frontier
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for f, body = get(); f.Queued < 3 && time.Now().Before(deadline); f, body = get() {
		time.Sleep(100 * time.Millisecond) // polling the cached panel until the seeds are in
	}
	if f.Queued != 3 || len(f.Buckets) != 7 || f.Buckets[0].Label != "overdue" || f.Buckets[0].Count != 3 || f.Approximate {
		t.Fatalf("frontier %s", body)
	}
	if !strings.Contains(f.OldestURL, "onerror=alert(1)") || f.OldestKey == "" {
		t.Errorf("oldest %q of %q, want the hostile seed", f.OldestURL, f.OldestKey)
	}
	if strings.ContainsAny(body, "<>") {
		t.Errorf("markup characters unescaped in %s", body)
	}
}
