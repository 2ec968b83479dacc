package redisstore

// Editing a key's queued revisits: EditQueued.

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
)

var (
	//go:embed lua/edit.lua
	editSrc    string
	editScript = newScript(prelude + editSrc)
)

var _ frontier.QueueEditor = (*Store)(nil)

// queuedItem is an item of a key's queue as EditQueued read it.
type queuedItem struct {
	raw  string // its encoding, as queued
	seq  string // the sequence number of its member of D, 8 bytes; "" in Q
	item frontier.Item
}

// EditQueued implements frontier.QueueEditor. It reads key's queue in one
// transaction, calls edit in this process, then writes in one script each
// edited item that is still queued exactly as read: one another process
// claimed, or that fell due and moved to the key's list of items due at
// once (see Scheduling), in between is left as it is and not counted. An
// item whose Due moved takes its place by its new Due, converted to
// Redis's clock as a revisit's Due is (see Clock); one whose Due did not
// keeps its place.
func (s *Store) EditQueued(ctx context.Context, key string, edit func(*frontier.Item) bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if ok, err := s.started(ctx); !ok {
		return 0, err // no job, nothing queued
	}
	sh := s.shardOf(key)
	queued, err := s.readQueue(ctx, sh, key)
	if err != nil {
		return 0, err
	}
	args, err := s.editArgs(key, queued, edit)
	if err != nil || len(args) == 1 {
		return 0, err
	}
	r, err := s.call(ctx, sh, editScript, "edit queued", s.addNow(), args...)
	if err != nil {
		return 0, err
	}
	if len(r) != 1 {
		return 0, fmt.Errorf("redisstore: edit queued: %w: reply %v", errCorrupt, r)
	}
	return int(intOf(r[0])), nil
}

// readQueue returns the items with a Visit queued under key, in shard sh:
// those of its list, then those of its sorted set, read atomically (an
// item moving from one to the other is read once).
func (s *Store) readQueue(ctx context.Context, sh *shard, key string) ([]queuedItem, error) {
	var list, later []string
	err := s.retry(ctx, "edit queued", func() error {
		var lr *redis.StringSliceCmd
		var zr *redis.StringSliceCmd
		_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			lr = p.LRange(ctx, sh.prefix+"q:"+key, 0, -1)
			zr = p.ZRange(ctx, sh.prefix+"d:"+key, 0, -1)
			return nil
		})
		if err != nil {
			return err
		}
		list, later = lr.Val(), zr.Val()
		return nil
	})
	if err != nil {
		return nil, err
	}
	var queued []queuedItem
	add := func(raw, seq string) error {
		it, err := decodeItem([]byte(raw), key)
		if err != nil {
			return fmt.Errorf("redisstore: edit queued: %s: %w", key, err)
		}
		if it.Visit != nil {
			queued = append(queued, queuedItem{raw: raw, seq: seq, item: it})
		}
		return nil
	}
	for _, raw := range list {
		if err := add(raw, ""); err != nil {
			return nil, err
		}
	}
	for _, m := range later {
		if len(m) < 8 {
			return nil, fmt.Errorf("redisstore: edit queued: %s: %w: member of %d bytes", key, errCorrupt, len(m))
		}
		if err := add(m[8:], m[:8]); err != nil {
			return nil, err
		}
	}
	return queued, nil
}

// editArgs calls edit with each item of queued, and returns edit.lua's
// arguments for those it edited: key, then four per item. An edit that
// changed an item's URL or Key is an error, and nothing is to be written.
func (s *Store) editArgs(key string, queued []queuedItem, edit func(*frontier.Item) bool) ([]any, error) {
	now := base(s.addNow())
	args := []any{key}
	for _, q := range queued {
		it := q.item
		if !edit(&it) {
			continue
		}
		if it.URL != q.item.URL || it.Key != key {
			return nil, fmt.Errorf("redisstore: %w: %s under %q changed to %s under %q", frontier.ErrEdit, q.item.URL, key, it.URL, it.Key)
		}
		due := "=" // see edit.lua: the item keeps its place
		if !it.Due.Equal(q.item.Due) {
			due = s.dueArg(it.Due, now)
		}
		args = append(args, q.seq, q.raw, encodeItem(nil, &it), due)
	}
	return args, nil
}
