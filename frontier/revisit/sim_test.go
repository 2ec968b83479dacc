package revisit_test

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier/revisit"
)

// The simulator: one host whose pages change as Poisson processes, crawled
// from a cold start by a revisit policy under the host's politeness
// budget, in fake time. It measures the time-averaged freshness of the copy
// the policy keeps and the figures to hold it to: the offline optimum and
// uniform revisiting at the same budget, both from the true rates.

// sim describes one simulated host and how it is crawled.
type sim struct {
	pages int           // pages the host has, found at the start unless grow says otherwise
	delay time.Duration // the host's politeness delay: one request per delay
	share float64       // the share of the host's requests revisits may use
	// Change rates are log-uniform between lo and hi changes per uniform
	// interval (pages × delay / share), except a static share of pages
	// that never change.
	lo, hi, static float64
	length, settle float64      // simulated time and when measuring starts, in uniform intervals
	minIv, maxIv   float64      // the policy's bounds on a page's interval, in uniform intervals
	modified       modifiedKind // what the host's Last-Modified headers say
	grow           float64      // the time over which half the pages are found after the start, in uniform intervals
	sitemap        sitemapKind  // what the host's sitemap says
	sitemapEvery   float64      // how often it is read, in uniform intervals
	seed           uint64
}

type sitemapKind int

const (
	noSitemap     sitemapKind = iota
	trueSitemap               // each page's last change
	lyingSitemap              // every page changed when the sitemap was read
	frozenSitemap             // no page changed since the start
)

type modifiedKind int

const (
	noModified    modifiedKind = iota // no Last-Modified header
	trueModified                      // the time of the page's last change
	lyingModified                     // always the time of the answer
)

// scheduler picks a page's next due time after a fetch.
type scheduler interface {
	schedule(h *revisit.Host, pg *simPage, f revisit.Fetch) time.Time
}

// simPage is one page of the simulated host.
type simPage struct {
	id         int
	rate       float64 // changes per second
	upcoming   float64 // its next change after the latest time looked at
	lastChange float64 // its last change before that (0 if none)
	staleAt    float64 // the first change after its last fetch
	fetched    float64 // when it was last fetched, or -1
	lastmod    float64 // its <lastmod> as last read, or -1
	read       float64 // when that was
	due        float64
	found      float64 // when it was found
	ahead      int     // new pages queued ahead of it then
	page       revisit.Page
	index      int // in the due heap
}

// result is what one simulation measured.
type result struct {
	freshness float64 // time-averaged over the measured window and the pages
	optimum   float64 // mean freshness of the offline optimum at the revisit budget
	uniform   float64 // mean freshness of uniform revisiting at that budget
	revisits  float64 // revisits per second in the window, over the budget
	// waitNew is the longest wait of a page found after the start for its
	// first fetch, over its bound: (the new pages ahead of it + 1) × the
	// delay / NewShare, plus one delay for the request under way.
	waitNew float64
	mu      float64 // the host's μ at the end over the optimum's
}

// gap is how far from uniform revisiting to the optimum the freshness is.
func (r result) gap() float64 { return (r.freshness - r.uniform) / (r.optimum - r.uniform) }

func (r result) String() string {
	return fmt.Sprintf("freshness %.4f  optimum %.4f  uniform %.4f  ratio %.3f  gap closed %.2f  revisits/budget %.3f  μ/optimum's %.2f",
		r.freshness, r.optimum, r.uniform, r.freshness/r.optimum, r.gap(), r.revisits, r.mu)
}

var epoch = time.Unix(1_700_000_000, 0)

func at(t float64) time.Time { return epoch.Add(time.Duration(t * 1e9)) }

func secs(t time.Time) float64 { return t.Sub(epoch).Seconds() }

// uniformInterval is the interval of uniform revisiting at the full
// revisit budget, in seconds.
func (s sim) uniformInterval() float64 { return float64(s.pages) * s.delay.Seconds() / s.share }

// rates draws the pages' change rates, per second.
func (s sim) rates(rng *rand.Rand) []float64 {
	iu := s.uniformInterval()
	rates := make([]float64, s.pages)
	for i := range rates {
		if rng.Float64() < s.static {
			continue
		}
		rates[i] = math.Exp(math.Log(s.lo)+rng.Float64()*math.Log(s.hi/s.lo)) / iu
	}
	return rates
}

// bounds returns the policy's bounds on a page's interval.
func (s sim) bounds() revisit.Bounds {
	iu := s.uniformInterval()
	return revisit.Bounds{Min: dur(s.minIv * iu), Max: dur(s.maxIv * iu)}
}

// run simulates the host crawled by the policy a scheduler makes from the
// true rates (nil: the Default policy learning them).
func (s sim) run(newScheduler func(rates []float64, budget float64, b revisit.Bounds) scheduler) (result, error) {
	rng := rand.New(rand.NewPCG(s.seed, 1))
	rates := s.rates(rng)
	budget := s.share / s.delay.Seconds()
	bounds := s.bounds()
	pol, err := revisit.NewDefault(revisit.Config{Bounds: bounds})
	if err != nil {
		return result{}, err
	}
	var sch scheduler = learner{pol: pol}
	if newScheduler != nil {
		sch = newScheduler(rates, budget, bounds)
	}
	r := runner{sim: s, rng: rng, pol: pol, sch: sch}
	r.iu = s.uniformInterval()
	r.end, r.from = s.length*r.iu, s.settle*r.iu
	for i, rate := range rates {
		found := 0.0
		if s.grow > 0 && i >= s.pages/2 {
			found = float64(i-s.pages/2+1) / float64(s.pages-s.pages/2) * s.grow * r.iu
		}
		r.add(&simPage{id: i, rate: rate, fetched: -1, lastmod: -1, found: found})
	}
	r.loop()
	res := r.result()
	res.optimum, res.uniform = offline(rates, budget)
	if mu, _, err := revisit.Allocate(nil, rates, budget, bounds); err == nil {
		res.mu /= mu
	}
	return res, nil
}

// offline returns the mean freshness of the optimum and of uniform
// revisiting at the budget, from the true rates, without bounds.
func offline(rates []float64, budget float64) (optimum, uniform float64) {
	_, freqs, err := revisit.Allocate(nil, rates, budget, revisit.Bounds{})
	if err != nil {
		panic(err)
	}
	optimum = revisit.MeanFreshness(rates, freqs)
	for i := range freqs {
		freqs[i] = budget / float64(len(rates))
	}
	return optimum, revisit.MeanFreshness(rates, freqs)
}

// runner is one simulation under way.
type runner struct {
	sim
	rng      *rand.Rand
	pol      *revisit.Default
	sch      scheduler
	host     revisit.Host
	iu       float64
	end      float64
	from     float64
	all      []*simPage
	fresh    float64   // page-seconds fresh within the window
	series   []float64 // page-seconds fresh in each stretch of seriesWidth
	width    float64   // of a stretch of the series, in seconds
	revisits int       // within the window
	waitNew  float64
	news     []*simPage // found, not fetched, oldest first
	unfound  []*simPage // not found yet, by when they will be
	due      dueHeap
}

func (r *runner) add(p *simPage) {
	p.upcoming = r.nextChange(p, p.found)
	r.all = append(r.all, p)
	if p.found > 0 {
		r.unfound = append(r.unfound, p)
	} else {
		r.news = append(r.news, p)
	}
}

func (r *runner) nextChange(p *simPage, after float64) float64 {
	if p.rate == 0 {
		return math.Inf(1)
	}
	return after + r.rng.ExpFloat64()/p.rate
}

// loop runs the host: whenever it may be asked again, its request goes to
// a new page or the revisit due earliest, as the policy chooses.
func (r *runner) loop() {
	delay := r.delay.Seconds()
	revisitDelay := delay / r.share
	t, revisitReady, sitemap := 0.0, 0.0, math.Inf(1)
	if r.sitemap != noSitemap {
		sitemap = r.sitemapEvery * r.iu
	}
	for t < r.end {
		if t >= sitemap {
			r.readSitemap(t)
			sitemap += r.sitemapEvery * r.iu
		}
		for len(r.unfound) > 0 && r.unfound[0].found <= t {
			r.unfound[0].ahead = len(r.news)
			r.news, r.unfound = append(r.news, r.unfound[0]), r.unfound[1:]
		}
		due := len(r.due) > 0 && r.due[0].due <= t && revisitReady <= t
		src := r.pol.Choose(&r.host, len(r.news) > 0, due)
		switch src {
		case revisit.NewURL:
			p := r.news[0]
			r.news = r.news[1:]
			if p.found > 0 {
				bound := (float64(p.ahead)+1)*delay/revisit.DefaultNewShare + delay
				r.waitNew = max(r.waitNew, (t-p.found)/bound)
			}
			r.fetch(p, t)
		case revisit.Revisit:
			p := heap.Pop(&r.due).(*simPage)
			r.fetch(p, t)
			revisitReady = t + revisitDelay
			if t >= r.from {
				r.revisits++
			}
		default:
			next := r.end
			if len(r.due) > 0 {
				next = max(r.due[0].due, revisitReady)
			}
			if len(r.unfound) > 0 {
				next = min(next, r.unfound[0].found)
			}
			next = min(next, sitemap)
			t = max(t, next)
			continue
		}
		t += delay
	}
	for _, p := range r.all {
		if p.fetched >= 0 {
			r.addFresh(p.fetched, min(p.staleAt, r.end))
		}
	}
}

// fetch fetches page p at time t.
func (r *runner) fetch(p *simPage, t float64) {
	r.advance(p, t)
	changed := p.staleAt <= t
	f := revisit.Fetch{At: at(t), Changed: changed, Delay: r.delay}
	if p.fetched >= 0 {
		f.Prev, f.Due = at(p.fetched), at(p.due)
		f.Delay = time.Duration(float64(r.delay) / r.share)
		r.addFresh(p.fetched, min(p.staleAt, t))
	}
	p.staleAt = p.upcoming
	switch r.modified {
	case trueModified:
		f.LastModified = at(p.lastChange)
	case lyingModified:
		f.LastModified = at(t)
	}
	if p.lastmod >= 0 {
		f.Lastmod, f.LastmodRead = at(p.lastmod), at(p.read)
	}
	p.fetched = t
	p.due = secs(r.sch.schedule(&r.host, p, f))
	heap.Push(&r.due, p)
}

// advance moves the page's changes on to time t.
func (r *runner) advance(p *simPage, t float64) {
	for p.upcoming <= t {
		p.lastChange = p.upcoming
		p.upcoming = r.nextChange(p, p.upcoming)
	}
}

// readSitemap reads the host's sitemap at time t: each fetched page's
// <lastmod> is recorded and shown to the policy.
func (r *runner) readSitemap(t float64) {
	for _, p := range r.all {
		if p.fetched < 0 {
			continue
		}
		r.advance(p, t)
		switch r.sitemap {
		case trueSitemap:
			p.lastmod = p.lastChange
		case lyingSitemap:
			p.lastmod = t
		case frozenSitemap:
			p.lastmod = 0
		}
		p.read = t
		due := r.pol.Claim(r.host, p.page, at(p.fetched), at(p.due), at(p.lastmod), at(t))
		if d := secs(due); d != p.due {
			p.due = d
			heap.Fix(&r.due, p.index)
		}
	}
}

// addFresh counts the copy of a page fresh from a to b.
func (r *runner) addFresh(a, b float64) {
	r.fresh += overlap(a, b, r.from, r.end)
	if r.width == 0 {
		return
	}
	for i := int(a / r.width); i < len(r.series) && float64(i)*r.width < b; i++ {
		r.series[i] += overlap(a, b, float64(i)*r.width, float64(i+1)*r.width)
	}
}

// overlap is the length of [a, b) ∩ [lo, hi).
func overlap(a, b, lo, hi float64) float64 {
	return max(0, min(b, hi)-max(a, lo))
}

func (r *runner) result() result {
	window := r.end - r.from
	return result{
		freshness: r.fresh / (window * float64(len(r.all))),
		revisits:  float64(r.revisits) / window / (r.share / r.delay.Seconds()),
		waitNew:   r.waitNew,
		mu:        r.host.Mu,
	}
}

// learner is the Default policy, learning each page's rate.
type learner struct{ pol *revisit.Default }

func (l learner) schedule(h *revisit.Host, pg *simPage, f revisit.Fetch) time.Time {
	return l.pol.Schedule(h, &pg.page, f)
}

// fixed revisits each page at a fixed interval, in seconds.
type fixed []float64

func (s fixed) schedule(_ *revisit.Host, pg *simPage, f revisit.Fetch) time.Time {
	return f.At.Add(time.Duration(s[pg.id] * 1e9))
}

// uniform revisits every page at the budget's uniform interval.
func uniform(rates []float64, budget float64, _ revisit.Bounds) scheduler {
	s := make(fixed, len(rates))
	for i := range s {
		s[i] = float64(len(rates)) / budget
	}
	return s
}

// oracle revisits every page at its optimal interval, from the true rates
// and the budget, within the bounds.
func oracle(rates []float64, budget float64, b revisit.Bounds) scheduler {
	_, freqs, err := revisit.Allocate(nil, rates, budget, b)
	if err != nil {
		panic(err)
	}
	s := make(fixed, len(rates))
	for i, f := range freqs {
		s[i] = 1 / f
	}
	return s
}

// dueHeap orders pages by due time.
type dueHeap []*simPage

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *dueHeap) Push(x any) {
	p := x.(*simPage)
	p.index = len(*h)
	*h = append(*h, p)
}
func (h *dueHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	*h = old[:len(old)-1]
	return p
}

// The scenarios the figures are measured on: a host whose pages change at
// rates spread log-uniformly over four orders of magnitude around the
// uniform interval (from once per 100 uniform intervals to 100 times per
// one), a tenth never, crawled from a cold start; the freshness counted
// over the second half of the run, once the estimates have settled.
func scenarios(pages int, length float64) []struct {
	name string
	sim  sim
} {
	base := sim{
		pages: pages, delay: time.Second, share: 1,
		lo: 0.01, hi: 100, static: 0.1,
		length: length, settle: length / 2,
		minIv: 1. / 16, maxIv: 64,
		seed: 1,
	}
	with := func(f func(*sim)) sim {
		s := base
		f(&s)
		return s
	}
	return []struct {
		name string
		sim  sim
	}{
		{"full budget", base},
		{"revisits capped at a quarter", with(func(s *sim) { s.share = 0.25 })},
		{"true Last-Modified", with(func(s *sim) { s.modified = trueModified })},
		{"Last-Modified always now", with(func(s *sim) { s.modified = lyingModified })},
		{"true sitemap", with(func(s *sim) { s.sitemap, s.sitemapEvery = trueSitemap, 0.25 })},
		{"sitemap always now", with(func(s *sim) { s.sitemap, s.sitemapEvery = lyingSitemap, 0.25 })},
		{"sitemap never updated", with(func(s *sim) { s.sitemap, s.sitemapEvery = frozenSitemap, 0.25 })},
		{"half the pages found in a flood", with(func(s *sim) { s.grow = 0.25 })},
	}
}

// The Default policy, learning every page's rate and its host's μ from a
// cold start, keeps the copy at least 0.9 of the offline optimum's
// freshness and closes at least half the gap from uniform revisiting to
// it, at the full budget and capped; claims it cannot trust change
// nothing, true ones help; new pages wait no longer than their place in
// the queue allows.
func TestDefaultPolicyFreshness(t *testing.T) {
	for _, sc := range scenarios(300, 300) {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			r, err := sc.sim.run(nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r)
			if ratio := r.freshness / r.optimum; ratio < 0.9 || r.gap() < 0.5 {
				t.Errorf("freshness %.3f of the optimum, gap closed %.2f; want ≥ 0.9 and ≥ 0.5", ratio, r.gap())
			}
			if sc.sim.sitemap != trueSitemap && (r.mu < 2./3 || r.mu > 1.5) {
				t.Errorf("the host's μ ends at %.2f of the optimum's", r.mu)
			}
			if r.waitNew > 1 {
				t.Errorf("a new page waited %.2f times its bound", r.waitNew)
			}
			if sc.sim.sitemap == trueSitemap && r.freshness < r.optimum {
				t.Errorf("a true sitemap keeps the copy at %.3f of the blind optimum", r.freshness/r.optimum)
			}
		})
	}
}

// The simulator measures what the formulas say: uniform revisiting keeps
// the copy as fresh as F predicts, and so does the optimum's schedule
// (within what its waits for the host cost).
func TestSimulatorAgreesWithFreshness(t *testing.T) {
	s := scenarios(300, 100)[0].sim
	s.settle = 10
	uni, err := s.run(uniform)
	if err != nil {
		t.Fatal(err)
	}
	if relErr(uni.freshness, uni.uniform) > 0.01 {
		t.Errorf("uniform revisiting measured %.4f, F says %.4f", uni.freshness, uni.uniform)
	}
	opt, err := s.run(oracle)
	if err != nil {
		t.Fatal(err)
	}
	if opt.freshness > opt.optimum*1.005 || opt.freshness < opt.optimum*0.98 {
		t.Errorf("the optimum's schedule measured %.4f, F says %.4f", opt.freshness, opt.optimum)
	}
}

// BenchmarkFreshness reports, for each scenario, the freshness the Default
// policy keeps over the offline optimum's at the same budget (fresh/opt),
// the share of the gap from uniform revisiting to the optimum it closes
// (gap), uniform's freshness over the optimum's (uni/opt), and the share of
// the revisit budget it spends (rev/budget). Run it with
//
//	go test -run '^$' -bench Freshness -benchtime 1x ./frontier/revisit/
func BenchmarkFreshness(b *testing.B) {
	for _, sc := range scenarios(1000, 400) {
		b.Run(sc.name, func(b *testing.B) {
			var r result
			for b.Loop() {
				var err error
				if r, err = sc.sim.run(nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(r.freshness/r.optimum, "fresh/opt")
			b.ReportMetric(r.gap(), "gap")
			b.ReportMetric(r.uniform/r.optimum, "uni/opt")
			b.ReportMetric(r.revisits, "rev/budget")
			b.ReportMetric(r.mu, "μ/opt")
			b.Log(r)
		})
	}
}
