package redisstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// TestInvariants runs a random mix of every operation — adds with
// duplicates and limits, some due later, claims, key claims, acks (some
// queuing revisits) and releases with rests, leases left to expire,
// closures, give-ups, on two Stores — and after each checks the counters
// and the ready set the scripts keep against what Redis holds: the queues
// and the leases themselves. It runs with two leases a key, and with
// runs (Affinity, one lease a key, two Dones in three without a rest).
func TestInvariants(t *testing.T) {
	t.Run("perhost2", func(t *testing.T) {
		testInvariants(t, frontier.ClaimOptions{PerHost: 2, Lease: 10 * time.Second})
	})
	t.Run("runs", func(t *testing.T) {
		// A lease long enough for time passing to leave runs time to go on.
		testInvariants(t, frontier.ClaimOptions{PerHost: 1, Lease: 40 * time.Second, Affinity: 3})
	})
}

func testInvariants(t *testing.T, claimOpt frontier.ClaimOptions) {
	srv := redistest.Start(t)
	c := srv.Client()
	job := newJob(t)
	o := Options{CallerClock: true, Shards: 1, FixedLeases: true} // the invariants are a shard's
	stores := []*Store{mustNew(t, srv, job, o), mustNew(t, srv, job, o)}
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	perHost := claimOpt.PerHost
	lim := frontier.Limits{MaxPagesPerHost: 40, MaxSitemapsPerHost: 3}
	var leases []*frontier.Lease
	var granted, ended, lost, expiries, revisits, runs int
	tokens := map[uint64]bool{}
	for step := range 1000 {
		s := stores[rng.IntN(2)]
		op := rng.IntN(100)
		switch {
		case op < 30:
			var batch []frontier.Item
			for range rng.IntN(6) + 1 {
				it := item(fmt.Sprintf("k%d", rng.IntN(10)), fmt.Sprintf("/%d", rng.IntN(60)))
				if rng.IntN(10) == 0 {
					it.Kind = frontier.KindSitemap
				}
				if rng.IntN(4) == 0 {
					it.Due = now.Add(time.Duration(rng.IntN(20000)-5000) * time.Millisecond)
				}
				batch = append(batch, it)
			}
			if _, err := s.Add(ctx, batch, lim); err != nil {
				t.Fatalf("step %d: Add: %v", step, err)
			}
		case op < 60:
			cl, err := s.Claim(ctx, now, claimOpt)
			if err != nil {
				t.Fatalf("step %d: Claim: %v", step, err)
			}
			if cl.Lease != nil {
				granted++
				leases = append(leases, cl.Lease)
				if tokens[cl.Lease.Token] {
					runs++ // a run's next item
				}
				tokens[cl.Lease.Token] = true
			}
		case op < 65:
			l, _, err := s.ClaimKey(ctx, fmt.Sprintf("k%d", rng.IntN(11)), now, claimOpt)
			if err != nil {
				t.Fatalf("step %d: ClaimKey: %v", step, err)
			}
			if l != nil {
				granted++
				leases = append(leases, l)
			}
		case op < 90 && len(leases) > 0:
			i := rng.IntN(len(leases))
			l := leases[i]
			leases = append(leases[:i], leases[i+1:]...)
			h := l.Pace
			h.Delay = time.Duration(rng.IntN(3)) * time.Second
			if rng.IntN(8) == 0 {
				h.ClosedUntil = now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
			}
			out := frontier.Outcome{Pace: h, Rest: time.Duration(rng.IntN(2000)) * time.Millisecond}
			if claimOpt.Affinity > 0 && rng.IntN(3) != 0 {
				out.Pace.Delay, out.Pace.ClosedUntil, out.Rest = 0, time.Time{}, 0 // a run goes on
			}
			var err error
			switch r := rng.IntN(6); {
			case r < 2:
				l.Retries++
				err = s.Requeue(ctx, l, now, out)
			case r < 4 && l.URL != "":
				rv := l.Item
				rv.Due = now.Add(time.Duration(rng.IntN(10000)-2000) * time.Millisecond)
				rv.Visit = &frontier.Visit{Fetched: now, ETag: `"e"`, Status: 200}
				out.Revisit = &rv
				revisits++
				err = s.Done(ctx, l, now, out)
			default:
				err = s.Done(ctx, l, now, out)
			}
			switch {
			case err == nil:
				ended++
			case errors.Is(err, frontier.ErrLeaseLost):
				lost++
			case !errors.Is(err, frontier.ErrGivenUp):
				t.Fatalf("step %d: ending a lease: %v", step, err)
			}
		case op < 91 && (claimOpt.Affinity == 0 || rng.IntN(5) == 0): // rarer with runs, which a key given up ends
			key := fmt.Sprintf("k%d", rng.IntN(10))
			if err := s.GiveUp(ctx, key); err != nil {
				t.Fatalf("step %d: GiveUp: %v", step, err)
			}
		default:
			// Time passes: rests end, and now and then leases expire.
			now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
			if rng.IntN(4) == 0 {
				now = now.Add(claimOpt.Lease)
				expiries++
			}
		}
		checkInvariants(t, step, c, stores[0], now, perHost)
	}
	if granted < 100 || ended < 50 || lost == 0 || expiries == 0 || revisits < 20 || claimOpt.Affinity > 0 && runs < 5 {
		t.Errorf("%d leases granted, %d ended, %d lost, %d expiries, %d revisits, %d runs going on: the mix misses cases", granted, ended, lost, expiries, revisits, runs)
	}
}

// checkInvariants compares the counters and the ready set with the queues
// (items due at once, and later) and leases in Redis.
func checkInvariants(t *testing.T, step int, c *redis.Client, s *Store, now time.Time, perHost int) {
	t.Helper()
	p := s.keyPrefix(t, "")
	leases := map[string]string{} // token → key, from the lease records
	leased := map[string]int{}
	for _, m := range c.ZRange(ctx, p+"exp", 0, -1).Val() {
		token, key, ok := strings.Cut(m, " ")
		if !ok {
			t.Fatalf("step %d: lease record %q names no key", step, m)
		}
		leases[token] = key
		leased[key]++
	}
	queued := map[string]int{}
	for _, q := range c.Keys(ctx, p+"q:*").Val() {
		queued[strings.TrimPrefix(q, p+"q:")] += int(c.LLen(ctx, q).Val())
	}
	later := map[string]float64{} // key → its first item's Due, if in D
	for _, d := range c.Keys(ctx, p+"d:*").Val() {
		k := strings.TrimPrefix(d, p+"d:")
		queued[k] += int(c.ZCard(ctx, d).Val())
		if first := c.ZRangeWithScores(ctx, d, 0, 0).Val(); len(first) == 1 {
			later[k] = first[0].Score
		}
	}
	for _, k := range c.Keys(ctx, p+"k:*").Val() {
		name := strings.TrimPrefix(k, p+"k:")
		for f := range c.HGetAll(ctx, k).Val() {
			if token, ok := strings.CutPrefix(f, "ld"); ok && leases[token] != name {
				t.Fatalf("step %d: key %s keeps the Due of lease %s, not one of its own", step, name, token)
			}
		}
		st := keyState(t, c, p, name)
		if st == nil {
			continue
		}
		if n := c.LLen(ctx, p+"q:"+name).Val(); st["ql"] != float64(n) {
			t.Fatalf("step %d: key %s counts %v items due at once, holds %d", step, name, st["ql"], n)
		}
		if n := c.ZCard(ctx, p+"d:"+name).Val(); st["dn"] != float64(n) {
			t.Fatalf("step %d: key %s counts %v items due later, holds %d", step, name, st["dn"], n)
		}
		score, err := c.ZScore(ctx, p+"ready", name).Result()
		if err == nil && st["rs"] != score || err != nil && st["rs"] != -1 {
			t.Fatalf("step %d: key %s keeps ready score %v; the ready set holds %v (%v)", step, name, st["rs"], score, err)
		}
	}
	for k, due := range later {
		st := keyState(t, c, p, k)
		if n := c.ZCard(ctx, p+"d:"+k).Val(); st["dn"] != float64(n) || st["dh"] != due {
			t.Fatalf("step %d: key %s keeps %v items due later, the first at %.0f; holds %d, the first at %.0f", step, k, st["dn"], st["dh"], n, due)
		}
	}
	var want frontier.Counts
	for token, rec := range c.HGetAll(ctx, p+"item").Val() {
		if _, ok := leases[token]; !ok {
			t.Fatalf("step %d: the item of lease %s outlived it", step, token)
		}
		// A run's items after its first count as queued until it ends.
		want.Queued += max(runItems(t, rec)-1, 0)
	}
	keys := map[string]bool{}
	for k, n := range queued {
		want.Queued += n
		keys[k] = true
	}
	for k, n := range leased {
		want.Leased += n
		want.Busy++
		keys[k] = true
	}
	want.Hosts = len(keys)
	got, err := s.Counts(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Queued != want.Queued || got.Leased != want.Leased || got.Hosts != want.Hosts || got.Busy != want.Busy {
		t.Fatalf("step %d: Counts = %+v; the queues and leases say %+v", step, got, want)
	}
	ready := map[string]float64{}
	for _, z := range c.ZRangeWithScores(ctx, p+"ready", 0, -1).Val() {
		ready[z.Member.(string)] = z.Score
	}
	for k := range keys {
		st := keyState(t, c, p, k)
		if st["leased"] != float64(leased[k]) {
			t.Fatalf("step %d: key %s counts %v leases, holds %d", step, k, st["leased"], leased[k])
		}
		claimable := queued[k] > 0 && leased[k] < perHost // a given-up key's items are handed out to be reported
		score, inReady := ready[k]
		if claimable != inReady {
			t.Fatalf("step %d: key %s (queued %d, leased %d, given up %v) in the ready set: %v", step, k, queued[k], leased[k], st["gu"], inReady)
		}
		open := st["gu"] == 0 && st["cu"] == 0
		if due, ok := later[k]; ok && inReady && open && c.LLen(ctx, p+"q:"+k).Val() == 0 && score < due {
			t.Fatalf("step %d: open key %s ready at %.0f, before its first item's Due %.0f", step, k, score, due)
		}
		delete(ready, k)
	}
	for k := range ready {
		t.Fatalf("step %d: key %s in the ready set with nothing queued", step, k)
	}
}

// runItems returns how many items a lease record holds (lua/prelude.lua,
// leaseRecord): 0 for a lease of one, a run's items.
func runItems(t *testing.T, rec string) int {
	t.Helper()
	if len(rec) < 10 {
		t.Fatalf("lease record %q: too short", rec)
	}
	n := int(rec[8])<<8 | int(rec[9])
	if n < 32768 {
		return 0
	}
	p, items := 10+n-32768, 0
	for p+4 <= len(rec) {
		l := int(rec[p])<<24 | int(rec[p+1])<<16 | int(rec[p+2])<<8 | int(rec[p+3])
		p += 4 + l
		items++
	}
	if p != len(rec) {
		t.Fatalf("lease record %q: its items overrun it", rec)
	}
	return items
}
