package testweb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Paths of the changing web.
const (
	changingPagePrefix  = "/p/" // a content page: /p/{k}
	changingMovedPrefix = "/m/" // where page k answers once it has moved: /m/{k}
	changingSitemapPath = "/sitemap.xml"
	// DefaultRobotsDisallow is the prefix ChangingConfig.RobotsChangeAt
	// disallows when RobotsDisallow is empty: /p/1, /p/10 … /p/19,
	// /p/100 … and so on.
	DefaultRobotsDisallow = "/p/1"
)

// Defaults of ChangingConfig's zero fields.
const (
	DefaultMinChangeInterval = time.Minute
	DefaultMaxChangeInterval = 24 * time.Hour
	DefaultFateWithin        = time.Hour
	// minChangeInterval bounds how fast a page may change, so a
	// schedule never holds more events than a test can afford.
	minChangeInterval = time.Millisecond
)

// Version values that are not a page's content version.
const (
	VersionAbsent = -1 // the URL does not exist (yet) at that time
	VersionGone   = -2 // the page is gone: it answers 404 or 410
	VersionMoved  = -3 // the page has moved: it answers 301 to its new URL
)

// ChangingConfig describes a changing web: hosts whose pages change over
// time as Poisson processes. The same ChangingConfig (Start and Clock
// aside) always makes the same web; its schedule is relative to Start.
// Shares are fractions in [0, 1]; pages are given their kinds by
// low-discrepancy sequences, so even a small web has close to each share of
// each kind.
type ChangingConfig struct {
	// Hosts is the number of hosts, at least 1.
	Hosts int
	// PagesPerHost is the number of content pages each host has at
	// Start, at least 1; the home page links to all of them.
	PagesPerHost int
	// Seed varies everything random: rates, change times, kinds.
	Seed uint64
	// Clock is the web's time: it decides which version a request gets
	// and stamps the log. Nil means time.Now; tests pass a fake clock's
	// Now.
	Clock func() time.Time
	// Start is when the web's schedule begins; zero means Clock() when
	// the web is made.
	Start time.Time

	// Each changing page's rate λ (changes per second) is spread
	// log-uniformly between 1/MaxChangeInterval and 1/MinChangeInterval:
	// these are the shortest and the longest mean times between two
	// changes. Zero means DefaultMinChangeInterval and
	// DefaultMaxChangeInterval; the minimum is 1ms.
	MinChangeInterval, MaxChangeInterval time.Duration
	// StaticShare is the share of pages that never change.
	StaticShare float64

	// The validators pages send: WeakETagShare send a weak ETag and a
	// Last-Modified, NoValidatorShare send neither,
	// LyingLastModifiedShare send a Last-Modified that is always now,
	// LyingETagShare an ETag new with every response; the rest a strong
	// ETag and a Last-Modified. The shares sum to at most 1.
	WeakETagShare, NoValidatorShare, LyingLastModifiedShare, LyingETagShare float64

	// GoneShare of the pages go (answer 404 or 410 from then on) and
	// MovedShare move (answer 301 to /m/{k}, a normal page from then
	// on), each at a time uniform in (0, FateWithin] after it appears.
	// FateWithin zero means DefaultFateWithin.
	GoneShare, MovedShare float64
	FateWithin            time.Duration

	// NewPageInterval is the mean time between new pages on each host
	// (a Poisson process); each appears linked from its home page. Zero
	// means the hosts do not grow.
	NewPageInterval time.Duration

	// LyingSitemapShare is the share of hosts whose sitemap's <lastmod>
	// lies: half of them always say now, half a random time. The other
	// hosts' say when the page's current version appeared.
	LyingSitemapShare float64

	// CrawlDelay is the Crawl-delay of every robots.txt; zero writes none.
	CrawlDelay time.Duration
	// RobotsChangeAt, if positive, is when (after Start) every host's
	// robots.txt begins to disallow RobotsDisallow (a path prefix; empty
	// means DefaultRobotsDisallow).
	RobotsChangeAt time.Duration
	RobotsDisallow string

	// BodyBytes is the filler text per page; zero means 1 KiB, negative
	// means none.
	BodyBytes int
}

// TypicalChangingConfig returns a config with every feature of the changing
// web on, each at a share large enough to meet on a small web: rates over a
// minute to a day, a tenth static, seven in ten validators honest, a few
// pages going and moving within an hour of appearing, a new page per host
// every ten minutes, a third of the sitemaps lying, a Crawl-delay of one
// second. Adjust its fields to the time a test or benchmark has.
func TypicalChangingConfig(hosts, pagesPerHost int, seed uint64) ChangingConfig {
	return ChangingConfig{
		Hosts: hosts, PagesPerHost: pagesPerHost, Seed: seed,
		MinChangeInterval: time.Minute, MaxChangeInterval: 24 * time.Hour,
		StaticShare:   0.1,
		WeakETagShare: 0.15, NoValidatorShare: 0.1, LyingLastModifiedShare: 0.05, LyingETagShare: 0.05,
		GoneShare: 0.03, MovedShare: 0.03, FateWithin: time.Hour,
		NewPageInterval:   10 * time.Minute,
		LyingSitemapShare: 1.0 / 3,
		CrawlDelay:        time.Second,
	}
}

func (c ChangingConfig) withDefaults() ChangingConfig {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Start.IsZero() {
		c.Start = c.Clock()
	}
	if c.MinChangeInterval == 0 {
		c.MinChangeInterval = DefaultMinChangeInterval
	}
	if c.MaxChangeInterval == 0 {
		c.MaxChangeInterval = max(DefaultMaxChangeInterval, c.MinChangeInterval)
	}
	if c.FateWithin == 0 {
		c.FateWithin = DefaultFateWithin
	}
	if c.RobotsDisallow == "" {
		c.RobotsDisallow = DefaultRobotsDisallow
	}
	return c
}

func (c ChangingConfig) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case c.Hosts < 1 || c.PagesPerHost < 1:
		return bad("need at least 1 host and 1 page per host, got %d and %d", c.Hosts, c.PagesPerHost)
	case c.MinChangeInterval < minChangeInterval || c.MaxChangeInterval < c.MinChangeInterval:
		return bad("change intervals %v to %v: need 1ms ≤ min ≤ max", c.MinChangeInterval, c.MaxChangeInterval)
	case c.FateWithin < 0 || c.NewPageInterval < 0 || c.CrawlDelay < 0 || c.RobotsChangeAt < 0:
		return bad("negative duration")
	case !strings.HasPrefix(c.RobotsDisallow, "/"):
		return bad("RobotsDisallow %q is not a path", c.RobotsDisallow)
	}
	shares := []float64{c.StaticShare, c.WeakETagShare, c.NoValidatorShare, c.LyingLastModifiedShare,
		c.LyingETagShare, c.GoneShare, c.MovedShare, c.LyingSitemapShare}
	for _, s := range shares {
		if !(s >= 0 && s <= 1) {
			return bad("share %v outside [0, 1]", s)
		}
	}
	if v := c.WeakETagShare + c.NoValidatorShare + c.LyingLastModifiedShare + c.LyingETagShare; v > 1 {
		return bad("validator shares sum to %v", v)
	}
	if f := c.GoneShare + c.MovedShare; f > 1 {
		return bad("gone and moved shares sum to %v", f)
	}
	return nil
}

// Validators says which validators a page of the changing web sends and
// whether they are true.
type Validators uint8

const (
	// StrongETag pages send a strong ETag and a Last-Modified, both true,
	// and answer 304 to a matching If-None-Match or a late enough
	// If-Modified-Since.
	StrongETag Validators = iota
	// WeakETag pages are StrongETag pages whose ETag is weak (W/"…").
	WeakETag
	// NoValidators pages send neither and always answer 200.
	NoValidators
	// LyingLastModified pages send a Last-Modified that is always now, no
	// ETag, and always answer 200: only their content tells a change.
	LyingLastModified
	// LyingETag pages send an ETag new with every response while the
	// content stays, no Last-Modified, and always answer 200.
	LyingETag
)

// Honest reports whether pages with v send validators a crawler can
// revisit with conditional requests.
func (v Validators) Honest() bool { return v == StrongETag || v == WeakETag }

// String returns the validators' name.
func (v Validators) String() string {
	switch v {
	case StrongETag:
		return "strong-etag"
	case WeakETag:
		return "weak-etag"
	case NoValidators:
		return "none"
	case LyingLastModified:
		return "lying-last-modified"
	case LyingETag:
		return "lying-etag"
	}
	return "Validators(" + strconv.Itoa(int(v)) + ")"
}

// Fate is what becomes of a page of the changing web.
type Fate uint8

// The fates of a page.
const (
	FateNone  Fate = iota // it stays
	FateGone              // it answers 404 or 410 from FateAt on
	FateMoved             // it answers 301 to its new URL from FateAt on
)

// String returns the fate's name.
func (f Fate) String() string {
	switch f {
	case FateNone:
		return "none"
	case FateGone:
		return "gone"
	case FateMoved:
		return "moved"
	}
	return "Fate(" + strconv.Itoa(int(f)) + ")"
}

// SitemapLastmod says what a host's sitemap states as a page's <lastmod>.
type SitemapLastmod uint8

// What sitemaps say a page's <lastmod> is.
const (
	LastmodTrue   SitemapLastmod = iota // when the page's current version appeared
	LastmodNow                          // always the time of the request
	LastmodRandom                       // a random time in the month before the request
)

// String returns the kind's name.
func (s SitemapLastmod) String() string {
	switch s {
	case LastmodTrue:
		return "true"
	case LastmodNow:
		return "now"
	case LastmodRandom:
		return "random"
	}
	return "SitemapLastmod(" + strconv.Itoa(int(s)) + ")"
}

// ChangingHost describes one host of a changing web.
type ChangingHost struct {
	Authority  string         // host[:port], e.g. "h001.test"
	CrawlDelay time.Duration  // its robots.txt's Crawl-delay; 0 if none
	Lastmod    SitemapLastmod // what its sitemap's <lastmod> says
}

// ChangingPage describes one URL of a changing web's content: a page, or
// the new URL of a page that moved.
type ChangingPage struct {
	URL       string
	Authority string
	// Rate is λ, the page's mean number of changes per second; 0 if it
	// never changes. A moved page keeps its rate at its new URL.
	Rate       float64
	Validators Validators
	// Born is when the URL appears: Start for the pages a host starts
	// with, later for new pages, the move for a moved page's new URL.
	Born time.Time
	// Fate, FateAt and GoneStatus (404 or 410) say whether and when the
	// URL goes or moves, and MovedTo where; a moved page's new URL never
	// goes or moves again. MovedFrom, if not empty, is the URL whose
	// page moved here.
	Fate       Fate
	FateAt     time.Time
	GoneStatus int
	MovedTo    string
	MovedFrom  string
}

// ChangingWeb is a generated web whose pages change over time on a given
// clock: hosts with home pages linking to content pages, each changing as a
// Poisson process of its own rate, with validators true or lying, sitemaps,
// robots.txt with a Crawl-delay, pages that go or move, and new pages
// appearing. Its schedule is generated lazily but deterministically, so
// Judge can tell from the log alone which version each response carried.
// It is safe for concurrent use.
type ChangingWeb struct {
	cfg         ChangingConfig
	hosts       []*changingHost
	byAuthority map[string]*changingHost
	filler      string
	weyl        [4]float64   // offsets of the low-discrepancy sequences that give pages their kinds
	lyingTags   atomic.Int64 // numbers the ETags of LyingETag pages
}

type changingHost struct {
	web       *ChangingWeb
	index     int
	authority string
	lastmod   SitemapLastmod

	mu        sync.Mutex
	contents  []*content // in order of appearance: the PagesPerHost at Start, then new ones
	births    *rand.Rand
	nextBirth time.Duration // offset of the next new page
}

// content is one page's content and its change process. Offsets are from
// the web's Start.
type content struct {
	host       *changingHost
	k          int
	rate       float64 // changes per second
	validators Validators
	born       time.Duration
	fate       Fate
	fateAt     time.Duration
	goneStatus int
	tag        string        // the stable part of its ETag
	firstMod   time.Duration // Last-Modified of version 0

	mu     sync.Mutex
	rng    *rand.Rand
	events []time.Duration // change times so far, ascending
	next   time.Duration   // the first change not yet in events
}

// address is a URL of the changing web's content: page k at /p/{k}, or, moved,
// at /m/{k}.
type address struct {
	c     *content
	moved bool
}

// never is an offset beyond any schedule.
const never = time.Duration(math.MaxInt64)

// NewChanging generates the changing web cfg describes, with one host per
// authority (host[:port], canonical, lower case): cfg.Hosts of them.
func NewChanging(cfg ChangingConfig, authorities []string) (*ChangingWeb, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(authorities) != cfg.Hosts {
		return nil, fmt.Errorf("%w: %d authorities for %d hosts", ErrConfig, len(authorities), cfg.Hosts)
	}
	w := &ChangingWeb{cfg: cfg, byAuthority: make(map[string]*changingHost, cfg.Hosts)}
	bodyBytes := cfg.BodyBytes
	if bodyBytes == 0 {
		bodyBytes = defaultBodyBytes
	}
	w.filler = makeFiller(max(bodyBytes, 0))
	for j := range w.weyl {
		w.weyl[j] = float64(mix64(cfg.Seed, uint64(j), 0x5eed)>>11) / (1 << 53)
	}
	for i, a := range authorities {
		if c, err := Canonical("http://" + a + "/"); err != nil || c != "http://"+a+"/" {
			return nil, fmt.Errorf("%w: authority %q is not in canonical form", ErrConfig, a)
		}
		if w.byAuthority[a] != nil {
			return nil, fmt.Errorf("%w: authority %q twice", ErrConfig, a)
		}
		h := &changingHost{web: w, index: i, authority: a, lastmod: w.lastmodOf(i)}
		h.births = rand.New(rand.NewPCG(mix64(cfg.Seed, uint64(i), 0xb127), 0))
		h.nextBirth = w.birthGap(h.births)
		for k := range cfg.PagesPerHost {
			h.contents = append(h.contents, w.newContent(h, k, 0))
		}
		w.hosts = append(w.hosts, h)
		w.byAuthority[a] = h
	}
	return w, nil
}

// mix64 hashes its arguments into 64 well-mixed bits (splitmix64 steps).
func mix64(vals ...uint64) uint64 {
	var x uint64 = 0x9e3779b97f4a7c15
	for _, v := range vals {
		x ^= v
		x += 0x9e3779b97f4a7c15
		x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
		x = (x ^ x>>27) * 0x94d049bb133111eb
		x ^= x >> 31
	}
	return x
}

// weylAlphas are the steps of the low-discrepancy sequences, one per
// property: the fractional parts of square roots of primes, which are
// rationally independent, so the properties are spread independently.
var weylAlphas = [4]float64{math.Sqrt2 - 1, 1.7320508075688772 - 1, 2.23606797749979 - 2, 2.6457513110645907 - 2}

// weylAt returns the j-th sequence's value in [0, 1) for the page numbered g.
func (w *ChangingWeb) weylAt(j, g int) float64 {
	_, f := math.Modf(w.weyl[j] + float64(g)*weylAlphas[j])
	return f
}

func (w *ChangingWeb) lastmodOf(hostIndex int) SitemapLastmod {
	u := w.weylAt(0, hostIndex+7919)
	switch share := w.cfg.LyingSitemapShare; {
	case u < share/2:
		return LastmodNow
	case u < share:
		return LastmodRandom
	}
	return LastmodTrue
}

// birthGap draws the time to a host's next new page.
func (w *ChangingWeb) birthGap(rng *rand.Rand) time.Duration {
	if w.cfg.NewPageInterval <= 0 {
		return never
	}
	return seconds(rng.ExpFloat64() * w.cfg.NewPageInterval.Seconds())
}

// seconds converts s seconds to a Duration, saturating at never.
func seconds(s float64) time.Duration {
	if s >= float64(never)/float64(time.Second) {
		return never
	}
	return time.Duration(s * float64(time.Second))
}

// newContent makes page k of h, appearing at born. Its properties depend only
// on the seed, the host and k, never on the order pages are made in.
func (w *ChangingWeb) newContent(h *changingHost, k int, born time.Duration) *content {
	cfg := w.cfg
	g := k*cfg.Hosts + h.index
	c := &content{host: h, k: k, born: born, fateAt: never}
	c.rng = rand.New(rand.NewPCG(mix64(cfg.Seed, uint64(h.index), uint64(k)), 0xc4a9))
	if w.weylAt(0, g) >= cfg.StaticShare {
		lo, hi := math.Log(1/cfg.MaxChangeInterval.Seconds()), math.Log(1/cfg.MinChangeInterval.Seconds())
		c.rate = math.Exp(lo + w.weylAt(1, g)*(hi-lo))
	}
	c.validators = StrongETag
	u := w.weylAt(2, g)
	for i, share := range []float64{cfg.WeakETagShare, cfg.NoValidatorShare, cfg.LyingLastModifiedShare, cfg.LyingETagShare} {
		if u < share {
			c.validators = WeakETag + Validators(i)
			break
		}
		u -= share
	}
	// Draw the fate's time and status whatever the fate, so the change
	// times that follow do not depend on the fate shares.
	fateAfter := time.Duration((1 - c.rng.Float64()) * float64(cfg.FateWithin))
	c.goneStatus = 404
	if c.rng.IntN(2) == 1 {
		c.goneStatus = 410
	}
	switch u := w.weylAt(3, g); {
	case u < cfg.GoneShare:
		c.fate, c.fateAt = FateGone, born+fateAfter
	case u < cfg.GoneShare+cfg.MovedShare:
		c.fate, c.fateAt = FateMoved, born+fateAfter
	}
	c.firstMod = born
	if born == 0 {
		// The pages a host starts with were last modified some time
		// before: up to a month, in whole seconds.
		c.firstMod = -time.Duration(1+c.rng.IntN(30*24*3600)) * time.Second
	}
	c.tag = strconv.FormatUint(mix64(cfg.Seed, uint64(h.index), uint64(k), 0x7a9)>>16, 36)
	c.next = c.gap(born)
	return c
}

// gap returns the time of the change after one at from.
func (c *content) gap(from time.Duration) time.Duration {
	if c.rate <= 0 {
		return never
	}
	d := seconds(c.rng.ExpFloat64() / c.rate)
	if d >= never-from {
		return never
	}
	return from + d
}

// extend generates the changes up to off; c.mu is held.
func (c *content) extend(off time.Duration) {
	for c.next <= off && c.next != never {
		c.events = append(c.events, c.next)
		c.next = c.gap(c.next)
	}
}

// count returns the number of changes at or before off.
func (c *content) count(off time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.extend(off)
	return upTo(c.events, off)
}

// upTo returns how many of the ascending offsets are at or before off.
func upTo(offs []time.Duration, off time.Duration) int {
	n, _ := slices.BinarySearchFunc(offs, off, func(e, off time.Duration) int {
		if e <= off {
			return -1
		}
		return 1
	})
	return n
}

// changeTime returns when version v (≥ 1) appeared; version 0 has firstMod.
func (c *content) changeTime(v int) time.Duration {
	if v <= 0 {
		return c.firstMod
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.events) < v && c.next != never {
		c.extend(c.next)
	}
	if len(c.events) < v {
		return never
	}
	return c.events[v-1]
}

// changesIn returns the changes in (from, to].
func (c *content) changesIn(from, to time.Duration) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.extend(to)
	return slices.Clone(c.events[upTo(c.events, from):upTo(c.events, to)])
}

// grow makes the host's new pages up to off and returns the pages that have
// appeared by then. The slice is shared: read it, never write it.
func (h *changingHost) grow(off time.Duration) []*content {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.nextBirth <= off && h.nextBirth != never {
		h.contents = append(h.contents, h.web.newContent(h, len(h.contents), h.nextBirth))
		if gap := h.web.birthGap(h.births); gap < never-h.nextBirth {
			h.nextBirth += gap
		} else {
			h.nextBirth = never
		}
	}
	n := len(h.contents)
	for n > 0 && h.contents[n-1].born > off {
		n--
	}
	return h.contents[:n:n]
}

// version returns the address's version at off: a content version ≥ 0, or
// VersionAbsent, VersionGone, VersionMoved.
func (a address) version(off time.Duration) int {
	c := a.c
	switch {
	case off < a.born():
		return VersionAbsent
	case !a.moved && off >= c.fateAt && c.fate == FateGone:
		return VersionGone
	case !a.moved && off >= c.fateAt && c.fate == FateMoved:
		return VersionMoved
	}
	return c.count(off)
}

// born returns when the address appears.
func (a address) born() time.Duration {
	if a.moved {
		return a.c.fateAt
	}
	return a.c.born
}

// end returns when the address's content stops changing: its fate, or never.
func (a address) end() time.Duration {
	if a.moved || a.c.fate == FateNone {
		return never
	}
	return a.c.fateAt
}

func (a address) target() string {
	if a.moved {
		return changingMovedPrefix + strconv.Itoa(a.c.k)
	}
	return changingPagePrefix + strconv.Itoa(a.c.k)
}

func (a address) url() string { return "http://" + a.c.host.authority + a.target() }

// changes returns the times in (from, to] at which the address's version
// changes: content changes while it exists, then its fate.
func (a address) changes(from, to time.Duration) []time.Duration {
	lo := max(from, a.born())
	end := a.end()
	if lo >= to {
		return nil
	}
	var out []time.Duration
	if hi := min(to, end); lo < hi {
		// A URL gone or moved before the window has no content changes
		// in it.
		out = a.c.changesIn(lo, hi)
	}
	for len(out) > 0 && out[len(out)-1] >= end {
		out = out[:len(out)-1] // a change at the fate's instant is never seen
	}
	if end > from && end <= to {
		out = append(out, end)
	}
	return out
}

// parseAddress returns the address a canonical request target names on h,
// among the pages made so far (whether or not they exist at a given time).
func (h *changingHost) parseAddress(target string) (address, bool) {
	var a address
	rest, ok := strings.CutPrefix(target, changingPagePrefix)
	if !ok {
		rest, ok = strings.CutPrefix(target, changingMovedPrefix)
		a.moved = true
	}
	k, err := strconv.Atoi(rest)
	if !ok || err != nil || k < 0 || strconv.Itoa(k) != rest {
		return address{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if k >= len(h.contents) {
		return address{}, false
	}
	a.c = h.contents[k]
	if a.moved && a.c.fate != FateMoved {
		return address{}, false
	}
	return a, true
}

// offset returns t as an offset from the web's Start.
func (w *ChangingWeb) offset(t time.Time) time.Duration { return t.Sub(w.cfg.Start) }

// at returns the time of an offset from Start.
func (w *ChangingWeb) at(off time.Duration) time.Time { return w.cfg.Start.Add(off) }

// Config returns the configuration the web was made from, defaults filled in.
func (w *ChangingWeb) Config() ChangingConfig { return w.cfg }

// Start returns when the web's schedule begins.
func (w *ChangingWeb) Start() time.Time { return w.cfg.Start }

// Now returns the web's clock's time.
func (w *ChangingWeb) Now() time.Time { return w.cfg.Clock() }

// Seeds returns every host's home page, in host order.
func (w *ChangingWeb) Seeds() []string {
	out := make([]string, len(w.hosts))
	for i, h := range w.hosts {
		out[i] = "http://" + h.authority + "/"
	}
	return out
}

// Hosts returns the web's hosts in order.
func (w *ChangingWeb) Hosts() []ChangingHost {
	out := make([]ChangingHost, len(w.hosts))
	for i, h := range w.hosts {
		out[i] = ChangingHost{Authority: h.authority, CrawlDelay: w.cfg.CrawlDelay, Lastmod: h.lastmod}
	}
	return out
}

// Pages returns every content URL that has appeared by t, host by host:
// each page at /p/{k}, gone, moved or not, and after it each moved page's
// new URL once it has moved.
func (w *ChangingWeb) Pages(t time.Time) []ChangingPage {
	off := w.offset(t)
	var out []ChangingPage
	for _, h := range w.hosts {
		for _, c := range h.grow(off) {
			out = append(out, w.describe(address{c: c}))
			if c.fate == FateMoved && c.fateAt <= off {
				out = append(out, w.describe(address{c: c, moved: true}))
			}
		}
	}
	return out
}

// Page describes the content URL u (any spelling Canonical accepts), whether
// or not it exists yet; false if the web has no such URL by the clock's now
// (or a time asked of it before).
func (w *ChangingWeb) Page(u string) (ChangingPage, bool) {
	a, ok := w.lookup(u, w.Now())
	if !ok {
		return ChangingPage{}, false
	}
	return w.describe(a), true
}

// lookup returns the address of a content URL, making new pages up to the
// later of the web's current time and at.
func (w *ChangingWeb) lookup(u string, at time.Time) (address, bool) {
	c, err := Canonical(u)
	if err != nil {
		return address{}, false
	}
	rest, ok := strings.CutPrefix(c, "http://")
	if !ok {
		return address{}, false
	}
	authority, target, _ := strings.Cut(rest, "/")
	h := w.byAuthority[authority]
	if h == nil {
		return address{}, false
	}
	h.grow(max(w.offset(w.Now()), w.offset(at)))
	return h.parseAddress("/" + target)
}

func (w *ChangingWeb) describe(a address) ChangingPage {
	c := a.c
	p := ChangingPage{URL: a.url(), Authority: c.host.authority, Rate: c.rate, Validators: c.validators, Born: w.at(a.born())}
	if a.moved {
		p.MovedFrom = address{c: c}.url()
		return p
	}
	if c.fate != FateNone {
		p.Fate, p.FateAt = c.fate, w.at(c.fateAt)
	}
	switch c.fate {
	case FateGone:
		p.GoneStatus = c.goneStatus
	case FateMoved:
		p.MovedTo = address{c: c, moved: true}.url()
	}
	return p
}

// VersionAt returns the version of content URL u at t: 0 for the first, one
// more with every change; or VersionAbsent (no such URL then), VersionGone
// or VersionMoved. Every response to u carries the version of its time.
func (w *ChangingWeb) VersionAt(u string, t time.Time) int {
	a, ok := w.lookup(u, t)
	if !ok {
		return VersionAbsent
	}
	return a.version(w.offset(t))
}

// Changes returns the times in (from, to] at which content URL u's version
// changes, its going or moving included.
func (w *ChangingWeb) Changes(u string, from, to time.Time) []time.Time {
	a, ok := w.lookup(u, to)
	if !ok {
		return nil
	}
	offs := a.changes(w.offset(from), w.offset(to))
	out := make([]time.Time, len(offs))
	for i, o := range offs {
		out[i] = w.at(o)
	}
	return out
}

// Allowed reports whether the robots.txt every host serves at t allows the
// request target of URL u.
func (w *ChangingWeb) Allowed(u string, t time.Time) bool {
	c, err := Canonical(u)
	if err != nil {
		return false
	}
	rest, _ := strings.CutPrefix(c, "http://")
	_, target, _ := strings.Cut(rest, "/")
	return w.allowedAt("/"+target, w.offset(t))
}

// allowedAt reports whether the robots.txt served at off allows target.
func (w *ChangingWeb) allowedAt(target string, off time.Duration) bool {
	return !w.robotsChanged(off) || !strings.HasPrefix(target, w.cfg.RobotsDisallow) || target == robotsPath
}

// robotsChanged reports whether the robots.txt served at off disallows
// RobotsDisallow.
func (w *ChangingWeb) robotsChanged(off time.Duration) bool {
	return w.cfg.RobotsChangeAt > 0 && off >= w.cfg.RobotsChangeAt
}
