package testweb

import (
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// entry is a logged GET of target on a.test at t.
func entry(t time.Time, target string, status int, conditional bool, bytes int64) Entry {
	return Entry{Start: t, End: t, Host: "a.test", Method: http.MethodGet, Target: target, Status: status, Conditional: conditional, Bytes: bytes}
}

func judge(t *testing.T, w *ChangingWeb, entries []Entry, opts FreshnessOptions) *FreshnessReport {
	t.Helper()
	r, err := w.Judge(entries, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// One page changing every ten minutes on average, fetched at known times
// around its known changes: the freshness is what a hand computes.
func TestJudgeHandComputed(t *testing.T) {
	w, _ := newChanging(t, ChangingConfig{Hosts: 1, PagesPerHost: 1, Seed: 3, MinChangeInterval: 10 * time.Minute, MaxChangeInterval: 10 * time.Minute})
	const url = "http://a.test/p/0"
	c := w.Changes(url, epoch, epoch.Add(24*time.Hour))
	if len(c) < 3 {
		t.Fatalf("only %d changes in a day", len(c))
	}
	c1, c2, c3 := c[0], c[1], c[2]
	mid := func(a, b time.Time) time.Time { return a.Add(b.Sub(a) / 2) }
	m1, m2 := mid(c1, c2), mid(c2, c3)
	a := address{c: w.hosts[0].contents[0]}
	size := func(v int) int64 { return w.bodySize(a, v) }
	first := epoch.Add(time.Second)
	entries := []Entry{
		entry(epoch, "/robots.txt", 200, false, 50),
		entry(first, "/p/0", 200, false, size(0)),        // holds version 0: fresh until c1
		entry(c1.Add(time.Second), "/p/0", 304, true, 0), // a 304 does not freshen a stale copy
		entry(m1, "/p/0", 200, false, size(1)),           // holds version 1: fresh until c2
		entry(m2, "/p/0", 304, true, 0),                  // stale again from c2 on
	}
	r := judge(t, w, entries, FreshnessOptions{To: c3})
	span := c3.Sub(epoch)
	fresh := c1.Sub(first) + c2.Sub(m1)
	if want := float64(fresh) / float64(span); math.Abs(r.Measured-want) > 1e-12 || math.Abs(r.AllFresh-want) > 1e-12 {
		t.Errorf("freshness %v (all %v), want %v", r.Measured, r.AllFresh, want)
	}
	if want := float64(fresh) / float64(c3.Sub(first)); math.Abs(r.KnownFresh-want) > 1e-12 {
		t.Errorf("known freshness %v, want %v", r.KnownFresh, want)
	}
	rate := 1 / (10 * time.Minute).Seconds()
	if want := ExpectedFreshness(rate, 4/span.Seconds()); r.Pages != 1 || r.Fetches != 4 || math.Abs(r.Uniform-want) > 1e-12 {
		t.Errorf("%d pages, %d fetches, uniform %v; want 1, 4, %v", r.Pages, r.Fetches, r.Uniform, want)
	}
	if r.Optimum != r.Uniform {
		t.Errorf("one page: optimum %v differs from uniform %v", r.Optimum, r.Uniform)
	}
	if want := (ChangeCounts{New: 1, Changed: 1, Unchanged: 2}); r.Changes != want {
		t.Errorf("changes %+v, want %+v", r.Changes, want)
	}
	if r.NotModified != 2 || r.Revisits != 3 || r.ConditionalRevisits != 2 || r.Requests != 5 || r.PageFetches != 4 {
		t.Errorf("304s %d, revisits %d (%d conditional), requests %d, page fetches %d", r.NotModified, r.Revisits,
			r.ConditionalRevisits, r.Requests, r.PageFetches)
	}
	if sent, all := size(0)+size(1), size(0)+size(1)+size(1)+size(2); r.BytesSent != sent || r.BytesUnconditional != all {
		t.Errorf("bytes %d of %d, want %d of %d", r.BytesSent, r.BytesUnconditional, sent, all)
	}

	// A window opening later: what was fetched before it counts.
	from := m1.Add(-time.Minute)
	r = judge(t, w, entries, FreshnessOptions{From: from, To: c3})
	if want := float64(c2.Sub(m1)) / float64(c3.Sub(from)); math.Abs(r.Measured-want) > 1e-12 {
		t.Errorf("later window: freshness %v, want %v", r.Measured, want)
	}
	if r.Changes.New != 0 || r.Fetches != 2 {
		t.Errorf("later window: %+v, %d fetches", r.Changes, r.Fetches)
	}
	if _, err := w.Judge(entries, FreshnessOptions{From: c3, To: c1}); err == nil {
		t.Error("an empty window: no error")
	}
}

// Fetches of pages that go and move are classified gone and moved, the new
// URL's first as new, and a copy that knows the page is gone is fresh.
func TestJudgeGoneAndMoved(t *testing.T) {
	w, _ := newChanging(t, ChangingConfig{Hosts: 1, PagesPerHost: 20, Seed: 6, GoneShare: 0.3, MovedShare: 0.3,
		FateWithin: time.Hour, StaticShare: 1})
	var gone, moved ChangingPage
	for _, p := range w.Pages(epoch) {
		switch {
		case p.Fate == FateGone && gone.URL == "":
			gone = p
		case p.Fate == FateMoved && moved.URL == "":
			moved = p
		}
	}
	path := func(u string) string { return strings.TrimPrefix(u, "http://a.test") }
	end := epoch.Add(2 * time.Hour)
	entries := []Entry{
		entry(epoch, "/robots.txt", 200, false, 10),
		entry(epoch.Add(time.Second), path(gone.URL), 200, false, 1000),
		entry(epoch.Add(2*time.Second), path(moved.URL), 200, false, 1000),
		entry(gone.FateAt.Add(10*time.Second), path(gone.URL), gone.GoneStatus, false, 10),
		entry(moved.FateAt.Add(20*time.Second), path(moved.URL), 301, false, 0),
		entry(moved.FateAt.Add(21*time.Second), path(moved.MovedTo), 200, false, 1000),
		entry(moved.FateAt.Add(30*time.Minute), path(moved.MovedTo), 200, false, 1000),
		entry(moved.FateAt.Add(31*time.Minute), path(gone.URL), gone.GoneStatus, false, 10),
	}
	slices.SortFunc(entries, func(a, b Entry) int { return a.Start.Compare(b.Start) })
	r := judge(t, w, entries, FreshnessOptions{To: end, Classify: true})
	if want := (ChangeCounts{New: 3, Unchanged: 1, Gone: 2, Moved: 1}); r.Changes != want {
		t.Errorf("changes %+v, want %+v; %+v", r.Changes, want, r.Classified)
	}
	var kinds []ChangeKind
	for _, f := range r.Classified {
		kinds = append(kinds, f.Change)
	}
	if len(kinds) != 7 {
		t.Fatalf("classified %v", r.Classified)
	}
	movedPages := 0
	for _, p := range w.Pages(end) {
		if p.MovedFrom != "" {
			movedPages++
		}
	}
	// Every moved page's new URL appeared in the window; one was fetched.
	if r.NewPages != movedPages || r.NewPagesFetched != 1 || r.LongestDiscoveryDelay != 21*time.Second {
		t.Errorf("new pages %d (want %d), fetched %d, longest delay %v", r.NewPages, movedPages, r.NewPagesFetched, r.LongestDiscoveryDelay)
	}
	goneURL := address{c: w.hosts[0].contents[mustK(t, gone.URL)]}
	held := []heldAt{{time.Second, 0}, {gone.FateAt.Add(10 * time.Second).Sub(epoch), VersionGone}}
	if got, want := freshTime(goneURL, held, 0, end.Sub(epoch)), end.Sub(epoch)-time.Second-10*time.Second; got != want {
		t.Errorf("gone page fresh %v, want %v", got, want)
	}
}

func mustK(t *testing.T, u string) int {
	t.Helper()
	p, ok := strings.CutPrefix(u, "http://a.test/p/")
	if !ok {
		t.Fatalf("not a page URL: %s", u)
	}
	k := 0
	for _, c := range p {
		k = 10*k + int(c-'0')
	}
	return k
}

func TestJudgeManners(t *testing.T) {
	w, _ := newChanging(t, ChangingConfig{Hosts: 1, PagesPerHost: 20, Seed: 1, CrawlDelay: time.Second, RobotsChangeAt: time.Hour})
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	entries := []Entry{
		entry(at(0), "/", 200, false, 100),                                 // before any robots.txt
		entry(at(time.Second), "/robots.txt", 200, false, 100),             // robots.txt allowing all
		entry(at(1500*time.Millisecond), "/p/2", 200, false, 100),          // too soon
		entry(at(time.Hour+time.Second), "/p/1", 200, false, 100),          // disallowed now, but not by what the crawler read
		entry(at(time.Hour+2*time.Second), "/robots.txt", 200, false, 100), // now disallowing /p/1
		entry(at(time.Hour+3*time.Second), "/p/2", 200, false, 100),
		entry(at(time.Hour+4*time.Second), "/p/12", 200, false, 100), // disallowed
		{Start: at(time.Hour), End: at(time.Hour), Host: "elsewhere.test", Method: "GET", Target: "/", Status: 404},
	}
	r := judge(t, w, entries, FreshnessOptions{To: at(2 * time.Hour)})
	if len(r.PolitenessViolations) != 1 || !strings.Contains(r.PolitenessViolations[0], "/p/2") {
		t.Errorf("politeness violations %q", r.PolitenessViolations)
	}
	if len(r.RobotsViolations) != 2 || !strings.Contains(r.RobotsViolations[0], "before any robots.txt") ||
		r.RobotsViolations[1] != "http://a.test/p/12" {
		t.Errorf("robots violations %q", r.RobotsViolations)
	}
	if r.Foreign != 1 {
		t.Errorf("foreign requests %d", r.Foreign)
	}
	if err := r.Check(FreshnessTargets{}); err == nil || !strings.Contains(err.Error(), "1 politeness violations") {
		t.Errorf("Check: %v", err)
	}
	if h := r.Hosts[0]; h.Delay != time.Second || h.FullBudget != 7200 {
		t.Errorf("delay %v, full budget %d; want 1s and 7200", h.Delay, h.FullBudget)
	}
	// The crawler's own delay, when longer, is the one judged.
	r = judge(t, w, entries, FreshnessOptions{To: at(2 * time.Hour), MinDelay: 2 * time.Second})
	if len(r.PolitenessViolations) != 5 {
		t.Errorf("with a 2s delay: %q", r.PolitenessViolations)
	}
}

// crawler revisits a changing web as a policy says, through its handler on
// a test clock, sending the validators it holds if conditional.
type crawler struct {
	w           *ChangingWeb
	clock       *testClock
	log         *Log
	conditional bool
	etag, lm    map[string]string
}

func (c *crawler) get(at time.Time, url string) {
	c.clock.Set(at)
	req := httptest.NewRequest(http.MethodGet, url, nil)
	if c.conditional {
		if v := c.etag[url]; v != "" {
			req.Header.Set("If-None-Match", v)
		}
		if v := c.lm[url]; v != "" {
			req.Header.Set("If-Modified-Since", v)
		}
	}
	rec := httptest.NewRecorder()
	c.w.Handler(c.log).ServeHTTP(rec, req)
	if rec.Code == http.StatusOK {
		c.etag[url], c.lm[url] = rec.Header().Get("ETag"), rec.Header().Get("Last-Modified")
	}
}

// crawl fetches robots.txt and every page at the start, then each page
// every 1/freqs[i] seconds from a random phase, until end.
func (c *crawler) crawl(pages []ChangingPage, freqs []float64, end time.Time) {
	c.etag, c.lm = map[string]string{}, map[string]string{}
	c.get(epoch, "http://a.test/robots.txt")
	type visit struct {
		at  time.Time
		url string
	}
	var visits []visit
	rng := rand.New(rand.NewPCG(7, 7))
	for i, p := range pages {
		start := epoch.Add(time.Duration(i+1) * time.Millisecond)
		visits = append(visits, visit{start, p.URL})
		if freqs[i] <= 0 {
			continue
		}
		every := time.Duration(float64(time.Second) / freqs[i])
		for at := start.Add(time.Duration(rng.Float64() * float64(every))); at.Before(end); at = at.Add(every) {
			visits = append(visits, visit{at, p.URL})
		}
	}
	slices.SortFunc(visits, func(a, b visit) int { return a.at.Compare(b.at) })
	for _, v := range visits {
		c.get(v.at, v.url)
	}
}

// Simulated crawls that revisit uniformly and as the optimum says reach,
// measured, the freshness the judge predicts for each at their fetch count;
// conditional requests change what is sent, not how fresh the copy is.
func TestJudgeSimulatedCrawls(t *testing.T) {
	cfg := validatorMix
	cfg.PagesPerHost = 60
	w, clock := newChanging(t, cfg)
	pages := w.Pages(epoch)
	from, to := epoch.Add(time.Hour), epoch.Add(25*time.Hour)
	every := 15 * time.Minute
	budget := float64(len(pages)) / every.Seconds()
	rates := make([]float64, len(pages))
	uniform := make([]float64, len(pages))
	for i, p := range pages {
		rates[i], uniform[i] = p.Rate, 1/every.Seconds()
	}
	run := func(freqs []float64, conditional bool) *FreshnessReport {
		c := &crawler{w: w, clock: clock, log: &Log{}, conditional: conditional}
		c.crawl(pages, freqs, to)
		return judge(t, w, c.log.Entries(), FreshnessOptions{From: from, To: to})
	}
	uni := run(uniform, true)
	opt := run(OptimalFrequencies(rates, budget), true)
	plain := run(uniform, false)
	t.Logf("uniform crawl:\n%v", uni)
	t.Logf("optimal crawl:\n%v", opt)

	if math.Abs(uni.Measured-uni.Uniform) > 0.03 {
		t.Errorf("uniform crawl: measured %.3f, expected %.3f", uni.Measured, uni.Uniform)
	}
	if math.Abs(opt.Measured-opt.Optimum) > 0.03 {
		t.Errorf("optimal crawl: measured %.3f, expected %.3f", opt.Measured, opt.Optimum)
	}
	if opt.Measured <= uni.Measured || opt.GapClosed < 0.5 {
		t.Errorf("optimal crawl %.3f (gap closed %.2f) against uniform %.3f", opt.Measured, opt.GapClosed, uni.Measured)
	}
	if plain.Measured != uni.Measured || plain.Changes != uni.Changes {
		t.Errorf("unconditional crawl: %.6f %+v; conditional %.6f %+v", plain.Measured, plain.Changes, uni.Measured, uni.Changes)
	}
	if uni.ConditionalShare != 1 || plain.ConditionalShare != 0 || uni.Revisits != plain.Revisits || uni.Revisits == 0 {
		t.Errorf("conditional share %.3f of %d, unconditional crawl %.3f of %d", uni.ConditionalShare, uni.Revisits, plain.ConditionalShare, plain.Revisits)
	}
	if uni.NotModified == 0 || uni.BytesRatio >= 0.9 || plain.BytesRatio != 1 || uni.BytesUnconditional != plain.BytesSent {
		t.Errorf("bytes: conditional %d of %d (%d 304s), unconditional %d of %d", uni.BytesSent, uni.BytesUnconditional,
			uni.NotModified, plain.BytesSent, plain.BytesUnconditional)
	}
	total := uni.Changes.New + uni.Changes.Changed + uni.Changes.Unchanged + uni.Changes.Gone + uni.Changes.Moved
	if total != uni.PageFetches || uni.Fetches != uni.PageFetches {
		t.Errorf("%d classified of %d page fetches (%d of stable pages)", total, uni.PageFetches, uni.Fetches)
	}
	if len(uni.PolitenessViolations)+len(uni.RobotsViolations) != 0 {
		t.Errorf("violations: %v %v", uni.PolitenessViolations, uni.RobotsViolations)
	}
	if err := opt.Check(FreshnessTargets{RatioToOptimum: 0.95, GapClosed: 0.5, ConditionalShare: 1}); err != nil {
		t.Errorf("the optimal crawl misses targets it should meet: %v", err)
	}
}

// A new page's discovery delay runs from its appearance to its first answer.
func TestJudgeDiscovery(t *testing.T) {
	w, _ := newChanging(t, ChangingConfig{Hosts: 1, PagesPerHost: 2, Seed: 4, NewPageInterval: 10 * time.Minute})
	end := epoch.Add(time.Hour)
	pages := w.Pages(end)
	if len(pages) < 4 {
		t.Fatalf("%d pages in an hour", len(pages))
	}
	entries := []Entry{
		entry(epoch, "/robots.txt", 200, false, 10),
		entry(pages[2].Born.Add(-time.Second), "/p/2", 404, false, 10), // not there yet: not an answer
		entry(pages[2].Born.Add(5*time.Second), "/p/2", 200, false, 100),
		entry(pages[3].Born.Add(time.Minute), "/p/3", 200, false, 100),
	}
	r := judge(t, w, entries, FreshnessOptions{To: end})
	if r.NewPages != len(pages)-2 || r.NewPagesFetched != 2 || r.LongestDiscoveryDelay != time.Minute ||
		r.MeanDiscoveryDelay != (time.Minute+5*time.Second)/2 {
		t.Errorf("new pages %d of %d fetched, delays mean %v, longest %v", r.NewPagesFetched, r.NewPages, r.MeanDiscoveryDelay, r.LongestDiscoveryDelay)
	}
	if r.Changes.New != 2 || r.Pages != 2 {
		t.Errorf("changes %+v, %d stable pages", r.Changes, r.Pages)
	}
}

// A page that moved before the window has no changes in it, though its
// content goes on changing at its new URL.
func TestChangesAfterMove(t *testing.T) {
	w, _ := newChanging(t, ChangingConfig{Hosts: 1, PagesPerHost: 20, Seed: 6, MovedShare: 0.5,
		FateWithin: time.Hour, MinChangeInterval: time.Minute, MaxChangeInterval: time.Minute})
	var moved ChangingPage
	for _, p := range w.Pages(epoch) {
		if p.Fate == FateMoved {
			moved = p
			break
		}
	}
	if moved.URL == "" {
		t.Fatal("no page moves")
	}
	from, to := moved.FateAt.Add(time.Hour), moved.FateAt.Add(2*time.Hour)
	if n := len(w.Changes(moved.MovedTo, from, to)); n == 0 {
		t.Fatalf("the moved page's new URL has no changes in an hour of one a minute")
	}
	if c := w.Changes(moved.URL, from, to); len(c) != 0 {
		t.Errorf("the old URL has changes %v after its move", c)
	}
	if c := w.Changes(moved.URL, moved.FateAt.Add(-time.Second), to); len(c) != 1 || !c[0].Equal(moved.FateAt) {
		t.Errorf("the old URL's changes over its move: %v, want the move at %v", c, moved.FateAt)
	}
}
