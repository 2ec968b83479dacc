package redisstore

import (
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
	"github.com/heedcrawl/heed/internal/redistest"
)

// fullVisit returns a Visit of url fetched at now as a crawl keeps one of
// a page answered 200: every field set but Gone, its ETag 20 bytes long.
func fullVisit(url string, now time.Time) *frontier.Visit {
	var p revisit.Page
	_ = p.Observe(revisit.Obs{Interval: time.Hour, Changed: true})
	_ = p.Observe(revisit.Obs{Interval: 2 * time.Hour})
	return &frontier.Visit{
		Fetched:      now,
		Changed:      now.Add(-time.Hour),
		ETag:         `"5f1e2d3c4b5a69788a"`,
		LastModified: now.Add(-2 * time.Hour).Truncate(time.Second),
		Digest:       0x0123_4567_89ab_cdef,
		Status:       200,
		Estimator:    p,
	}
}

// drainAt claims and ends everything at now, moving now to each
// Claim.Next, and returns the URLs in the order they came.
func drainAt(t *testing.T, s *Store, now time.Time) []string {
	t.Helper()
	var urls []string
	for range 1000 {
		c := claimAt(t, s, now, opt)
		if c.Lease == nil {
			if c.Idle || c.Next.IsZero() {
				return urls
			}
			now = c.Next
			continue
		}
		urls = append(urls, c.Lease.URL)
		if err := s.Done(ctx, c.Lease, now, frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("drainAt: no end")
	return nil
}

// revisitAt ends l at now, queuing its item again due at due.
func revisitAt(t *testing.T, s *Store, l *frontier.Lease, now, due time.Time) {
	t.Helper()
	rv := l.Item
	rv.Due = due
	rv.Visit = fullVisit(l.URL, now)
	if err := s.Done(ctx, l, now, frontier.Outcome{Pace: l.Pace, Revisit: &rv}); err != nil {
		t.Fatalf("Done(%s) with a revisit: %v", l.URL, err)
	}
}

// TestRevisitThenNew: a URL added after a revisit fell due comes after it,
// though the revisit waited in the sorted set of items due later and the
// URL is queued in the list of items due at once; one due later still
// comes after the URL.
func TestRevisitThenNew(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true})
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, s, item("a", "/r1"), item("a", "/r3"))
	revisitAt(t, s, claimAt(t, s, t0, opt).Lease, t0, t0.Add(time.Minute))
	revisitAt(t, s, claimAt(t, s, t0, opt).Lease, t0, t0.Add(3*time.Minute))
	// Add takes the latest now the Store was given: t0+2m, that of a
	// lease of another key.
	l, _, err := s.ClaimKey(ctx, "z", t0.Add(2*time.Minute), opt)
	if err != nil || l == nil {
		t.Fatalf("ClaimKey(z) = %v, %v", l, err)
	}
	if err := s.Done(ctx, l, t0.Add(2*time.Minute), frontier.Outcome{}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, item("a", "/n"))
	got := drainAt(t, s, t0.Add(2*time.Minute))
	if want := []string{"http://a/r1", "http://a/n", "http://a/r3"}; !slices.Equal(got, want) {
		t.Errorf("claimed %v, want %v", got, want)
	}
}

// TestRevisitRedisClock: a revisit's Due counts on the caller's clock from
// its now, and Redis's clock decides when it falls due: a caller an hour
// ahead cannot fetch it early, and is told when to ask on its own clock.
func TestRevisitRedisClock(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{})
	mustAdd(t, s, item("a", "/1"))
	const wait = 500 * time.Millisecond
	far := time.Now().Add(time.Hour)
	l := claimAt(t, s, far, opt).Lease
	done := time.Now()
	revisitAt(t, s, l, far, far.Add(wait))
	far = time.Now().Add(time.Hour)
	c := claimAt(t, s, far, opt)
	if c.Lease != nil || c.Idle {
		t.Fatalf("Claim by a caller an hour ahead, before the revisit's Due = %+v, want nothing and not idle", c)
	}
	if c.Next.Before(far) || c.Next.After(far.Add(wait)) {
		t.Errorf("Claim.Next = far%+v, want within far+(0, %v]", c.Next.Sub(far), wait)
	}
	l = claimWithin(t, s, opt, 10*time.Second)
	if waited := time.Since(done); waited < wait {
		t.Errorf("revisit handed out %v after its Done, due %v after it", waited, wait)
	}
	if l.URL != "http://a/1" || l.Visit == nil || l.Visit.ETag != fullVisit(l.URL, done).ETag {
		t.Errorf("revisit = %s with Visit %+v, want a/1 with its Visit", l.URL, l.Visit)
	}
}

// TestRevisitHandedOutEarly: a closed key hands out a revisit before its
// Due; requeued, or its lease expired or given back by Close, it goes back
// to its Due, not to the items due at once.
func TestRevisitHandedOutEarly(t *testing.T) {
	srv := redistest.Start(t)
	o := Options{CallerClock: true, FixedLeases: true}
	t0 := time.Now().Truncate(time.Second)
	due := t0.Add(time.Hour)
	// early returns a Store of a new job whose one item, a revisit due at
	// t0+1h, a key closed until t0+1m has handed out, and its lease.
	early := func(how string) (*Store, *frontier.Lease) {
		t.Helper()
		s := mustNew(t, srv, newJob(t), o)
		mustAdd(t, s, item("a", "/1"))
		l := claimAt(t, s, t0, opt).Lease
		closed := l.Pace
		closed.ClosedUntil = t0.Add(time.Minute)
		rv := l.Item
		rv.Due = due
		if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: closed, Revisit: &rv}); err != nil {
			t.Fatal(err)
		}
		l = claimAt(t, s, t0, opt).Lease
		if l == nil || !l.Closed(t0) || !l.Due.Equal(due) {
			t.Fatalf("%s: Claim of a closed key = %+v, want a/1 due at t0+1h, closed", how, l)
		}
		return s, l
	}
	// after checks that s hands out its item at its Due, not before.
	after := func(how string, s *Store, at time.Time) {
		t.Helper()
		if c := claimAt(t, s, at, opt); c.Lease != nil || !c.Next.Equal(due) {
			t.Errorf("%s: Claim at t0+%v = %+v, want nothing until its Due", how, at.Sub(t0), c)
		}
		if c := claimAt(t, s, due, opt); c.Lease == nil || c.Lease.URL != "http://a/1" {
			t.Errorf("%s: Claim at its Due = %+v, want a/1", how, c)
		}
	}

	s, l := early("Requeue")
	open := l.Pace
	open.ClosedUntil = time.Time{}
	if err := s.Requeue(ctx, l, t0, frontier.Outcome{Pace: open}); err != nil {
		t.Fatal(err)
	}
	after("Requeue", s, t0)

	s, _ = early("lease expired")
	after("lease expired", s, t0.Add(2*opt.Lease)) // that Claim takes the lease back

	s, _ = early("Close")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after("Close", mustNew(t, srv, s.Job(), o), t0.Add(2*time.Minute))
}

// TestOldQueues: items queued by the layout before revisits — a list of
// encoded items per key, which holds the items due at once now — are
// handed out as they were queued.
func TestOldQueues(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true})
	t0 := time.Now()
	mustAdd(t, s, item("a", "/new"))
	// An item of codec's first release, as TestOldValues decodes it,
	// queued behind a/new as that layout queued it.
	old, _ := hex.DecodeString("01ff0f0a687474703a2f2f612f7809687474703a2f2f612f04010000003f80c783de0c0502016500016b017602010a687474703a2f2f612f3006ca88b0f70c00")
	c := srv.Client()
	if err := c.RPush(ctx, s.keyPrefix(t, "a")+"q:a", old).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HIncrBy(ctx, s.keyPrefix(t, "a")+"c", "queued", 1).Err(); err != nil {
		t.Fatal(err)
	}
	// That layout kept the key's state a field each, without the queue's
	// length and the ready score.
	toOldLayout(t, c, s.keyPrefix(t, "a"), "a")
	if got := drainAt(t, s, t0); !slices.Equal(got, []string{"http://a/new", "http://a/x"}) {
		t.Errorf("claimed %v, want a/new, then the old item a/x", got)
	}
}
