package revisit

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrBudget is returned by Allocate when the budget cannot pay for every
// page at its longest interval, or is not a positive number.
var ErrBudget = errors.New("revisit: budget does not cover the pages at their longest interval")

// ErrRate is returned by Allocate for a change rate that is negative or not
// a number.
var ErrRate = errors.New("revisit: change rate is negative or not a number")

// Freshness is the time-averaged probability that the copy of a page is
// current when the page changes as a Poisson process of rate changes per
// second and is fetched at regular intervals, freq times a second:
//
//	F(λ, f) = (1 − e^(−λ/f)) · f/λ
//
// A page that never changes is always fresh; one never fetched never is.
func Freshness(rate, freq float64) float64 {
	switch {
	case rate <= 0:
		return 1
	case freq <= 0:
		return 0
	case math.IsInf(freq, 1):
		return 1
	}
	r := rate / freq
	return -math.Expm1(-r) / r
}

// FreshnessSlope is ∂F/∂f, how much freshness one more fetch per second of
// the page buys: (1 − (1+r)·e^(−r))/λ with r = λ/f. It falls from 1/λ at
// f = 0 towards 0 as f grows, so F is concave in f and the optimum of a
// budget split between pages is where every fetched page has the same
// slope.
func FreshnessSlope(rate, freq float64) float64 {
	switch {
	case rate <= 0 || math.IsInf(freq, 1) || math.IsInf(rate, 1):
		return 0
	case freq <= 0:
		return 1 / rate
	}
	return gain(rate/freq) / rate
}

// gain is 1 − (1+r)·e^(−r), the slope of freshness times the rate, computed
// without cancellation for small r.
func gain(r float64) float64 {
	if r < 0.02 {
		// Σ_{k≥2} (−1)^k (k−1) r^k / k!
		sum, term := 0.0, r
		for k := 2; k <= 9; k++ {
			term *= -r / float64(k)
			sum += float64(k-1) * term
		}
		return -sum
	}
	return -math.Expm1(-r) - r*math.Exp(-r)
}

// OptimalFreq is the fetch frequency (per second) that maximises
// F(λ, f) − μ·f for a page of change rate λ (per second): the one where
// ∂F/∂f = μ, or 0 where even the first fetch is worth less than μ, which is
// where 1/λ ≤ μ. μ, in seconds, is the price of one fetch per second of the
// host's budget in freshness, so pages that change more often than once per
// μ are not worth chasing. A page that never changes gets 0; with μ ≤ 0
// (a free budget) every changing page gets +Inf.
func OptimalFreq(rate, mu float64) float64 {
	switch {
	case !(rate > 0):
		return 0
	case !(mu > 0):
		return math.Inf(1)
	}
	c := mu * rate
	if c >= 1 {
		return 0
	}
	return rate / solveGain(c)
}

// solveGain returns the r > 0 where gain(r) = c, for 0 < c < 1, by Newton's
// method kept inside a bracket that bisection narrows.
func solveGain(c float64) float64 {
	lo, hi := 0.0, 1.0
	for gain(hi) < c {
		lo, hi = hi, hi*2
	}
	r := math.Sqrt(2 * c) // gain(r) ≈ r²/2 for small r
	if !(r > lo && r < hi) {
		r = (lo + hi) / 2
	}
	for range 100 {
		g := gain(r) - c
		if g > 0 {
			hi = r
		} else {
			lo = r
		}
		next := r - g/(r*math.Exp(-r))
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-r) <= 1e-13*r {
			return next
		}
		r = next
	}
	return r
}

// Bounds limits the interval between two fetches of a page; zero means no
// limit. Allocate and the Default policy fetch every page at least once
// per Max and at most once per Min.
type Bounds struct {
	Min, Max time.Duration
}

// freqs returns the frequencies (per second) the bounds allow: fmin from
// Max, fmax from Min.
func (b Bounds) freqs() (fmin, fmax float64) {
	fmax = math.Inf(1)
	if b.Min > 0 {
		fmax = 1 / b.Min.Seconds()
	}
	if b.Max > 0 {
		fmin = 1 / b.Max.Seconds()
	}
	return fmin, fmax
}

// clampFreq is OptimalFreq kept within [fmin, fmax].
func clampFreq(rate, mu, fmin, fmax float64) float64 {
	return min(fmax, max(fmin, OptimalFreq(rate, mu)))
}

// Allocate splits a budget of fetches per second between pages of the given
// change rates (per second) so as to maximise their mean freshness, the
// exact offline optimum of Cho and Garcia-Molina ("Effective page refresh
// policies for web crawlers", 2003) within the bounds: every page gets
// OptimalFreq(rate, μ) kept within the bounds, with the one μ (seconds) at
// which the frequencies add up to the budget, found by bisection. The
// frequencies are appended to dst. When even the shortest intervals spend
// less than the budget, every page gets them and μ is 0. A budget that
// cannot pay for the longest intervals is an error wrapping ErrBudget.
func Allocate(dst, rates []float64, budget float64, b Bounds) (mu float64, freqs []float64, err error) {
	fmin, fmax := b.freqs()
	minRate := math.Inf(1)
	for i, r := range rates {
		if !(r >= 0) {
			return 0, dst, fmt.Errorf("%w: rates[%d] = %v", ErrRate, i, r)
		}
		if r > 0 {
			minRate = min(minRate, r)
		}
	}
	if !(budget > 0) || float64(len(rates))*fmin > budget*(1+1e-12) {
		return 0, dst, fmt.Errorf("%w: %v fetches/s for %d pages", ErrBudget, budget, len(rates))
	}
	spend := func(mu float64) float64 {
		sum := 0.0
		for _, r := range rates {
			sum += clampFreq(r, mu, fmin, fmax)
		}
		return sum
	}
	if math.IsInf(minRate, 1) || spend(0) <= budget {
		mu = 0
	} else {
		mu = bisectMu(spend, budget, 1/minRate)
	}
	for _, r := range rates {
		dst = append(dst, clampFreq(r, mu, fmin, fmax))
	}
	return mu, dst, nil
}

// bisectMu finds the μ in (0, hi] where the decreasing spend(μ) meets the
// budget, bisecting on log μ. spend(hi) is the least spend there is, every
// page at its longest interval.
func bisectMu(spend func(float64) float64, budget, hi float64) float64 {
	lo := hi
	for spend(lo) < budget {
		lo /= 16
	}
	for range 200 {
		mid := math.Sqrt(lo * hi)
		if spend(mid) > budget {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-12*hi {
			break
		}
	}
	return hi
}

// MeanFreshness is the mean of Freshness(rates[i], freqs[i]) over the
// pages both slices cover: the share of the copy that is current on
// average.
func MeanFreshness(rates, freqs []float64) float64 {
	n := min(len(rates), len(freqs))
	if n == 0 {
		return 1
	}
	sum := 0.0
	for i := range n {
		sum += Freshness(rates[i], freqs[i])
	}
	return sum / float64(n)
}
