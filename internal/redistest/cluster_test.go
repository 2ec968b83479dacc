package redistest_test

import (
	"context"
	"testing"

	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A cluster of three primaries and three replicas forms, serves keys in
// every slot through the cluster URL, and keeps them, acknowledged with
// WAIT, when the primary of one is killed and its replica takes over.
func TestClusterFailover(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3, Replicas: 1})
	if got := len(c.Primaries()); got != 3 {
		t.Fatalf("%d primaries, want 3", got)
	}
	o, err := redis.ParseClusterURL(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Addrs) != 6 {
		t.Fatalf("cluster URL %s names %d nodes, want 6", c.URL(), len(o.Addrs))
	}
	ctx := context.Background()
	cc := redis.NewClusterClient(o)
	defer cc.Close()
	keys := []string{"{a}x", "{b}x", "{c}x", "{d}x", "{e}x"}
	for _, k := range keys {
		if err := cc.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
		// WAIT on the key's primary: its replica has the key, so a
		// failover cannot lose it.
		p, err := cc.MasterForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := p.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
			t.Fatalf("WAIT on %s's primary: %d replicas, %v", k, n, err)
		}
	}
	killed := c.KillPrimary("{a}x")
	if len(c.Primaries()) != 3 {
		t.Fatalf("after killing %s: %d primaries, want 3 (a replica promoted)", killed.Addr, len(c.Primaries()))
	}
	after := c.Client()
	for _, k := range keys {
		if v, err := after.Get(ctx, k).Result(); err != nil || v != k {
			t.Errorf("after failover, %s = %q, %v; want %q", k, v, err, k)
		}
	}
}
