package crawler_test

import (
	"context"
	"errors"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/internal/testweb"
)

// The freshness benchmark of issue 20 on a real crawl: the crawler, with
// WithRevisit's default policy, revisits the changing web over HTTP on
// loopback for long enough that every page is fetched many times, and the
// web's judge measures from its request log how fresh the crawler kept its
// copy against uniform revisiting and the offline optimum.
//
// Crawler and web run on one clock that goes scale times faster than real
// time, so hours of a crawl at a one-second Crawl-delay take minutes. The
// crawler waits on that clock for every delay and due time, and the web
// stamps its log and picks each response's version by it, so politeness
// is judged exactly, with no tolerance for timer slack: a request is
// counted a violation if it came a microsecond early. What the clock
// speeds up as well is the crawler's own work: a millisecond of it costs
// scale milliseconds of the host's budget (reported as budget/full).

// scaledClock is a ratelimit.Clock on which time passes scale times faster
// than in reality, from epoch at origin.
type scaledClock struct {
	epoch, origin time.Time // origin keeps its monotonic reading
	scale         float64
}

func newScaledClock(scale float64) *scaledClock {
	now := time.Now()
	return &scaledClock{epoch: now.Truncate(time.Second), origin: now, scale: scale}
}

func (c *scaledClock) Now() time.Time {
	return c.epoch.Add(time.Duration(float64(time.Since(c.origin)) * c.scale))
}

// After rounds the real wait up, so that at least d has passed on the
// clock when it fires.
func (c *scaledClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	wait := time.Duration(math.Ceil(float64(d) / c.scale))
	time.AfterFunc(wait, func() { ch <- c.Now() })
	return ch
}

// freshnessRun is one crawl of a changing web to judge. Durations are on
// the scaled clock unless said otherwise.
type freshnessRun struct {
	hosts, pages int
	seed         uint64
	scale        float64       // clock speed-up
	length       time.Duration // real duration of the crawl
	settle       float64       // share of the crawl before the judged window
	delay        time.Duration // every host's Crawl-delay and the crawler's delay
	// Change rates are log-uniform over [lo, hi] changes per uniform
	// interval (the host's pages × delay), as in frontier/revisit's
	// simulations, unless typicalRates keeps TypicalChangingConfig's (a
	// minute to a day).
	lo, hi       float64
	typicalRates bool
	// The revisit bounds, in uniform intervals.
	minIv, maxIv float64
	// newPages is the mean time between a host's new pages, in uniform
	// intervals; 0 keeps TypicalChangingConfig's ten minutes.
	newPages  float64
	bodyBytes int
}

// uniformInterval is the interval of uniform revisiting at the full
// budget: one fetch per delay spread over the host's pages (and its home
// page).
func (fr freshnessRun) uniformInterval() time.Duration {
	return time.Duration(fr.pages+1) * fr.delay
}

func (fr freshnessRun) config(clock *scaledClock) testweb.ChangingConfig {
	cfg := testweb.TypicalChangingConfig(fr.hosts, fr.pages, fr.seed)
	cfg.Clock = clock.Now
	iu := fr.uniformInterval()
	if !fr.typicalRates {
		cfg.MinChangeInterval = time.Duration(float64(iu) / fr.hi)
		cfg.MaxChangeInterval = time.Duration(float64(iu) / fr.lo)
	}
	if fr.newPages > 0 {
		cfg.NewPageInterval = time.Duration(fr.newPages * float64(iu))
	}
	cfg.CrawlDelay = fr.delay
	cfg.BodyBytes = fr.bodyBytes
	return cfg
}

func (fr freshnessRun) revisit() crawler.Revisit {
	iu := float64(fr.uniformInterval())
	return crawler.Revisit{Min: time.Duration(fr.minIv * iu), Max: time.Duration(fr.maxIv * iu)}
}

// freshnessResult is a judged crawl.
type freshnessResult struct {
	report *testweb.FreshnessReport
	stats  crawler.Stats
	// noRevisits is the judge's freshness, over the same window, of the
	// copy the crawl's first fetch of each URL made: what a crawl that
	// never revisited would hold.
	noRevisits float64
	// fullBudget is the share of the hosts' full politeness budget the
	// crawl's requests used in the window, every request counted.
	fullBudget float64
	virtual    time.Duration // the crawl's length on its clock
}

// runFreshness crawls the changing web fr describes with revisiting on,
// for fr.length of real time, and judges the window after the settling
// share.
func runFreshness(tb testing.TB, fr freshnessRun) freshnessResult {
	tb.Helper()
	clock := newScaledClock(fr.scale)
	v, err := testweb.NewChangingVirtual(fr.config(clock))
	if err != nil {
		tb.Fatal(err)
	}
	defer v.Close()
	c, err := crawler.New(crawler.WithTransport(v.Transport()), crawler.WithClock(clock),
		crawler.WithDelay(fr.delay), crawler.WithRevisit(fr.revisit()))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), fr.length)
	defer cancel()
	start := v.Web.Start()
	if err := c.Run(ctx, v.Web.Seeds()...); !errors.Is(err, context.DeadlineExceeded) {
		tb.Fatalf("Run: %v, want it to revisit until the deadline", err)
	}
	end := clock.Now()
	from := start.Add(time.Duration(fr.settle * float64(end.Sub(start))))
	opts := testweb.FreshnessOptions{From: from, To: end, MinDelay: fr.delay, Tolerance: time.Microsecond}
	entries := v.Log.Entries()
	rep, err := v.Web.Judge(entries, opts)
	if err != nil {
		tb.Fatal(err)
	}
	once, err := v.Web.Judge(firstFetches(entries), opts)
	if err != nil {
		tb.Fatal(err)
	}
	res := freshnessResult{report: rep, stats: statsOf(tb, c), noRevisits: once.Measured, virtual: end.Sub(start)}
	if budget := float64(end.Sub(from)) / float64(fr.delay) * float64(fr.hosts); budget > 0 {
		res.fullBudget = float64(rep.Requests) / budget
	}
	return res
}

// firstFetches returns the log as a crawl that never revisits would have
// left it: each target's requests up to its first answer other than an
// error. robots.txt, the home pages and the sitemaps stay, so the judge
// sees the same manners.
func firstFetches(entries []testweb.Entry) []testweb.Entry {
	answered := map[string]bool{}
	var out []testweb.Entry
	for _, e := range entries {
		key := e.Host + e.Target
		if answered[key] {
			continue
		}
		out = append(out, e)
		if e.Status > 0 && e.Status < 500 {
			answered[key] = true
		}
	}
	return out
}

// envFloat returns the number in the environment variable name, or def.
func envFloat(tb testing.TB, name string, def float64) float64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) {
		tb.Fatalf("%s=%q: want a positive number", name, s)
	}
	return f
}

// BenchmarkFreshnessRealCrawl runs the crawler against the changing web on
// loopback with revisiting on, and reports the freshness of its copy over
// the second half of the crawl, judged from the web's log:
//
//	fresh        time-averaged share of the pages whose copy is current
//	uniform      uniform revisiting at the same per-host fetch count
//	optimum      Cho and Garcia-Molina's offline optimum at that count
//	opt-full     the optimum at every host's full politeness budget
//	fresh/opt, gap (fresh − uniform)/(optimum − uniform), fresh/full
//	no-revisit   the same window's freshness of a crawl that never revisits
//	violations   requests sooner after the host's previous one than its delay
//	cond-share   conditional share of revisits of pages with true validators
//	bytes-ratio  body bytes sent over what the same fetches would have
//	             sent unconditionally (each 304 a 200 of the version held),
//	             so at the same freshness
//	fetches/page fetches of the judged pages in the window, per page
//	budget/full  requests in the window over the hosts' full budget
//
// The pages change as Poisson processes at rates log-uniform over four
// orders of magnitude around the uniform interval (0.01 to 100 changes per
// pages × delay), a tenth never, with every other feature of
// testweb.TypicalChangingConfig (validators true, weak, missing and lying,
// pages going, moving and appearing, lying sitemaps). The environment
// tunes it: HEED_FRESH_MINUTES (real minutes, default 3), HEED_FRESH_SCALE
// (clock speed-up, default 60), HEED_FRESH_HOSTS (4), HEED_FRESH_PAGES
// (pages per host, 50), HEED_FRESH_SEED (the web's, 1), HEED_FRESH_TYPICAL=1 for TypicalChangingConfig's
// rates (a minute to a day). Run it with
//
//	go test -run '^$' -bench FreshnessRealCrawl -benchtime 1x -timeout 0 ./crawler/
func BenchmarkFreshnessRealCrawl(b *testing.B) {
	fr := freshnessRun{
		hosts: int(envFloat(b, "HEED_FRESH_HOSTS", 4)), pages: int(envFloat(b, "HEED_FRESH_PAGES", 50)),
		seed:   uint64(envFloat(b, "HEED_FRESH_SEED", 1)),
		scale:  envFloat(b, "HEED_FRESH_SCALE", 60),
		length: time.Duration(envFloat(b, "HEED_FRESH_MINUTES", 3) * float64(time.Minute)),
		settle: 0.5, delay: time.Second,
		lo: 0.01, hi: 100, typicalRates: os.Getenv("HEED_FRESH_TYPICAL") == "1",
		minIv: 1. / 16, maxIv: 64, newPages: 20,
	}
	var res freshnessResult
	for b.Loop() {
		res = runFreshness(b, fr)
	}
	r := res.report
	b.Logf("%v of crawl (%v real at ×%v), window the second half; %s", res.virtual.Round(time.Second), fr.length, fr.scale, r)
	b.Logf("no-revisit freshness %.3f; budget used %.3f; %s", res.noRevisits, res.fullBudget, res.stats)
	if err := r.Check(testweb.DefaultFreshnessTargets()); err != nil {
		b.Logf("targets missed: %v", err)
	}
	for _, m := range []struct {
		v    float64
		unit string
	}{
		{r.Measured, "fresh"}, {r.Uniform, "uniform"}, {r.Optimum, "optimum"}, {r.OptimumFullBudget, "opt-full"},
		{r.RatioToOptimum, "fresh/opt"}, {r.GapClosed, "gap"}, {r.RatioToFullBudget, "fresh/full"},
		{res.noRevisits, "no-revisit"}, {float64(len(r.PolitenessViolations)), "violations"},
		{r.ConditionalShare, "cond-share"}, {r.BytesRatio, "bytes-ratio"},
		{float64(r.Fetches) / float64(max(r.Pages, 1)), "fetches/page"}, {res.fullBudget, "budget/full"},
		// From a page's birth to its first fetch, on the crawl's clock:
		// the bound on new URLs' wait behind revisits.
		{r.LongestDiscoveryDelay.Seconds(), "new-wait-max-s"}, {r.MeanDiscoveryDelay.Seconds(), "new-wait-mean-s"},
	} {
		b.ReportMetric(m.v, m.unit)
	}
	b.ReportMetric(0, "ns/op")
}

// A short real crawl of the changing web, judged end to end: the
// crawler's revisits reach the judge's log, keep every host's delay
// exactly, are conditional wherever the page sent true validators, and
// keep the copy fresher than a crawl that never revisits. How close it
// comes to the optimum is BenchmarkFreshnessRealCrawl's to measure: a few
// seconds are too short for the estimates to settle, and this asserts no
// timing.
func TestFreshnessRealCrawl(t *testing.T) {
	fr := freshnessRun{
		hosts: 2, pages: 20, seed: 3, scale: 60, length: 3 * time.Second, settle: 0.5, delay: time.Second,
		lo: 0.01, hi: 100, minIv: 1. / 16, maxIv: 64, newPages: 5, bodyBytes: 256,
	}
	res := runFreshness(t, fr)
	r := res.report
	t.Logf("%s\nno-revisit freshness %.3f; budget used %.3f", r, res.noRevisits, res.fullBudget)
	if len(r.PolitenessViolations) != 0 || len(r.RobotsViolations) != 0 || r.Foreign != 0 {
		t.Errorf("violations: politeness %q, robots %q, %d foreign requests", r.PolitenessViolations, r.RobotsViolations, r.Foreign)
	}
	if r.Pages < fr.hosts*fr.pages/2 || r.Fetches < r.Pages {
		t.Errorf("%d pages judged, fetched %d times in the window; want ≥ %d, each once on average", r.Pages, r.Fetches, fr.hosts*fr.pages/2)
	}
	if r.Revisits < r.Pages/2 || r.ConditionalShare < 0.99 {
		t.Errorf("%d revisits of pages with true validators, %.3f conditional; want ≥ %d, ≥ 0.99", r.Revisits, r.ConditionalShare, r.Pages/2)
	}
	if r.NotModified == 0 || !(r.BytesRatio < 1) {
		t.Errorf("%d 304s, bytes ratio %.3f; want some, below 1", r.NotModified, r.BytesRatio)
	}
	if !(r.Measured > res.noRevisits) {
		t.Errorf("freshness %.3f, no better than %.3f without revisits", r.Measured, res.noRevisits)
	}
	if st := res.stats; st.Revisits == 0 || st.NotModified == 0 {
		t.Errorf("crawler stats: %d revisits, %d not modified", st.Revisits, st.NotModified)
	}
}
