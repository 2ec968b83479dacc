package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/storetest"
	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestContractCluster runs the Store contract on a real Redis Cluster of
// three primaries, opened as Open opens a URL: both go-redis's cluster URL
// and the plain URL of one node reach the whole cluster.
func TestContractCluster(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3})
	o := Options{CallerClock: true}
	urls := []string{c.URL(), "redis://" + c.Nodes[1].Addr}
	n := 0
	open := func(t *testing.T, job string) frontier.Store {
		t.Helper()
		n++
		s, err := Open(context.Background(), urls[n%len(urls)], job, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) frontier.Store { return open(t, newJob(t)) },
		Reopen: func(t *testing.T, s frontier.Store) frontier.Store {
			job := s.(*Store).Job()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, job)
		},
	})
}

// Dial tells a cluster from a single server by the URL's addr parameters
// or by asking the server, and refuses a database a cluster cannot have.
func TestDial(t *testing.T) {
	ctx := context.Background()
	single := redistest.Start(t)
	c, err := Dial(ctx, single.URL(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*redis.ClusterClient); ok {
		t.Errorf("Dial(%s) is a cluster client", single.URL())
	}
	c.Close()
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3})
	for _, u := range []string{cl.URL(), "redis://" + cl.Nodes[0].Addr} {
		c, err := Dial(ctx, u, 0)
		if err != nil {
			t.Fatalf("Dial(%s): %v", u, err)
		}
		if _, ok := c.(*redis.ClusterClient); !ok {
			t.Errorf("Dial(%s) = %T, want a cluster client", u, c)
		}
		c.Close()
	}
	if _, err := Dial(ctx, "redis://"+cl.Nodes[0].Addr+"/3", 0); !errors.Is(err, ErrURL) {
		t.Errorf("Dial of database 3 on a cluster node: %v, want ErrURL", err)
	}
	if _, err := Dial(ctx, "redis://127.0.0.1:1?addr=127.0.0.1:2&bogus=1", 0); !errors.Is(err, ErrURL) {
		t.Errorf("Dial of a cluster URL with an unknown option: %v, want ErrURL", err)
	}
}
