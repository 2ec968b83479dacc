package redisstore

// Nodes: on a cluster, the links of the shards that one node serves go
// in one script of that node.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
)

// nodeBatchers are the batchers of a cluster's nodes, by address: the
// Adds and the ends of leases with links whose shards a node serves
// share one script there (batch.lua, which enters several shards as on a
// single Redis: a script without flags may touch every slot of the node
// it runs on).
type nodeBatchers struct {
	mu sync.Mutex
	by map[string]*batcher[batchOp]
}

// nodeLinger is how long a node's batch waits, after the node's previous
// batch came back, for more calls to join it (see batcher.linger).
const nodeLinger = 2 * time.Millisecond

// nodeOf returns the address of the primary that serves shard sh, as the
// cluster client last learned it, or "" if it knows none (not a cluster).
func (s *Store) nodeOf(ctx context.Context, sh *shard) string {
	cc, ok := s.c.(*redis.ClusterClient)
	if !ok {
		return ""
	}
	n, err := cc.MasterForKey(ctx, sh.keys[0])
	if err != nil {
		return ""
	}
	return n.Options().Addr
}

// nodeBatcher returns the batcher of the node at addr, and the run of
// its batches.
func (s *Store) nodeBatcher(addr string) (*batcher[batchOp], func(*batcher[batchOp]) []*waiter[batchOp]) {
	s.nodes.mu.Lock()
	defer s.nodes.mu.Unlock()
	b := s.nodes.by[addr]
	if b == nil {
		if s.nodes.by == nil {
			s.nodes.by = map[string]*batcher[batchOp]{}
		}
		b = &batcher[batchOp]{linger: nodeLinger}
		s.nodes.by[addr] = b
	}
	return b, func(b *batcher[batchOp]) []*waiter[batchOp] { return s.runOn(nil, b) }
}

// batcherOf returns the batcher a call for shard sh other than a Claim
// joins — an Add, the end of a lease with or without links, a probe —
// and the run of its batches: the Store's on a single Redis; on a
// cluster that of sh's node, or sh's own if the node is not known.
// (A cluster's Claims join the batcher of their shard: slotBatcher.)
func (s *Store) batcherOf(ctx context.Context, sh *shard) (*batcher[batchOp], func(*batcher[batchOp]) []*waiter[batchOp]) {
	if s.oneServer() {
		return &s.ops, s.runOps
	}
	if addr := s.nodeOf(ctx, sh); addr != "" {
		return s.nodeBatcher(addr)
	}
	return s.slotBatcher(sh)
}

// byNode splits gs by the node that serves each group's shard, in the
// order of gs; the groups of own's node, if any, come last (own may have
// none of them).
func (s *Store) byNode(ctx context.Context, gs []group, own *shard) [][]group {
	var parts [][]group
	at := map[string]int{}
	ownAddr := ""
	if own != nil {
		ownAddr = s.nodeOf(ctx, own)
	}
	for _, g := range gs {
		addr := s.nodeOf(ctx, g.sh)
		if addr == "" {
			addr = "#" + g.sh.prefix // a node of its own: its slot's batch
		}
		j, ok := at[addr]
		if !ok {
			j = len(parts)
			at[addr] = j
			parts = append(parts, nil)
		}
		parts[j] = append(parts[j], g)
	}
	if j, ok := at[ownAddr]; ok && own != nil {
		p := parts[j]
		parts = append(append(parts[:j:j], parts[j+1:]...), p)
	}
	return parts
}

// addNodes is Add on a cluster, without a page limit: the items of the
// shards of each node (gs, the batch's groups) join a batch of that node
// (batch.lua), with the other calls of the Store for it that wait at once
// — other pages' links among them — and the nodes' batches go at once,
// in the rounds of the Store (sendRound). Their answers go into refused.
func (s *Store) addNodes(ctx context.Context, gs []group, now time.Time, batch []frontier.Item, lim frontier.Limits, refused []error) error {
	parts := s.byNode(ctx, gs, nil)
	if len(parts) == 1 {
		return s.addAll(ctx, parts[0], now, batch, lim, refused)
	}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		// Each writes the places of refused its groups' items have.
		wg.Go(func() { errs[i] = s.addAll(ctx, p, now, batch, lim, refused) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
