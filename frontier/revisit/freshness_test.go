package revisit_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier/revisit"
)

func TestFreshness(t *testing.T) {
	for _, c := range []struct {
		rate, freq, want float64
	}{
		{1, 1, 1 - math.Exp(-1)},
		{2, 1, (1 - math.Exp(-2)) / 2},
		{1e-9, 1, 1 - 0.5e-9},
		{0, 0, 1},
		{0, 5, 1},
		{3, 0, 0},
		{3, math.Inf(1), 1},
	} {
		if got := revisit.Freshness(c.rate, c.freq); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Freshness(%v, %v) = %v, want %v", c.rate, c.freq, got, c.want)
		}
	}
}

// FreshnessSlope is the derivative of Freshness, from r = λ/f tiny (the
// series) to large.
func TestFreshnessSlopeIsTheDerivative(t *testing.T) {
	const rate = 0.37
	for _, r := range []float64{1e-4, 0.01, 0.0199, 0.02, 0.0201, 0.1, 1, 5, 30} {
		f := rate / r
		h := f * 1e-5
		numeric := (revisit.Freshness(rate, f+h) - revisit.Freshness(rate, f-h)) / (2 * h)
		got := revisit.FreshnessSlope(rate, f)
		if math.Abs(got-numeric) > 1e-6*math.Abs(numeric)+1e-12 {
			t.Errorf("r = %v: slope %v, numeric derivative %v", r, got, numeric)
		}
	}
	if got := revisit.FreshnessSlope(2, 0); got != 0.5 {
		t.Errorf("slope at f = 0 is %v, want 1/λ", got)
	}
	if got := revisit.FreshnessSlope(0, 1); got != 0 {
		t.Errorf("slope of a static page is %v", got)
	}
}

func TestOptimalFreq(t *testing.T) {
	for _, rate := range []float64{1e-7, 1e-3, 1, 50} {
		for _, c := range []float64{1e-9, 1e-4, 0.01, 0.3, 0.9, 0.999, 1 - 1e-12} {
			mu := c / rate
			f := revisit.OptimalFreq(rate, mu)
			if !(f > 0) || math.IsInf(f, 0) {
				t.Fatalf("OptimalFreq(%v, %v) = %v", rate, mu, f)
			}
			if slope := revisit.FreshnessSlope(rate, f); math.Abs(slope/mu-1) > 1e-9 {
				t.Errorf("λ=%v μλ=%v: slope at the optimum %v, want μ = %v", rate, c, slope, mu)
			}
		}
		// Pages changing more often than once per μ are not worth a fetch.
		for _, mu := range []float64{1 / rate, 2 / rate} {
			if f := revisit.OptimalFreq(rate, mu); f != 0 {
				t.Errorf("OptimalFreq(%v, %v) = %v, want 0", rate, mu, f)
			}
		}
	}
	if f := revisit.OptimalFreq(0, 1); f != 0 {
		t.Errorf("static page: %v, want 0", f)
	}
	if f := revisit.OptimalFreq(1, 0); !math.IsInf(f, 1) {
		t.Errorf("free budget: %v, want +Inf", f)
	}
}

// rates spread log-uniformly over six orders of magnitude, a tenth static.
func spreadRates(n int) []float64 {
	rng := newRand(9)
	rates := make([]float64, n)
	for i := range rates {
		if rng.Float64() < 0.1 {
			continue
		}
		rates[i] = math.Pow(10, -6+6*rng.Float64())
	}
	return rates
}

// Allocate spends the budget, and no small move of budget between two
// pages makes the copy fresher: the allocation is the optimum.
func TestAllocateIsOptimal(t *testing.T) {
	rates := spreadRates(2000)
	for _, b := range []revisit.Bounds{{}, {Min: time.Minute, Max: 30 * 24 * time.Hour}} {
		for _, budget := range []float64{0.01, 0.1, 1} {
			mu, freqs, err := revisit.Allocate(nil, rates, budget, b)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for _, f := range freqs {
				sum += f
			}
			if math.Abs(sum/budget-1) > 1e-9 {
				t.Errorf("bounds %v budget %v: spends %v", b, budget, sum)
			}
			best := revisit.MeanFreshness(rates, freqs)
			rng := newRand(10)
			for range 5000 {
				i, j := rng.IntN(len(rates)), rng.IntN(len(rates))
				d := min(freqs[i], 1e-3*budget/float64(len(rates)))
				fi, fj := freqs[i]-d, freqs[j]+d
				if b.Max > 0 && fi < 1/b.Max.Seconds() || b.Min > 0 && fj > 1/b.Min.Seconds() {
					continue
				}
				gain := revisit.Freshness(rates[i], fi) + revisit.Freshness(rates[j], fj) -
					revisit.Freshness(rates[i], freqs[i]) - revisit.Freshness(rates[j], freqs[j])
				if gain > 1e-13 {
					t.Fatalf("bounds %v budget %v μ %v: moving %v/s from page %d to %d gains %v",
						b, budget, mu, d, i, j, gain)
				}
			}
			uniform := make([]float64, len(rates))
			for i := range uniform {
				uniform[i] = budget / float64(len(rates))
			}
			t.Logf("bounds %v budget %v/s: μ %.4g s, freshness %.4f, uniform %.4f", b, budget, mu, best, revisit.MeanFreshness(rates, uniform))
		}
	}
}

func TestAllocateEdges(t *testing.T) {
	b := revisit.Bounds{Min: time.Second, Max: time.Hour}
	// More budget than the shortest intervals use: every page at Min.
	mu, freqs, err := revisit.Allocate(nil, []float64{1, 2, 0.5}, 10, b)
	if err != nil || mu != 0 {
		t.Fatalf("ample budget: μ %v, %v", mu, err)
	}
	for i, f := range freqs {
		if f != 1 {
			t.Errorf("ample budget: page %d at %v/s, want 1/s", i, f)
		}
	}
	// Static pages only: each at Max.
	_, freqs, err = revisit.Allocate([]float64{7}, []float64{0, 0}, 1, b)
	if err != nil || len(freqs) != 3 || freqs[0] != 7 || freqs[1] != 1/3600. || freqs[2] != 1/3600. {
		t.Errorf("static pages: %v, %v", freqs, err)
	}
	for _, c := range []struct {
		name   string
		rates  []float64
		budget float64
		want   error
	}{
		{"budget below Max's", []float64{1, 1}, 1 / 3600., revisit.ErrBudget},
		{"zero budget", []float64{1}, 0, revisit.ErrBudget},
		{"NaN budget", []float64{1}, math.NaN(), revisit.ErrBudget},
		{"negative rate", []float64{1, -1}, 1, revisit.ErrRate},
		{"NaN rate", []float64{math.NaN()}, 1, revisit.ErrRate},
	} {
		if _, _, err := revisit.Allocate(nil, c.rates, c.budget, b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func ExampleAllocate() {
	// Three pages changing about every minute, hour and day, and one that
	// never does, sharing one fetch every ten minutes.
	rates := []float64{1 / 60., 1 / 3600., 1 / 86400., 0}
	mu, freqs, err := revisit.Allocate(nil, rates, 1/600., revisit.Bounds{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("μ = %.0f s\n", mu)
	for i, f := range freqs {
		if f == 0 {
			fmt.Printf("page %d: never\n", i)
			continue
		}
		fmt.Printf("page %d: every %v\n", i, time.Duration(float64(time.Second)/f).Round(time.Minute))
	}
	fmt.Printf("freshness %.3f\n", revisit.MeanFreshness(rates, freqs))
	// Output:
	// μ = 65 s
	// page 0: never
	// page 1: every 12m0s
	// page 2: every 56m0s
	// page 3: never
	// freshness 0.721
}
