package redisstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/storetest"
	"github.com/heedcrawl/heed/internal/redistest"
)

// copyItem returns a copy of it that shares nothing with it.
func copyItem(it *frontier.Item) frontier.Item {
	cp := *it
	if it.Visit != nil {
		v := *it.Visit
		cp.Visit = &v
	}
	return cp
}

// queuedOf returns the items EditQueued shows for key, by URL, editing
// none.
func queuedOf(t *testing.T, s *Store, key string) map[string]frontier.Item {
	t.Helper()
	shown := map[string]frontier.Item{}
	n, err := s.EditQueued(ctx, key, func(it *frontier.Item) bool {
		shown[it.URL] = copyItem(it)
		return false
	})
	if err != nil || n != 0 {
		t.Fatalf("EditQueued editing nothing = %d, %v", n, err)
	}
	return shown
}

// wantLease fails t unless l is want, every field as it.
func wantLease(t *testing.T, when string, l *frontier.Lease, want frontier.Item) {
	t.Helper()
	if l == nil {
		t.Fatalf("%s: no lease, want %s", when, want.URL)
	}
	for _, d := range storetest.Diff(want, l.Item, nil) {
		t.Errorf("%s: %s", when, d)
	}
}

// TestEditQueuedRaces: an item another Store claims, or edits, between
// EditQueued's read and its write is left as the other left it and not
// counted; the others are stored.
func TestEditQueuedRaces(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	a, b := mustNew(t, srv, job, Options{CallerClock: true}), mustNew(t, srv, job, Options{CallerClock: true})
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, a, item("a", "/1"), item("a", "/2"), item("a", "/3"))
	for i := range 3 {
		revisitAt(t, a, claimAt(t, a, t0, opt).Lease, t0, t0.Add(time.Duration(i+1)*time.Hour))
	}
	before := queuedOf(t, a, "a")
	at := t0.Add(time.Hour)
	var stolen *frontier.Lease
	var byB frontier.Item
	edited := map[string]frontier.Item{}
	n, err := a.EditQueued(ctx, "a", func(it *frontier.Item) bool {
		if stolen == nil {
			// Between a's read and its write, b claims a/1 (due) and
			// edits a/2.
			stolen = claimAt(t, b, at, opt).Lease
			nb, err := b.EditQueued(ctx, "a", func(it *frontier.Item) bool {
				if it.URL != "http://a/2" {
					return false
				}
				it.Lastmod = t0.Add(-2 * time.Hour)
				it.Visit.LastmodRead = at
				byB = copyItem(it)
				return true
			})
			if err != nil || nb != 1 {
				t.Fatalf("b's EditQueued = %d, %v, want a/2 edited", nb, err)
			}
		}
		it.Due = t0.Add(30 * time.Minute)
		it.Lastmod = t0.Add(-time.Hour)
		it.Visit.LastmodRead = at
		edited[it.URL] = copyItem(it)
		return true
	})
	if err != nil || n != 1 {
		t.Fatalf("EditQueued = %d, %v, want 1 stored: a/1 claimed and a/2 edited meanwhile", n, err)
	}
	if len(edited) != 3 {
		t.Errorf("EditQueued showed %d items, want the 3 read", len(edited))
	}
	wantLease(t, "a/1 claimed during the edit", stolen, before["http://a/1"])
	if err := b.Done(ctx, stolen, at, frontier.Outcome{Pace: stolen.Pace}); err != nil {
		t.Fatal(err)
	}
	l := claimAt(t, a, at, opt).Lease
	wantLease(t, "a/3 edited", l, edited["http://a/3"])
	if err := a.Done(ctx, l, at, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	if c := claimAt(t, a, at, opt); c.Lease != nil || !c.Next.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("Claim at t0+1h = %+v, want nothing until a/2's Due, t0+2h, as b left it", c)
	}
	wantLease(t, "a/2 edited by b meanwhile", claimAt(t, a, t0.Add(2*time.Hour), opt).Lease, byB)
}

// TestEditQueuedPlaces: an edited item takes its place by its new Due,
// whether it lay in the key's list of items due at once or in its sorted
// set: one due later leaves the list, one whose Due did not move keeps its
// place ahead of items moved to the same Due; the key's place in the ready
// set follows its first item, earlier or later; the shard's invariants
// hold.
func TestEditQueuedPlaces(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	s := mustNew(t, srv, newJob(t), Options{CallerClock: true, Shards: 1})
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("a", "/3"), item("a", "/4"))
	// a/1 and a/2 are due later (the sorted set), a/3 and a/4 at once
	// (the list).
	for _, due := range []time.Duration{time.Hour, 2 * time.Hour, 0, -time.Minute} {
		revisitAt(t, s, claimAt(t, s, t0, opt).Lease, t0, t0.Add(due))
	}
	mustAdd(t, s, item("a", "/5")) // never fetched: not shown
	edited := map[string]frontier.Item{}
	var shown []string
	n, err := s.EditQueued(ctx, "a", func(it *frontier.Item) bool {
		shown = append(shown, it.URL)
		switch it.URL {
		case "http://a/1": // its Due stays
			it.Lastmod = t0.Add(-time.Hour)
		case "http://a/3": // due later: to the sorted set, after a/1
			it.Due = t0.Add(time.Hour)
		case "http://a/4": // due sooner, due still: in place in the list
			it.Due = t0.Add(-2 * time.Minute)
			it.Lastmod = t0.Add(-3 * time.Hour)
		default:
			return false
		}
		it.Visit.LastmodRead = t0
		edited[it.URL] = copyItem(it)
		return true
	})
	slices.Sort(shown)
	if err != nil || n != 3 || !slices.Equal(shown, []string{"http://a/1", "http://a/2", "http://a/3", "http://a/4"}) {
		t.Fatalf("EditQueued = %d, %v, showing %v; want 3 stored of a/1–a/4", n, err, shown)
	}
	checkInvariants(t, 0, c, s, t0, 1)
	var order []string
	for _, at := range []time.Time{t0, t0.Add(2 * time.Hour)} {
		for {
			l := claimAt(t, s, at, opt).Lease
			if l == nil {
				break
			}
			if want, ok := edited[l.URL]; ok {
				wantLease(t, l.URL+" edited", l, want)
			}
			order = append(order, l.URL)
			if err := s.Done(ctx, l, at, frontier.Outcome{Pace: l.Pace}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if want := []string{"http://a/4", "http://a/5", "http://a/1", "http://a/3", "http://a/2"}; !slices.Equal(order, want) {
		t.Errorf("after the edit, a's items came in the order %v, want %v", order, want)
	}

	// The key's place in the ready set moves with its first item, later
	// then sooner, with no other call in between (another job: the first
	// has been told a later now).
	s = mustNew(t, srv, newJob(t), Options{CallerClock: true, Shards: 1})
	mustAdd(t, s, item("b", "/1"), item("b", "/2"))
	for _, due := range []time.Duration{time.Hour, 2 * time.Hour} {
		revisitAt(t, s, claimAt(t, s, t0, opt).Lease, t0, t0.Add(due))
	}
	for _, e := range []struct {
		url  string
		due  time.Duration
		next time.Duration
	}{{"http://b/1", 3 * time.Hour, 2 * time.Hour}, {"http://b/2", 10 * time.Minute, 10 * time.Minute}} {
		n, err := s.EditQueued(ctx, "b", func(it *frontier.Item) bool {
			if it.URL != e.url {
				return false
			}
			it.Due = t0.Add(e.due)
			return true
		})
		if err != nil || n != 1 {
			t.Fatalf("EditQueued(%s due t0+%v) = %d, %v", e.url, e.due, n, err)
		}
		checkInvariants(t, 1, c, s, t0, 1)
		if c := claimAt(t, s, t0, opt); c.Lease != nil || !c.Next.Equal(t0.Add(e.next)) {
			t.Errorf("after %s moved to t0+%v, Claim at t0 = %+v, want the next at t0+%v", e.url, e.due, c, e.next)
		}
	}
}

// TestEditQueuedRedisClock: a Store on Redis's clock places an edited
// Due as far ahead of Redis's now as it is of this machine's.
func TestEditQueuedRedisClock(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{})
	mustAdd(t, s, item("a", "/1"))
	l := claimWithin(t, s, opt, 5*time.Second)
	revisitAt(t, s, l, time.Now(), time.Now().Add(time.Hour))
	edit := func(due time.Time) {
		t.Helper()
		n, err := s.EditQueued(ctx, "a", func(it *frontier.Item) bool {
			it.Due = due
			return true
		})
		if err != nil || n != 1 {
			t.Fatalf("EditQueued = %d, %v", n, err)
		}
	}
	due := time.Now().Add(2 * time.Hour)
	edit(due)
	now := time.Now()
	if c := claimAt(t, s, now, opt); c.Lease != nil || c.Next.Sub(due).Abs() > time.Minute {
		t.Errorf("Claim after a/1 moved 2 h ahead = %+v, want the next in 2 h (%v)", c, due)
	}
	due = time.Now().Add(-time.Minute)
	edit(due)
	if l := claimWithin(t, s, opt, 5*time.Second); !l.Due.Equal(due) {
		t.Errorf("a/1 due at once came back due %v, want %v", l.Due, due)
	}
}

// TestEditQueuedRetried: an EditQueued whose reply was lost is answered
// from its memo: it counts the items it stored, which a second run would
// not find as read.
func TestEditQueuedRetried(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	drop := new(dropReplyHook)
	c.AddHook(drop)
	s, err := New(c, newJob(t), Options{CallerClock: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, s, item("a", "/1"))
	revisitAt(t, s, claimAt(t, s, t0, opt).Lease, t0, t0.Add(time.Hour))
	drop.armed.Store(true)
	n, err := s.EditQueued(ctx, "a", func(it *frontier.Item) bool {
		it.Due = t0.Add(time.Minute)
		return true
	})
	if err != nil || n != 1 {
		t.Errorf("EditQueued whose reply was lost = %d, %v, want 1", n, err)
	}
	if drop.armed.Load() {
		t.Fatal("no reply was dropped: the test tests nothing")
	}
	if c := claimAt(t, s, t0, opt); !c.Next.Equal(t0.Add(time.Minute)) {
		t.Errorf("Claim at t0 = %+v, want the next at t0+1m", c)
	}
}

// TestEditQueuedInvariants runs a random mix of adds, claims, ends of
// leases (most queuing revisits, due before or after now), edits moving
// Dues either way — some with a claim of the other Store between their
// read and their write — on two Stores, and checks after each step the
// counters and the ready set against the queues, and that every edit
// stored what it was shown, less what the other Store took.
func TestEditQueuedInvariants(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	job := newJob(t)
	o := Options{CallerClock: true, Shards: 1} // the invariants are a shard's
	stores := []*Store{mustNew(t, srv, job, o), mustNew(t, srv, job, o)}
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Now()
	var leases []*frontier.Lease
	var edits, stored, raced int
	end := func(step int, s *Store, l *frontier.Lease) {
		out := frontier.Outcome{Pace: l.Pace}
		if l.URL != "" && rng.IntN(5) > 0 {
			rv := l.Item
			rv.Due = now.Add(time.Duration(rng.IntN(20000)-4000) * time.Millisecond)
			rv.Visit = &frontier.Visit{Fetched: now, ETag: `"e"`, Status: 200}
			out.Revisit = &rv
		}
		if err := s.Done(ctx, l, now, out); err != nil && !errors.Is(err, frontier.ErrLeaseLost) {
			t.Fatalf("step %d: Done: %v", step, err)
		}
	}
	for step := range 600 {
		s, other := stores[step%2], stores[1-step%2]
		switch op := rng.IntN(100); {
		case op < 20:
			if _, err := s.Add(ctx, []frontier.Item{item(fmt.Sprintf("k%d", rng.IntN(4)), fmt.Sprintf("/%d", rng.IntN(40)))}, frontier.Limits{}); err != nil {
				t.Fatalf("step %d: Add: %v", step, err)
			}
		case op < 45:
			if l := claimAt(t, s, now, opt).Lease; l != nil {
				leases = append(leases, l)
			}
		case op < 70 && len(leases) > 0:
			i := rng.IntN(len(leases))
			l := leases[i]
			leases = append(leases[:i], leases[i+1:]...)
			end(step, s, l)
		case op < 92:
			key, race := fmt.Sprintf("k%d", rng.IntN(4)), rng.IntN(3) == 0
			if race { // the key's lease slot free, for the other to claim
				leases = slices.DeleteFunc(leases, func(l *frontier.Lease) bool {
					if l.Key == key {
						end(step, s, l)
					}
					return l.Key == key
				})
			}
			shown, took := 0, 0 // took: revisits the other Store claimed meanwhile
			n, err := s.EditQueued(ctx, key, func(it *frontier.Item) bool {
				if race && shown == 0 {
					for range 4 { // one item of each key ready
						l := claimAt(t, other, now, opt).Lease
						if l == nil {
							break
						}
						leases = append(leases, l)
						if l.Key == key && l.Visit != nil {
							took++
						}
					}
				}
				shown++
				it.Due = now.Add(time.Duration(rng.IntN(20000)-4000) * time.Millisecond)
				it.Visit.LastmodRead = now
				return true
			})
			if err != nil {
				t.Fatalf("step %d: EditQueued: %v", step, err)
			}
			if n != shown-took {
				t.Fatalf("step %d: EditQueued stored %d of %d shown, %d claimed meanwhile", step, n, shown, took)
			}
			edits, stored, raced = edits+1, stored+n, raced+took
		default:
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
		checkInvariants(t, step, c, stores[0], now, opt.PerHost)
	}
	if edits < 50 || stored < 100 || raced < 3 {
		t.Errorf("%d edits stored %d items, %d raced with a claim: the mix misses cases", edits, stored, raced)
	}
}
