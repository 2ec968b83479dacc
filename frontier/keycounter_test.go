package frontier_test

import (
	"context"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// MemoryStore counts a key's queued items, leased ones aside.
func TestMemoryStoreQueuedFor(t *testing.T) {
	var s frontier.MemoryStore
	ctx := context.Background()
	var kc frontier.KeyCounter = &s
	if _, err := s.Add(ctx, []frontier.Item{
		{URL: "http://a.test/1", Key: "a.test"}, {URL: "http://a.test/2", Key: "a.test"}, {URL: "http://b.test/1", Key: "b.test"},
	}, frontier.Limits{}); err != nil {
		t.Fatal(err)
	}
	if n, err := kc.QueuedFor(ctx, "a.test"); err != nil || n != 2 {
		t.Errorf("a.test: %d, %v; want 2", n, err)
	}
	c, err := s.Claim(ctx, time.Now(), frontier.ClaimOptions{})
	if err != nil || c.Lease == nil {
		t.Fatalf("Claim: %+v, %v", c, err)
	}
	if n, _ := kc.QueuedFor(ctx, c.Lease.Key); n != map[string]int{"a.test": 1, "b.test": 0}[c.Lease.Key] {
		t.Errorf("%s after a claim: %d queued", c.Lease.Key, n)
	}
	if n, _ := kc.QueuedFor(ctx, "never.test"); n != 0 {
		t.Errorf("an unknown key: %d queued", n)
	}
}
