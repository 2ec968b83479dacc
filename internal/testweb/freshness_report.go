package testweb

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// addAll adds to the page-time sums a URL that exists from lo to hi and is
// fresh for fresh of it.
func (r *FreshnessReport) addAll(t *urlTrack, lo, hi, fresh time.Duration) {
	if lo >= hi {
		return
	}
	r.allFresh += fresh
	r.allExist += hi - lo
	if t.firstAt <= hi {
		// Before its first answer a copy is never fresh: all of fresh
		// falls after it.
		r.knownFresh += fresh
		r.knownExist += hi - max(lo, t.firstAt)
	}
}

// addNew counts a URL that appeared in the window, and when it was first
// answered.
func (r *FreshnessReport) addNew(a address, t *urlTrack, to time.Duration) {
	r.NewPages++
	if t.firstAt > to {
		return
	}
	r.NewPagesFetched++
	d := max(t.firstAt-a.born(), 0)
	r.discoverySum += d
	r.LongestDiscoveryDelay = max(r.LongestDiscoveryDelay, d)
}

// ratio is a/b, or 1 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 1
	}
	return a / b
}

// finish computes the totals from the hosts' judgements and the sums.
func (r *FreshnessReport) finish() {
	var measured, uniform, optimum, full float64
	for _, h := range r.Hosts {
		r.Pages += h.Pages
		r.Fetches += h.Fetches
		n := float64(h.Pages)
		measured += n * h.Measured
		uniform += n * h.Uniform
		optimum += n * h.Optimum
		full += n * h.OptimumFullBudget
	}
	r.Measured, r.Uniform, r.Optimum, r.OptimumFullBudget = 1, 1, 1, 1
	if r.Pages > 0 {
		n := float64(r.Pages)
		r.Measured, r.Uniform, r.Optimum, r.OptimumFullBudget = measured/n, uniform/n, optimum/n, full/n
	}
	r.RatioToOptimum = ratio(r.Measured, r.Optimum)
	r.RatioToFullBudget = ratio(r.Measured, r.OptimumFullBudget)
	r.GapClosed = 1
	if gap := r.Optimum - r.Uniform; gap > 1e-12 {
		r.GapClosed = (r.Measured - r.Uniform) / gap
	}
	r.AllFresh = ratio(float64(r.allFresh), float64(r.allExist))
	r.KnownFresh = ratio(float64(r.knownFresh), float64(r.knownExist))
	r.ConditionalShare = ratio(float64(r.ConditionalRevisits), float64(r.Revisits))
	r.BytesRatio = ratio(float64(r.BytesSent), float64(r.BytesUnconditional))
	if r.NewPagesFetched > 0 {
		r.MeanDiscoveryDelay = r.discoverySum / time.Duration(r.NewPagesFetched)
	}
}

// FreshnessTargets are the bounds FreshnessReport.Check holds a crawl to.
type FreshnessTargets struct {
	RatioToOptimum    float64 // at least this share of the optimum at the same fetch count
	GapClosed         float64 // at least this share of the way from uniform to the optimum
	RatioToFullBudget float64 // at least this share of the optimum at the full politeness budget
	ConditionalShare  float64 // at least this share of revisits with validators conditional
}

// DefaultFreshnessTargets returns the targets the continuous-crawl
// benchmark holds heed to: 0.9× the optimum, half the gap from uniform
// closed, 0.8× the optimum at the full budget, 99 % of revisits
// conditional.
func DefaultFreshnessTargets() FreshnessTargets {
	return FreshnessTargets{RatioToOptimum: 0.9, GapClosed: 0.5, RatioToFullBudget: 0.8, ConditionalShare: 0.99}
}

// Check returns nil if the crawl met the targets with no politeness or
// robots.txt violation; otherwise it says in one error what fell short.
func (r *FreshnessReport) Check(t FreshnessTargets) error {
	var errs []error
	below := func(what string, got, want float64) {
		if got < want {
			errs = append(errs, fmt.Errorf("%s %.3f, below %.3f", what, got, want))
		}
	}
	below("freshness / optimum", r.RatioToOptimum, t.RatioToOptimum)
	below("gap closed", r.GapClosed, t.GapClosed)
	below("freshness / optimum at full budget", r.RatioToFullBudget, t.RatioToFullBudget)
	below("conditional share of revisits", r.ConditionalShare, t.ConditionalShare)
	violations := []struct {
		what string
		list []string
	}{{"politeness", r.PolitenessViolations}, {"robots.txt", r.RobotsViolations}}
	for _, v := range violations {
		if what, list := v.what, v.list; len(list) > 0 {
			errs = append(errs, fmt.Errorf("%d %s violations, e.g. %s", len(list), what, strings.Join(list[:min(len(list), 3)], "; ")))
		}
	}
	return errors.Join(errs...)
}

// String summarises the report in a few lines.
func (r *FreshnessReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "window %v: %d pages, %d fetches; freshness %.3f, uniform %.3f, optimum %.3f (ratio %.3f, gap closed %.2f), optimum at full budget %.3f (ratio %.3f)\n",
		r.To.Sub(r.From).Round(time.Second), r.Pages, r.Fetches, r.Measured, r.Uniform, r.Optimum, r.RatioToOptimum, r.GapClosed,
		r.OptimumFullBudget, r.RatioToFullBudget)
	fmt.Fprintf(&b, "all pages %.3f fresh, known pages %.3f; requests %d, page fetches %d (new %d, changed %d, unchanged %d, gone %d, moved %d; 304 %d)\n",
		r.AllFresh, r.KnownFresh, r.Requests, r.PageFetches, r.Changes.New, r.Changes.Changed, r.Changes.Unchanged,
		r.Changes.Gone, r.Changes.Moved, r.NotModified)
	fmt.Fprintf(&b, "conditional revisits %d/%d (%.3f); bytes %d of %d unconditional (%.3f); new pages %d, fetched %d, discovery mean %v, longest %v\n",
		r.ConditionalRevisits, r.Revisits, r.ConditionalShare, r.BytesSent, r.BytesUnconditional, r.BytesRatio,
		r.NewPages, r.NewPagesFetched, r.MeanDiscoveryDelay.Round(time.Millisecond), r.LongestDiscoveryDelay.Round(time.Millisecond))
	fmt.Fprintf(&b, "politeness violations %d, robots violations %d, foreign requests %d",
		len(r.PolitenessViolations), len(r.RobotsViolations), r.Foreign)
	return b.String()
}
