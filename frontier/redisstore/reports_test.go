package redisstore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// seenOnly returns item(key, path) added SeenOnly, as a link robots.txt
// is known to disallow.
func seenOnly(key, path string) frontier.Item {
	it := item(key, path)
	it.SeenOnly = true
	return it
}

// pendingLen returns how many pending fields member id has in s's
// first shard.
func pendingLen(t *testing.T, srv *redistest.Server, s *Store, id int64) int {
	t.Helper()
	fields, err := srv.Client().HKeys(ctx, s.shards[0].keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fields {
		if strings.HasPrefix(f, "p:"+strconv.FormatInt(id, 10)+":") {
			n++
		}
	}
	return n
}

// TestPendingReportsOfDeadMember: the seen-only links a member added new
// and whose reports its Store never heard written are handed to another
// member, once each, as items to be reported (frontier.RefusedSeenOnly)
// when the member is found dead; those heard written are not.
func TestPendingReportsOfDeadMember(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	a, aMono := manualMember(t, srv, job)
	b, _ := manualMember(t, srv, job)
	t0 := time.Now().Truncate(time.Second)
	mustAdd(t, a, item("k", "/0"))
	one := frontier.ClaimOptions{PerHost: 1, Lease: liveOpt.Lease}
	l0 := claimAt(t, a, t0, one).Lease
	if l0 == nil {
		t.Fatal("a's Claim granted nothing")
	}
	id := a.live.cur.Load().id
	mustAdd(t, a, seenOnly("k", "/lost"), seenOnly("k", "/told"))
	if _, err := a.Add(ctx, []frontier.Item{seenOnly("k", "/lost")}, frontier.Limits{}); err != nil {
		t.Fatal(err) // seen: no second entry
	}
	a.ReportsWritten([]frontier.Item{seenOnly("k", "/told")})
	if err := a.Done(ctx, l0, t0, frontier.Outcome{}); err != nil {
		t.Fatal(err) // carries the report heard written
	}
	if n := pendingLen(t, srv, a, id); n != 1 {
		t.Fatalf("a's pending fields: %d, want 1 (k/lost)", n)
	}

	// a stops beating; b's heartbeat a timeout and more later finds it dead.
	t1 := t0.Add(liveOpt.Lease + time.Second)
	aMono.Store(int64(liveOpt.Lease + time.Second))
	if c := claimAt(t, b, t0, one); c.Lease != nil { // b joins
		t.Fatalf("b's Claim while a beats = %v, want nothing", c.Lease)
	}
	beatAt(t, b, t1)
	var got []string
	for i := range 4 {
		c := claimAt(t, b, t1.Add(time.Duration(i)*time.Minute), one)
		if c.Lease == nil {
			continue
		}
		if c.Lease.Refused != frontier.RefusedSeenOnly {
			t.Errorf("b's lease of %s: Refused = %v, want RefusedSeenOnly", c.Lease.URL, c.Lease.Refused)
		}
		got = append(got, c.Lease.URL)
		if err := b.Done(ctx, c.Lease, t1.Add(time.Duration(i)*time.Minute), frontier.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1 || got[0] != "http://k/lost" {
		t.Errorf("b was handed %v, want k/lost once, to be reported", got)
	}
	if n := pendingLen(t, srv, a, id); n != 0 {
		t.Errorf("the dead member's pending fields: %d, want none", n)
	}
}

// TestPendingReportsClose: a Store that closes cleanly leaves no pending
// hash: its crawl wrote every report.
func TestPendingReportsClose(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := manualMember(t, srv, newJob(t))
	mustAdd(t, a, item("k", "/0"))
	if claimAt(t, a, time.Now(), frontier.ClaimOptions{PerHost: 1, Lease: liveOpt.Lease}).Lease == nil {
		t.Fatal("Claim granted nothing")
	}
	id := a.live.cur.Load().id
	mustAdd(t, a, seenOnly("k", "/d"))
	if n := pendingLen(t, srv, a, id); n != 1 {
		t.Fatalf("pending fields: %d, want 1", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n := pendingLen(t, srv, a, id); n != 0 {
		t.Errorf("pending fields: %d after Close, want none", n)
	}
}
