package redisstore

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// TestClusterFailover: the primary of a key's shard dies and its replica
// takes over. The Store reaches the new primary well within its RetryFor
// (a cluster client left to itself routes the shard to the dead primary
// until its periodic reload, a minute), the lease granted before the
// failover ends, the other keys of the shard rest a full Delay from the
// failover, and the shard's fencing tokens jump.
func TestClusterFailover(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3, Replicas: 1})
	const retryFor, delay = 20 * time.Second, 500 * time.Millisecond
	s, err := New(c.Client(), newJob(t), Options{RetryFor: retryFor})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, item("a", "/1"))
	b := sameShard(s, "a")
	mustAdd(t, s, item(b, "/1"), item(b, "/2"))
	var la, lb *frontier.Lease
	for range 2 {
		l := claimAt(t, s, time.Now(), opt).Lease
		if l == nil {
			t.Fatal("Claim: no lease")
		}
		if l.Key == "a" {
			la = l
			continue
		}
		lb = l
		pace := l.Pace
		pace.Delay = delay
		if err := s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: pace}); err != nil {
			t.Fatal(err)
		}
	}
	if la == nil || lb == nil {
		t.Fatalf("claimed %v and %v, want a/1 and %s/1", la, lb, b)
	}

	// What is lost when the replica lags is TestFailoverLosesWrites's
	// subject: here it has everything (on a loaded machine a replica
	// fsyncing each write can lag by more than the test takes).
	shardKey := s.shardOf("a").keys[0]
	primary, err := c.Client().MasterForKey(ctx, shardKey)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := primary.Do(ctx, "WAIT", 1, 10000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the shard's replica: %d replicas, %v", n, err)
	}
	c.KillPrimary(shardKey)
	failedOver := time.Now()
	if err := s.Done(ctx, la, time.Now(), frontier.Outcome{Pace: la.Pace}); err != nil {
		t.Fatalf("Done of a lease granted before the failover: %v", err)
	}
	if took := time.Since(failedOver); took > retryFor/2 {
		t.Errorf("Done took %v after the failover: the Store did not find the new primary", took)
	}
	l := claimWithin(t, s, opt, 10*time.Second)
	if since := time.Since(failedOver); l.Key != b || since < delay {
		t.Errorf("Claim %v after the failover = %s, want %s/2 after a full Delay (%v): it rested before, but the rest may have been lost", since, l.URL, b, delay)
	}
	if jump := l.Token&(1<<counterBits-1) - lb.Token&(1<<counterBits-1); jump < 1<<32 {
		t.Errorf("token %d after the failover, %d before: the counter moved %d, want 2³² or more", l.Token, lb.Token, jump)
	}
}

// TestFailoverLosesWrites: a replica promoted before it received its
// primary's last writes — here, Redis restarted on a copy of the job taken
// earlier — has lost them. A lease granted since is refused and its item
// handed out again; a Done acknowledged since is undone, and its item
// handed out again once the lease expires; a robots.txt entry saved since
// is gone; a URL added since is not seen, and is added again (the Store
// forgets what it knew seen); and no fencing token handed out since is
// handed out again.
func TestFailoverLosesWrites(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	s := mustNew(t, srv, job, Options{FixedLeases: true})
	mustAdd(t, s, item("a", "/1"))
	b := sameShard(s, "a") // fencing tokens are compared within a shard
	mustAdd(t, s, item(b, "/1"))
	short := frontier.ClaimOptions{PerHost: 1, Lease: time.Second}
	la := claimAt(t, s, time.Now(), short).Lease
	if la == nil || la.Key != "a" {
		t.Fatalf("Claim = %v, want a/1", la)
	}
	copied := dumpJob(t, srv.Client(), job)

	// Acknowledged, then lost.
	if err := s.Done(ctx, la, time.Now(), frontier.Outcome{Pace: la.Pace}); err != nil {
		t.Fatal(err)
	}
	lb := claimAt(t, s, time.Now(), opt).Lease
	if lb == nil || lb.Key != b {
		t.Fatalf("Claim = %v, want %s/1", lb, b)
	}
	if err := s.SaveEntry(ctx, "b", []byte("robots")); err != nil {
		t.Fatal(err)
	}
	lost := item(b, "/lost") // the Store knows it seen: Redis will not
	mustAdd(t, s, lost)

	srv.Kill()
	srv.Restart()
	restoreJob(t, srv.Client(), copied)

	if err := s.Done(ctx, lb, time.Now(), frontier.Outcome{Pace: lb.Pace}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("Done of a lease whose grant was lost: %v, want ErrLeaseLost", err)
	}
	if e, err := s.LoadEntry(ctx, "b"); err != nil || e != nil {
		t.Errorf("LoadEntry of an entry saved after the copy = %q, %v; want none", e, err)
	}
	if refused, err := s.Add(ctx, []frontier.Item{lost}, frontier.Limits{}); err != nil || refused[0] != nil {
		t.Errorf("Add of a URL whose Add was lost = %v, %v; want it added again", refused, err)
	}
	got := map[string]bool{}
	for len(got) < 3 {
		l := claimWithin(t, s, short, 10*time.Second)
		if got[l.URL] {
			t.Fatalf("%s handed out twice after the failover", l.URL)
		}
		got[l.URL] = true
		if l.Token <= lb.Token {
			t.Errorf("token %d after the failover, not past %d, handed out before and lost", l.Token, lb.Token)
		}
		if err := s.Done(ctx, l, time.Now(), frontier.Outcome{Pace: l.Pace}); err != nil {
			t.Fatal(err)
		}
	}
	if c := claimAt(t, s, time.Now(), short); !c.Idle {
		t.Errorf("Claim after both came back = %+v, want idle", c)
	}
}

// dumpedKey is one key of a job as DUMP gave it.
type dumpedKey struct {
	name string
	ttl  time.Duration
	data string
}

// dumpJob copies every key of job, as a replica holds them.
func dumpJob(t *testing.T, c *redis.Client, job string) []dumpedKey {
	t.Helper()
	var keys []dumpedKey
	iter := c.Scan(ctx, 0, "heed:{"+job+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := dumpedKey{name: iter.Val()}
		var err error
		if k.data, err = c.Dump(ctx, k.name).Result(); err != nil {
			t.Fatal(err)
		}
		if k.ttl, err = c.PTTL(ctx, k.name).Result(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// restoreJob replaces everything Redis holds by keys.
func restoreJob(t *testing.T, c *redis.Client, keys []dumpedKey) {
	t.Helper()
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := c.Restore(ctx, k.name, max(k.ttl, 0), k.data).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// sameShard returns a key other than key in key's shard.
func sameShard(s *Store, key string) string {
	b := "b"
	for i := 0; b == key || s.shardOf(b) != s.shardOf(key); i++ {
		b = "b" + strconv.Itoa(i)
	}
	return b
}
