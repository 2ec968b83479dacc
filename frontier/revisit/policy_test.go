package revisit_test

import (
	"errors"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/heedcrawl/heed/frontier/revisit"
)

// The policy a crawler consumes has this shape; Default is one.
var _ interface {
	Schedule(*revisit.Host, *revisit.Page, revisit.Fetch) time.Time
} = (*revisit.Default)(nil)

func newDefault(t *testing.T, cfg revisit.Config) *revisit.Default {
	t.Helper()
	d, err := revisit.NewDefault(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNewDefault(t *testing.T) {
	d := newDefault(t, revisit.Config{})
	if b := d.Bounds(); b.Min != revisit.DefaultMinInterval || b.Max != revisit.DefaultMaxInterval {
		t.Errorf("default bounds %v", b)
	}
	d = newDefault(t, revisit.Config{Bounds: revisit.Bounds{Min: 60 * 24 * time.Hour}})
	if b := d.Bounds(); b.Max != b.Min {
		t.Errorf("a Min above the default Max: bounds %v", b)
	}
	for _, cfg := range []revisit.Config{
		{Bounds: revisit.Bounds{Min: -time.Second}},
		{Bounds: revisit.Bounds{Max: -time.Second}},
		{Bounds: revisit.Bounds{Min: 2 * time.Hour, Max: time.Hour}},
		{NewShare: 1},
		{NewShare: -0.5},
		{NewShare: math.NaN()},
	} {
		if _, err := revisit.NewDefault(cfg); !errors.Is(err, revisit.ErrConfig) {
			t.Errorf("NewDefault(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A new page is first revisited after the host's span, which grows by a
// delay with each new page: the interval of uniform revisiting.
func TestNewPagesStartUniform(t *testing.T) {
	d := newDefault(t, revisit.Config{Bounds: revisit.Bounds{Min: time.Second, Max: 24 * time.Hour}})
	var h revisit.Host
	for i := 1; i <= 100; i++ {
		var p revisit.Page
		at := t0.Add(time.Duration(i) * time.Second)
		due := d.Schedule(&h, &p, revisit.Fetch{At: at, Delay: time.Second})
		if want := at.Add(time.Duration(i) * time.Second); !due.Equal(want) {
			t.Fatalf("new page %d due %v, want %v", i, due.Sub(t0), want.Sub(t0))
		}
		if p != (revisit.Page{}) {
			t.Fatalf("a first fetch observed the page: %+v", p.Estimate())
		}
	}
}

// A page seen unchanged grows its interval at most geometrically (twice
// the time observed) until Max; one changing every time is left at Max
// but probed after each long interval.
func TestIntervalGrowthAndProbes(t *testing.T) {
	b := revisit.Bounds{Min: time.Minute, Max: 30 * 24 * time.Hour}
	d := newDefault(t, revisit.Config{Bounds: b})
	h := revisit.Host{Mu: 3600, Span: 7200}
	var p revisit.Page
	at, prev := t0.Add(time.Hour), t0
	observed := time.Duration(0)
	for range 20 {
		observed += at.Sub(prev)
		due := d.Schedule(&h, &p, revisit.Fetch{At: at, Prev: prev})
		interval := due.Sub(at)
		if interval > 2*observed || interval > b.Max {
			t.Fatalf("after %v observed unchanged: interval %v", observed, interval)
		}
		prev, at = at, due
	}
	if got := at.Sub(prev); got != b.Max {
		t.Errorf("a page never changing: interval %v after 20 fetches, want Max", got)
	}

	var fast revisit.Page
	prev, at = t0, t0.Add(time.Hour)
	var long, probes int
	for range 40 {
		due := d.Schedule(&h, &fast, revisit.Fetch{At: at, Prev: prev, Changed: true})
		switch interval := due.Sub(at); {
		case interval == b.Max:
			long++
		case interval == time.Hour && at.Sub(prev) > 2*time.Hour:
			probes++ // μ after a long interval
		}
		prev, at = at, due
	}
	if long < 15 || probes < 15 {
		t.Errorf("a page always changed: %d intervals at Max and %d probes in 40 fetches", long, probes)
	}
}

// The controller raises μ while revisits wait for the host beyond their
// target, lowers it while the host idles, by a bounded step, within its
// range.
func TestControllerDirection(t *testing.T) {
	b := revisit.Bounds{Min: time.Minute, Max: 24 * time.Hour}
	d := newDefault(t, revisit.Config{Bounds: b})
	fetch := func(h *revisit.Host, at, due time.Time) {
		var p revisit.Page
		d.Schedule(h, &p, revisit.Fetch{At: at, Prev: at.Add(-time.Hour), Due: due, Delay: time.Second})
	}
	late := revisit.Host{Mu: 600, Span: 3600}
	at := t0
	for range 100 {
		at = at.Add(time.Second)
		fetch(&late, at, at.Add(-time.Minute)) // a minute late, past 8 delays
	}
	want := 600 * math.Exp(100*0.5/3600.)
	if math.Abs(late.Mu/want-1) > 0.02 {
		t.Errorf("late revisits: μ %v, want %v", late.Mu, want)
	}
	idle := revisit.Host{Mu: 600, Span: 3600}
	at = t0
	for i := 1; i <= 100; i++ {
		at = at.Add(time.Hour)
		fetch(&idle, at, at) // the host idle for an hour before each
		// The first has no previous revisit to measure from; each later
		// one moves ln μ by its bound.
		if want := 600 * math.Exp(-0.25*float64(i-1)); i == 10 && math.Abs(idle.Mu/want-1) > 1e-3 {
			t.Errorf("an idle host: μ %v after %d revisits, want %v", idle.Mu, i, want)
		}
	}
	if lo := b.Min.Seconds() / 16; idle.Mu != lo {
		t.Errorf("an idle host: μ %v, want its floor %v", idle.Mu, lo)
	}
	one := revisit.Host{Mu: 600, Span: 3600, LastRevisit: t0}
	fetch(&one, t0.Add(24*time.Hour), t0.Add(24*time.Hour))
	if got := math.Log(600 / one.Mu); math.Abs(got-0.25) > 1e-9 {
		t.Errorf("a day idle moves ln μ by %v, want the step's bound 0.25", got)
	}
}

// Each new revisit averages into the span with weight 1/64.
func TestSpanAveragesRevisitIntervals(t *testing.T) {
	d := newDefault(t, revisit.Config{Bounds: revisit.Bounds{Min: time.Minute, Max: 24 * time.Hour}})
	h := revisit.Host{Span: 100}
	var p revisit.Page
	d.Schedule(&h, &p, revisit.Fetch{At: t0.Add(740 * time.Second), Prev: t0, Due: t0.Add(740 * time.Second), Delay: time.Second})
	if want := 100 + (740-100)/64.; math.Abs(h.Span-want) > 1e-9 {
		t.Errorf("span %v, want %v", h.Span, want)
	}
	if math.Abs(h.Mu/(h.Span/2)-1) > 0.01 {
		t.Errorf("first revisit starts μ at half the span: μ %v, span %v", h.Mu, h.Span)
	}
}

func TestHostEncoding(t *testing.T) {
	hosts := []revisit.Host{
		{},
		{Mu: 123.5, Span: 9e5, LastRevisit: t0.Add(time.Nanosecond), Credit: -0.25,
			Modified: revisit.Trust{Agree: 12, Disagree: 0.5}, Sitemap: revisit.Trust{Agree: 1, Disagree: 30}},
	}
	for _, h := range hosts {
		b, err := h.AppendBinary([]byte{1, 2})
		if err != nil || len(b) != 2+revisit.HostSize {
			t.Fatalf("AppendBinary: %d bytes, %v", len(b), err)
		}
		var q revisit.Host
		if err := q.UnmarshalBinary(b[2:]); err != nil {
			t.Fatal(err)
		}
		if !q.LastRevisit.Equal(h.LastRevisit) {
			t.Errorf("LastRevisit %v, want %v", q.LastRevisit, h.LastRevisit)
		}
		q.LastRevisit = h.LastRevisit
		if q != h {
			t.Errorf("round trip: %+v, want %+v", q, h)
		}
	}
	good, _ := hosts[1].MarshalBinary()
	nan := append([]byte{}, good...)
	copy(nan, []byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	credit := append([]byte{}, good...)
	copy(credit[24:], []byte{0, 0, 0x80, 0x7f}) // +Inf
	for name, b := range map[string][]byte{"short": good[:10], "NaN μ": nan, "infinite credit": credit} {
		q := hosts[1]
		if err := q.UnmarshalBinary(b); !errors.Is(err, revisit.ErrHostEncoding) {
			t.Errorf("%s: %v, want ErrHostEncoding", name, err)
		}
		if q != hosts[1] {
			t.Errorf("%s: a refused encoding changed the host", name)
		}
	}
}

// The states a Store keeps per URL and per host are small.
func TestStateSizes(t *testing.T) {
	t.Logf("per URL: Page %d bytes; per host: Host %d bytes in memory, %d encoded",
		unsafe.Sizeof(revisit.Page{}), unsafe.Sizeof(revisit.Host{}), revisit.HostSize)
	if unsafe.Sizeof(revisit.Page{}) > 32 {
		t.Errorf("Page is %d bytes", unsafe.Sizeof(revisit.Page{}))
	}
}

func TestChooseShares(t *testing.T) {
	for _, share := range []float64{0.25, 0.5, revisit.DefaultNewShare, 0.9} {
		d := newDefault(t, revisit.Config{NewShare: share})
		var h revisit.Host
		news, longest, run := 0, 0, 0
		const n = 1000
		for range n {
			switch d.Choose(&h, true, true) {
			case revisit.NewURL:
				news++
				run++
				longest = max(longest, run)
			case revisit.Revisit:
				run = 0
			default:
				t.Fatal("nothing chosen while both wait")
			}
		}
		if math.Abs(float64(news)/n-share) > 0.002 {
			t.Errorf("share %v: new URLs got %d of %d", share, news, n)
		}
		// Revisits are never held back longer than the share implies.
		if limit := int(math.Ceil(share / (1 - share))); longest > limit {
			t.Errorf("share %v: %d new URLs in a row, want at most %d", share, longest, limit)
		}
	}
	d := newDefault(t, revisit.Config{})
	var h revisit.Host
	for _, c := range []struct {
		newWaiting, revisitDue bool
		want                   revisit.Source
	}{{false, false, revisit.Nothing}, {true, false, revisit.NewURL}, {false, true, revisit.Revisit}} {
		before := h
		if got := d.Choose(&h, c.newWaiting, c.revisitDue); got != c.want || h != before {
			t.Errorf("Choose(%v, %v) = %v (credit %v → %v), want %v unchanged",
				c.newWaiting, c.revisitDue, got, before.Credit, h.Credit, c.want)
		}
	}
	if s := revisit.Revisit.String() + revisit.NewURL.String() + revisit.Nothing.String(); s != "revisitnewnothing" {
		t.Errorf("names %q", s)
	}
}

// Trust in a host's Last-Modified is earned by true claims and lost by
// ones that are always "now" or never move.
func TestLastModifiedTrust(t *testing.T) {
	d := newDefault(t, revisit.Config{Bounds: revisit.Bounds{Min: time.Minute, Max: 24 * time.Hour}})
	claims := map[string]func(prev, at time.Time, changed bool) time.Time{
		"true": func(prev, at time.Time, changed bool) time.Time {
			if changed {
				return at.Add(-at.Sub(prev) / 3)
			}
			return prev.Add(-time.Hour)
		},
		"now":    func(_, at time.Time, _ bool) time.Time { return at },
		"frozen": func(_, _ time.Time, _ bool) time.Time { return t0.Add(-365 * 24 * time.Hour) },
	}
	for name, claim := range claims {
		var h revisit.Host
		var p, undated revisit.Page
		prev := t0
		var trustedAt int
		for i := 1; i <= 40; i++ {
			at := prev.Add(time.Hour)
			changed := i%2 == 0
			d.Schedule(&h, &p, revisit.Fetch{At: at, Prev: prev, Changed: changed, LastModified: claim(prev, at, changed)})
			_ = undated.Observe(revisit.Obs{Interval: time.Hour, Changed: changed})
			if trustedAt == 0 && h.Modified.Trusted() {
				trustedAt = i
			}
			prev = at
		}
		t.Logf("%s Last-Modified: score %.2f after 40 fetches, trusted from fetch %d (0: never)", name, h.Modified.Score(), trustedAt)
		if got := h.Modified.Trusted(); got != (name == "true") {
			t.Errorf("%s Last-Modified: trusted %v, score %v", name, got, h.Modified.Score())
		}
		// Only trusted claims date the changes the estimate rests on.
		if dated := p != undated; dated != (name == "true") {
			t.Errorf("%s Last-Modified: changes dated %v", name, dated)
		}
		if name == "true" && trustedAt > 10 {
			t.Errorf("true Last-Modified trusted only from fetch %d", trustedAt)
		}
	}
}

// A sitemap that claims no change is contradicted by a change found only
// where the change most likely came before the sitemap was read, and then
// by that probability; a claim of no change that a fetch confirms weighs
// nothing, since a sitemap never updated would make it too.
func TestSitemapTrustWeighsStaleClaims(t *testing.T) {
	d := newDefault(t, revisit.Config{Bounds: revisit.Bounds{Min: time.Minute, Max: 24 * time.Hour}})
	weigh := func(readAfter time.Duration, changed bool) revisit.Trust {
		var h revisit.Host
		var p revisit.Page
		prev := t0
		for range 20 {
			at := prev.Add(time.Hour)
			// Read readAfter the last fetch, saying no change since.
			d.Schedule(&h, &p, revisit.Fetch{At: at, Prev: prev, Changed: changed,
				Lastmod: prev.Add(-time.Hour), LastmodRead: prev.Add(readAfter)})
			prev = at
		}
		return h.Sitemap
	}
	if got := weigh(time.Minute, true); got.Agree+got.Disagree != 0 {
		t.Errorf("claims read a minute into hour-long intervals that changed weigh %+v, want nothing: the change most likely came after", got)
	}
	if got := weigh(55*time.Minute, false); got.Agree+got.Disagree != 0 {
		t.Errorf("claims of no change confirmed weigh %+v, want nothing", got)
	}
	got := weigh(55*time.Minute, true)
	if got.Agree != 0 || got.Disagree < 10 || got.Trusted() {
		t.Errorf("claims read 55 minutes into hour-long intervals that changed weigh %+v, want about 0.9 against each", got)
	}
}

// Claim moves a page's due time only once the host's sitemaps are trusted,
// forward for a claimed change worth a fetch, back for none.
func TestClaim(t *testing.T) {
	d := newDefault(t, revisit.Config{Bounds: revisit.Bounds{Min: time.Minute, Max: 24 * time.Hour}})
	var p revisit.Page
	for i := range 10 {
		_ = p.Observe(revisit.Obs{Interval: time.Hour, Changed: i%4 == 0})
	}
	prev := t0
	due := t0.Add(2 * time.Hour)
	read := t0.Add(30 * time.Minute)
	changed, unchanged := t0.Add(20*time.Minute), t0.Add(-time.Hour)
	trusted := revisit.Host{Mu: 1800, Span: 3600, Sitemap: revisit.Trust{Agree: 20}}
	doubted := trusted
	doubted.Sitemap.Disagree = 5
	if got := d.Claim(doubted, p, prev, due, changed, read); !got.Equal(due) {
		t.Errorf("doubted sitemap moved due to %v", got.Sub(t0))
	}
	if got := d.Claim(trusted, p, prev, due, changed, read); !got.Equal(read) {
		t.Errorf("trusted change: due %v, want the reading %v", got.Sub(t0), read.Sub(t0))
	}
	want := read.Add(d.Interval(trusted, p, 0))
	if got := d.Claim(trusted, p, prev, due, unchanged, read); !got.Equal(want) || !got.After(due) {
		t.Errorf("trusted no change: due %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	// A page changing faster than once per μ is not worth fetching for
	// a change.
	var fast revisit.Page
	for range 10 {
		_ = fast.Observe(revisit.Obs{Interval: time.Hour, Changed: true})
	}
	if got := d.Claim(trusted, fast, prev, due, changed, read); !got.Equal(due) {
		t.Errorf("too fast a page: due %v", got.Sub(t0))
	}
}

// BenchmarkSchedule is the cost of one revisit's Schedule: the page's
// estimate, its optimal interval and the host's controller.
func BenchmarkSchedule(b *testing.B) {
	d, err := revisit.NewDefault(revisit.Config{})
	if err != nil {
		b.Fatal(err)
	}
	rng := newRand(11)
	pages := make([]revisit.Page, 1024)
	for i := range pages {
		rate := math.Pow(10, -7+4*rng.Float64())
		for range 20 {
			_ = pages[i].Observe(check(rng, rate, 3600*(0.5+rng.Float64())))
		}
	}
	h := revisit.Host{Mu: 3600, Span: 7200}
	at := t0
	i := 0
	for b.Loop() {
		at = at.Add(time.Second)
		p := &pages[i%len(pages)]
		i++
		d.Schedule(&h, p, revisit.Fetch{At: at, Prev: at.Add(-2 * time.Hour), Due: at.Add(-time.Second), Changed: i%3 == 0, Delay: time.Second})
	}
}

// A Trust is undecided until its claims weigh 8 verdicts, then trusted or
// not by their score.
func TestTrustUndecided(t *testing.T) {
	var tr revisit.Trust
	for i := range 8 {
		if !tr.Undecided() || tr.Trusted() {
			t.Fatalf("after %d agreeing verdicts: undecided %v, trusted %v; want undecided, not trusted", i, tr.Undecided(), tr.Trusted())
		}
		tr.Record(true, 1)
	}
	if tr.Undecided() || !tr.Trusted() {
		t.Errorf("after 8 agreeing verdicts: undecided %v, trusted %v; want trusted", tr.Undecided(), tr.Trusted())
	}
	liar := revisit.Trust{Agree: 4, Disagree: 4}
	if liar.Undecided() || liar.Trusted() {
		t.Errorf("4 against 4: undecided %v, trusted %v; want decided, not trusted", liar.Undecided(), liar.Trusted())
	}
}
