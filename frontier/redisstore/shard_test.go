package redisstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// TestFairAcrossShards: keys of many shards are claimed in the order they
// became ready, whichever Store of the job claims — the second learns of
// the shards the first filled from the wake index — and a page limit holds
// across shards.
func TestFairAcrossShards(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	o := Options{CallerClock: true, Shards: 64, Poll: time.Nanosecond}
	a, b := mustNew(t, srv, job, o), mustNew(t, srv, job, o)
	t0 := time.Now()
	var want []string
	shards := map[int]bool{}
	for i := range 20 {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		a.lastNow.Store(micros(at)) // the now of a's next Add
		key := fmt.Sprintf("k%d", i)
		mustAdd(t, a, item(key, "/1"))
		want = append(want, "http://"+key+"/1")
		shards[a.shardOf(key).i] = true
	}
	if len(shards) < 10 {
		t.Fatalf("20 keys in %d shards: the test needs them spread", len(shards))
	}
	var got []string
	end := t0.Add(time.Second)
	for i := range want {
		s := []*Store{b, a}[i%2]
		c := claimAt(t, s, end, opt)
		if c.Lease == nil {
			t.Fatalf("claim %d: %+v", i, c)
		}
		got = append(got, c.Lease.URL)
	}
	if !slices.Equal(got, want) {
		t.Errorf("claimed %v, want the order they became ready %v", got, want)
	}
	refused, err := b.Add(ctx, []frontier.Item{item("x1", "/1"), item("x2", "/1"), item("x3", "/1"), item("x4", "/1")}, frontier.Limits{MaxPages: 22})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range refused {
		if r == nil {
			n++
		}
	}
	if n != 2 {
		t.Errorf("MaxPages 22 after 20 pages: %d of 4 added (%v), want 2", n, refused)
	}
}
