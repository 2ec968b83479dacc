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

// TestPickBusyShard: a shard with one ready key and a claim in flight is
// not sent a second claim, which would find nothing: pick hands back a
// channel that closes when the claim comes back. A shard with more ready
// keys takes as many claims at once.
func TestPickBusyShard(t *testing.T) {
	v := newView(2)
	v.learn(0, []any{int64(1), int64(100), "a", int64(0), int64(0), int64(1)}, true)
	i, _, _, ok, _ := v.pick(200, false)
	if !ok || i != 0 {
		t.Fatalf("pick = %d, %v; want shard 0", i, ok)
	}
	if _, _, _, ok, busy := v.pick(200, false); ok || busy == nil {
		t.Fatalf("second pick of a shard with one ready key: ok %v, channel %v; want a wait", ok, busy)
	} else {
		v.release(0)
		select {
		case <-busy:
		default:
			t.Fatal("the claim came back: the channel is open")
		}
	}
	v.learn(1, []any{int64(1), int64(50), "b", int64(0), int64(0), int64(2)}, true)
	for n, want := range []int{1, 0, 1} { // the free shard first, then the one with two keys
		if i, _, _, ok, _ := v.pick(200, false); !ok || i != want {
			t.Fatalf("claim %d: pick = %d, %v; want shard %d", n+1, i, ok, want)
		}
	}
	if _, _, _, ok, busy := v.pick(200, false); ok || busy == nil {
		t.Errorf("a claim in flight for every ready key: ok %v, channel %v; want a wait", ok, busy)
	}
}
