package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// closedDrain claims from now on until nothing is handed out within a
// minute of now, acking each lease with its own host state and no rest,
// and returns the URLs of the closed leases and of the others, in the order
// they were claimed. (A reopened Store makes each key rest a little.)
func closedDrain(t *testing.T, s frontier.Store, now time.Time) (closed, open []string) {
	t.Helper()
	end := now.Add(time.Minute)
	for range 1000 {
		c := claim(t, s, now, opt)
		if c.Lease == nil && !c.Next.IsZero() && c.Next.Before(end) {
			now = c.Next
			continue
		}
		if c.Lease == nil {
			return closed, open
		}
		if c.Lease.Closed(now) {
			closed = append(closed, c.Lease.URL)
		} else {
			open = append(open, c.Lease.URL)
		}
		ack(t, s, c.Lease, now, 0)
	}
	t.Fatal("Claim never ran out of items")
	return nil, nil
}

// testGiveUp: a key given up takes a new URL whatever the limits, once,
// counting it against none, and its queued items — the one whose lease
// was under way and the one added after included — are handed out at
// once, marked GivenUp, whatever its pace, which they leave as it was;
// after a reopen too, for the items not yet done.
func testGiveUp(t *testing.T, h Harness, s frontier.Store) {
	mustAdd(t, s, item("dead", "/1"), item("dead", "/2"), item("dead", "/3"), item("dead", "/4"), item("live", "/1"))
	l := mustClaim(t, s, t0, "http://dead/1")
	if err := s.GiveUp(ctx, "dead"); err != nil {
		t.Fatal(err)
	}
	before, err := s.Counts(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	full := frontier.Limits{MaxPages: 1, MaxPagesPerHost: 1}
	if r := add(t, s, full, item("dead", "/new")); r[0] != nil {
		t.Errorf("Add to a given-up key over the limits: %v, want it queued, to be reported", r[0])
	}
	if r := add(t, s, full, item("dead", "/new")); !errors.Is(r[0], frontier.ErrSeen) {
		t.Errorf("Add of the given-up key's new URL again: %v, want ErrSeen", r[0])
	}
	if c, err := s.Counts(ctx, t0); err != nil {
		t.Fatal(err)
	} else if c.Scheduled != before.Scheduled || c.Queued != before.Queued+1 {
		t.Errorf("Counts after a given-up key's new URL = %d scheduled, %d queued; want %d scheduled (not counted), %d queued",
			c.Scheduled, c.Queued, before.Scheduled, before.Queued+1)
	}
	if err := s.Requeue(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Rest: time.Hour}); err != nil {
		t.Fatalf("Requeue on a given-up key: %v", err)
	}
	first := mustClaim(t, s, t0, "http://dead/1")
	if !first.GivenUp || !first.Closed(t0) {
		t.Errorf("lease of a given-up key: GivenUp %v, Closed %v; want both", first.GivenUp, first.Closed(t0))
	}
	ack(t, s, first, t0, 0)
	if h.Reopen != nil {
		s = h.Reopen(t, s)
		t.Cleanup(func() { s.Close() })
	}
	closed, open := closedDrain(t, s, t0)
	if want := []string{"http://dead/2", "http://dead/3", "http://dead/4", "http://dead/new"}; !slices.Equal(closed, want) {
		t.Errorf("given-up items handed out %v, want %v", closed, want)
	}
	if !slices.Equal(open, []string{"http://live/1"}) {
		t.Errorf("other items handed out %v, want [http://live/1]", open)
	}
	hs, err := s.Host(ctx, "dead")
	if err != nil {
		t.Fatal(err)
	}
	if h.Reopen == nil && hs.NextAllowed.Before(t0.Add(time.Hour)) {
		t.Errorf("given-up key's NextAllowed = t0+%v, want its rest of an hour untouched", hs.NextAllowed.Sub(t0))
	}
}

// testClosedKey: a key whose lease ends with ClosedUntil set is handed out
// at once, ahead of keys waiting, until then — its NextAllowed untouched —
// and once ClosedUntil has passed it waits for its NextAllowed as any key.
// ClosedUntil is kept across a reopen.
func testClosedKey(t *testing.T, h Harness, s frontier.Store) {
	mustAdd(t, s, item("a", "/1"), item("b", "/1"), item("a", "/2"), item("a", "/3"), item("a", "/4"), item("b", "/2"))
	l := mustClaim(t, s, t0, "http://a/1")
	hs := l.Pace
	hs.ClosedUntil = t0.Add(time.Minute)
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: hs, Rest: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	// Closed: a/2 comes before b/1, which has waited longer.
	c := mustClaim(t, s, t0, "http://a/2")
	if !c.Closed(t0) || c.GivenUp {
		t.Errorf("lease of a closed key: Closed %v, GivenUp %v; want closed, not given up", c.Closed(t0), c.GivenUp)
	}
	ack(t, s, c, t0, 0)
	if h.Reopen != nil {
		s = h.Reopen(t, s)
		t.Cleanup(func() { s.Close() })
	}
	got, err := s.Host(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !got.ClosedUntil.Equal(t0.Add(time.Minute)) {
		t.Errorf("Host(a).ClosedUntil = %v, want t0+1m", got.ClosedUntil)
	}
	if got.NextAllowed.Before(t0.Add(2 * time.Minute)) {
		t.Errorf("Host(a).NextAllowed = t0+%v after closed leases, want its rest (t0+2m) untouched", got.NextAllowed.Sub(t0))
	}
	c = mustClaim(t, s, t0, "http://a/3")
	ack(t, s, c, t0, 0)
	// Open again after a minute: a/4 waits for a's rest, b goes on.
	later := t0.Add(time.Minute + time.Second)
	b1 := mustClaim(t, s, later, "http://b/1")
	ack(t, s, b1, later, 0)
	b2 := mustClaim(t, s, later, "http://b/2")
	ack(t, s, b2, later, 0)
	if cl := claim(t, s, later, opt); cl.Lease != nil {
		t.Fatalf("Claim at t0+61s = %s, want none before a's NextAllowed", cl.Lease.URL)
	}
	a4 := mustClaim(t, s, t0.Add(2*time.Minute), "http://a/4")
	if a4.Closed(t0.Add(2 * time.Minute)) {
		t.Error("a/4 handed out closed after ClosedUntil passed")
	}
	ack(t, s, a4, t0.Add(2*time.Minute), 0)

	// A lease of the key alone (ClaimKey: a robots.txt redirect hop)
	// carries ClosedUntil, so that ending it with its host state keeps
	// the key closed.
	at := t0.Add(2 * time.Minute) // the latest time the Store was given
	mustAdd(t, s, item("c", "/1"))
	c1 := mustClaim(t, s, at, "http://c/1")
	hc := c1.Pace
	hc.ClosedUntil = at.Add(time.Hour)
	if err := s.Done(ctx, c1, at, frontier.Outcome{Pace: hc}); err != nil {
		t.Fatal(err)
	}
	kl, _, err := s.ClaimKey(ctx, "c", at, opt)
	if err != nil || kl == nil {
		t.Fatalf("ClaimKey(c) = %v, %v", kl, err)
	}
	if !kl.Pace.ClosedUntil.Equal(at.Add(time.Hour)) {
		t.Errorf("ClaimKey's lease: ClosedUntil %v, want an hour on", kl.Pace.ClosedUntil)
	}
	if err := s.Done(ctx, kl, at, frontier.Outcome{Pace: kl.Pace}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Host(ctx, "c"); err != nil || !got.ClosedUntil.After(at.Add(59*time.Minute)) {
		t.Errorf("Host(c) after the key lease ended: %+v, %v; want it closed still", got, err)
	}
}
