package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// gateHook counts the script calls of a client on one shard (those whose
// first key is key) and, once armed, holds the first of them until
// release is closed, telling held: the calls that come meanwhile queue
// for the next batch.
type gateHook struct {
	key     string
	scripts atomic.Int64
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func (h *gateHook) arm() {
	h.held, h.release = make(chan struct{}), make(chan struct{})
	h.scripts.Store(0)
	h.armed.Store(true)
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.see(cmd)
		return next(ctx, cmd)
	}
}

func (h *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.see(cmd)
		}
		return next(ctx, cmds)
	}
}

// see counts cmd if it is a script call on the hook's shard, and holds
// the first once armed.
func (h *gateHook) see(cmd redis.Cmder) {
	args := cmd.Args()
	if scriptCall(cmd) && len(args) > 3 && fmt.Sprint(args[3]) == h.key {
		h.scripts.Add(1)
		if h.armed.CompareAndSwap(true, false) {
			close(h.held)
			<-h.release
		}
	}
}

// clusterShard opens a Store of a new job on a cluster, gated by a
// gateHook on the shard of key "k0", and returns n keys of that shard.
func clusterShard(t *testing.T, n int) (*Store, *shard, *gateHook, []string) {
	t.Helper()
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3})
	c := cl.Client()
	s, err := New(c, newJob(t), Options{CallerClock: true, Shards: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.setup(ctx); err != nil {
		t.Fatal(err)
	}
	sh := s.shardOf("k0")
	var keys []string
	for i := 0; len(keys) < n; i++ {
		if k := fmt.Sprintf("k%d", i); s.shardOf(k) == sh {
			keys = append(keys, k)
		}
	}
	hook := &gateHook{key: sh.keys[0]}
	c.AddHook(hook)
	return s, sh, hook, keys
}

// gated runs n calls, the first alone and, once its script is held, the
// others at once; the first script of the shard is held until all n
// queued in batcher b (the shard's, or its node's). It returns how many
// scripts the shard ran for them.
func gated(t *testing.T, b *batcher[batchOp], hook *gateHook, n int, call func(i int)) int64 {
	t.Helper()
	queued := make(chan struct{}, n)
	b.queued = func(int) { queued <- struct{}{} }
	defer func() { b.queued = nil }()
	hook.arm()
	var wg sync.WaitGroup
	wg.Go(func() { call(0) })
	// A guard, not a wait: calls that never reach the batcher fail the
	// test instead of hanging it.
	timeout := time.After(30 * time.Second)
	for i := -1; i < n; i++ {
		var wait <-chan struct{} = queued
		if i < 0 {
			// The first call's batch is taken (its script held) before
			// the others are made: the batcher's queued hook fires before
			// a leading call takes its batch.
			wait = hook.held
		}
		if i == 0 {
			for j := 1; j < n; j++ {
				wg.Go(func() { call(j) })
			}
		}
		select {
		case <-wait:
		case <-timeout:
			close(hook.release)
			wg.Wait()
			t.Fatalf("after 30 s, %d of %d calls queued for the shard's batch", max(i, 0), n)
		}
	}
	close(hook.release)
	wg.Wait()
	return hook.scripts.Load()
}

// TestClusterBatch: on a cluster, Claims of one node made at once share
// scripts (one batch.lua call entering the shards they picked), and so do
// DoneAddings and Dones of the shards of one node (one call entering
// those shards): each lease is distinct and fenced, each link added.
func TestClusterBatch(t *testing.T) {
	const n = 16
	s, sh, hook, keys := clusterShard(t, n+1)
	t0 := time.Now()
	s.lastNow.Store(micros(t0))
	end := t0.Add(time.Second)
	// A key of another shard of sh's node, for the links (of sh itself
	// if the node serves no other of the job's 8).
	other, node := keys[n], s.nodeOf(ctx, sh)
	for i := range 1000 {
		if k := fmt.Sprintf("y%d", i); s.shardOf(k) != sh && s.nodeOf(ctx, s.shardOf(k)) == node {
			other = k
			break
		}
	}
	// Load the scripts into the shard's node, and add.lua into other's.
	mustAdd(t, s, item(keys[n], "/1"), item(keys[n], "/2"))
	l := claimAt(t, s, end, opt).Lease
	if _, err := s.DoneAdding(ctx, l, end, frontier.Outcome{}, []frontier.Item{item(other, "/warm")}, frontier.Limits{}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second item, and the link, out of the way
		if l = claimAt(t, s, end, opt).Lease; l == nil {
			t.Fatal("a warm-up item was not handed out")
		}
		if err := s.Done(ctx, l, end, frontier.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	var items []frontier.Item
	for _, k := range keys[:n] {
		items = append(items, item(k, "/1"))
	}
	mustAdd(t, s, items...)

	leases := make([]*frontier.Lease, n)
	nodeOps, _ := s.batcherOf(ctx, sh)
	scripts := gated(t, nodeOps, hook, n, func(i int) {
		c, err := s.Claim(ctx, end, opt)
		if err != nil {
			t.Errorf("Claim: %v", err)
		}
		leases[i] = c.Lease
	})
	if scripts != 2 {
		t.Errorf("%d Claims at once of one shard ran %d scripts, want 2 (the first alone, then the others together)", n, scripts)
	}
	tokens, urls := map[uint64]bool{}, map[string]bool{}
	for i, l := range leases {
		if l == nil {
			t.Fatalf("Claim %d: no lease, with %d keys ready", i, n)
		}
		tokens[l.Token], urls[l.URL] = true, true
	}
	if len(tokens) != n || len(urls) != n {
		t.Fatalf("%d leases: %d tokens, %d URLs, want each distinct", n, len(tokens), len(urls))
	}

	// Half end with links of their shard and another's, half without.
	otherHook := &gateHook{key: s.shardOf(other).keys[0]}
	s.c.(*redis.ClusterClient).AddHook(otherHook)
	scripts = gated(t, nodeOps, hook, n, func(i int) {
		var err error
		if i%2 == 0 {
			var refused []error
			links := []frontier.Item{item(other, fmt.Sprintf("/%d", i)), item(leases[i].Key, "/next")}
			refused, err = s.DoneAdding(ctx, leases[i], end, frontier.Outcome{}, links, frontier.Limits{})
			if e := errors.Join(refused...); e != nil {
				t.Errorf("DoneAdding %d refused %v", i, refused)
			}
		} else {
			err = s.Done(ctx, leases[i], end, frontier.Outcome{})
		}
		if err != nil {
			t.Errorf("ending lease %d: %v", i, err)
		}
	})
	if scripts != 2 {
		t.Errorf("%d ends of leases at once of one node ran %d scripts there, want 2", n, scripts)
	}
	if o := otherHook.scripts.Load(); s.shardOf(other) != sh && o != 0 {
		t.Errorf("the links of another shard of the node ran %d scripts of their own, want 0 (in the node's batches)", o)
	}
	if err := s.Done(ctx, leases[0], end, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
		t.Errorf("a lease ended twice: %v, want ErrLeaseLost", err)
	}
	counts, err := s.Counts(ctx, end)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Leased != 0 || counts.Queued != n {
		t.Errorf("after the batch: %d leased, %d queued; want 0 and %d (two links of each of %d DoneAddings)", counts.Leased, counts.Queued, n, n/2)
	}
}

// TestClusterBatchBound: a batch of Claims on a cluster's shard takes no
// key ready after the tightest bound of the Claims it serves, even for
// a Claim that stated a looser one.
func TestClusterBatchBound(t *testing.T) {
	s, sh, hook, keys := clusterShard(t, 6)
	t0 := time.Now()
	for i, k := range keys {
		s.lastNow.Store(micros(t0.Add(time.Duration(i) * time.Millisecond)))
		mustAdd(t, s, item(k, "/1"))
	}
	end := t0.Add(time.Second)
	rnow := micros(end)
	boundOf := func(at time.Duration) string { return strconv.FormatInt(micros(t0.Add(at))-rnow, 10) }
	bounds := []string{"", boundOf(time.Hour), boundOf(1500 * time.Microsecond), boundOf(time.Hour)}
	got := make([]*frontier.Lease, len(bounds))
	slot, _ := s.slotBatcher(sh)
	gated(t, slot, hook, len(bounds), func(i int) {
		if i > 0 {
			<-hook.held // the first claims alone
		}
		l, err := s.claimSlot(ctx, sh, end, opt, bounds[i], "")
		if err != nil {
			t.Errorf("claim %d: %v", i, err)
		}
		got[i] = l
	})
	if got[0] == nil || got[0].Key != keys[0] {
		t.Fatalf("the first claim, alone and unbounded, got %+v, want %s", got[0], keys[0])
	}
	var taken []string
	for _, l := range got[1:] {
		if l != nil {
			taken = append(taken, l.Key)
		}
	}
	if !slices.Equal(taken, keys[1:2]) {
		t.Errorf("three claims in one batch, one bounded by a key ready 1.5 ms after the first: took %v, want %v", taken, keys[1:2])
	}
}

// TestNodeBatchBound: a node's batch of Claims takes no key of the
// shards they picked that became ready after the first ready key of a
// shard of another node, as the Store knows it; a batch of unbounded
// Claims (each tried maxProbes times) takes them.
func TestNodeBatchBound(t *testing.T) {
	s, sh, hook, keys := clusterShard(t, 4)
	other := ""
	for i := 0; other == ""; i++ {
		if k := fmt.Sprintf("o%d", i); s.nodeOf(ctx, s.shardOf(k)) != s.nodeOf(ctx, sh) {
			other = k
		}
	}
	t0 := time.Now()
	for i, k := range []string{keys[0], other, keys[1], keys[2], keys[3]} {
		s.lastNow.Store(micros(t0.Add(time.Duration(i) * time.Millisecond)))
		mustAdd(t, s, item(k, "/1"))
	}
	end := t0.Add(time.Second)
	nodeOps, _ := s.batcherOf(ctx, sh)
	claims := func(bound string) []string {
		got := make([]string, 3)
		gated(t, nodeOps, hook, len(got), func(i int) {
			l, err := s.claimNode(ctx, sh, end, opt, bound, "")
			if err != nil {
				t.Errorf("claim %d: %v", i, err)
			}
			if l != nil {
				got[i] = l.Key
			}
		})
		return got
	}
	got := claims("1")
	if got[0] != keys[0] || got[1] != "" || got[2] != "" {
		t.Errorf("bounded claims, the first alone: took %q, want %q then nothing (%s, of another node, became ready before %s)", got, keys[0], other, keys[1])
	}
	got = claims("")
	if !slices.Equal(got, []string{keys[1], keys[2], keys[3]}) && !slices.Equal(got, []string{keys[1], keys[3], keys[2]}) {
		t.Errorf("unbounded claims: took %q, want %q in any order after the first", got, keys[1:])
	}
}

// TestFairAcrossSlots: on a cluster, keys of many shards are claimed in
// the order they became ready, whichever Store of the job claims, each
// claim in a batch of its shard.
func TestFairAcrossSlots(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3})
	job := newJob(t)
	o := Options{CallerClock: true, Shards: 64, Poll: time.Nanosecond}
	var stores []*Store
	for range 2 {
		s, err := New(cl.Client(), job, o)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	checkFairAcrossShards(t, stores[0], stores[1])
}

// pipeHook records, for each pipeline a client sends, how many script
// calls it holds.
type pipeHook struct {
	mu    sync.Mutex
	evals []int
}

func (h *pipeHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *pipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := 0
		for _, c := range cmds {
			if scriptCall(c) {
				n++
			}
		}
		h.mu.Lock()
		h.evals = append(h.evals, n)
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// TestClusterRounds: on a cluster, the scripts of a Store for two other
// nodes that wait while a round is in flight go together in the next
// round, one pipeline a node, sent at once.
func TestClusterRounds(t *testing.T) {
	s, sh, hook, keys := clusterShard(t, 1)
	home := s.nodeOf(ctx, sh)
	var others []string
	seen := map[string]bool{home: true}
	for i := 0; len(others) < 2 && i < 1000; i++ {
		k := fmt.Sprintf("z%d", i)
		if n := s.nodeOf(ctx, s.shardOf(k)); !seen[n] {
			seen[n] = true
			others = append(others, k)
		}
	}
	if len(others) < 2 {
		t.Fatalf("no keys of the job on two other nodes than %s", home)
	}
	for _, k := range append([]string{keys[0]}, others...) {
		mustAdd(t, s, item(k, "/warm")) // load the scripts on every node
	}
	pipes := &pipeHook{}
	s.c.(*redis.ClusterClient).AddHook(pipes)
	queued := make(chan int, 4)
	s.rounds.queued = func(n int) { queued <- n }
	hook.arm()
	var wg sync.WaitGroup
	guard := time.After(30 * time.Second) // a guard, not a wait
	await := func(c <-chan int, what string) int {
		select {
		case n := <-c:
			return n
		case <-guard:
			close(hook.release)
			wg.Wait()
			t.Fatalf("after 30 s, still waiting for %s", what)
			return 0
		}
	}
	wg.Go(func() { mustAdd(t, s, item(keys[0], "/1")) })
	held := make(chan int, 1)
	go func() { <-hook.held; held <- 1 }()
	await(held, "the first round")      // in flight
	await(queued, "the first's script") // its own call
	for _, k := range others {
		wg.Go(func() { mustAdd(t, s, item(k, "/1")) })
	}
	for waiting := 0; waiting < 2; {
		waiting = await(queued, "two scripts to wait for the next round")
	}
	close(hook.release)
	wg.Wait()
	s.rounds.queued = nil
	pipes.mu.Lock()
	defer pipes.mu.Unlock()
	if !slices.Contains(pipes.evals, 2) {
		t.Errorf("pipelines' script calls %v, want a round of the two nodes' scripts together", pipes.evals)
	}
}
