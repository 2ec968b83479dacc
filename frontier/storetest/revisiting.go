package storetest

import (
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// hostState returns a revisit state with every field set to a value the
// encoding keeps exactly, told apart by n.
func hostState(n int) revisit.Host {
	return revisit.Host{
		Mu:          0.5 + float64(n),
		Span:        3600 * float64(n+1),
		LastRevisit: t0.Add(time.Duration(n) * time.Minute),
		Credit:      -0.25,
		Modified:    revisit.Trust{Agree: 3, Disagree: 1.5},
		Sitemap:     revisit.Trust{Agree: float32(n), Disagree: 2},
	}
}

func checkRevisiting(t *testing.T, when string, l *frontier.Lease, want revisit.Host) {
	t.Helper()
	got := l.Revisiting
	if got.Mu != want.Mu || got.Span != want.Span || !got.LastRevisit.Equal(want.LastRevisit) ||
		got.Credit != want.Credit || got.Modified != want.Modified || got.Sitemap != want.Sitemap {
		t.Errorf("%s: Lease.Revisiting = %+v, want %+v", when, got, want)
	}
}

// testRevisiting: a key's revisit state is what the last Done or Requeue
// that carried one set, handed out with every lease of the key (ClaimKey's
// too), zero for a key that never had one, left alone by an Outcome
// without one — and, for stores that persist, kept across a reopen or a
// crash.
func testRevisiting(t *testing.T, h Harness, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("b", "/1"), item("a", "/2"), item("a", "/3"), item("a", "/4"))
	l := mustClaim(t, s, t0, "http://a/1")
	checkRevisiting(t, "a key never revisited", l, revisit.Host{})
	h1 := hostState(1)
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Revisiting: &h1}); err != nil {
		t.Fatal(err)
	}
	l = mustClaim(t, s, t0, "http://b/1")
	checkRevisiting(t, "another key", l, revisit.Host{})
	ack(t, s, l, t0, 0)

	l = mustClaim(t, s, t0, "http://a/2")
	checkRevisiting(t, "after a Done that set it", l, h1)
	h2 := hostState(2)
	if err := s.Requeue(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Revisiting: &h2}); err != nil {
		t.Fatal(err)
	}
	l = mustClaim(t, s, t0, "http://a/2")
	checkRevisiting(t, "after a Requeue that set it", l, h2)
	ack(t, s, l, t0, 0) // no Revisiting: the key's stays
	l = mustClaim(t, s, t0, "http://a/3")
	checkRevisiting(t, "after an Outcome without one", l, h2)
	ack(t, s, l, t0, 0)
	kl, _, err := s.ClaimKey(ctx, "a", t0, opt)
	if err != nil || kl == nil {
		t.Fatalf("ClaimKey(a) = %v, %v", kl, err)
	}
	checkRevisiting(t, "ClaimKey's lease", kl, h2)
	ack(t, s, kl, t0, 0)

	for _, reopen := range []struct {
		name string
		f    func(*testing.T, frontier.Store) frontier.Store
	}{{"reopening", h.Reopen}, {"a crash", h.Crash}} {
		if reopen.f == nil {
			continue
		}
		s = reopen.f(t, s)
		t.Cleanup(func() { s.Close() })
		kl, _, err := s.ClaimKey(ctx, "a", t0.Add(time.Hour), opt)
		if err != nil || kl == nil {
			t.Fatalf("ClaimKey(a) after %s = %v, %v", reopen.name, kl, err)
		}
		checkRevisiting(t, "after "+reopen.name, kl, h2)
		ack(t, s, kl, t0.Add(time.Hour), 0)
	}
	at := t0.Add(2 * time.Hour)
	l = mustClaim(t, s, at, "http://a/4")
	checkRevisiting(t, "the last item", l, h2)
	ack(t, s, l, at, 0)
}
