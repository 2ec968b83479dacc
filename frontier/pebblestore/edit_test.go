package pebblestore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/fakeclock"
)

// queueRevisits adds each item of key at paths, due at t0, claims it and
// queues it again due at t0 plus its duration of dues.
func queueRevisits(t *testing.T, s *Store, key string, dues map[string]time.Duration) {
	t.Helper()
	for path := range dues {
		x := item(key, path)
		x.Due = t0
		mustAdd(t, s, x)
	}
	for range dues {
		l := mustClaim(t, s, t0, opt)
		rv := l.Item
		rv.Due = t0.Add(dues[l.URL[len("http://"+key):]])
		rv.Visit = &frontier.Visit{Fetched: t0, Status: 200}
		if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Revisit: &rv}); err != nil {
			t.Fatal(err)
		}
	}
}

// An edit of a key whose items all wait in its due part, and which the
// Store has forgotten, reads the key back and forgets it again; its items
// come out by their new Dues, the last moved first and the first last,
// and the one edited in place, its Due kept, with its edit, also after a
// reopening and after a crash that kept what was synced,
// with nothing else written since the edit: the key's record follows the
// due part's first entry, from which recovery seeks.
func TestEditQueuedForgottenKey(t *testing.T) {
	for _, stop := range []string{"", "reopened", "crashed"} {
		t.Run(stop, func(t *testing.T) {
			s := openT(t, memDir, Options{FS: vfs.NewCrashableMem(), SyncInterval: never, Clock: fakeclock.New(t0)})
			defer func() { s.Close() }()
			queueRevisits(t, s, "a", map[string]time.Duration{"/1": time.Hour, "/2": 2 * time.Hour, "/3": 3 * time.Hour})
			if q := queueOf(s, "a"); q != nil {
				t.Fatalf("key a, all due later, is held in memory: %+v", q)
			}
			n, err := s.EditQueued(ctx, "a", func(it *frontier.Item) bool {
				switch it.URL {
				case "http://a/1":
					it.Due = t0.Add(4 * time.Hour)
				case "http://a/2":
					it.Visit.LastmodRead = t0
				case "http://a/3":
					it.Due = t0.Add(30 * time.Minute)
				}
				return true
			})
			if err != nil || n != 3 {
				t.Fatalf("EditQueued = %d, %v, want 3 edited", n, err)
			}
			if q := queueOf(s, "a"); q != nil {
				t.Errorf("key a is held in memory after the edit: %+v", q)
			}
			switch stop {
			case "reopened":
				s = reopenT(t, s)
			case "crashed":
				mustSync(t, s)
				s = crashExact(t, s)
			}
			c, err := s.Claim(ctx, t0.Add(10*time.Minute), opt)
			if err != nil || c.Lease != nil || !c.Next.Equal(t0.Add(30*time.Minute)) {
				t.Errorf("Claim at t0+10m = %+v, %v, want nothing until a/3's new Due, t0+30m", c, err)
			}
			var got []string
			drainEach(t, s, t0.Add(5*time.Hour), func(l *frontier.Lease) {
				got = append(got, l.URL)
				if read := l.Visit.LastmodRead; l.URL == "http://a/2" && !read.Equal(t0) {
					t.Errorf("a/2, edited in place, came back with LastmodRead %v, want t0", read)
				}
			})
			if want := []string{"http://a/3", "http://a/2", "http://a/1"}; !slices.Equal(got, want) {
				t.Errorf("claimed %v, want %v", got, want)
			}
			checkNoEntries(t, s)
		})
	}
}

// queueOf returns the queue s holds in memory for key, or nil.
func queueOf(s *Store, key string) *queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues[key]
}

// An edit of the due part's first item, while the run has items, moves
// the key's head: later, the run's item comes first; earlier again, the
// edited item does.
func TestEditQueuedHead(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Clock: fakeclock.New(t0)})
	defer s.Close()
	queueRevisits(t, s, "a", map[string]time.Duration{"/1": time.Hour})
	fresh := item("a", "/new")
	fresh.Due = t0.Add(2 * time.Hour)
	mustAdd(t, s, fresh)
	moveTo := func(d time.Duration) {
		t.Helper()
		n, err := s.EditQueued(ctx, "a", func(it *frontier.Item) bool {
			it.Due = t0.Add(d)
			return true
		})
		if err != nil || n != 1 {
			t.Fatalf("EditQueued = %d, %v, want a/1 alone edited", n, err)
		}
	}
	firstOf := func(at time.Time) string {
		t.Helper()
		c, err := s.Claim(ctx, at, opt)
		if err != nil || c.Lease == nil {
			t.Fatalf("Claim at t0+%v = %+v, %v", at.Sub(t0), c, err)
		}
		if err := s.Requeue(ctx, c.Lease, at, frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatal(err)
		}
		return c.Lease.URL
	}
	moveTo(3 * time.Hour)
	if c, err := s.Claim(ctx, t0.Add(time.Hour), opt); err != nil || c.Lease != nil || !c.Next.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("Claim at t0+1h, a/1 moved to t0+3h = %+v, %v, want nothing until a/new, t0+2h", c, err)
	}
	if got := firstOf(t0.Add(4 * time.Hour)); got != "http://a/new" {
		t.Errorf("first of a, a/1 moved to t0+3h: %s, want a/new, due t0+2h", got)
	}
	moveTo(90 * time.Minute)
	if got := firstOf(t0.Add(4 * time.Hour)); got != "http://a/1" {
		t.Errorf("first of a, a/1 moved back to t0+90m: %s, want a/1", got)
	}
}

// TestEditQueuedCrash crashes a Store after an edit of many items, with a
// seeded share of what was not synced surviving: the edit is there whole
// or not at all — whole for sure if synced before the crash, as it is for
// odd seeds —, and no item is lost or doubled.
func TestEditQueuedCrash(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 5
	}
	outcomes := map[int]int{}
	for seed := range uint64(runs) {
		outcomes[testEditQueuedCrash(t, seed)]++
	}
	t.Logf("edits found after a crash: %v (count: runs)", outcomes)
}

// testEditQueuedCrash returns how many edited items came back edited.
func testEditQueuedCrash(t *testing.T, seed uint64) int {
	s := openT(t, memDir, Options{FS: vfs.NewCrashableMem(), SyncInterval: never, Clock: fakeclock.New(t0)})
	dues := map[string]time.Duration{}
	for i := range 20 {
		dues[fmt.Sprintf("/%d", i)] = time.Hour + time.Duration(i)*time.Minute
	}
	queueRevisits(t, s, "a", dues)
	mustSync(t, s)
	read := t0.Add(10 * time.Minute)
	n, err := s.EditQueued(ctx, "a", func(it *frontier.Item) bool {
		it.Due = it.Due.Add(-30 * time.Minute)
		it.Visit.LastmodRead = read
		return true
	})
	if err != nil || n != len(dues) {
		t.Fatalf("seed %d: EditQueued = %d, %v, want %d edited", seed, n, err, len(dues))
	}
	synced := seed%2 == 1
	if synced {
		mustSync(t, s)
	}
	s = crashT(t, s, seed)
	defer s.Close()
	edited, seen := 0, map[string]bool{}
	drainEach(t, s, t0.Add(5*time.Hour), func(l *frontier.Lease) {
		if seen[l.URL] {
			t.Errorf("seed %d: %s handed out twice", seed, l.URL)
		}
		seen[l.URL] = true
		if l.Visit != nil && l.Visit.LastmodRead.Equal(read) {
			edited++
			if want := t0.Add(dues[l.URL[len("http://a"):]] - 30*time.Minute); !l.Due.Equal(want) {
				t.Errorf("seed %d: %s edited, due t0+%v, want t0+%v", seed, l.URL, l.Due.Sub(t0), want.Sub(t0))
			}
		}
	})
	checkNoEntries(t, s)
	if len(seen) != len(dues) || edited != 0 && edited != len(dues) || synced && edited == 0 {
		t.Errorf("seed %d: after the crash, %d of %d items back, %d of them edited (edit synced: %v): want all, edited all, or none if not synced", seed, len(seen), len(dues), edited, synced)
	}
	return edited
}

// An item of the run that a Requeue gives a Visit is one EditQueued shows:
// it moves to the due part, at its place, first again among the key's
// items, as after a reopening; an edit then moves it after them.
func TestEditQueuedRequeuedWithVisit(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Clock: fakeclock.New(t0)})
	defer func() { s.Close() }()
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("a", "/3"))
	l := mustClaim(t, s, t0, opt)
	l.Visit = &frontier.Visit{Fetched: t0, Status: 503}
	if err := s.Requeue(ctx, l, t0, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	s = reopenT(t, s)
	at := t0.Add(time.Hour)
	if l := mustClaim(t, s, at, opt); l.URL != "http://a/1" || l.Visit == nil || l.Visit.Status != 503 {
		t.Fatalf("claimed %s with Visit %+v after its Requeue, want a/1 with its Visit", l.URL, l.Visit)
	} else if err := s.Requeue(ctx, l, at, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	var shown []string
	n, err := s.EditQueued(ctx, "a", func(it *frontier.Item) bool {
		shown = append(shown, it.URL)
		it.Due = at.Add(time.Minute)
		return true
	})
	if err != nil || n != 1 || !slices.Equal(shown, []string{"http://a/1"}) {
		t.Fatalf("EditQueued showed %v, stored %d, %v; want a/1 alone", shown, n, err)
	}
	var got []string
	drainEach(t, s, at.Add(time.Hour), func(l *frontier.Lease) { got = append(got, l.URL) })
	if want := []string{"http://a/2", "http://a/3", "http://a/1"}; !slices.Equal(got, want) {
		t.Errorf("claimed %v, want %v", got, want)
	}
	checkNoEntries(t, s)
}

// BenchmarkEditQueued edits every item of a key with n revisits queued:
// in place (Visit.LastmodRead, the Due kept) or moved (a new Due: a
// deletion and a new entry each). The Store's lock is held throughout.
func BenchmarkEditQueued(b *testing.B) {
	for _, n := range []int{100, 10000} {
		for _, move := range []bool{false, true} {
			b.Run(fmt.Sprintf("items=%d/move=%v", n, move), func(b *testing.B) {
				s, err := Open(b.TempDir(), Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				batch := make([]frontier.Item, n)
				for i := range batch {
					batch[i] = item("a", fmt.Sprintf("/%d", i))
					batch[i].Due = t0.Add(time.Duration(i) * time.Second)
					batch[i].Visit = &frontier.Visit{Fetched: t0, Status: 200}
				}
				if _, err := s.Add(ctx, batch, frontier.Limits{}); err != nil {
					b.Fatal(err)
				}
				for i := 0; b.Loop(); i++ {
					edited, err := s.EditQueued(ctx, "a", func(it *frontier.Item) bool {
						if move {
							it.Due = it.Due.Add(time.Millisecond)
						} else {
							it.Visit.LastmodRead = t0.Add(time.Duration(i))
						}
						return true
					})
					if err != nil || edited != n {
						b.Fatalf("EditQueued = %d, %v, want %d", edited, err, n)
					}
				}
			})
		}
	}
}
