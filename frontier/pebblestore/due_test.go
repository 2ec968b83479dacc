package pebblestore

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/fakeclock"
)

// modelItem is an item of modelQueues: its URL, Due (dueNanos), when it
// arrived, for the order of equal Dues, and whether it holds a Visit,
// which EditQueued may change.
type modelItem struct {
	url     string
	due     int64
	arrival int
	visit   bool
}

// modelQueues is what a Store should hold: each key's items, in no order.
type modelQueues map[string][]modelItem

// first returns key's first item: by Due, then by arrival.
func (m modelQueues) first(key string) (modelItem, bool) {
	if len(m[key]) == 0 {
		return modelItem{}, false
	}
	return slices.MinFunc(m[key], func(a, b modelItem) int {
		return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.arrival, b.arrival))
	}), true
}

// remove removes url from key's items.
func (m modelQueues) remove(key, url string) {
	m[key] = slices.DeleteFunc(m[key], func(it modelItem) bool { return it.url == url })
}

// TestDueOrderModel runs random Adds (items without a Due, and due before,
// after and among those queued), Claims, Dones, Dones queuing revisits,
// Requeues, EditQueued calls moving items with a Visit (revisits, and
// items added or requeued with one) to new Dues, reopenings and crashes after a sync
// against a model of each key's items: every Claim must hand out its
// key's first item by (Due, arrival), due; when none is due, Next must be
// the earliest first Due. The run and the due part of a queue, the
// comparison of their first items, and the recovery of both are what it
// exercises.
func TestDueOrderModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { testDueOrderModel(t, seed) })
	}
}

func testDueOrderModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	opts := Options{FS: vfs.NewCrashableMem(), SyncInterval: never, Clock: fakeclock.New(t0)}
	if seed%2 == 1 {
		opts.ReadAhead = -1
	}
	s := openT(t, memDir, opts)
	defer func() { s.Close() }()
	keys := []string{"a", "b", "c"}
	model := modelQueues{}
	now, arrivals, urls := t0, 0, 0
	arrive := func(key, url string, due time.Time, visit bool) {
		arrivals++
		model[key] = append(model[key], modelItem{url: url, due: dueNanos(due), arrival: arrivals, visit: visit})
	}
	someDue := func(around time.Time) time.Time {
		if rng.IntN(5) == 0 {
			return time.Time{}
		}
		return around.Add(time.Duration(rng.IntN(20*60)-10*60) * time.Second)
	}
	for step := range 300 {
		switch r := rng.IntN(100); {
		case r < 30:
			var batch []frontier.Item
			for range 1 + rng.IntN(3) {
				urls++
				it := item(keys[rng.IntN(len(keys))], fmt.Sprintf("/%d", urls))
				it.Due = someDue(now)
				if rng.IntN(5) == 0 {
					it.Visit = &frontier.Visit{Fetched: now, Status: 200}
				}
				batch = append(batch, it)
				arrive(it.Key, it.URL, it.Due, it.Visit != nil)
			}
			mustAdd(t, s, batch...)
		case r < 85:
			c, err := s.Claim(ctx, now, opt)
			if err != nil {
				t.Fatal(err)
			}
			if c.Lease == nil {
				checkNothingDue(t, step, model, now, c)
				continue
			}
			l := c.Lease
			want, ok := model.first(l.Key)
			if !ok || l.URL != want.url || dueNanos(l.Due) != want.due || want.due > now.UnixNano() {
				t.Fatalf("step %d: claimed %s due %v at t0+%v, want %+v (of %+v)", step, l.URL, l.Due, now.Sub(t0), want, model[l.Key])
			}
			endModelLease(t, s, rng, l, now, model, arrive)
		case r < 90:
			editModel(t, step, s, rng, keys[rng.IntN(len(keys))], model, someDue(now))
		case r < 95:
			now = now.Add(time.Duration(rng.IntN(240)) * time.Second)
		case r < 97:
			s = reopenT(t, s)
		default:
			mustSync(t, s)
			s = crashExact(t, s)
		}
	}
	// What is left drains in order, every item once due.
	drainEach(t, s, now.Add(time.Hour), func(l *frontier.Lease) {
		if want, _ := model.first(l.Key); l.URL != want.url {
			t.Fatalf("draining: claimed %s, want %s", l.URL, want.url)
		}
		model.remove(l.Key, l.URL)
	})
	for key, items := range model {
		if len(items) > 0 {
			t.Errorf("left in %s: %+v", key, items)
		}
	}
	checkNoEntries(t, s)
}

// checkNothingDue fails t unless no key of model has an item due at now,
// and c says when the first will be.
func checkNothingDue(t *testing.T, step int, model modelQueues, now time.Time, c frontier.Claim) {
	t.Helper()
	next, any := int64(0), false
	for key := range model {
		if it, ok := model.first(key); ok && (!any || it.due < next) {
			next, any = it.due, true
		}
	}
	switch {
	case !any && !c.Idle:
		t.Fatalf("step %d: nothing queued, and Claim is not idle: %+v", step, c)
	case any && next <= now.UnixNano():
		t.Fatalf("step %d: nothing claimed at t0+%v, with an item due at t0+%v", step, now.Sub(t0), dueTime(next).Sub(t0))
	case any && (c.Idle || !c.Next.Equal(dueTime(next))):
		t.Fatalf("step %d: Claim = %+v at t0+%v, want Next at the first Due, t0+%v", step, c, now.Sub(t0), dueTime(next).Sub(t0))
	}
}

// endModelLease ends l at now, at random by a Done, a Done queuing it
// again as a revisit due within 15 minutes, or a Requeue, which gives some
// items a Visit they had not, in s and in model.
func endModelLease(t *testing.T, s *Store, rng *rand.Rand, l *frontier.Lease, now time.Time, model modelQueues, arrive func(key, url string, due time.Time, visit bool)) {
	t.Helper()
	o := frontier.Outcome{Pace: l.Pace}
	switch r := rng.IntN(100); {
	case r < 45:
		model.remove(l.Key, l.URL)
	case r < 75:
		rv := l.Item
		rv.Due = now.Add(time.Duration(rng.IntN(15*60)) * time.Second)
		rv.Visit = &frontier.Visit{Fetched: now, ETag: `"` + l.URL + `"`, Status: 200}
		o.Revisit = &rv
		model.remove(l.Key, l.URL)
		arrive(l.Key, l.URL, rv.Due, true)
	default:
		if l.Visit == nil && rng.IntN(3) == 0 { // a Visit the item had not
			l.Visit = &frontier.Visit{Fetched: now, Status: 503}
			i := slices.IndexFunc(model[l.Key], func(m modelItem) bool { return m.url == l.URL })
			model[l.Key][i].visit = true
		}
		if err := s.Requeue(ctx, l, now, o); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := s.Done(ctx, l, now, o); err != nil {
		t.Fatal(err)
	}
}

// editModel calls EditQueued on key, which must show edit exactly the
// items of key holding a Visit (nothing is leased between the model's
// steps), each due as model says; edit moves about half of them to due,
// and takes the Visit of some, and model follows, their arrival kept.
func editModel(t *testing.T, step int, s *Store, rng *rand.Rand, key string, model modelQueues, due time.Time) {
	t.Helper()
	var shown []string
	edited := map[string]bool{} // the items edited, and whether they keep their Visit
	n, err := s.EditQueued(ctx, key, func(it *frontier.Item) bool {
		shown = append(shown, it.URL)
		i := slices.IndexFunc(model[key], func(m modelItem) bool { return m.url == it.URL })
		if i < 0 || !model[key][i].visit || model[key][i].due != dueNanos(it.Due) || it.Visit == nil {
			t.Errorf("step %d: EditQueued showed %s due %v, visit %v; model: %+v", step, it.URL, it.Due, it.Visit, model[key])
		}
		if rng.IntN(2) == 0 {
			return false
		}
		it.Due = due
		if rng.IntN(10) == 0 {
			it.Visit = nil
		}
		edited[it.URL] = it.Visit != nil
		return true
	})
	if err != nil || n != len(edited) {
		t.Fatalf("step %d: EditQueued(%q) = %d, %v, want %d edited", step, key, n, err, len(edited))
	}
	var want []string
	for i := range model[key] {
		m := &model[key][i]
		if m.visit {
			want = append(want, m.url)
		}
		if visit, ok := edited[m.url]; ok {
			m.due, m.visit = dueNanos(due), visit
		}
	}
	slices.Sort(shown)
	slices.Sort(want)
	if !slices.Equal(shown, want) {
		t.Fatalf("step %d: EditQueued(%q) showed %v, want the items with a Visit, %v", step, key, shown, want)
	}
}

// TestCrashKeepsRevisits crashes a Store anywhere among Dones that queue
// revisits, or finish revisits for good, each with a checkpoint: after the
// crash every Done up to the checkpoint's has happened whole — its item
// gone, or queued again with its new Visit — and every later one not at
// all — its item queued with the Visit it had — so that no URL is lost,
// none comes back after a Done for good, and each comes back with the
// Visit the checkpoint says.
func TestCrashKeepsRevisits(t *testing.T) {
	runs := 40
	if testing.Short() {
		runs = 5
	}
	for seed := range uint64(runs) {
		testCrashKeepsRevisits(t, seed)
	}
}

func testCrashKeepsRevisits(t *testing.T, seed uint64) {
	s := openT(t, memDir, Options{FS: vfs.NewCrashableMem(), SyncInterval: time.Millisecond, Clock: fakeclock.New(t0)})
	var urls []string
	for k := range 5 {
		for i := range 10 {
			it := item(fmt.Sprintf("h%d", k), fmt.Sprintf("/%d", i))
			it.Due = t0
			mustAdd(t, s, it)
			urls = append(urls, it.URL)
		}
	}
	revisit := func(l *frontier.Lease, now time.Time, i int) *frontier.Item {
		rv := l.Item
		rv.Due = now.Add(time.Hour + time.Duration(i)*time.Second)
		rv.Visit = &frontier.Visit{Fetched: now, ETag: fmt.Sprintf(`"%d"`, i), Status: 200}
		return &rv
	}
	// Every URL fetched once, queued again due an hour later or so.
	for i := range urls {
		l := mustClaim(t, s, t0, opt)
		if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Revisit: revisit(l, t0, -i)}); err != nil {
			t.Fatal(err)
		}
	}
	mustSync(t, s)
	// Revisited: each other one queued again, the rest done for good.
	t1 := t0.Add(2 * time.Hour)
	var dones []string
	forGood := map[string]bool{}
	for i := range 30 {
		l := mustClaim(t, s, t1, opt)
		o := frontier.Outcome{Pace: l.Pace, Checkpoint: []byte(l.URL)}
		if i%2 == 0 {
			forGood[l.URL] = true
		} else {
			o.Revisit = revisit(l, t1, i)
		}
		if err := s.Done(ctx, l, t1, o); err != nil {
			t.Fatal(err)
		}
		dones = append(dones, l.URL)
		if i == int(seed%31)-1 {
			mustSync(t, s) // so that crashes fall after a varying share of the Dones
		}
	}
	for range 3 {
		mustClaim(t, s, t1, opt) // leased at the crash
	}
	s = crashT(t, s, seed)
	defer s.Close()

	cp, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := slices.Index(dones, string(cp))
	if cp != nil && last < 0 {
		t.Fatalf("seed %d: Checkpoint %q, which no Done carried", seed, cp)
	}
	back := map[string]*frontier.Lease{}
	drainEach(t, s, t0.Add(10*time.Hour), func(l *frontier.Lease) {
		if back[l.URL] != nil {
			t.Errorf("seed %d: %s handed out twice after the crash", seed, l.URL)
		}
		back[l.URL] = l
	})
	checkNoEntries(t, s)
	for _, u := range urls {
		i := slices.Index(dones, u)
		applied := i >= 0 && i <= last
		l := back[u]
		switch {
		case applied && forGood[u]:
			if l != nil {
				t.Errorf("seed %d: %s back after its Done for good (checkpoint %q)", seed, u, cp)
			}
		case l == nil:
			t.Errorf("seed %d: %s lost (checkpoint %q)", seed, u, cp)
		case l.Visit == nil:
			t.Errorf("seed %d: %s back without its Visit", seed, u)
		case applied != l.Visit.Fetched.Equal(t1):
			t.Errorf("seed %d: %s back with the Visit of t0+%v, its Done %d and the checkpoint's %d", seed, u, l.Visit.Fetched.Sub(t0), i, last)
		}
	}
}

// drainEach claims every item s hands out at now, calls f with its lease,
// and ends it with a Done.
func drainEach(t *testing.T, s *Store, now time.Time, f func(*frontier.Lease)) {
	t.Helper()
	for {
		c, err := s.Claim(ctx, now, opt)
		if err != nil {
			t.Fatal(err)
		}
		if c.Lease == nil {
			return
		}
		f(c.Lease)
		if err := s.Done(ctx, c.Lease, now, frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkNoEntries fails t if s, drained, holds an entry of a queue: one
// that no count says is there.
func checkNoEntries(t *testing.T, s *Store) {
	t.Helper()
	for _, prefix := range []byte{prefixDue, prefixQueue} {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefix}, UpperBound: []byte{prefix + 1}})
		if err != nil {
			t.Fatal(err)
		}
		for valid := it.First(); valid; valid = it.Next() {
			t.Errorf("drained, the store holds %q", it.Key())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A key whose items all wait in its due part has no queue in memory: it
// is read back from the key's record when the key is claimed, and a key
// with an item in its run keeps its queue. After a reopen too.
func TestDueOnlyKeysForgotten(t *testing.T) {
	s := openT(t, t.TempDir(), Options{Clock: fakeclock.New(t0)})
	defer func() { s.Close() }()
	add := func(key, path string) {
		x := item(key, path)
		x.Due = t0
		mustAdd(t, s, x)
	}
	add("a", "/1")
	add("a", "/2")
	add("b", "/1")
	for range 2 { // a/1 and b/1, each queued again an hour on
		c, err := s.Claim(ctx, t0, frontier.ClaimOptions{PerHost: 1})
		if err != nil || c.Lease == nil {
			t.Fatalf("Claim: %+v, %v", c, err)
		}
		rv := c.Lease.Item
		rv.Due = t0.Add(time.Hour)
		if err := s.Done(ctx, c.Lease, t0, frontier.Outcome{Pace: c.Lease.Pace, Revisit: &rv}); err != nil {
			t.Fatal(err)
		}
	}
	inMemory := func(when string, want ...string) {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		var got []string
		for key := range s.queues {
			got = append(got, key)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: queues in memory %v, want %v", when, got, want)
		}
	}
	inMemory("after the first visits", "a")
	s = reopenT(t, s)
	inMemory("reopened", "a")
	// Every key rests a full Delay from the reopening (t0 on the fake
	// clock); two hours on, a/2 is due, then the revisits by Due.
	at := t0.Add(2 * time.Hour)
	var got []string
	for {
		c, err := s.Claim(ctx, at, frontier.ClaimOptions{PerHost: 1})
		if err != nil {
			t.Fatal(err)
		}
		if c.Lease == nil {
			break
		}
		got = append(got, c.Lease.URL)
		if err := s.Done(ctx, c.Lease, at, frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	if want := []string{"http://a/1", "http://a/2", "http://b/1"}; !slices.Equal(got, want) {
		t.Errorf("claimed %v, want %v", got, want)
	}
	inMemory("with nothing queued")
}
