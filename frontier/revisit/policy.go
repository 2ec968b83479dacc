package revisit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of Config.
const (
	DefaultMinInterval = time.Hour
	DefaultMaxInterval = 30 * 24 * time.Hour
	DefaultNewShare    = 0.75
)

// ErrConfig is returned by NewDefault for a configuration it cannot follow.
var ErrConfig = errors.New("revisit: invalid configuration")

// ErrHostEncoding is returned by Host.UnmarshalBinary for bytes that are
// not a Host's encoding.
var ErrHostEncoding = errors.New("revisit: malformed host state")

const (
	growth        = 2    // an interval is at most this many times the time a page has been observed
	censoredLimit = 4    // observations, all changed, after which a page counts as changing too fast
	spanMemory    = 64   // revisits Host.Span averages over
	controlGain   = 0.5  // how far ln μ moves per Span of error
	controlStep   = 0.25 // the most ln μ moves in one revisit
	targetWaits   = 8    // delays a due revisit should wait for its host
	muRange       = 16   // μ stays within [Min/16, 16·Max]
)

// Config configures the Default policy. Zero fields take the defaults.
type Config struct {
	// Bounds limit every page's interval between fetches: at least Min
	// (DefaultMinInterval, 1 h) and at most Max (DefaultMaxInterval, 30
	// days), however fast or slow the page changes. A page not worth
	// revisiting is revisited at Max, never left to go stale forever.
	Bounds Bounds
	// NewShare is the share of a host's requests that new URLs get when
	// both new URLs and due revisits wait for it (DefaultNewShare, ¾); see
	// Default.Choose. It must be within (0, 1).
	NewShare float64
}

// Default is the default revisit policy: each page's change rate estimated
// from its history (Page.Estimate), each host's price of a fetch μ learnt
// online from its backlog, and each page revisited at the frequency that
// maximises the host's time-averaged freshness at that price (OptimalFreq),
// within the configured bounds. The package documentation gives the
// formulas. A Default has no state of its own and is safe for concurrent
// use; the state is the Host and Page values the caller keeps.
type Default struct {
	bounds     Bounds
	fmin, fmax float64
	newShare   float64
}

// NewDefault returns the Default policy for cfg, or an error wrapping
// ErrConfig for negative bounds, a Min above Max or a NewShare outside
// (0, 1).
func NewDefault(cfg Config) (*Default, error) {
	b := cfg.Bounds
	if b.Min == 0 {
		b.Min = DefaultMinInterval
	}
	if b.Max == 0 {
		b.Max = max(DefaultMaxInterval, b.Min)
	}
	share := cfg.NewShare
	if share == 0 {
		share = DefaultNewShare
	}
	switch {
	case b.Min < 0 || b.Max < 0:
		return nil, fmt.Errorf("%w: negative interval bound %v", ErrConfig, b)
	case b.Min > b.Max:
		return nil, fmt.Errorf("%w: min interval %v above max %v", ErrConfig, b.Min, b.Max)
	case !(share > 0 && share < 1):
		return nil, fmt.Errorf("%w: new share %v not within (0, 1)", ErrConfig, share)
	}
	d := &Default{bounds: b, newShare: share}
	d.fmin, d.fmax = b.freqs()
	return d, nil
}

// Bounds returns the bounds the policy keeps intervals within.
func (d *Default) Bounds() Bounds { return d.bounds }

// Host is the revisit state of one politeness key, kept by the Store beside
// its pacing state (ratelimit.HostState) and updated under the same lease.
// Its zero value is a host never revisited.
type Host struct {
	// Mu is the host's price of one fetch per second, in seconds of
	// freshness, learnt by the controller (see the package documentation);
	// 0 until the first revisit.
	Mu float64
	// Span is the mean time between two fetches of one of the host's
	// pages, weighted by fetches, in seconds: about the host's pages over
	// its revisit rate, the interval of uniform revisiting. New pages are
	// first revisited after it, and it is the controller's time scale.
	Span float64
	// LastRevisit is when the host's last revisit was answered.
	LastRevisit time.Time
	// Credit is Choose's account of new URLs against revisits.
	Credit float32
	// Modified and Sitemap are the trust earned by the host's Last-Modified
	// headers and by its sitemaps' <lastmod>.
	Modified, Sitemap Trust
}

// HostSize is the size in bytes of a Host's encoding.
const HostSize = 44

// Fetch is what the policy is told of one fetch of a page.
type Fetch struct {
	// At is when the answer came. The wait it measures from Due includes
	// the request's own time, small beside the eight delays the controller
	// lets revisits wait.
	At time.Time
	// Prev is when the page was fetched before; zero for a new page.
	Prev time.Time
	// Due is when this revisit was due; zero for a new page's first fetch
	// or any fetch the policy did not schedule, which then leaves the
	// host's μ as it is.
	Due time.Time
	// Changed says whether the page differs from the copy fetched at Prev
	// (a 304 is unchanged; otherwise by validators or content digest).
	Changed bool
	// LastModified is the answer's Last-Modified, zero if none.
	LastModified time.Time
	// Lastmod is the page's <lastmod> in the host's sitemap as last read,
	// at LastmodRead; zero if none.
	Lastmod, LastmodRead time.Time
	// Delay is the host's current delay between requests.
	Delay time.Duration
}

// Schedule records a fetch of a page of the host in both their states and
// returns when the page is next due. It is the default implementation of
// the policy interface a crawler consumes (see the package documentation).
func (d *Default) Schedule(h *Host, p *Page, f Fetch) time.Time {
	switch {
	case f.Prev.IsZero():
		// One more page shares the host's budget: uniform revisiting's
		// interval grows by one delay.
		h.Span += f.Delay.Seconds()
	case f.At.After(f.Prev):
		since := evidence(h, *p, f)
		_ = p.Observe(Obs{Interval: f.At.Sub(f.Prev), Changed: f.Changed, SinceChange: since})
		if !f.Due.IsZero() {
			d.control(h, f)
		}
	}
	var last time.Duration
	if !f.Prev.IsZero() {
		last = f.At.Sub(f.Prev)
	}
	return f.At.Add(d.Interval(*h, *p, last))
}

// evidence weighs the fetch's claims of change times into the host's trust
// and returns how long before the fetch the page last changed, by the first
// trusted claim that dates a change found, or 0.
func evidence(h *Host, p Page, f Fetch) time.Duration {
	if f.LastModified.IsZero() && f.Lastmod.IsZero() {
		return 0
	}
	rate := p.Estimate().Rate
	if !f.LastModified.IsZero() {
		h.Modified.Record(verdict(f.LastModified, f.At, f.Prev, f.At, f.Changed, rate))
	}
	if !f.Lastmod.IsZero() {
		h.Sitemap.Record(sitemapVerdict(f.Lastmod, f.LastmodRead, f.Prev, f.At, f.Changed, rate))
	}
	if !f.Changed {
		return 0
	}
	for _, c := range [...]struct {
		at    time.Time
		trust Trust
	}{{f.LastModified, h.Modified}, {f.Lastmod, h.Sitemap}} {
		if c.trust.Trusted() && c.at.After(f.Prev) && !c.at.After(f.At) {
			return f.At.Sub(c.at)
		}
	}
	return 0
}

// Interval is how long after a fetch the page is next due, last being the
// interval that fetch ended (0 if none): the inverse of OptimalFreq(rate,
// μ) for its estimated rate and its host's μ, at most twice the time the
// page has been observed (so that a page seen unchanged a few times is not
// at once left for Max), and within the bounds. A page never observed gets
// the host's Span, the interval of uniform revisiting.
//
// A page whose every one of at least 4 observations found a change counts
// as changing too fast to chase, which the optimum leaves at Max; but a
// page fetched too seldom always looks like that, so after each long
// interval such a page is probed once, μ later: a probe that finds it
// unchanged shows it slower, and its estimate takes over.
func (d *Default) Interval(h Host, p Page, last time.Duration) time.Duration {
	e := p.Estimate()
	interval := math.Inf(1)
	switch {
	case e.Checks == 0:
		interval = h.Span
	case d.tooFast(e):
		if probe := h.mu(); last.Seconds() > 2*probe {
			interval = probe
		}
	default:
		interval = 1 / OptimalFreq(e.Rate, h.mu())
	}
	if e.Checks > 0 {
		interval = min(interval, growth*e.Observed.Seconds())
	}
	return seconds(min(1/d.fmin, max(1/d.fmax, interval)))
}

// tooFast says whether every one of at least 4 observations found the
// page changed, with no time of change known: whether it changes too fast
// for its rate to be known.
func (d *Default) tooFast(e Estimate) bool {
	return e.Censored && e.Checks >= censoredLimit
}

// mu is the host's price, or before its first revisit a guess from its
// span: half the uniform interval.
func (h Host) mu() float64 {
	if h.Mu > 0 {
		return h.Mu
	}
	return h.Span / 2
}

// control moves the host's μ after a revisit, by how long the revisit
// waited for the host beyond its due time, and how long the host had no
// due revisit since the previous one. See the package documentation.
func (d *Default) control(h *Host, f Fetch) {
	interval := f.At.Sub(f.Prev).Seconds()
	if !(h.Span > 0) {
		h.Span = interval
	} else {
		h.Span += (interval - h.Span) / spanMemory
	}
	if !(h.Mu > 0) {
		h.Mu = h.Span / 2
	}
	delay := max(f.Delay.Seconds(), 0.1)
	gap, idle := delay, 0.0
	if !h.LastRevisit.IsZero() && f.At.After(h.LastRevisit) {
		gap = f.At.Sub(h.LastRevisit).Seconds()
		idle = min(gap, max(0, f.Due.Sub(h.LastRevisit).Seconds()))
	}
	target := targetWaits * delay
	wait := max(0, f.At.Sub(f.Due).Seconds())
	e := min(1, max(-1, (wait-target)/target))
	step := controlGain * (e*(gap-idle) - idle) / h.Span
	step = min(controlStep, max(-controlStep, step))
	lo, hi := d.bounds.Min.Seconds()/muRange, d.bounds.Max.Seconds()*muRange
	h.Mu = min(hi, max(lo, h.Mu*math.Exp(step)))
	if f.At.After(h.LastRevisit) {
		h.LastRevisit = f.At
	}
}

// Claim applies a sitemap's <lastmod> for a page, read at read, to the
// page's next due time, once the host's sitemaps are trusted: a claimed
// change since the last fetch (prev) makes the page due at read, so that a
// change is fetched without waiting for its turn; a claim of no change
// shows the copy fresh at read, and the page is next due an interval
// after read rather than after prev. Without trust, due is returned as is.
func (d *Default) Claim(h Host, p Page, prev, due, lastmod, read time.Time) time.Time {
	if !h.Sitemap.Trusted() || lastmod.IsZero() || !read.After(prev) {
		return due
	}
	if lastmod.After(prev) {
		// A fetch keeps the page fresh until its next change, 1/λ on
		// average, which is worth it where the page is worth revisiting at
		// all: where 1/λ > μ.
		if e := p.Estimate(); read.Before(due) && !d.tooFast(e) && e.Rate*h.mu() < 1 {
			return read
		}
		return due
	}
	if next := read.Add(d.Interval(h, p, 0)); next.After(due) {
		return next
	}
	return due
}

// AppendBinary appends the host's 44-byte encoding to b. It never fails.
func (h Host) AppendBinary(b []byte) ([]byte, error) {
	var last int64
	if !h.LastRevisit.IsZero() {
		last = h.LastRevisit.UnixNano()
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.Mu))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(h.Span))
	b = binary.LittleEndian.AppendUint64(b, uint64(last))
	for _, f := range [...]float32{h.Credit, h.Modified.Agree, h.Modified.Disagree, h.Sitemap.Agree, h.Sitemap.Disagree} {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b, nil
}

// MarshalBinary returns the host's 44-byte encoding.
func (h Host) MarshalBinary() ([]byte, error) {
	return h.AppendBinary(make([]byte, 0, HostSize))
}

// UnmarshalBinary sets the host from its encoding. Bytes of another length
// or with a negative or non-finite number are an error wrapping
// ErrHostEncoding and leave the host as it was.
func (h *Host) UnmarshalBinary(b []byte) error {
	if len(b) != HostSize {
		return fmt.Errorf("%w: %d bytes, want %d", ErrHostEncoding, len(b), HostSize)
	}
	var q Host
	q.Mu = math.Float64frombits(binary.LittleEndian.Uint64(b))
	q.Span = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	if last := int64(binary.LittleEndian.Uint64(b[16:])); last != 0 {
		q.LastRevisit = time.Unix(0, last)
	}
	var fs [5]float32
	for i := range fs {
		fs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[24+4*i:]))
	}
	q.Credit = fs[0]
	q.Modified = Trust{Agree: fs[1], Disagree: fs[2]}
	q.Sitemap = Trust{Agree: fs[3], Disagree: fs[4]}
	for _, v := range [...]float64{q.Mu, q.Span, float64(fs[1]), float64(fs[2]), float64(fs[3]), float64(fs[4])} {
		if !(v >= 0) || math.IsInf(v, 1) {
			return fmt.Errorf("%w: %v", ErrHostEncoding, v)
		}
	}
	if c := float64(q.Credit); !(math.Abs(c) <= 1) {
		return fmt.Errorf("%w: credit %v", ErrHostEncoding, c)
	}
	*h = q
	return nil
}
