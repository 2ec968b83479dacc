package pebblestore

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/fakeclock"
)

// modelItem is an item of modelQueues: its URL, Due (dueNanos) and when
// it arrived, for the order of equal Dues.
type modelItem struct {
	url     string
	due     int64
	arrival int
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
// Requeues, reopenings and crashes after a sync against a model of each
// key's items: every Claim must hand out its key's first item by (Due,
// arrival), due; when none is due, Next must be the earliest first Due.
// The run and the due part of a queue, the comparison of their first
// items, and the recovery of both are what it exercises.
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
	arrive := func(key, url string, due time.Time) {
		arrivals++
		model[key] = append(model[key], modelItem{url: url, due: dueNanos(due), arrival: arrivals})
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
				batch = append(batch, it)
				arrive(it.Key, it.URL, it.Due)
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
	now = now.Add(time.Hour)
	for {
		c, err := s.Claim(ctx, now, opt)
		if err != nil {
			t.Fatal(err)
		}
		if c.Lease == nil {
			break
		}
		want, _ := model.first(c.Lease.Key)
		if c.Lease.URL != want.url {
			t.Fatalf("draining: claimed %s, want %s", c.Lease.URL, want.url)
		}
		model.remove(c.Lease.Key, c.Lease.URL)
		if err := s.Done(ctx, c.Lease, now, frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatal(err)
		}
	}
	for key, items := range model {
		if len(items) > 0 {
			t.Errorf("left in %s: %+v", key, items)
		}
	}
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
// again as a revisit due within 15 minutes, or a Requeue, in s and in
// model.
func endModelLease(t *testing.T, s *Store, rng *rand.Rand, l *frontier.Lease, now time.Time, model modelQueues, arrive func(key, url string, due time.Time)) {
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
		arrive(l.Key, l.URL, rv.Due)
	default:
		if err := s.Requeue(ctx, l, now, o); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := s.Done(ctx, l, now, o); err != nil {
		t.Fatal(err)
	}
}
