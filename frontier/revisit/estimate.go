package revisit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInterval is returned by Page.Observe for an observation whose interval
// is not positive: a clock that went back, or a fetch recorded twice.
var ErrInterval = errors.New("revisit: observation interval is not positive")

// ErrPageEncoding is returned by Page.UnmarshalBinary for bytes that are
// not a Page's encoding.
var ErrPageEncoding = errors.New("revisit: malformed page state")

// PageSize is the size in bytes of a Page in memory and encoded.
const PageSize = 28

const (
	nbins    = 16  // points of the interval grid
	unit     = 8   // one observation, in the counters' eighths
	full     = 255 // the most a counter holds: 31⅞ observations
	perOctav = 512 // the grid origin's steps per doubling of the interval
	// The origin keeps every grid point within int16 steps.
	minOrigin = math.MinInt16
	maxOrigin = math.MaxInt16 - (nbins-1)*perOctav
)

// Obs is one observation of a page: a fetch compared with the one before.
type Obs struct {
	// Interval is the time since the previous observation.
	Interval time.Duration
	// Changed says whether the page changed in that interval.
	Changed bool
	// SinceChange is how long before this observation the page last
	// changed, when a trustworthy source says so (a Last-Modified header
	// or sitemap <lastmod> the host has proven honest); zero when unknown.
	// It is used only when Changed and 0 < SinceChange ≤ Interval.
	SinceChange time.Duration
}

// Page is what the revisit policy knows of one page's changes: a summary of
// its last 16 to 32 observations, from which Estimate computes the page's
// change rate. It is 28 bytes, comparable, and its zero value is a page
// never observed; stores keep it in the URL's record (AppendBinary,
// UnmarshalBinary).
//
// The summary keeps exactly what the maximum-likelihood estimate needs:
//   - the time observed without a change: the unchanged intervals, and in
//     changed intervals whose last change time is known the time since it;
//   - how many changed intervals had a known change time;
//   - the other changed intervals, as counts on a grid of interval
//     lengths a doubling apart (16 points, which slide with the page's
//     intervals), each interval shared between the two points around it in
//     proportion to its logarithm's place between them, so that intervals
//     on the grid are kept exactly and the estimate from others stays
//     within a few percent of the exact one (see the tests);
//   - how many observations there were, and the time they cover.
//
// Counts are kept in eighths of an observation. Once 32 would not fit,
// every count and the unchanged time are halved, so the estimate rests on
// the last 16 to 32 observations, older ones weighing half as much each
// time: it follows a page whose rate changes, within a few dozen fetches.
type Page struct {
	exposure float32      // seconds observed unchanged
	span     float32      // seconds observed
	bins     [nbins]uint8 // changed intervals without a known change time
	checks   uint8        // observations
	dated    uint8        // changed intervals with a known change time
	origin   int16        // log2 of the grid's first point in seconds, ×perOctav
}

// Observe adds an observation to the page's summary. An interval that is
// not positive is refused with an error wrapping ErrInterval and changes
// nothing.
func (p *Page) Observe(o Obs) error {
	t := o.Interval.Seconds()
	if !(t > 0) {
		return fmt.Errorf("%w: %v", ErrInterval, o.Interval)
	}
	if int(p.checks)+unit > full {
		p.halve()
	}
	p.checks += unit
	p.span += float32(t)
	switch {
	case !o.Changed:
		p.exposure += float32(t)
	case o.SinceChange > 0 && o.SinceChange <= o.Interval:
		p.exposure += float32(o.SinceChange.Seconds())
		p.dated += unit
	default:
		p.bin(t)
	}
	return nil
}

// halve makes every observation so far weigh half as much. Rounding down
// keeps the changed counts within the observations.
func (p *Page) halve() {
	p.exposure /= 2
	p.span /= 2
	p.checks >>= 1
	p.dated >>= 1
	for k := range p.bins {
		p.bins[k] >>= 1
	}
}

// bin counts a changed interval of t seconds on the grid.
func (p *Page) bin(t float64) {
	x := math.Log2(t) * perOctav
	if p.bins == [nbins]uint8{} {
		// The first interval lands on a point, so that a page fetched at
		// regular intervals is summarised exactly.
		p.origin = int16(min(maxOrigin, max(minOrigin, math.Round(x)-nbins/2*perOctav)))
	}
	pos := (x - float64(p.origin)) / perOctav
	if pos < 0 {
		p.slide(int(math.Floor(pos)))
	} else if pos > nbins-1 {
		p.slide(int(math.Ceil(pos - (nbins - 1))))
	}
	pos = min(nbins-1, max(0, (x-float64(p.origin))/perOctav))
	k := int(pos)
	q := uint8(math.Round((pos - float64(k)) * unit))
	p.bins[k] += unit - q
	if q > 0 {
		p.bins[k+1] += q
	}
}

// slide moves the grid by s points (up when s > 0), folding the counts
// that fall off one end into the point at that end: the recent interval is
// kept exactly, the older ones approximately. The origin stays within its
// range.
func (p *Page) slide(s int) {
	o := int(p.origin) + s*perOctav
	for o > maxOrigin {
		o -= perOctav
		s--
	}
	for o < minOrigin {
		o += perOctav
		s++
	}
	var moved [nbins]uint8
	for k, c := range p.bins {
		moved[min(nbins-1, max(0, k-s))] += c
	}
	p.bins, p.origin = moved, int16(o)
}

// point is the interval in seconds at grid point k.
func (p *Page) point(k int) float64 {
	return math.Exp2(float64(p.origin)/perOctav + float64(k))
}

// Estimate is a page's estimated change rate and what it rests on.
type Estimate struct {
	// Rate is the estimated rate of change, per second; 0 when no change
	// was seen.
	Rate float64
	// Checks is the number of observations the estimate rests on, and
	// Changes how many of them found a change, both after the halvings.
	Checks, Changes float64
	// Observed is the time those observations cover.
	Observed time.Duration
	// Censored says that every observation found a change and none said
	// when: the page changes at least about as fast as Rate, maybe much
	// faster.
	Censored bool
}

// Estimate computes the page's change rate from its summary: the maximum
// likelihood estimate of Cho and Garcia-Molina for irregular intervals
// ("Estimating frequency of change", 2003), extended to intervals whose
// last change time is known, and with their correction for small samples,
// which keeps it finite when every interval found a change. It solves for λ
//
//	Σ_changed tᵢ/(e^(λtᵢ) − 1) + D/λ = U + ½·((1 − D/n)·T + (D/n)·U)/n
//
// where the sum is over changed intervals without a known change time, D
// counts those with one, U is the time observed unchanged, n the number of
// observations and T the time they cover. For n regular intervals of
// length I with X changes this is −ln((n − X + ½)/(n + ½))/I, their
// estimator for regular intervals (RegularEstimate).
func (p Page) Estimate() Estimate {
	if p.checks == 0 {
		return Estimate{}
	}
	var ts, ws [nbins]float64
	n := float64(p.checks) / unit
	dated := float64(p.dated) / unit
	changes := dated
	for k, c := range p.bins {
		ts[k], ws[k] = p.point(k), float64(c)/unit
		changes += ws[k]
	}
	e := Estimate{
		Checks: n, Changes: changes,
		Observed: seconds(float64(p.span)),
		Censored: changes > 0 && p.exposure == 0,
	}
	if changes > 0 {
		e.Rate = solveRate(ts[:], ws[:], dated, float64(p.exposure)+correction(n, dated, float64(p.exposure), float64(p.span)))
	}
	return e
}

// correction is the unchanged time added for small samples: half an
// observation of the mean interval, as in Cho and Garcia-Molina's
// estimator, where no change is dated; where all are, half an observation
// of the mean time seen unchanged, the estimate then being nearly unbiased
// by itself; in proportion between.
func correction(n, dated, exposure, observed float64) float64 {
	share := dated / n
	return 0.5 * ((1-share)*observed + share*exposure) / n
}

// seconds converts seconds to a Duration, saturating.
func seconds(s float64) time.Duration {
	if s >= math.MaxInt64/1e9 {
		return math.MaxInt64
	}
	return time.Duration(s * 1e9)
}

// solveRate solves Σ wᵢ·tᵢ/(e^(λtᵢ) − 1) + dated/λ = exposure for λ > 0.
// The left side falls from +∞ to 0 as λ grows, so for a positive exposure
// and some change there is one root; it is found by Newton's method on
// log λ, in steps of at most a factor e² and kept inside the bracket the
// steps have found, which bisection narrows when Newton would leave it.
func solveRate(ts, ws []float64, dated, exposure float64) float64 {
	total := dated
	for _, w := range ws {
		total += w
	}
	// residual is the equation's left side less its right at λ = e^y,
	// and its derivative by y.
	residual := func(y float64) (r, d float64) {
		rate := math.Exp(y)
		r, d = dated/rate-exposure, -dated/rate
		for i, t := range ts {
			x := rate * t
			if ws[i] == 0 || x > 700 {
				continue // a term of e^(−x) or less
			}
			em := math.Expm1(x)
			r += ws[i] * t / em
			d -= ws[i] * t * x * (em + 1) / (em * em)
		}
		return r, d
	}
	y := math.Log(total / exposure)
	lo, hi := math.Inf(-1), math.Inf(1)
	for range 200 {
		r, d := residual(y)
		if r == 0 {
			return math.Exp(y)
		}
		if r > 0 {
			lo = y
		} else {
			hi = y
		}
		next := y - r/d
		if !(math.Abs(next-y) <= 2) {
			next = y + math.Copysign(2, r)
		}
		if !(next > lo && next < hi) {
			if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
				next = y + math.Copysign(2, r)
			} else {
				next = (lo + hi) / 2
			}
		}
		if math.Abs(next-y) < 1e-10 {
			return math.Exp(next)
		}
		y = next
	}
	return math.Exp(y)
}

// ExactEstimate is the estimate Page.Estimate approximates, computed from
// a whole history instead of a summary: every interval kept as it was and
// none forgotten. It is the reference the tests hold the summary to, and
// an estimator for offline use on recorded histories. Observations with an
// interval that is not positive are skipped.
func ExactEstimate(history []Obs) float64 {
	var ts, ws []float64
	n, dated, exposure, observed := 0.0, 0.0, 0.0, 0.0
	for _, o := range history {
		t := o.Interval.Seconds()
		if !(t > 0) {
			continue
		}
		n++
		switch {
		case !o.Changed:
			exposure += t
		case o.SinceChange > 0 && o.SinceChange <= o.Interval:
			exposure += o.SinceChange.Seconds()
			dated++
		default:
			ts, ws = append(ts, t), append(ws, 1)
		}
		observed += t
	}
	if len(ts) == 0 && dated == 0 {
		return 0
	}
	return solveRate(ts, ws, dated, exposure+correction(n, dated, exposure, observed))
}

// RegularEstimate is Cho and Garcia-Molina's estimator for a page fetched
// n times at regular intervals, changes of which found it changed:
// −ln((n − changes + ½)/(n + ½))/interval, per second. It is 0 for a
// non-positive interval or n, and counts are kept within 0..n.
func RegularEstimate(n, changes int, interval time.Duration) float64 {
	if n <= 0 || interval <= 0 {
		return 0
	}
	x := float64(min(n, max(0, changes)))
	return -math.Log((float64(n)-x+0.5)/(float64(n)+0.5)) / interval.Seconds()
}

// AppendBinary appends the page's 28-byte encoding to b. It never fails.
func (p Page) AppendBinary(b []byte) ([]byte, error) {
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p.exposure))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p.span))
	b = append(b, p.bins[:]...)
	b = append(b, p.checks, p.dated)
	return binary.LittleEndian.AppendUint16(b, uint16(p.origin)), nil
}

// MarshalBinary returns the page's 28-byte encoding.
func (p Page) MarshalBinary() ([]byte, error) {
	return p.AppendBinary(make([]byte, 0, PageSize))
}

// UnmarshalBinary sets the page from its encoding. Bytes of another length,
// or whose counts or time could not have come from observations, are an
// error wrapping ErrPageEncoding and leave the page as it was.
func (p *Page) UnmarshalBinary(b []byte) error {
	if len(b) != PageSize {
		return fmt.Errorf("%w: %d bytes, want %d", ErrPageEncoding, len(b), PageSize)
	}
	var q Page
	q.exposure = math.Float32frombits(binary.LittleEndian.Uint32(b))
	q.span = math.Float32frombits(binary.LittleEndian.Uint32(b[4:]))
	copy(q.bins[:], b[8:8+nbins])
	q.checks, q.dated = b[8+nbins], b[9+nbins]
	q.origin = int16(binary.LittleEndian.Uint16(b[10+nbins:]))
	changed := int(q.dated)
	for _, c := range q.bins {
		changed += int(c)
	}
	switch {
	case !(q.exposure >= 0) || !(q.span >= q.exposure) || math.IsInf(float64(q.span), 1):
		return fmt.Errorf("%w: unchanged time %v of %v", ErrPageEncoding, q.exposure, q.span)
	case changed > int(q.checks):
		return fmt.Errorf("%w: %d changes in %d observations (eighths)", ErrPageEncoding, changed, q.checks)
	case q.origin > maxOrigin:
		return fmt.Errorf("%w: grid origin %d", ErrPageEncoding, q.origin)
	}
	*p = q
	return nil
}
