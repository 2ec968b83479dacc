package harness

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// usableRedis returns a function that takes what a Start function of
// this package returned and gives back the server, closed when t ends: it
// fails t on an error, and skips t when there is no redis-server except in
// CI (CI=true), where a missing server is a failure.
func usableRedis(t *testing.T) func(*Redis, error) *Redis {
	return func(r *Redis, err error) *Redis {
		t.Helper()
		if errors.Is(err, ErrNoRedisServer) && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
}

// TestRedisClusterOfOne: a cluster of one primary is one node serving
// every slot, named by a plain URL (crawl -redis asks a node that reports
// cluster_enabled:1 for a cluster), and a cluster client can write keys
// of any slot to it.
func TestRedisClusterOfOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := usableRedis(t)(StartRedisCluster(ctx, t.TempDir(), 1, RedisOptions{}))
	if len(r.nodes) != 1 || strings.Contains(r.URL(), "addr=") {
		t.Fatalf("%d nodes, URL %s; want one node and its plain URL", len(r.nodes), r.URL())
	}
	info, err := r.nodes[0].client.ClusterInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "cluster_slots_assigned:16384") || !strings.Contains(info, "cluster_known_nodes:1") {
		t.Errorf("CLUSTER INFO:\n%s\nwant 16384 slots assigned, one node known", info)
	}
	opt, err := redis.ParseClusterURL(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClusterClient(opt)
	defer c.Close()
	for i := range 20 { // keys of about 20 slots
		if err := c.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatalf("SET k%d on the cluster of one: %v", i, err)
		}
	}
}
