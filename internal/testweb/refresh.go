package testweb

import "math"

// The freshness of a copy refreshed at fixed intervals, after Cho and
// Garcia-Molina, "Effective page refresh policies for web crawlers" (ACM
// TODS 28(4), 2003). Rates and frequencies are per the same unit of time.
//
// Package frontier/revisit computes the same formulas for the crawler.
// The judge keeps its own on purpose, as robots' tests keep temoto beside
// heed's parser: an error in the crawler's optimum must not also move the
// yardstick its freshness is measured against.

// ExpectedFreshness is F(λ, f) = (1 − e^(−λ/f))·f/λ: the time-averaged
// probability that the copy of a page changing as a Poisson process of rate
// λ is current, when it is refetched every 1/f. A page that never changes
// (λ = 0) is always fresh; one never refetched (f = 0) never is.
func ExpectedFreshness(rate, freq float64) float64 {
	switch {
	case rate <= 0:
		return 1
	case freq <= 0:
		return 0
	}
	r := rate / freq
	return -math.Expm1(-r) / r
}

// marginalGain is g(r) = 1 − (1+r)·e^(−r), with r = λ/f: λ·∂F/∂f. It rises
// from 0 (r = 0, f = ∞) to 1 (r = ∞, f = 0).
func marginalGain(r float64) float64 { return -math.Expm1(-r) - r*math.Exp(-r) }

// MarginalFreshness is ∂F/∂f at (λ, f): (1 − (1+r)·e^(−r))/λ with r = λ/f,
// which tends to 1/λ as f → 0 and falls towards 0 as f grows. It is 0 for a
// page that never changes.
func MarginalFreshness(rate, freq float64) float64 {
	switch {
	case rate <= 0:
		return 0
	case freq <= 0:
		return 1 / rate
	}
	return marginalGain(rate/freq) / rate
}

// frequencyAt returns the f ≥ 0 at which ∂F/∂f = mu for a page of rate λ:
// 0 when 1/λ ≤ mu, as even the first refetch gains less than mu.
func frequencyAt(rate, mu float64) float64 {
	target := mu * rate // g(r) = target, in (0, 1)
	if rate <= 0 || target >= 1 {
		return 0
	}
	if target <= 0 {
		return math.Inf(1)
	}
	lo, hi := 0.0, 1.0
	for marginalGain(hi) < target {
		lo, hi = hi, 2*hi
	}
	// Newton's method on g, whose slope is r·e^(−r), kept inside the
	// bracket by bisecting whenever a step would leave it.
	r := (lo + hi) / 2
	for range 100 {
		g := marginalGain(r) - target
		if g < 0 {
			lo = r
		} else {
			hi = r
		}
		next := r - g/(r*math.Exp(-r))
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-r) <= 1e-15*r || next == lo || next == hi {
			r = next
			break
		}
		r = next
	}
	return rate / r
}

// OptimalFrequencies returns the refetch frequencies fᵢ ≥ 0 that maximise
// Σ F(λᵢ, fᵢ) subject to Σ fᵢ = budget: the offline optimum of Cho and
// Garcia-Molina. By the Lagrange condition every page with fᵢ > 0 has
// ∂F/∂f = μ, and a page with 1/λᵢ ≤ μ (one changing too fast to be worth
// it) gets fᵢ = 0; μ is found by bisection so the frequencies spend the
// budget. Pages that never change get 0, so if no page changes nothing is
// spent.
func OptimalFrequencies(rates []float64, budget float64) []float64 {
	freqs := make([]float64, len(rates))
	var muMax float64 // above it every frequency is 0
	for _, r := range rates {
		if r > 0 {
			muMax = max(muMax, 1/r)
		}
	}
	if budget <= 0 || muMax == 0 {
		return freqs
	}
	total := func(mu float64) float64 {
		var s float64
		for _, r := range rates {
			s += frequencyAt(r, mu)
		}
		return s
	}
	// The spend falls as μ rises; bracket the budget, then bisect on log μ.
	lo, hi := muMax/2, muMax
	for total(lo) < budget {
		lo, hi = lo/2, lo
	}
	for range 200 {
		m := math.Sqrt(lo * hi)
		if m <= lo || m >= hi {
			break
		}
		if total(m) > budget {
			lo = m
		} else {
			hi = m
		}
	}
	spent := 0.0
	for i, r := range rates {
		freqs[i] = frequencyAt(r, hi)
		spent += freqs[i]
	}
	// The bisection leaves the spend a hair under the budget: scale the
	// rest in, which moves every fᵢ by a relative 1e-12 or so.
	if spent > 0 {
		for i := range freqs {
			freqs[i] *= budget / spent
		}
	}
	return freqs
}

// MeanFreshness returns the mean of F(λᵢ, fᵢ) over the pages; 1 for none.
func MeanFreshness(rates, freqs []float64) float64 {
	if len(rates) == 0 {
		return 1
	}
	var s float64
	for i, r := range rates {
		s += ExpectedFreshness(r, freqs[i])
	}
	return s / float64(len(rates))
}

// UniformFreshness is the mean freshness of pages refetched uniformly: each
// at budget/n.
func UniformFreshness(rates []float64, budget float64) float64 {
	if len(rates) == 0 {
		return 1
	}
	f := budget / float64(len(rates))
	freqs := make([]float64, len(rates))
	for i := range freqs {
		freqs[i] = f
	}
	return MeanFreshness(rates, freqs)
}

// OptimalFreshness is the mean freshness of the pages under
// OptimalFrequencies.
func OptimalFreshness(rates []float64, budget float64) float64 {
	return MeanFreshness(rates, OptimalFrequencies(rates, budget))
}
