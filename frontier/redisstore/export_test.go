package redisstore

import (
	"context"
	"testing"
)

// keyPrefix returns the prefix of the keys of politeness key's shard.
func (s *Store) keyPrefix(tb testing.TB, key string) string {
	tb.Helper()
	if err := s.setup(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s.shardOf(key).prefix
}
