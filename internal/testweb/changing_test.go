package testweb

import (
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// epoch is where the changing webs of these tests start.
var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testClock is a clock set by hand, backwards too: a changing web is a
// function of time, so a test may visit its times in any order.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: epoch} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func (c *testClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// newChanging makes a changing web on a test clock reading epoch, with
// authorities a.test, b.test, …
func newChanging(t *testing.T, cfg ChangingConfig) (*ChangingWeb, *testClock) {
	t.Helper()
	clock := newTestClock()
	cfg.Clock, cfg.Start = clock.Now, epoch
	var authorities []string
	for i := range cfg.Hosts {
		authorities = append(authorities, string(rune('a'+i%26))+strings.Repeat("x", i/26)+".test")
	}
	w, err := NewChanging(cfg, authorities)
	if err != nil {
		t.Fatal(err)
	}
	return w, clock
}

// serveOne serves one request through w's handler into log.
func serveOne(w *ChangingWeb, log *Log, method, url string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	w.Handler(log).ServeHTTP(rec, req)
	return rec
}

func TestChangingConfigRejected(t *testing.T) {
	bad := []ChangingConfig{
		{Hosts: 0, PagesPerHost: 1},
		{Hosts: 1, PagesPerHost: 0},
		{Hosts: 1, PagesPerHost: 1, MinChangeInterval: time.Microsecond},
		{Hosts: 1, PagesPerHost: 1, MinChangeInterval: time.Hour, MaxChangeInterval: time.Minute},
		{Hosts: 1, PagesPerHost: 1, StaticShare: 1.5},
		{Hosts: 1, PagesPerHost: 1, WeakETagShare: 0.6, NoValidatorShare: 0.6},
		{Hosts: 1, PagesPerHost: 1, GoneShare: 0.7, MovedShare: 0.7},
		{Hosts: 1, PagesPerHost: 1, NewPageInterval: -time.Second},
		{Hosts: 1, PagesPerHost: 1, RobotsDisallow: "p/1"},
	}
	for _, cfg := range bad {
		if _, err := NewChanging(cfg, VirtualAuthorities(max(cfg.Hosts, 1))[:cfg.Hosts]); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	if _, err := NewChanging(ChangingConfig{Hosts: 2, PagesPerHost: 1}, []string{"a.test"}); err == nil {
		t.Error("one authority for two hosts: no error")
	}
	if _, err := NewChanging(ChangingConfig{Hosts: 1, PagesPerHost: 1}, []string{"A.test"}); err == nil {
		t.Error("an authority not in canonical form: no error")
	}
}

// snapshot is everything observable of a web over [epoch, epoch+span]:
// its pages, every change, and every response body and validator at a few
// times.
func snapshot(t *testing.T, cfg ChangingConfig, span time.Duration) string {
	t.Helper()
	w, clock := newChanging(t, cfg)
	var b strings.Builder
	end := epoch.Add(span)
	for _, p := range w.Pages(end) {
		b.WriteString(p.URL + " " + p.Validators.String() + " " + p.Fate.String() + " " + p.FateAt.String() + " " + p.Born.String() + "\n")
		for _, c := range w.Changes(p.URL, epoch, end) {
			b.WriteString(" " + c.Format(time.RFC3339Nano))
		}
		b.WriteString("\n")
	}
	for _, at := range []time.Duration{0, span / 3, span} {
		clock.Set(epoch.Add(at))
		for _, p := range append(w.Pages(epoch.Add(at)), ChangingPage{URL: w.Seeds()[0]}) {
			rec := serveOne(w, nil, http.MethodGet, p.URL, nil)
			b.WriteString(rec.Header().Get("ETag") + rec.Header().Get("Last-Modified") + rec.Body.String())
		}
		rec := serveOne(w, nil, http.MethodGet, "http://a.test/sitemap.xml", nil)
		b.WriteString(rec.Body.String())
	}
	return b.String()
}

func TestChangingIsDeterministic(t *testing.T) {
	cfg := TypicalChangingConfig(3, 20, 42)
	cfg.LyingETagShare = 0 // its tags number the responses
	cfg.NewPageInterval = time.Minute
	a := snapshot(t, cfg, 2*time.Hour)
	if b := snapshot(t, cfg, 2*time.Hour); a != b {
		t.Fatal("the same config made two different webs")
	}
	cfg.Seed++
	if c := snapshot(t, cfg, 2*time.Hour); a == c {
		t.Fatal("another seed made the same web")
	}
	if !strings.Contains(a, "/p/20") {
		t.Error("no page appeared in two hours with one a minute")
	}
}

// The schedule is the same whatever order it is asked in: a judge asking
// far ahead first sees what a server asking step by step sees.
func TestChangingScheduleIndependentOfQueryOrder(t *testing.T) {
	cfg := ChangingConfig{Hosts: 1, PagesPerHost: 5, Seed: 3, MinChangeInterval: time.Second, MaxChangeInterval: time.Minute, NewPageInterval: 10 * time.Second}
	w1, _ := newChanging(t, cfg)
	w2, _ := newChanging(t, cfg)
	end := epoch.Add(time.Hour)
	for s := epoch; s.Before(end); s = s.Add(7 * time.Second) {
		w1.Pages(s)
		w1.VersionAt("http://a.test/p/2", s)
	}
	p1, p2 := w1.Pages(end), w2.Pages(end)
	if !slices.Equal(p1, p2) {
		t.Fatalf("pages differ: %d vs %d", len(p1), len(p2))
	}
	for _, p := range p1 {
		if c1, c2 := w1.Changes(p.URL, epoch, end), w2.Changes(p.URL, epoch, end); !slices.Equal(c1, c2) {
			t.Fatalf("%s: changes differ", p.URL)
		}
	}
}

// Each page changes as a Poisson process of its rate: over a long span its
// number of changes is within a few standard deviations (√λT) of λT, and in
// total across the pages within a tighter bound; the gaps between changes
// have the exponential's coefficient of variation, 1.
func TestChangingPoissonRates(t *testing.T) {
	cfg := ChangingConfig{Hosts: 2, PagesPerHost: 50, Seed: 11, MinChangeInterval: time.Minute, MaxChangeInterval: time.Hour, StaticShare: 0.1}
	w, _ := newChanging(t, cfg)
	span := 200 * time.Hour
	var want, got float64
	static := 0
	var gaps []float64 // gaps × λ: exponential of mean 1
	for _, p := range w.Pages(epoch) {
		changes := w.Changes(p.URL, epoch, epoch.Add(span))
		if p.Rate == 0 {
			static++
			if len(changes) > 0 {
				t.Errorf("%s never changes but changed %d times", p.URL, len(changes))
			}
			continue
		}
		if p.Rate < 1/3600.0*(1-1e-9) || p.Rate > 1/60.0*(1+1e-9) {
			t.Errorf("%s: rate %v outside [1/h, 1/min]", p.URL, p.Rate)
		}
		mean := p.Rate * span.Seconds()
		if n := float64(len(changes)); math.Abs(n-mean) > 5*math.Sqrt(mean) {
			t.Errorf("%s: %v changes in %v at rate %v, expected %.0f ± %.0f", p.URL, n, span, p.Rate, mean, math.Sqrt(mean))
		}
		want += mean
		got += float64(len(changes))
		for i := 1; i < len(changes); i++ {
			gaps = append(gaps, changes[i].Sub(changes[i-1]).Seconds()*p.Rate)
		}
	}
	if math.Abs(got-want) > 4*math.Sqrt(want) {
		t.Errorf("%v changes in all, expected %.0f ± %.0f", got, want, math.Sqrt(want))
	}
	var m, v float64
	for _, g := range gaps {
		m += g
	}
	m /= float64(len(gaps))
	for _, g := range gaps {
		v += (g - m) * (g - m)
	}
	cv := math.Sqrt(v/float64(len(gaps))) / m
	if math.Abs(m-1) > 0.02 || math.Abs(cv-1) > 0.03 {
		t.Errorf("scaled gaps: mean %.3f, coefficient of variation %.3f; want 1 and 1", m, cv)
	}
	if static < 8 || static > 12 {
		t.Errorf("%d of 100 pages static, want about 10", static)
	}
}

// The rates spread log-uniformly: each decade of the range holds its share
// of the pages.
func TestChangingRatesLogUniform(t *testing.T) {
	w, _ := newChanging(t, ChangingConfig{Hosts: 4, PagesPerHost: 250, Seed: 5, MinChangeInterval: time.Second, MaxChangeInterval: 1000 * time.Second})
	var decades [3]int
	for _, p := range w.Pages(epoch) {
		d := int(math.Floor(-math.Log10(p.Rate)))
		decades[min(max(d, 0), 2)]++
	}
	for i, n := range decades {
		if n < 310 || n > 357 {
			t.Errorf("decade %d holds %d of 1000 pages, want about 333", i, n)
		}
	}
}

// Pages get their kinds in close to the configured shares, even on a small
// web.
func TestChangingShares(t *testing.T) {
	cfg := ChangingConfig{Hosts: 2, PagesPerHost: 50, Seed: 9, WeakETagShare: 0.2, NoValidatorShare: 0.1,
		LyingLastModifiedShare: 0.1, LyingETagShare: 0.1, GoneShare: 0.1, MovedShare: 0.1, FateWithin: time.Hour}
	w, _ := newChanging(t, cfg)
	kinds := map[Validators]int{}
	fates := map[Fate]int{}
	for _, p := range w.Pages(epoch) {
		kinds[p.Validators]++
		fates[p.Fate]++
		if p.Fate != FateNone && (p.FateAt.Before(epoch) || p.FateAt.After(epoch.Add(time.Hour))) {
			t.Errorf("%s: fate at %v, outside the first hour", p.URL, p.FateAt)
		}
		if p.Fate == FateGone && p.GoneStatus != 404 && p.GoneStatus != 410 {
			t.Errorf("%s: gone with status %d", p.URL, p.GoneStatus)
		}
	}
	want := map[Validators]int{StrongETag: 50, WeakETag: 20, NoValidators: 10, LyingLastModified: 10, LyingETag: 10}
	for k, n := range want {
		if d := kinds[k] - n; d < -3 || d > 3 {
			t.Errorf("%v: %d of 100 pages, want about %d", k, kinds[k], n)
		}
	}
	for f, n := range map[Fate]int{FateGone: 10, FateMoved: 10} {
		if d := fates[f] - n; d < -3 || d > 3 {
			t.Errorf("%v: %d of 100 pages, want about %d", f, fates[f], n)
		}
	}
}

// A growing host adds pages as a Poisson process, each linked from the home
// page from when it appears and never before.
func TestChangingGrowth(t *testing.T) {
	w, clock := newChanging(t, ChangingConfig{Hosts: 1, PagesPerHost: 3, Seed: 2, NewPageInterval: time.Minute})
	born := w.Pages(epoch.Add(10 * time.Hour))
	if n := len(born) - 3; n < 600-5*25 || n > 600+5*25 {
		t.Errorf("%d new pages in 10 hours at one a minute", n)
	}
	p := born[3]
	if p.URL != "http://a.test/p/3" || !p.Born.After(epoch) {
		t.Fatalf("first new page %+v", p)
	}
	clock.Set(p.Born.Add(-time.Millisecond))
	home := serveOne(w, nil, http.MethodGet, "http://a.test/", nil)
	if strings.Contains(home.Body.String(), `"/p/3"`) {
		t.Error("the home page links to a page before it appears")
	}
	if rec := serveOne(w, nil, http.MethodGet, p.URL, nil); rec.Code != http.StatusNotFound {
		t.Errorf("a page before it appears: %d, want 404", rec.Code)
	}
	clock.Set(p.Born)
	after := serveOne(w, nil, http.MethodGet, "http://a.test/", nil)
	if !strings.Contains(after.Body.String(), `"/p/3"`) {
		t.Error("the home page does not link to a page that has appeared")
	}
	if home.Header().Get("ETag") == after.Header().Get("ETag") {
		t.Error("the home page's ETag stayed as a page appeared")
	}
	if lm, _ := http.ParseTime(after.Header().Get("Last-Modified")); !lm.Equal(p.Born.Truncate(time.Second)) {
		t.Errorf("home Last-Modified %v, want the new page's appearance %v", lm, p.Born)
	}
	if rec := serveOne(w, nil, http.MethodGet, p.URL, nil); rec.Code != http.StatusOK {
		t.Errorf("a page that has appeared: %d", rec.Code)
	}
	if rec := serveOne(w, nil, http.MethodGet, "http://a.test/p/999999", nil); rec.Code != http.StatusNotFound {
		t.Errorf("a page far in the future: %d", rec.Code)
	}
	if !bytes.Contains(serveOne(w, nil, http.MethodGet, "http://a.test/sitemap.xml", nil).Body.Bytes(), []byte("/p/3</loc>")) {
		t.Error("the sitemap does not list the new page")
	}
}
