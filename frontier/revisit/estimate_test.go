package revisit_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/heedcrawl/heed/frontier/revisit"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

func dur(s float64) time.Duration { return time.Duration(s * 1e9) }

func relErr(got, want float64) float64 { return math.Abs(got/want - 1) }

// check draws one check of a Poisson page of rate λ after an interval t:
// whether it changed, and how long before the check it last changed.
func check(rng *rand.Rand, rate, t float64) revisit.Obs {
	o := revisit.Obs{Interval: dur(t)}
	// The last change before the check is the first one looking back.
	if back := rng.ExpFloat64() / rate; back <= t {
		o.Changed, o.SinceChange = true, dur(back)
	}
	return o
}

func TestPageSize(t *testing.T) {
	if got := unsafe.Sizeof(revisit.Page{}); got != revisit.PageSize {
		t.Errorf("Page is %d bytes in memory, PageSize says %d", got, revisit.PageSize)
	}
	b, err := revisit.Page{}.MarshalBinary()
	if err != nil || len(b) != revisit.PageSize {
		t.Errorf("encoding is %d bytes (%v), PageSize says %d", len(b), err, revisit.PageSize)
	}
}

func TestUnobservedPage(t *testing.T) {
	if e := (revisit.Page{}).Estimate(); e != (revisit.Estimate{}) {
		t.Errorf("zero Page estimates %+v", e)
	}
	if got := revisit.ExactEstimate(nil); got != 0 {
		t.Errorf("ExactEstimate(nil) = %v", got)
	}
}

func TestObserveRefusesNonPositiveInterval(t *testing.T) {
	var p revisit.Page
	for _, iv := range []time.Duration{0, -time.Second} {
		if err := p.Observe(revisit.Obs{Interval: iv, Changed: true}); !errors.Is(err, revisit.ErrInterval) {
			t.Errorf("Observe(%v) = %v, want ErrInterval", iv, err)
		}
	}
	if p != (revisit.Page{}) {
		t.Errorf("refused observations changed the page: %+v", p.Estimate())
	}
}

// At regular intervals the summary is Cho and Garcia-Molina's estimator
// −ln((n − X + ½)/(n + ½))/I, whatever the order of the changes.
func TestRegularIntervalsAreChosEstimator(t *testing.T) {
	rng := newRand(1)
	for _, interval := range []time.Duration{time.Second, 37 * time.Minute, 90 * 24 * time.Hour} {
		for n := 1; n <= 31; n++ {
			for x := 0; x <= n; x++ {
				var p revisit.Page
				var h []revisit.Obs
				for _, i := range rng.Perm(n) {
					o := revisit.Obs{Interval: interval, Changed: i < x}
					if err := p.Observe(o); err != nil {
						t.Fatal(err)
					}
					h = append(h, o)
				}
				want := revisit.RegularEstimate(n, x, interval)
				if x == 0 {
					if got := p.Estimate().Rate; got != 0 {
						t.Errorf("I=%v n=%d x=0: rate %v, want 0", interval, n, got)
					}
					continue
				}
				if got := revisit.ExactEstimate(h); relErr(got, want) > 1e-9 {
					t.Errorf("I=%v n=%d x=%d: ExactEstimate %v, want %v", interval, n, x, got, want)
				}
				// The grid's origin is rounded to 1/512 of a doubling.
				if got := p.Estimate().Rate; relErr(got, want) > 2e-3 {
					t.Errorf("I=%v n=%d x=%d: summary %v, want %v", interval, n, x, got, want)
				}
			}
		}
	}
}

// On irregular intervals the summary keeps the maximum-likelihood estimate
// within a few percent of the exact one (ExactEstimate), however widely
// the intervals spread; its own statistical error is ten times that.
func TestSummaryTracksExactEstimate(t *testing.T) {
	rng := newRand(2)
	const interval = 3600.0
	for _, spread := range []float64{3, 10, 1000} {
		for _, ri := range []float64{0.03, 0.3, 1, 3, 10} {
			var sum, worst float64
			const reps = 200
			for range reps {
				var p revisit.Page
				var h []revisit.Obs
				for range 31 {
					t := interval * math.Exp((2*rng.Float64()-1)*math.Log(spread))
					o := check(rng, ri/interval, t)
					o.SinceChange = 0
					h = append(h, o)
					_ = p.Observe(o)
				}
				exact := revisit.ExactEstimate(h)
				if exact == 0 {
					continue
				}
				e := relErr(p.Estimate().Rate, exact)
				sum, worst = sum+e, max(worst, e)
			}
			t.Logf("intervals ×/÷%-5.0f λ·I %-5.2f: summary off the exact estimate by %.2f%% on average, %.2f%% at worst",
				spread, ri, 100*sum/reps, 100*worst)
			if sum/reps > 0.03 || worst > 0.08 {
				t.Errorf("spread %v λ·I %v: mean error %.3f, worst %.3f", spread, ri, sum/reps, worst)
			}
		}
	}
}

// moments returns the mean and standard deviation of xs.
func moments(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

// estimatorRuns estimates simulated Poisson pages, rates spread over six
// orders of magnitude, each checked 24 times at irregular intervals
// (log-uniform within ×/÷3 of the interval I = 1 h), and returns the
// estimates over the true rate: naive (changes over time), the summary
// without and with the time of each check's last change, and the exact
// estimate.
func estimatorRuns(rng *rand.Rand, rate float64, reps int) (naive, summary, dated, exact []float64) {
	const interval = 3600.0
	for range reps {
		var p, pd revisit.Page
		var h []revisit.Obs
		changes, total := 0.0, 0.0
		for range 24 {
			t := interval * math.Exp((2*rng.Float64()-1)*math.Log(3))
			o := check(rng, rate, t)
			_ = pd.Observe(o)
			o.SinceChange = 0
			_ = p.Observe(o)
			h = append(h, o)
			total += t
			if o.Changed {
				changes++
			}
		}
		naive = append(naive, changes/total/rate)
		summary = append(summary, p.Estimate().Rate/rate)
		dated = append(dated, pd.Estimate().Rate/rate)
		exact = append(exact, revisit.ExactEstimate(h)/rate)
	}
	return naive, summary, dated, exact
}

// The estimator is nearly unbiased where checks can see the rate, from a
// page changing once in a hundred checks to one changing three times per
// check, where counting changes underestimates by half; dating each
// check's last change extends that to pages changing far faster than they
// are checked.
func TestEstimatorBias(t *testing.T) {
	rng := newRand(3)
	t.Logf("%-9s %-7s  %-14s %-14s %-14s %-14s", "rate /s", "λ·I", "naive", "summary", "exact", "dated")
	for _, ri := range []float64{0.001, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30} {
		rate := ri / 3600
		naive, summary, dated, exact := estimatorRuns(rng, rate, 2000)
		nm, ns := moments(naive)
		sm, ss := moments(summary)
		em, es := moments(exact)
		dm, ds := moments(dated)
		t.Logf("%-9.2g %-7.3g  %.3f ± %.3f  %.3f ± %.3f  %.3f ± %.3f  %.3f ± %.3f", rate, ri, nm, ns, sm, ss, em, es, dm, ds)
		if ri >= 0.01 && ri <= 3 && math.Abs(sm-1) > 0.1 {
			t.Errorf("λ·I = %v: summary's mean estimate is %.3f of the rate", ri, sm)
		}
		if ri >= 0.01 && math.Abs(dm-1) > 0.1 {
			t.Errorf("λ·I = %v: dated summary's mean estimate is %.3f of the rate", ri, dm)
		}
		if ri >= 0.1 && ri <= 3 && ss > 1.1*es {
			t.Errorf("λ·I = %v: summary's spread %.3f, exact's %.3f", ri, ss, es)
		}
		if ri == 3 && nm > 0.6 {
			t.Errorf("λ·I = 3: naive estimate %.3f of the rate; the test no longer shows its bias", nm)
		}
	}
}

// Old observations are halved away: a page whose rate grows tenfold is
// estimated most of the way to its new rate within a few dozen checks.
func TestEstimateFollowsARateChange(t *testing.T) {
	rng := newRand(4)
	const interval = 3600.0
	const before, after = 0.1 / interval, 1 / interval
	ratios := make([]float64, 0, 500)
	for range 500 {
		var p revisit.Page
		for range 64 {
			_ = p.Observe(check(rng, before, interval))
		}
		for range 48 {
			o := check(rng, after, interval)
			o.SinceChange = 0
			_ = p.Observe(o)
		}
		e := p.Estimate()
		if e.Checks > 32 || e.Checks < 16 {
			t.Fatalf("estimate rests on %v checks, want 16 to 32", e.Checks)
		}
		ratios = append(ratios, e.Rate/after)
	}
	mean, sd := moments(ratios)
	t.Logf("48 checks after a tenfold rise: estimate %.3f ± %.3f of the new rate", mean, sd)
	if mean < 0.7 || mean > 1.2 {
		t.Errorf("estimate %.3f of the new rate after 48 checks", mean)
	}
}

// The grid slides with the page's intervals, over any range, keeping the
// recent ones.
func TestGridSlides(t *testing.T) {
	var p revisit.Page
	for i := range 200 {
		// From a millisecond to 30 years and back.
		octave := float64(i % 80)
		if i%160 >= 80 {
			octave = 80 - octave
		}
		interval := dur(1e-3 * math.Exp2(octave*0.4))
		if err := p.Observe(revisit.Obs{Interval: interval, Changed: i%3 == 0}); err != nil {
			t.Fatal(err)
		}
		e := p.Estimate()
		if !(e.Rate > 0) || math.IsInf(e.Rate, 0) || e.Observed <= 0 {
			t.Fatalf("after %d observations up to %v: %+v", i+1, interval, e)
		}
	}
	// Intervals of one length after a wide history: the estimate is the
	// regular one for the recent window, the old intervals halved away.
	for range 100 {
		_ = p.Observe(revisit.Obs{Interval: time.Hour, Changed: true})
		_ = p.Observe(revisit.Obs{Interval: time.Hour})
	}
	e := p.Estimate()
	want := -math.Log((e.Checks-e.Changes+0.5)/(e.Checks+0.5)) / 3600
	if relErr(e.Rate, want) > 0.01 || relErr(e.Changes, e.Checks/2) > 0.1 {
		t.Errorf("after a hundred regular pairs: %+v, want half changed and rate %v", e, want)
	}
}

func TestCensored(t *testing.T) {
	var p revisit.Page
	for range 5 {
		_ = p.Observe(revisit.Obs{Interval: time.Hour, Changed: true})
	}
	e := p.Estimate()
	if !e.Censored || e.Checks != 5 || e.Changes != 5 {
		t.Errorf("every check changed: %+v, want censored after 5", e)
	}
	if want := revisit.RegularEstimate(5, 5, time.Hour); relErr(e.Rate, want) > 2e-3 {
		t.Errorf("censored rate %v, want Cho's %v", e.Rate, want)
	}
	_ = p.Observe(revisit.Obs{Interval: time.Hour, Changed: true, SinceChange: time.Minute})
	if p.Estimate().Censored {
		t.Error("a dated change still leaves the page censored")
	}
}

func TestPageEncoding(t *testing.T) {
	rng := newRand(5)
	var p revisit.Page
	for i := range 100 {
		_ = p.Observe(check(rng, 1e-4, 3600*rng.Float64()*float64(i+1)))
		b, err := p.AppendBinary([]byte("prefix"))
		if err != nil || len(b) != 6+revisit.PageSize {
			t.Fatalf("AppendBinary: %d bytes, %v", len(b), err)
		}
		var q revisit.Page
		if err := q.UnmarshalBinary(b[6:]); err != nil {
			t.Fatal(err)
		}
		if q != p {
			t.Fatalf("round trip changed the page: %+v, want %+v", q.Estimate(), p.Estimate())
		}
	}
	good, _ := p.MarshalBinary()
	bad := map[string][]byte{
		"short": good[:revisit.PageSize-1],
		"long":  append(append([]byte{}, good...), 0),
		"NaN":   append([]byte{0, 0, 0xc0, 0x7f}, good[4:]...),
		"more unchanged than observed": append(append([]byte{}, good[:4]...),
			append([]byte{0, 0, 0, 0}, good[8:]...)...),
		"more changes than checks": func() []byte {
			b := append([]byte{}, good...)
			for i := 8; i < 8+16; i++ {
				b[i] = 255
			}
			return b
		}(),
	}
	for name, b := range bad {
		q := p
		if err := q.UnmarshalBinary(b); !errors.Is(err, revisit.ErrPageEncoding) {
			t.Errorf("%s: %v, want ErrPageEncoding", name, err)
		}
		if q != p {
			t.Errorf("%s: a refused encoding changed the page", name)
		}
	}
}

func ExamplePage() {
	// A page fetched hourly, found changed at 3 of 10 fetches.
	var p revisit.Page
	for i := range 10 {
		_ = p.Observe(revisit.Obs{Interval: time.Hour, Changed: i%3 == 0 && i > 0})
	}
	e := p.Estimate()
	fmt.Printf("%.0f changes in %.0f checks over %v: one change every %v\n",
		e.Changes, e.Checks, e.Observed, dur(1/e.Rate).Round(time.Minute))
	// Output: 3 changes in 10 checks over 10h0m0s: one change every 2h58m0s
}
