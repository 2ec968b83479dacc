package frontier_test

import (
	"errors"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/fakeclock"
)

// revisitLater ends l with its item queued again, due after d, with a Visit
// of a fetch now, and returns that Visit.
func revisitLater(t *testing.T, fr *frontier.Frontier, clk *fakeclock.Clock, l *frontier.Lease, d time.Duration) *frontier.Visit {
	t.Helper()
	rv := l.Item
	rv.Due = clk.Now().Add(d)
	rv.Visit = &frontier.Visit{Fetched: clk.Now(), Changed: clk.Now(), ETag: `"v1"`, Status: 200, Digest: 7}
	if err := fr.Done(bg, l, frontier.Outcome{Pace: l.Pace, Revisit: &rv}); err != nil {
		t.Fatalf("Done(%s) with a revisit: %v", l.URL, err)
	}
	return rv.Visit
}

// A Next waiting for a revisit wakes exactly at its Due — no polling — and
// hands it out with its Visit; meanwhile the crawl is not exhausted.
func TestNextWakesAtRevisitDue(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	v := revisitLater(t, fr, clk, next(t, fr), time.Hour)
	if c := stats(t, fr); c.Queued != 1 || c.Resting != 1 || c.Scheduled != 1 {
		t.Errorf("Counts with a revisit due in an hour = %+v, want 1 queued, its key resting", c)
	}
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	clk.BlockUntil(1)
	wantDeadline(t, clk, t0.Add(time.Hour))
	clk.Advance(time.Hour - time.Nanosecond)
	select {
	case r := <-res:
		t.Fatalf("Next returned %v, %v a nanosecond before the revisit's Due", r.l, r.err)
	default:
	}
	clk.Advance(time.Nanosecond)
	l := wantURL(t, <-res, "http://a/1")
	if l.Visit == nil || l.Visit.ETag != v.ETag || !l.Visit.Fetched.Equal(t0) || !l.Due.Equal(t0.Add(time.Hour)) {
		t.Errorf("revisit came back as Due %v, Visit %+v; want Due t0+1h and the Visit given", l.Due, l.Visit)
	}
}

// Add stamps a zero Due with the Frontier's clock, so that new URLs and
// revisits share one order; a Due given is kept.
func TestAddStampsDue(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	revisitLater(t, fr, clk, next(t, fr), 10*time.Second)
	clk.Advance(5 * time.Second)
	mustAdd(t, fr, frontier.Item{URL: "http://a/2"}) // found at t0+5s: due before the revisit
	if l := next(t, fr); l.URL != "http://a/2" || !l.Due.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("Next = %s due %v, want a/2 stamped t0+5s", l.URL, l.Due)
	} else {
		done(t, fr, l)
	}
	clk.Advance(15 * time.Second)
	mustAdd(t, fr, frontier.Item{URL: "http://a/3"}) // found at t0+20s: after the revisit due at t0+10s
	mustAdd(t, fr, frontier.Item{URL: "http://a/4", Due: t0.Add(time.Hour)})
	for _, want := range []string{"http://a/1", "http://a/3"} {
		done(t, fr, wantURL(t, result{next(t, fr), nil}, want))
	}
	res, blocked := nextAsync(fr)
	waitBlocked(t, res, blocked)
	clk.BlockUntil(1)
	wantDeadline(t, clk, t0.Add(time.Hour))
	clk.Advance(time.Hour)
	if l := wantURL(t, <-res, "http://a/4"); !l.Due.Equal(t0.Add(time.Hour)) {
		t.Errorf("a/4's Due came back as %v, want the t0+1h given", l.Due)
	}
}

// A Revisit must be the lease's item; with a zero Due it is due now, and
// the caller's item is left as it was.
func TestDoneRevisitChecks(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	mustAdd(t, fr, frontier.Item{URL: "http://a/2"})
	l := next(t, fr)
	other := frontier.Item{URL: "http://a/2", Key: "a"}
	if err := fr.Done(bg, l, frontier.Outcome{Pace: l.Pace, Revisit: &other}); !errors.Is(err, frontier.ErrRevisit) {
		t.Fatalf("Done with a Revisit of another URL: %v, want ErrRevisit", err)
	}
	rv := l.Item
	rv.Due = time.Time{}
	rv.Visit = &frontier.Visit{Status: 304}
	if err := fr.Done(bg, l, frontier.Outcome{Pace: l.Pace, Revisit: &rv}); err != nil {
		t.Fatalf("Done after a refused one: %v", err)
	}
	if !rv.Due.IsZero() {
		t.Errorf("Done stamped the caller's item: Due %v", rv.Due)
	}
	// Due now, queued after a/2, which was stamped at t0 too but queued first.
	for _, want := range []string{"http://a/2", "http://a/1"} {
		l := wantURL(t, result{next(t, fr), nil}, want)
		if want == "http://a/1" && (l.Visit == nil || l.Visit.Status != 304 || !l.Due.Equal(t0)) {
			t.Errorf("revisit came back as Due %v, Visit %+v", l.Due, l.Visit)
		}
		done(t, fr, l)
	}
	if _, err := fr.Next(bg); !errors.Is(err, frontier.ErrExhausted) {
		t.Errorf("Next after every item is done for good: %v, want ErrExhausted", err)
	}
}

// DoneAdding queues the lease's revisit with the page's links.
func TestDoneAddingRevisit(t *testing.T) {
	clk := fakeclock.New(t0)
	fr := frontier.New(frontier.Config{Clock: clk, Scope: frontier.ScopeAny})
	mustAdd(t, fr, frontier.Item{URL: "http://a/1"})
	l := next(t, fr)
	rv := l.Item
	rv.Due = t0.Add(time.Minute)
	rv.Visit = &frontier.Visit{ETag: `"x"`}
	errs, err := fr.DoneAdding(bg, l, frontier.Outcome{Pace: l.Pace, Revisit: &rv}, []frontier.Item{l.Child("http://a/1"), l.Child("http://a/2")})
	if err != nil || len(errs) != 2 || !errors.Is(errs[0], frontier.ErrSeen) || errs[1] != nil {
		t.Fatalf("DoneAdding = %v, %v; want [ErrSeen nil]", errs, err)
	}
	done(t, fr, wantURL(t, result{next(t, fr), nil}, "http://a/2"))
	clk.Advance(time.Minute)
	if l := next(t, fr); l.URL != "http://a/1" || l.Visit == nil || l.Visit.ETag != `"x"` {
		t.Errorf("Next = %s with Visit %+v, want a/1's revisit", l.URL, l.Visit)
	}
}
