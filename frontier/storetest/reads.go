package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// dueCounter is what a live view asks a Store of its frontier
// (crawler.DueCounter); every Store of the tree answers it.
type dueCounter interface {
	DueCounts(ctx context.Context, now time.Time, edges []time.Duration) (frontier.DueCounts, error)
}

// testQueuedFor: a key's queued items, its items due later included, and
// leased ones aside (frontier.KeyCounter).
func testQueuedFor(t *testing.T, s frontier.Store) {
	kc, ok := s.(frontier.KeyCounter)
	if !ok {
		t.Fatalf("%T is no frontier.KeyCounter", s)
	}
	a1, a2, b1 := item("a.test", "/1"), item("a.test", "/2"), item("b.test", "/1")
	a2.Due = t0.Add(time.Hour)
	mustAdd(t, s, a1, a2, b1)
	want := map[string]int{"a.test": 2, "b.test": 1, "never.test": 0}
	for key, n := range want {
		if got, err := kc.QueuedFor(ctx, key); err != nil || got != n {
			t.Errorf("QueuedFor(%s) = %d, %v; want %d", key, got, err, n)
		}
	}
	c := claim(t, s, t0, opt)
	if c.Lease == nil {
		t.Fatal("nothing claimed")
	}
	want[c.Lease.Key]--
	if got, err := kc.QueuedFor(ctx, c.Lease.Key); err != nil || got != want[c.Lease.Key] {
		t.Errorf("QueuedFor(%s) with one leased = %d, %v; want %d", c.Lease.Key, got, err, want[c.Lease.Key])
	}
}

// testDueCounts: the queued items by when they fall due, and the one
// overdue longest.
func testDueCounts(t *testing.T, s frontier.Store) {
	dc, ok := s.(dueCounter)
	if !ok {
		t.Fatalf("%T has no DueCounts", s)
	}
	at := func(key, path string, due time.Duration) frontier.Item {
		it := item(key, path)
		it.Due = t0.Add(due)
		return it
	}
	mustAdd(t, s,
		at("a.test", "/old", -10*time.Minute), at("a.test", "/new", -time.Minute),
		at("b.test", "/soon", 30*time.Second), at("b.test", "/later", 10*time.Minute),
		at("c.test", "/tomorrow", 24*time.Hour))
	edges := []time.Duration{time.Minute, time.Hour}
	d, err := dc.DueCounts(ctx, t0, edges)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 1, 1, 1}; !slices.Equal(d.Counts, want) || d.Approximate {
		t.Errorf("counts %v (approximate %v), want %v exactly", d.Counts, d.Approximate, want)
	}
	if d.OldestKey != "a.test" || d.OldestURL != "http://a.test/old" || d.OldestDue.After(t0) {
		t.Errorf("oldest: %s %s due %v; want a.test's /old, due before %v", d.OldestKey, d.OldestURL, d.OldestDue, t0)
	}
}
