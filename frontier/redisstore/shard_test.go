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
	checkFairAcrossShards(t, a, b)
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
	for n, want := range []int{1, 1, 0} { // the shard ready first, busy or not, as long as it has keys
		if i, _, _, ok, _ := v.pick(200, false); !ok || i != want {
			t.Fatalf("claim %d: pick = %d, %v; want shard %d", n+1, i, ok, want)
		}
	}
	if _, _, _, ok, busy := v.pick(200, false); ok || busy == nil {
		t.Errorf("a claim in flight for every ready key: ok %v, channel %v; want a wait", ok, busy)
	}
}

// TestMaxPagesConcurrent: Stores of one job adding at once, over many
// shards, never schedule more pages than MaxPages between them, and fall
// short of it by less than the batches in flight at the end could
// reserve (the reservations of batches refused at the limit are given
// back).
func TestMaxPagesConcurrent(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	o := Options{Shards: 64}
	stores := []*Store{mustNew(t, srv, job, o), mustNew(t, srv, job, o), mustNew(t, srv, job, o)}
	const limit, batches, batch = 150, 12, 10
	lim := frontier.Limits{MaxPages: limit}
	added := make([]int, len(stores))
	errs := make(chan error, len(stores))
	for si, s := range stores {
		go func() {
			for b := range batches {
				items := make([]frontier.Item, batch)
				for i := range items {
					items[i] = item(fmt.Sprintf("h%d", (si*batches+b)*batch+i), "/p")
				}
				refused, err := s.Add(ctx, items, lim)
				if err != nil {
					errs <- err
					return
				}
				for _, r := range refused {
					if r == nil {
						added[si]++
					}
				}
			}
			errs <- nil
		}()
	}
	for range stores {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for _, n := range added {
		total += n
	}
	c, err := stores[0].Counts(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("added by each Store %v: %d of %d offered, Counts.Scheduled %d", added, total, len(stores)*batches*batch, c.Scheduled)
	if total > limit || c.Scheduled != total {
		t.Errorf("%d pages added, %d counted scheduled; want the same number, at most %d", total, c.Scheduled, limit)
	}
	if total < limit-(len(stores)-1)*batch {
		t.Errorf("%d pages added under MaxPages %d with %d offered: short by more than the other Stores' batches in flight", total, limit, len(stores)*batches*batch)
	}
}

// checkFairAcrossShards adds 20 keys, spread over the job's shards, one
// a millisecond through a, and checks that Claims, by b and a in turn,
// take them in the order they became ready.
func checkFairAcrossShards(t *testing.T, a, b *Store) {
	t.Helper()
	t0 := time.Now()
	var want []string
	shards := map[int]bool{}
	for i := range 20 {
		a.lastNow.Store(micros(t0.Add(time.Duration(i) * time.Millisecond))) // the now of a's next Add
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
		c := claimAt(t, []*Store{b, a}[i%2], end, opt)
		if c.Lease == nil {
			t.Fatalf("claim %d: %+v", i, c)
		}
		got = append(got, c.Lease.URL)
	}
	if !slices.Equal(got, want) {
		t.Errorf("claimed %v, want the order they became ready %v", got, want)
	}
}

// crc16 is Redis Cluster's: the check value of CRC16/XMODEM, and the slot
// Redis gives "foo".
func TestCRC16(t *testing.T) {
	if got := crc16("123456789"); got != 0x31c3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	if got := crc16("foo") % slots; got != 12182 {
		t.Errorf("slot of foo = %d, want 12182", got)
	}
}

// TestShardsSpread: a job started on a cluster without Options.Shards has
// ShardsPerPrimary shards a primary, and each primary serves exactly that
// many (its hash tags spread over the slots); a job of an earlier release,
// whose settings say nothing of spread tags, keeps {job/SHARD}.
func TestShardsSpread(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3})
	s, err := New(cl.Client(), newJob(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.setup(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.shards) != 3*ShardsPerPrimary {
		t.Fatalf("%d shards, want %d", len(s.shards), 3*ShardsPerPrimary)
	}
	per := map[string]int{}
	for _, sh := range s.shards {
		per[s.nodeOf(ctx, sh)]++
	}
	for node, n := range per {
		if n != ShardsPerPrimary || node == "" {
			t.Errorf("primary %q serves %d shards, want %d each: %v", node, n, ShardsPerPrimary, per)
		}
	}

	job := newJob(t)
	if err := cl.Client().HSet(ctx, "heed:{"+job+"}:n", "shards", 4).Err(); err != nil {
		t.Fatal(err)
	}
	old, err := New(cl.Client(), job, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.setup(ctx); err != nil {
		t.Fatal(err)
	}
	if len(old.shards) != 4 || old.shards[3].prefix != "heed:{"+job+"/3}:" {
		t.Errorf("a job of an earlier release: %d shards, the last %q; want 4, heed:{%s/3}:", len(old.shards), old.shards[3].prefix, job)
	}
}
