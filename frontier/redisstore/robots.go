package redisstore

// The job's robots.txt entries, shared by its processes.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// robotsTTL is how long Redis keeps a robots.txt entry: longer than any
// entry lives (its own Expires governs), short enough that a job's hosts
// do not pile up in memory for ever.
const robotsTTL = 31 * 24 * time.Hour

// robotsKey returns the key of authority's robots.txt entry, in the shard
// of the authority.
func (s *Store) robotsKey(ctx context.Context, authority string) (string, error) {
	if err := s.setup(ctx); err != nil {
		return "", err
	}
	return s.shardOf(authority).prefix + "robots:" + authority, nil
}

// LoadEntry returns the robots.txt entry kept for authority, or nil: the
// crawler's robots gate reads it (gate.EntryKeeper), so the processes of a
// job fetch a site's robots.txt once between them.
func (s *Store) LoadEntry(ctx context.Context, authority string) ([]byte, error) {
	k, err := s.robotsKey(ctx, authority)
	if err != nil {
		return nil, err
	}
	return s.readBytes(ctx, "load robots entry", func() *redis.StringCmd { return s.c.Get(ctx, k) })
}

// SaveEntry keeps the robots.txt entry of authority for a month.
func (s *Store) SaveEntry(ctx context.Context, authority string, data []byte) error {
	k, err := s.robotsKey(ctx, authority)
	if err != nil {
		return err
	}
	return s.retry(ctx, "save robots entry", func() error {
		return s.c.Set(ctx, k, data, robotsTTL).Err()
	})
}

// replaceEntryScript sets KEYS[1] to ARGV[2], for ARGV[3] ms, only while
// it holds ARGV[1].
var replaceEntryScript = redis.NewScript(`if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`)

// ReplaceEntry replaces the robots.txt entry of authority with data only
// while it is still old (gate.EntryReplacer): a gate taking back its note
// of a request it did not make leaves the answer another process kept
// meanwhile.
func (s *Store) ReplaceEntry(ctx context.Context, authority string, old, data []byte) error {
	k, err := s.robotsKey(ctx, authority)
	if err != nil {
		return err
	}
	return s.retry(ctx, "replace robots entry", func() error {
		return replaceEntryScript.Run(ctx, s.c, []string{k}, old, data, robotsTTL.Milliseconds()).Err()
	})
}
