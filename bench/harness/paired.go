package harness

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// PairedRatio is a variant's figure against heed's run by run: the runs of
// one number (Plan.Runs alternates the crawlers within each) are a pair,
// and the ratio of each pair's figures is taken. On a machine whose speed
// drifts between runs, a pair shares the drift, so many pairs resolve a
// cost far smaller than the spread of either crawler's runs.
type PairedRatio struct {
	Pairs int
	// Mean is the geometric mean of the pairs' ratios.
	Mean float64
	// Low and High bound its 95 % bootstrap interval (resampling the
	// pairs, with a fixed seed: the same runs give the same interval).
	Low, High float64
}

// String is the ratio as the tables print it.
func (p PairedRatio) String() string {
	return fmt.Sprintf("%.3f× (95 %% %.3f–%.3f×, %d pairs)", p.Mean, p.Low, p.High, p.Pairs)
}

// bootstrapRounds is how many resamples the interval draws.
const bootstrapRounds = 2000

// pairedRatio pairs the runs of variant with those of base by run number
// and returns the ratios of figure, or nil for fewer than two pairs.
// A pair where either figure is not positive (a failed run) is left out.
func pairedRatio(variant, base []Measurement, figure func(Measurement) float64) *PairedRatio {
	byRun := make(map[int]Measurement, len(base))
	for _, m := range base {
		byRun[m.Run] = m
	}
	var logs []float64
	for _, v := range variant {
		b, ok := byRun[v.Run]
		if !ok || v.Err != nil || b.Err != nil {
			continue
		}
		x, y := figure(v), figure(b)
		if x <= 0 || y <= 0 {
			continue
		}
		logs = append(logs, math.Log(x/y))
	}
	if len(logs) < 2 {
		return nil
	}
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	means := make([]float64, bootstrapRounds)
	sample := make([]float64, len(logs))
	for i := range means {
		for j := range sample {
			sample[j] = logs[rng.IntN(len(logs))]
		}
		means[i] = mean(sample)
	}
	slices.Sort(means)
	return &PairedRatio{
		Pairs: len(logs),
		Mean:  math.Exp(mean(logs)),
		Low:   math.Exp(means[bootstrapRounds*25/1000]),
		High:  math.Exp(means[bootstrapRounds*975/1000-1]),
	}
}
