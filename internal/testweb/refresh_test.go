package testweb

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestExpectedFreshness(t *testing.T) {
	cases := []struct {
		rate, freq, want float64
	}{
		{0, 0, 1},                      // never changes: always fresh
		{1, 0, 0},                      // never refetched
		{1, 1, 1 - math.Exp(-1)},       // r = 1
		{2, 1, (1 - math.Exp(-2)) / 2}, // r = 2
		{1e-9, 1, 1 - 0.5e-9},          // r → 0: F → 1 − r/2
	}
	for _, c := range cases {
		if got := ExpectedFreshness(c.rate, c.freq); !near(got, c.want, 1e-12) {
			t.Errorf("F(%v, %v) = %v, want %v", c.rate, c.freq, got, c.want)
		}
	}
	// ∂F/∂f against a central difference.
	for _, c := range [][2]float64{{1, 1}, {3, 0.5}, {0.01, 2}} {
		h := 1e-6 * c[1]
		num := (ExpectedFreshness(c[0], c[1]+h) - ExpectedFreshness(c[0], c[1]-h)) / (2 * h)
		if got := MarginalFreshness(c[0], c[1]); !near(got, num, 1e-6*math.Max(1, num)) {
			t.Errorf("∂F/∂f(%v, %v) = %v, numerically %v", c[0], c[1], got, num)
		}
	}
	if got := MarginalFreshness(4, 0); got != 0.25 {
		t.Errorf("∂F/∂f at f = 0 is %v, want 1/λ", got)
	}
}

func TestOptimalFrequenciesEqualRatesAreUniform(t *testing.T) {
	rates := []float64{0.3, 0.3, 0.3, 0.3}
	freqs := OptimalFrequencies(rates, 2)
	for i, f := range freqs {
		if !near(f, 0.5, 1e-9) {
			t.Errorf("f[%d] = %v, want 0.5", i, f)
		}
	}
	if u, o := UniformFreshness(rates, 2), OptimalFreshness(rates, 2); !near(u, o, 1e-12) {
		t.Errorf("uniform %v, optimum %v: equal rates make uniform optimal", u, o)
	}
}

// checkKKT checks the Lagrange conditions of the optimum: the budget spent,
// one ∂F/∂f = μ for every visited page, and 1/λ ≤ μ for every unvisited
// changing page.
func checkKKT(t *testing.T, rates, freqs []float64, budget float64) {
	t.Helper()
	var sum, mu float64
	for i, f := range freqs {
		if f < 0 {
			t.Fatalf("f[%d] = %v < 0", i, f)
		}
		sum += f
		if f > 0 {
			mu = MarginalFreshness(rates[i], f)
		}
	}
	if !near(sum, budget, 1e-9*budget) {
		t.Errorf("Σ f = %v, want the budget %v", sum, budget)
	}
	for i, f := range freqs {
		switch {
		case rates[i] == 0 && f != 0:
			t.Errorf("page %d never changes but f = %v", i, f)
		case f > 0 && !near(MarginalFreshness(rates[i], f), mu, 1e-6*mu):
			t.Errorf("page %d (λ %v, f %v): ∂F/∂f = %v, others %v", i, rates[i], f, MarginalFreshness(rates[i], f), mu)
		case f == 0 && rates[i] > 0 && 1/rates[i] > mu*(1+1e-6):
			t.Errorf("page %d (λ %v) unvisited though 1/λ = %v > μ = %v", i, rates[i], 1/rates[i], mu)
		}
	}
}

func TestOptimalFrequenciesKKT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		n := 1 + rng.IntN(200)
		rates := make([]float64, n)
		for i := range rates {
			if rng.IntN(10) > 0 {
				rates[i] = math.Exp(rng.Float64()*12 - 9) // e^-9 … e^3
			}
		}
		budget := math.Exp(rng.Float64()*10-5) * float64(n) * 0.01
		freqs := OptimalFrequencies(rates, budget)
		anyChanging := false
		for _, r := range rates {
			anyChanging = anyChanging || r > 0
		}
		if !anyChanging {
			continue
		}
		checkKKT(t, rates, freqs, budget)
		// No feasible move of budget between two pages does better.
		best := MeanFreshness(rates, freqs)
		for range 50 {
			i, j := rng.IntN(n), rng.IntN(n)
			d := freqs[i] * rng.Float64()
			moved := append([]float64(nil), freqs...)
			moved[i] -= d
			moved[j] += d
			if got := MeanFreshness(rates, moved); got > best+1e-12 {
				t.Fatalf("trial %d: moving %v from page %d to %d raises freshness %v → %v", trial, d, i, j, best, got)
			}
		}
		if u := UniformFreshness(rates, budget); u > best+1e-12 {
			t.Errorf("trial %d: uniform %v beats the optimum %v", trial, u, best)
		}
	}
}

func TestOptimalFrequenciesLeaveTheFastestPageAlone(t *testing.T) {
	rates := []float64{1, 1, 1e6}
	freqs := OptimalFrequencies(rates, 2)
	if freqs[2] != 0 {
		t.Errorf("page changing a million times per unit got f = %v; refetching it is not worth it", freqs[2])
	}
	checkKKT(t, rates, freqs, 2)
	if !near(freqs[0], 1, 1e-9) || !near(freqs[1], 1, 1e-9) {
		t.Errorf("the two slow pages got %v and %v, want the budget split evenly", freqs[0], freqs[1])
	}
}

func TestOptimalFrequenciesEdgeCases(t *testing.T) {
	if f := OptimalFrequencies([]float64{0, 0}, 5); f[0] != 0 || f[1] != 0 {
		t.Errorf("static pages got %v, want nothing spent", f)
	}
	if f := OptimalFrequencies([]float64{1, 2}, 0); f[0] != 0 || f[1] != 0 {
		t.Errorf("no budget gave %v", f)
	}
	if got := OptimalFreshness(nil, 1); got != 1 {
		t.Errorf("no pages: %v, want 1", got)
	}
	// A huge budget refetches everything nearly continuously.
	if got := OptimalFreshness([]float64{1, 10, 100}, 1e9); got < 0.9999 {
		t.Errorf("huge budget: %v", got)
	}
}

// With rates spread log-uniformly over three orders of magnitude and a
// budget revisiting each page somewhere in the middle of that range,
// uniform revisiting reaches about 0.94× the optimum: the figure issue 20
// quotes. The rates are those of a changing web made for it.
func TestUniformIsNearTheOptimumOnLogUniformRates(t *testing.T) {
	w, err := NewChanging(ChangingConfig{Hosts: 1, PagesPerHost: 1000, Seed: 7,
		MinChangeInterval: time.Minute, MaxChangeInterval: 24 * time.Hour}, []string{"a.test"})
	if err != nil {
		t.Fatal(err)
	}
	var rates []float64
	for _, p := range w.Pages(w.Start()) {
		rates = append(rates, p.Rate)
	}
	for _, every := range []time.Duration{10 * time.Minute, 30 * time.Minute} {
		budget := float64(len(rates)) / every.Seconds()
		u, o := UniformFreshness(rates, budget), OptimalFreshness(rates, budget)
		t.Logf("each page every %v: uniform %.3f, optimum %.3f, ratio %.3f", every, u, o, u/o)
		if r := u / o; r < 0.92 || r > 0.96 {
			t.Errorf("each page every %v: uniform/optimum = %.3f, want about 0.94", every, r)
		}
	}
}
