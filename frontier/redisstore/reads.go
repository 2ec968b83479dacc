package redisstore

// Reading the job: a key's pacing state, the counters, settings, the
// scope and the last checkpoint.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

// legacy reports whether the job is of an earlier release: one shard, in
// the job's own slot.
func (s *Store) legacy() bool { return s.shards[0].prefix == s.prefix }

// readArgs returns read.lua's keys and arguments on sh for what ("counts"
// or "host").
func (s *Store) readArgs(sh *shard, now time.Time, what, key string) ([]string, []any) {
	return sh.keys, []any{sh.prefix, what, micros(now), flag(s.opt.CallerClock), key}
}

// reply returns v as a script's array reply.
func reply(v any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: reply %T", errCorrupt, v)
	}
	return arr, nil
}

// Host implements frontier.Store. A key that must rest after a Redis
// restart shows the rest already.
func (s *Store) Host(ctx context.Context, key string) (ratelimit.HostState, error) {
	if ok, err := s.started(ctx); !ok {
		return ratelimit.HostState{}, err
	}
	var r []any
	err := s.retry(ctx, "host", func() (err error) {
		keys, args := s.readArgs(s.shardOf(key), time.Time{}, "host", key)
		r, err = reply(readScript.Run(ctx, s.c, keys, args...).Result())
		return err
	})
	if err != nil {
		return ratelimit.HostState{}, err
	}
	if len(r) != 3 {
		return ratelimit.HostState{}, fmt.Errorf("redisstore: host: %w: reply %v", errCorrupt, r)
	}
	h, err := decodeHost([]byte(strOf(r[1])))
	if err != nil {
		return ratelimit.HostState{}, fmt.Errorf("redisstore: host %s: %w", key, err)
	}
	h.NextAllowed = timeOf(intOf(r[0]))
	h.ClosedUntil = timeOf(intOf(r[2]))
	return h, nil
}

// Counts implements frontier.Store: the sums of the shards' counters,
// read in one pipelined round. Ready and Resting count the keys by their
// place in the ready sets: a key that must rest after a Redis restart
// counts as ready until a script touches it.
func (s *Store) Counts(ctx context.Context, now time.Time) (frontier.Counts, error) {
	if ok, err := s.started(ctx); !ok {
		return frontier.Counts{}, err
	}
	var sum [7]int
	err := s.retry(ctx, "counts", func() error {
		sum = [7]int{}
		if err := readScript.Load(ctx, s.c).Err(); err != nil {
			return err
		}
		cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, sh := range s.shards {
				keys, args := s.readArgs(sh, now, "counts", "")
				readScript.EvalSha(ctx, p, keys, args...)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, c := range cmds {
			r, err := reply(c.(*redis.Cmd).Result())
			if err != nil {
				return err
			}
			if len(r) != 7 {
				return fmt.Errorf("%w: reply %v", errCorrupt, r)
			}
			for i := range sum {
				sum[i] += int(intOf(r[i]))
			}
		}
		return nil
	})
	if err != nil {
		return frontier.Counts{}, err
	}
	return frontier.Counts{
		Queued: sum[0], Leased: sum[1], Hosts: sum[2], Busy: sum[3], Scheduled: sum[4],
		Ready: sum[5], Resting: sum[6],
	}, nil
}

// Meta implements frontier.Store.
func (s *Store) Meta(ctx context.Context, name string) ([]byte, error) {
	return s.readBytes(ctx, "meta", func() *redis.StringCmd { return s.c.HGet(ctx, s.prefix+"meta", name) })
}

// readBytes runs get, retried as s.retry does, and returns its value: nil
// for a key or field Redis does not hold.
func (s *Store) readBytes(ctx context.Context, what string, get func() *redis.StringCmd) ([]byte, error) {
	var v []byte
	err := s.retry(ctx, what, func() error {
		b, err := get().Bytes()
		if errors.Is(err, redis.Nil) {
			v = nil
			return nil
		}
		v = b
		return err
	})
	return v, err
}

// SetMeta implements frontier.Store. It is as durable as Redis's
// persistence makes it.
func (s *Store) SetMeta(ctx context.Context, name string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.retry(ctx, "set meta", func() error {
		return s.c.HSet(ctx, s.prefix+"meta", name, value).Err()
	})
}

// AddScope adds names to the job's scope, a set every process adds its
// seeds' hosts (or domains) to (frontier.ScopeStore).
func (s *Store) AddScope(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return s.retry(ctx, "add scope", func() error {
		return s.c.SAdd(ctx, s.prefix+"scope", args...).Err()
	})
}

// Scope returns the job's scope (frontier.ScopeStore).
func (s *Store) Scope(ctx context.Context) ([]string, error) {
	var names []string
	err := s.retry(ctx, "scope", func() error {
		var err error
		names, err = s.c.SMembers(ctx, s.prefix+"scope").Result()
		return err
	})
	return names, err
}

// Checkpoint implements frontier.Store: the checkpoint of the last Done of
// any Store of the job with the same Options.Checkpoint — of the shards',
// the one stamped last.
func (s *Store) Checkpoint(ctx context.Context) ([]byte, error) {
	if ok, err := s.started(ctx); !ok {
		return nil, err
	}
	var v []byte
	err := s.retry(ctx, "checkpoint", func() error {
		v = nil
		cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, sh := range s.shards {
				p.Get(ctx, sh.prefix+"cp:"+s.opt.Checkpoint)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		var last uint64
		for _, c := range cmds {
			b, err := c.(*redis.StringCmd).Bytes()
			switch {
			case errors.Is(err, redis.Nil):
				continue
			case err != nil:
				return err
			case s.legacy():
				v = b
			case len(b) < 8:
				return fmt.Errorf("%w: checkpoint of %d bytes", errCorrupt, len(b))
			case v == nil || binary.BigEndian.Uint64(b) > last:
				last, v = binary.BigEndian.Uint64(b), b[8:]
			}
		}
		return nil
	})
	return v, err
}

// QueuedFor implements frontier.KeyCounter: the lengths of the key's two
// queues, kept in its state (lua/keystate.lua), in one script call.
func (s *Store) QueuedFor(ctx context.Context, key string) (int, error) {
	if ok, err := s.started(ctx); !ok {
		return 0, err
	}
	var n int64
	err := s.retry(ctx, "queued", func() error {
		keys, args := s.readArgs(s.shardOf(key), time.Time{}, "queued", key)
		v, err := readScript.Run(ctx, s.c, keys, args...).Int64()
		n = v
		return err
	})
	return int(n), err
}

// dueKeys bounds the keys of each shard's ready set DueCounts reads.
const dueKeys = 500

// DueCounts counts the queued items by when they fall due, seen from now,
// on Redis's clock (or the caller's, Options.CallerClock): in each shard,
// one script reads the keys of the ready set that have waited longest, up
// to dueKeys of them, counting the items of each key's list as due (they
// were when queued) and those of its sorted set by their Due (ZCOUNT).
// Keys out of the ready set — leased as many times as PerHost allows —
// and those past dueKeys are not read: the counts are then scaled to the
// job's queued items (DueCounts.Approximate). The oldest is, of those
// keys, the first item due longest ago: an item of a key's list counts as
// due since its key became ready.
func (s *Store) DueCounts(ctx context.Context, now time.Time, edges []time.Duration) (frontier.DueCounts, error) {
	d := frontier.NewDueCounts(edges)
	if ok, err := s.started(ctx); !ok {
		return d, err
	}
	csv := make([]byte, 0, 8*len(edges))
	for i, e := range edges {
		if i > 0 {
			csv = append(csv, ',')
		}
		csv = strconv.AppendInt(csv, e.Microseconds(), 10)
	}
	for _, sh := range s.shards {
		var r []any
		err := s.retry(ctx, "due", func() (err error) {
			keys := sh.keys
			args := []any{sh.prefix, "due", micros(now), flag(s.opt.CallerClock), string(csv), dueKeys}
			r, err = reply(readScript.Run(ctx, s.c, keys, args...).Result())
			return err
		})
		if err != nil {
			return d, err
		}
		if len(r) != 5+len(d.Counts) {
			return d, fmt.Errorf("redisstore: due: %w: reply %v", errCorrupt, r)
		}
		if err := s.addDue(&d, now, r); err != nil {
			return d, err
		}
	}
	c, err := s.Counts(ctx, now)
	if err != nil {
		return d, err
	}
	d.Scale(c.Queued)
	return d, nil
}

// addDue adds a shard's reply to the due script to d.
func (s *Store) addDue(d *frontier.DueCounts, now time.Time, r []any) error {
	for i := range d.Counts {
		n := int(intOf(r[5+i]))
		d.Counts[i] += n
		d.Read += n
	}
	name := strOf(r[1])
	if name == "" {
		return nil
	}
	at, _ := strconv.ParseInt(strOf(r[2]), 10, 64)
	clock, _ := strconv.ParseInt(strOf(r[4]), 10, 64)
	due := now.Add(-time.Duration(max(clock-at, 0)) * time.Microsecond)
	if d.OldestKey != "" && !due.Before(d.OldestDue) {
		return nil
	}
	d.OldestKey, d.OldestDue, d.OldestURL = name, due, ""
	if b := strOf(r[3]); b != "" {
		it, err := decodeItem([]byte(b), name)
		if err != nil {
			return fmt.Errorf("redisstore: due: %w", err)
		}
		d.OldestURL = it.URL
	}
	return nil
}
