package testweb

import (
	"fmt"
	"net/http"
	"slices"
	"time"
)

// FreshnessOptions tunes ChangingWeb.Judge.
type FreshnessOptions struct {
	// From and To bound the window judged, on the web's clock. Zero From
	// means the web's Start, zero To the clock's now. Requests before
	// From still count for what the crawler holds at From.
	From, To time.Time
	// MinDelay is the crawler's own minimum delay per host. Requests to a
	// host must be at least the larger of it and the Crawl-delay apart
	// (less Tolerance), and one request per that delay is the host's
	// full politeness budget.
	MinDelay time.Duration
	// Tolerance is subtracted from the delay before judging; 0 means
	// DefaultTolerance.
	Tolerance time.Duration
	// Classify fills FreshnessReport.Classified with every page fetch in
	// the window and the change it found.
	Classify bool
}

// ChangeKind is what a fetch of a page found, as a continuous crawler's
// record reports it.
type ChangeKind string

// The kinds of change a fetch finds.
const (
	ChangeNew       ChangeKind = "new"       // the first answer for the URL: 200 (or 304)
	ChangeChanged   ChangeKind = "changed"   // a 200 with another version than the one held
	ChangeUnchanged ChangeKind = "unchanged" // a 304, or a 200 with the version held
	ChangeGone      ChangeKind = "gone"      // 404 or 410
	ChangeMoved     ChangeKind = "moved"     // 301
)

// ChangeCounts counts the fetches of each kind.
type ChangeCounts struct {
	New, Changed, Unchanged, Gone, Moved int
}

func (c *ChangeCounts) add(k ChangeKind) {
	switch k {
	case ChangeNew:
		c.New++
	case ChangeChanged:
		c.Changed++
	case ChangeUnchanged:
		c.Unchanged++
	case ChangeGone:
		c.Gone++
	case ChangeMoved:
		c.Moved++
	}
}

// ClassifiedFetch is one GET of a content page in the window and what it
// found.
type ClassifiedFetch struct {
	Time        time.Time
	URL         string
	Status      int
	Conditional bool
	Change      ChangeKind
	// Version is the version the response carried (VersionGone,
	// VersionMoved for 404/410 and 301; for a 304, the one the crawler
	// holds).
	Version int
}

// HostFreshness is the freshness judgement of one host.
type HostFreshness struct {
	Authority string
	// Pages are the host's content URLs that exist, and neither go nor
	// move, throughout the window: the pages the comparison is over.
	Pages int
	// Fetches are the crawler's GETs of those pages in the window: the
	// budget Uniform and Optimum spend.
	Fetches int
	// Delay is the host's delay (its Crawl-delay or MinDelay, the
	// larger) and FullBudget the requests it allows in the window; 0 if
	// there is no delay.
	Delay      time.Duration
	FullBudget int
	// Measured is the time-averaged share of Pages whose copy is
	// current; Uniform and Optimum are the expected freshness of
	// revisiting them every page alike or as OptimalFrequencies says,
	// with Fetches; OptimumFullBudget with FullBudget (1 without a
	// delay).
	Measured, Uniform, Optimum, OptimumFullBudget float64
}

// FreshnessReport is the freshness judgement of a crawl of a changing web
// over a window. A page's copy is fresh at t if the version the crawler last
// received for it (with a 200; a 404, 410 or 301 for a page gone or moved)
// is the page's version at t; a 304 leaves the copy as it was.
type FreshnessReport struct {
	From, To time.Time
	Hosts    []HostFreshness

	// The comparison, over the hosts' Pages, weighted by them:
	// Measured against Uniform and Optimum at the same per-host fetch
	// count, and against the optimum at the hosts' full budgets.
	Pages, Fetches    int
	Measured          float64
	Uniform           float64
	Optimum           float64
	RatioToOptimum    float64 // Measured / Optimum
	GapClosed         float64 // (Measured − Uniform) / (Optimum − Uniform); 1 when they are equal
	OptimumFullBudget float64
	RatioToFullBudget float64 // Measured / OptimumFullBudget

	// AllFresh is the share of page-time fresh over every content URL
	// while it exists in the window (new, going and moving ones too; a
	// URL never fetched is stale); KnownFresh the same from each URL's
	// first answer on.
	AllFresh, KnownFresh float64

	Requests    int // every request in the window
	PageFetches int // GETs and HEADs of content URLs in the window
	Changes     ChangeCounts
	NotModified int // 304s among PageFetches
	// Revisits are GETs of pages with honest validators (Validators.Honest)
	// whose copy the crawler held; ConditionalRevisits those that were
	// conditional.
	Revisits, ConditionalRevisits int
	ConditionalShare              float64 // 1 without revisits
	// BytesSent are the body bytes of PageFetches; BytesUnconditional
	// what they would have been had every 304 been a 200.
	BytesSent, BytesUnconditional int64
	BytesRatio                    float64 // BytesSent / BytesUnconditional

	// NewPages are content URLs that appeared in the window (new pages,
	// moved pages' new URLs); NewPagesFetched of them were answered in
	// it, after a mean and a longest DiscoveryDelay.
	NewPages, NewPagesFetched                 int
	MeanDiscoveryDelay, LongestDiscoveryDelay time.Duration

	// PolitenessViolations are requests in the window sooner after the
	// host's previous request than its delay allows; RobotsViolations
	// requests for what the robots.txt the crawler last fetched from the
	// host disallows, or before it fetched any.
	PolitenessViolations, RobotsViolations []string
	// Foreign counts requests to hosts that are not the web's.
	Foreign int

	Classified []ClassifiedFetch // with FreshnessOptions.Classify

	// page-time sums behind AllFresh, KnownFresh and the discovery delays
	allFresh, allExist, knownFresh, knownExist, discoverySum time.Duration
}

// heldAt is the version the crawler holds from a time on.
type heldAt struct {
	off     time.Duration
	version int
}

// urlTrack is what the log tells of one content URL.
type urlTrack struct {
	held    []heldAt      // ascending
	firstAt time.Duration // first answer; never if none
	fetches int           // GETs in the window
}

func (t *urlTrack) current() int {
	if t == nil || len(t.held) == 0 {
		return VersionAbsent
	}
	return t.held[len(t.held)-1].version
}

// hostJudge judges one host's requests.
type hostJudge struct {
	w        *ChangingWeb
	h        *changingHost
	r        *FreshnessReport
	opts     FreshnessOptions
	from, to time.Duration
	delay    time.Duration
	tracks   map[address]*urlTrack
	// robotsAt is when the crawler last read the host's robots.txt, if
	// robotsRead.
	robotsAt   time.Duration
	robotsRead bool
}

// Judge computes, from the requests a changing web's handler logged, how
// fresh the crawler kept its copy over the window, and how that compares
// with revisiting uniformly and with the offline optimum at the same
// per-host fetch count; see FreshnessReport.
func (w *ChangingWeb) Judge(entries []Entry, opts FreshnessOptions) (*FreshnessReport, error) {
	from, to := opts.From, opts.To
	if from.IsZero() {
		from = w.Start()
	}
	if to.IsZero() {
		to = w.Now()
	}
	if !to.After(from) {
		return nil, fmt.Errorf("%w: freshness window %v to %v is empty", ErrConfig, from, to)
	}
	if opts.Tolerance == 0 {
		opts.Tolerance = DefaultTolerance
	}
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.Start.Compare(b.Start) })
	horizon := w.offset(to)
	if n := len(entries); n > 0 {
		horizon = max(horizon, w.offset(entries[n-1].Start))
	}
	byHost := make(map[string][]Entry)
	r := &FreshnessReport{From: from, To: to}
	for _, e := range entries {
		if w.byAuthority[e.Host] == nil {
			r.Foreign++
			continue
		}
		byHost[e.Host] = append(byHost[e.Host], e)
	}
	for _, h := range w.hosts {
		h.grow(horizon)
		j := &hostJudge{w: w, h: h, r: r, opts: opts, from: w.offset(from), to: w.offset(to),
			delay: max(w.cfg.CrawlDelay, opts.MinDelay), tracks: make(map[address]*urlTrack)}
		for i, e := range byHost[h.authority] {
			var prev *Entry
			if i > 0 {
				prev = &byHost[h.authority][i-1]
			}
			j.request(e, prev)
		}
		r.Hosts = append(r.Hosts, j.freshness())
	}
	r.finish()
	return r, nil
}

// request takes one request to the host, prev the one before it (nil if
// none).
func (j *hostJudge) request(e Entry, prev *Entry) {
	off := j.w.offset(e.Start)
	inWindow := off >= j.from && off <= j.to
	target, ok := requestTarget(e.Target)
	if inWindow {
		j.r.Requests++
		j.judgeManners(e, prev, target)
	}
	if !ok {
		return
	}
	if target == robotsPath {
		if e.Status == http.StatusOK {
			j.robotsAt, j.robotsRead = off, true
		}
		return
	}
	a, ok := j.h.parseAddress(target)
	if !ok {
		return
	}
	t := j.tracks[a]
	if t == nil {
		t = &urlTrack{firstAt: never}
		j.tracks[a] = t
	}
	if inWindow {
		j.r.PageFetches++
		j.r.BytesSent += e.Bytes
		j.r.BytesUnconditional += e.Bytes
	}
	if e.Method != http.MethodGet {
		return
	}
	held := t.current()
	version := a.version(off)
	answered := true
	switch {
	case e.Status == http.StatusOK && version >= 0:
	case e.Status == http.StatusNotModified:
		version = held
	case (e.Status == http.StatusNotFound || e.Status == http.StatusGone) && version == VersionGone,
		e.Status == http.StatusMovedPermanently && version == VersionMoved:
	default:
		answered = false // failed, or 404 for a page not there yet
	}
	if inWindow {
		j.countFetch(e, a, t, held, version, answered)
	}
	if !answered {
		return
	}
	if t.firstAt == never {
		t.firstAt = off
	}
	if e.Status != http.StatusNotModified {
		t.held = append(t.held, heldAt{off, version})
	}
}

// judgeManners checks a request in the window against the host's delay and
// the robots.txt the crawler last read there.
func (j *hostJudge) judgeManners(e Entry, prev *Entry, target string) {
	if d := j.delay - j.opts.Tolerance; prev != nil && d > 0 && e.Start.Sub(prev.Start) < d {
		j.r.PolitenessViolations = append(j.r.PolitenessViolations, fmt.Sprintf("%s: %v after previous request, delay %v: %s %s",
			e.Host, e.Start.Sub(prev.Start).Round(time.Millisecond), j.delay, e.Method, e.Target))
	}
	switch {
	case target == robotsPath:
	case !j.robotsRead:
		j.r.RobotsViolations = append(j.r.RobotsViolations, fmt.Sprintf("%s: before any robots.txt", e.URL()))
	case !j.w.allowedAt(target, j.robotsAt):
		j.r.RobotsViolations = append(j.r.RobotsViolations, e.URL())
	}
}

// countFetch counts a GET of a in the window: held is the version the
// crawler held before it, version the one it holds after (if answered).
func (j *hostJudge) countFetch(e Entry, a address, t *urlTrack, held, version int, answered bool) {
	if a.born() <= j.from && a.end() > j.to {
		t.fetches++
	}
	if e.Status == http.StatusNotModified {
		j.r.NotModified++
		if v := a.version(j.w.offset(e.Start)); v >= 0 {
			j.r.BytesUnconditional += j.w.bodySize(a, v)
		}
	}
	if held >= 0 && a.c.validators.Honest() {
		j.r.Revisits++
		if e.Conditional {
			j.r.ConditionalRevisits++
		}
	}
	if !answered {
		return
	}
	var kind ChangeKind
	switch {
	case version == VersionGone:
		kind = ChangeGone
	case version == VersionMoved:
		kind = ChangeMoved
	case t.firstAt == never:
		kind = ChangeNew
	case version == held:
		kind = ChangeUnchanged
	default:
		kind = ChangeChanged
	}
	j.r.Changes.add(kind)
	if j.opts.Classify {
		j.r.Classified = append(j.r.Classified, ClassifiedFetch{Time: e.Start, URL: a.url(), Status: e.Status,
			Conditional: e.Conditional, Change: kind, Version: version})
	}
}

// freshness integrates every content URL's freshness over the window and
// returns the host's comparison.
func (j *hostJudge) freshness() HostFreshness {
	hf := HostFreshness{Authority: j.h.authority, Delay: j.delay}
	span := j.to - j.from
	var rates []float64
	var measured float64
	for _, c := range j.h.grow(j.to) {
		addrs := []address{{c: c}}
		if c.fate == FateMoved && c.fateAt <= j.to {
			addrs = append(addrs, address{c: c, moved: true})
		}
		for _, a := range addrs {
			t := j.tracks[a]
			if t == nil {
				t = &urlTrack{firstAt: never}
			}
			lo := max(j.from, a.born())
			fresh := freshTime(a, t.held, lo, j.to)
			j.r.addAll(t, lo, j.to, fresh)
			if a.born() <= j.from && a.end() > j.to {
				rates = append(rates, c.rate)
				measured += float64(fresh) / float64(span)
				hf.Fetches += t.fetches
			} else if a.born() > j.from {
				j.r.addNew(a, t, j.to)
			}
		}
	}
	hf.Pages = len(rates)
	if hf.Pages == 0 {
		hf.Measured, hf.Uniform, hf.Optimum, hf.OptimumFullBudget = 1, 1, 1, 1
		return hf
	}
	hf.Measured = measured / float64(hf.Pages)
	budget := float64(hf.Fetches) / span.Seconds()
	hf.Uniform = UniformFreshness(rates, budget)
	hf.Optimum = OptimalFreshness(rates, budget)
	hf.OptimumFullBudget = 1
	if j.delay > 0 {
		hf.FullBudget = int(span / j.delay)
		hf.OptimumFullBudget = OptimalFreshness(rates, float64(hf.FullBudget)/span.Seconds())
	}
	return hf
}

// freshTime returns how long in [lo, hi] the version held (as held says
// from when on) is a's version.
func freshTime(a address, held []heldAt, lo, hi time.Duration) time.Duration {
	if lo >= hi {
		return 0
	}
	changes := a.changes(lo, hi)
	i := upToHeld(held, lo) // held[:i] are at or before lo
	h := VersionAbsent
	if i > 0 {
		h = held[i-1].version
	}
	cur := a.version(lo)
	var fresh time.Duration
	for t, c := lo, 0; t < hi; {
		next := hi
		if c < len(changes) {
			next = min(next, changes[c])
		}
		if i < len(held) {
			next = min(next, held[i].off)
		}
		if h == cur {
			fresh += next - t
		}
		t = next
		for c < len(changes) && changes[c] <= t {
			c++
			cur = a.version(t)
		}
		for i < len(held) && held[i].off <= t {
			h = held[i].version
			i++
		}
	}
	return fresh
}

func upToHeld(held []heldAt, off time.Duration) int {
	n, _ := slices.BinarySearchFunc(held, off, func(e heldAt, off time.Duration) int {
		if e.off <= off {
			return -1
		}
		return 1
	})
	return n
}
