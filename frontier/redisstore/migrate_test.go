package redisstore

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// TestLayoutMigrates: a job whose shard holds the layout of an earlier
// release — three records a lease (lease hash, item hash, expiry set of
// tokens), the fencing counter in a key of its own, a key's state a field
// each, without its queue length and ready score — goes on under this one: a lease granted
// before ends with Done, one that expired hands its item out again, and
// new tokens come after the old.
func TestLayoutMigrates(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	job := newJob(t)
	o := Options{Shards: 1, CallerClock: true, FixedLeases: true}
	s1 := mustNew(t, srv, job, o)
	t0 := time.Now()
	mustAdd(t, s1, item("a", "/1"), item("a", "/2"), item("b", "/1"))
	la, lb := claimAt(t, s1, t0, opt).Lease, claimAt(t, s1, t0, opt).Lease
	if la == nil || lb == nil {
		t.Fatalf("Claims = %v, %v; want two leases", la, lb)
	}
	if la.Key != "a" {
		la, lb = lb, la
	}

	// Back to the earlier layout.
	p := s1.keyPrefix(t, "a")
	for _, l := range []*frontier.Lease{la, lb} {
		tok := counterOf(l.Token)
		m := tok + " " + l.Key
		score := c.ZScore(ctx, p+"exp", m).Val()
		c.ZRem(ctx, p+"exp", m)
		c.ZAdd(ctx, p+"exp", redis.Z{Score: score, Member: tok})
		c.HSet(ctx, p+"lease", tok, l.Key)
		// The item hash held the item alone (see leaseRecord, prelude.lua).
		rec := []byte(c.HGet(ctx, p+"item", tok).Val())
		if len(rec) < 10 || string(rec[10:10+len(l.Key)]) != l.Key {
			t.Fatalf("lease %s: record %q does not name key %s", tok, rec, l.Key)
		}
		c.HSet(ctx, p+"item", tok, rec[10+len(l.Key):])
		toOldLayout(t, c, p, l.Key)
	}
	c.Set(ctx, p+"token", c.HGet(ctx, p+"c", "token").Val(), 0)
	if err := c.HDel(ctx, p+"c", "token", "lv").Err(); err != nil {
		t.Fatal(err)
	}

	s2 := mustNew(t, srv, job, o)
	if err := s2.Done(ctx, la, t0.Add(time.Second), frontier.Outcome{Pace: la.Pace}); err != nil {
		t.Fatalf("Done of a lease granted under the earlier layout: %v", err)
	}
	later := t0.Add(2 * opt.Lease) // lb expired
	var got []string
	for range 2 {
		l := claimAt(t, s2, later, opt).Lease
		if l == nil {
			t.Fatal("Claim after the migration: nothing, want a/2 and b/1")
		}
		if l.Token <= lb.Token {
			t.Errorf("new lease token %d, not after the old %d", l.Token, lb.Token)
		}
		got = append(got, l.URL)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"http://a/2", "http://b/1"}) {
		t.Errorf("claimed %v, want a/2 and b/1 (its lease expired)", got)
	}
	for _, k := range []string{"lease", "token"} {
		if n := c.Exists(ctx, p+k).Val(); n != 0 {
			t.Errorf("the earlier layout's %s is still there", k)
		}
	}
	if lv := c.HGet(ctx, p+"c", "lv").Val(); lv != "2" {
		t.Errorf("the shard's layout is %q, want 2 (prelude.lua, LAYOUT)", lv)
	}
	for _, k := range []string{"a", "b"} {
		if keyState(t, c, p, k) == nil || c.HExists(ctx, p+"k:"+k, "na").Val() {
			t.Errorf("key %s: state not packed, or the earlier layout's fields left: %v", k, c.HGetAll(ctx, p+"k:"+k).Val())
		}
	}
	checkInvariants(t, 0, c, s2, later, 1)
}
