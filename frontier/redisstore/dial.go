package redisstore

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Dial returns a client of the Redis at rawURL: a single server
// (redis://[user:password@]host:port/db, rediss:// for TLS; see
// redis.ParseURL), or a Redis Cluster, named either in go-redis's cluster
// URL form, redis://host1:port1?addr=host2:port2&addr=host3:port3 (see
// redis.ParseClusterURL), or by the plain URL of any one node of it: a
// server that reports cluster_enabled:1 is asked for as a cluster. Only
// that question talks to Redis, retried as Options.RetryFor says while
// Redis cannot be reached; a URL that cannot work is refused with an error
// wrapping ErrURL. The caller closes the client.
func Dial(ctx context.Context, rawURL string, retryFor time.Duration) (redis.UniversalClient, error) {
	if isClusterURL(rawURL) {
		o, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrURL, err)
		}
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrURL, err)
	}
	if retryFor == 0 {
		retryFor = DefaultRetryFor
	}
	// Asked on database 0: a cluster node refuses to SELECT another.
	probe := *o
	probe.DB = 0
	c := redis.NewClient(&probe)
	var info string
	err = retry(ctx, retryFor, "asking "+o.Addr+" whether it is a cluster node", func() (err error) {
		info, err = c.Info(ctx, "cluster").Result()
		return err
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Close()
	if !strings.Contains(info, "cluster_enabled:1") {
		return redis.NewClient(o), nil
	}
	if o.DB != 0 {
		return nil, fmt.Errorf("%w: %s is a Redis Cluster node, which has database 0 only, not %d", ErrURL, o.Addr, o.DB)
	}
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:     []string{o.Addr},
		Username:  o.Username,
		Password:  o.Password,
		TLSConfig: o.TLSConfig,
	}), nil
}

// isClusterURL reports whether rawURL names several nodes with addr
// parameters, which redis.ParseURL refuses ("unexpected option: addr").
func isClusterURL(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && u.Query().Has("addr")
}
