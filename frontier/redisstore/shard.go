package redisstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultShards is the number of shards of a job started on a Redis
// Cluster with Options.Shards zero when the Store cannot tell how many
// primaries the cluster has (see ShardsPerPrimary).
const DefaultShards = 256

// ShardsPerPrimary is how many shards a job started on a Redis Cluster
// with Options.Shards zero has for each primary the cluster has then: one,
// since each shard a batch enters costs it Redis work of its own (its
// counters read and written, its next event read; on bench workload (a),
// three primaries, appendfsync always, one a primary took some 20 % less
// Redis CPU a page than four in paired rounds, and gave some 10 % more
// pages/s). A job
// spreads over at most as many primaries as it has shards: one that is to
// grow onto more primaries needs Options.Shards (see the package
// documentation, Shards). A job started on a single Redis has one shard
// unless Options.Shards says otherwise.
const ShardsPerPrimary = 1

// shardBits is how many high bits of a lease token name its shard; the
// low 48 are the shard's fencing counter (which moves 2³² ahead at each
// restart of its Redis: 65,536 restarts).
const shardBits = 16

// counterBits is how many low bits of a lease token are its counter.
const counterBits = 64 - shardBits

// MaxShards is the most shards a job may have.
const MaxShards = 1 << shardBits

// readyCap is the most ready keys of a shard a reply's tail counts: a
// shard with as many may have any number of claims in flight.
const readyCap = 8

// maxProbes bounds the claims one Claim sends with a fairness bound (see
// view.pick) before it takes any ready key: each failed one corrects the
// view of one shard.
const maxProbes = 8

// shard is one of a job's shards: a hash slot holding the queues, pacing
// state, leases and seen-set of the keys that hash to it.
type shard struct {
	i        int
	prefix   string   // heed:{job/i}:, or heed:{job}: for a job of one shard of an earlier release
	keys     []string // KEYS of every script: the shard's counters hash
	memo     string   // the Store's memo hash in the shard's slot
	joined   atomic.Bool
	memoAt   atomic.Int64 // when a reply last said the memo's expiry moved, ns
	handBack atomic.Bool  // a new epoch began: hand back what it kept (handback.go)
	epoch    atomic.Int64 // the shard's epoch (prelude.lua, join) plus one, as last told; 0: never
	// answered is the latest request whose reply came from the shard,
	// by number (request.seq): a run goes on only after one (run.go).
	answered atomic.Uint64

	mu     sync.Mutex
	forget []string // ids of requests whose replies arrived
	// written: seen-set members of seen-only links whose reports were
	// written, to leave the member's pending hash (ReportsWritten).
	written []string
}

// setup reads the job's number of shards, or records it for a new job,
// once: every operation that changes the job calls it first.
func (s *Store) setup(ctx context.Context) error {
	_, err := s.setupJob(ctx, true)
	return err
}

// started sets the Store up if its job was started, and reports whether
// it was: the operations that only read call it, and do not start a job.
func (s *Store) started(ctx context.Context) (bool, error) {
	return s.setupJob(ctx, false)
}

func (s *Store) setupJob(ctx context.Context, start bool) (bool, error) {
	s.setupMu.Lock()
	defer s.setupMu.Unlock()
	if s.shards != nil {
		return true, nil
	}
	n := s.opt.Shards
	if _, single := s.c.(*redis.Client); n <= 0 && single {
		n = 1
	} else if n <= 0 {
		n = s.defaultShards(ctx)
	}
	var reply []int64
	err := s.retry(ctx, "setup", func() error {
		var err error
		reply, err = setupScript.Run(ctx, s.c, []string{s.prefix + "n"}, min(n, MaxShards), flag(start)).Int64Slice()
		return err
	})
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("redisstore: setup: %w: reply %v", errCorrupt, reply)
	}
	if err != nil || reply[0] < 0 {
		return false, err
	}
	got, spread := reply[0], reply[1] == 1
	id := make([]byte, 8)
	copy(id, s.id[:])
	shards := make([]*shard, max(got, 1))
	for i := range shards {
		p := s.prefix
		counters := p + "n"
		if got > 0 {
			p = "heed:{" + shardTag(s.job, i, int(got), spread) + "}:"
			counters = p + "c"
		}
		shards[i] = &shard{i: i, prefix: p, keys: []string{counters}, memo: p + "memo:" + hex.EncodeToString(id)}
	}
	s.view = newView(len(shards))
	s.shards = shards
	return true, nil
}

// defaultShards returns the shards of a job started on a cluster without
// Options.Shards: ShardsPerPrimary for each primary the cluster has now,
// or DefaultShards if it cannot tell.
func (s *Store) defaultShards(ctx context.Context) int {
	cc, ok := s.c.(*redis.ClusterClient)
	if !ok {
		return DefaultShards
	}
	ranges, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return DefaultShards
	}
	primaries := map[string]bool{}
	for _, r := range ranges {
		if len(r.Nodes) > 0 {
			primaries[r.Nodes[0].ID] = true
		}
	}
	if len(primaries) == 0 {
		return DefaultShards
	}
	return min(ShardsPerPrimary*len(primaries), MaxShards)
}

// slots is the number of a Redis Cluster's hash slots.
const slots = 16384

// maxSpread is the most shards of a job whose hash tags are spread over
// the slots: finding shard i's tag takes some n tries for n shards, and
// many shards spread evenly enough by chance.
const maxSpread = 1024

// shardTag returns the hash tag of shard i of a job of n shards: job/i,
// or, spread, job/i.k with the least k that puts it in the i-th of n
// equal ranges of slots. A cluster made by redis-cli --cluster create
// gives its primaries equal ranges of slots in order, so spread shards
// fall evenly on them (n a multiple of the primaries: exactly as many
// each) — where tags left to chance put 3 shards on 3 primaries all on
// different ones only 2 times in 9.
func shardTag(job string, i, n int, spread bool) string {
	tag := job + "/" + strconv.Itoa(i)
	if !spread || n > maxSpread {
		return tag
	}
	lo, hi := i*slots/n, (i+1)*slots/n
	for k := range 1 << 20 { // some n tries expected; the bound only guards
		t := tag + "." + strconv.Itoa(k)
		if sl := int(crc16(t)) % slots; sl >= lo && sl < hi {
			return t
		}
	}
	return tag
}

// crc16 is the CRC16 (XMODEM) of Redis Cluster's key hash slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// shardOf returns the shard of politeness key: FNV-1a of the key, modulo
// the job's shards.
func (s *Store) shardOf(key string) *shard {
	h := fnv.New64a()
	h.Write([]byte(key))
	return s.shards[h.Sum64()%uint64(len(s.shards))]
}

// token returns the lease token of counter, a shard's fencing counter.
func token(sh *shard, counter int64) uint64 {
	return uint64(sh.i)<<counterBits | uint64(counter)&(1<<counterBits-1)
}

// counterOf returns the shard's counter of a lease token.
func counterOf(t uint64) string { return strconv.FormatUint(t&(1<<counterBits-1), 10) }

// shardOfToken returns the shard of a lease token.
func shardOfToken(t uint64) int { return int(t >> counterBits) }

// view is what a Store knows of each shard's next event — when its first
// ready key may be claimed, or since when it has waited, or its first
// lease expiry — learned from the tail of every script's reply (prelude.lua)
// and from the job's wake index, where a shard that wakes earlier than it
// last said is published.
type view struct {
	mu    sync.Mutex
	has   []bool   // the shard has an event
	at    []int64  // when, µs on the clock of the decisions
	name  []string // the ready key, for ties
	busy  []int    // claims in flight
	ready []int    // how many keys are ready, up to readyCap
	// changed is closed when a claim comes back or a tail is learned: a
	// Claim that found every ready shard busy waits for it.
	changed chan struct{}
	pub     []string // the index's value last seen
	ver     string   // the index's version last seen
	polled  time.Time
	skew    int64 // Redis's clock minus this machine's, µs
}

func newView(n int) *view {
	return &view{has: make([]bool, n), at: make([]int64, n), name: make([]string, n),
		busy: make([]int, n), ready: make([]int, n), pub: make([]string, n)}
}

// learn records the tail of a reply of shard i, t = {has, score, name,
// publication, clock, more}; has 2 says the script moved neither the
// ready set nor the expiry set (a batch without claims: prelude.lua,
// quietTail), and what the view knew of the shard stands.
func (v *view) learn(i int, t []any, callerClock bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !callerClock {
		v.skew = intOf(t[4]) - time.Now().UnixMicro()
	}
	if intOf(t[0]) == 2 {
		return // the script moved neither the ready set nor the expiry set
	}
	v.has[i] = intOf(t[0]) == 1
	v.at[i], v.name[i], v.ready[i] = intOf(t[1]), strOf(t[2]), int(intOf(t[5]))
	v.notify()
}

// notify wakes the Claims waiting for a busy shard. v.mu is held.
func (v *view) notify() {
	if v.changed != nil {
		close(v.changed)
		v.changed = nil
	}
}

// clockNow returns now on the clock of the decisions: the caller's with
// CallerClock, else Redis's as this machine's clock and the last reply
// tell it.
func (s *Store) clockNow(now time.Time) int64 {
	if s.opt.CallerClock {
		return micros(base(now))
	}
	s.view.mu.Lock()
	defer s.view.mu.Unlock()
	return time.Now().UnixMicro() + s.view.skew
}

// knowsQueued reports whether the view knows of a shard with a ready key
// (or one it was told woke), rather than leases alone.
func (v *view) knowsQueued() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for j := range v.has {
		if v.has[j] && v.name[j] != "" {
			return true
		}
	}
	return false
}

// before reports whether shard i's event comes before shard j's.
func (v *view) before(i, j int) bool {
	if v.at[i] != v.at[j] {
		return v.at[i] < v.at[j]
	}
	return v.name[i] < v.name[j]
}

// pick returns the shard to claim from at now (µs): the one whose ready key
// has waited longest, busy or not (the claims of a shard that wait at once
// share a batch: see Store.claimSlot), and, with bounded, the bound of the key it may hand out — the first ready key
// of every other shard — as µs from now and a name ("" for none). A shard
// with one ready key as far as the view knows, and a claim in flight
// already, is not picked: if every ready shard is such, pick returns a
// channel closed when a claim comes back.
func (v *view) pick(now int64, bounded bool) (i int, bound, name string, ok bool, busy <-chan struct{}) {
	v.mu.Lock()
	defer v.mu.Unlock()
	saturated := false
	ready := func(j int) bool {
		if !v.has[j] || v.at[j] > now {
			return false
		}
		if v.busy[j] >= max(v.ready[j], 1) && v.ready[j] < readyCap {
			saturated = true
			return false
		}
		return true
	}
	best, second := -1, -1
	for j := range v.has {
		if ready(j) && (best < 0 || v.before(j, best)) {
			best = j
		}
	}
	for j := range v.has {
		if j != best && ready(j) && (second < 0 || v.before(j, second)) {
			second = j
		}
	}
	if best < 0 {
		if saturated {
			if v.changed == nil {
				v.changed = make(chan struct{})
			}
			return 0, "", "", false, v.changed
		}
		return 0, "", "", false, nil
	}
	v.busy[best]++
	if bounded && second >= 0 {
		bound, name = strconv.FormatInt(v.at[second]-now, 10), v.name[second]
	}
	return best, bound, name, true, nil
}

// anyReady reports whether the view knows of a shard with a key ready
// at now (µs).
func (v *view) anyReady(now int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for j := range v.has {
		if v.has[j] && v.at[j] <= now {
			return true
		}
	}
	return false
}

// candidates returns up to n shards with a key ready at now (µs), those
// whose ready key has waited longest first, and the bound of the keys a
// claim on them may hand out: the first ready key of the next shard, as
// µs from now and a name ("" for none).
func (v *view) candidates(now int64, n int) (shards []int, bound, name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var ready []int
	for j := range v.has {
		if v.has[j] && v.at[j] <= now {
			ready = append(ready, j)
		}
	}
	slices.SortFunc(ready, func(a, b int) int {
		switch {
		case v.before(a, b):
			return -1
		case v.before(b, a):
			return 1
		}
		return a - b
	})
	if len(ready) > n {
		j := ready[n]
		bound, name = strconv.FormatInt(v.at[j]-now, 10), v.name[j]
		ready = ready[:n]
	}
	return ready, bound, name
}

// boundExcept returns the first key ready at now (µs) of the shards other
// than except, as µs from now and a name ("" for none): the bound of the
// keys a claim on except may hand out.
func (v *view) boundExcept(now int64, except []int) (bound, name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	best := -1
	for j := range v.has {
		if v.has[j] && v.at[j] <= now && !slices.Contains(except, j) && (best < 0 || v.before(j, best)) {
			best = j
		}
	}
	if best < 0 {
		return "", ""
	}
	return strconv.FormatInt(v.at[best]-now, 10), v.name[best]
}

func (v *view) release(i int) {
	v.mu.Lock()
	v.busy[i]--
	v.notify()
	v.mu.Unlock()
}

// next returns the earliest event of any shard, and whether there is one.
func (v *view) next() (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var at int64
	found := false
	for j := range v.has {
		if v.has[j] && (!found || v.at[j] < at) {
			at, found = v.at[j], true
		}
	}
	return at, found
}

// wakeKey is the job's wake index: a hash, shard → "publication:score" of
// the last time the shard woke earlier than it had said, and "#", its
// version.
func (s *Store) wakeKey() string { return s.prefix + "wake" }

// publish tells the wake index that shard i's next event is at score
// (Redis's µs), its publication ver.
func (s *Store) publish(ctx context.Context, i int, ver, score int64) error {
	val := s.view.published(i, ver, score)
	return s.retry(ctx, "publish", func() error {
		_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, s.wakeKey(), strconv.Itoa(i), val)
			p.HIncrBy(ctx, s.wakeKey(), "#", 1)
			return nil
		})
		return err
	})
}

// published records that shard i's publication ver, at score, is in
// the wake index (or is about to be): refresh does not take it for news.
// It returns the index's value.
func (v *view) published(i int, ver, score int64) string {
	val := strconv.FormatInt(ver, 10) + ":" + strconv.FormatInt(score, 10)
	v.mu.Lock()
	v.pub[i] = val
	v.mu.Unlock()
	return val
}

// refresh reads the wake index, if it was not read for a Poll (or force),
// and learns of the shards that woke since.
func (s *Store) refresh(ctx context.Context, force bool) error {
	v := s.view
	v.mu.Lock()
	due := force || time.Since(v.polled) >= s.opt.Poll
	if due {
		v.polled = time.Now()
	}
	v.mu.Unlock()
	if !due {
		return nil
	}
	var ver string
	err := s.retry(ctx, "wake index", func() error {
		var err error
		ver, err = s.c.HGet(ctx, s.wakeKey(), "#").Result()
		if errors.Is(err, redis.Nil) {
			ver, err = "", nil
		}
		return err
	})
	if err != nil || ver == v.verOf() {
		return err
	}
	var all map[string]string
	if err := s.retry(ctx, "wake index", func() (err error) {
		all, err = s.c.HGetAll(ctx, s.wakeKey()).Result()
		return err
	}); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.ver = ver
	for f, val := range all {
		i, err := strconv.Atoi(f)
		if err != nil || i < 0 || i >= len(v.has) || v.pub[i] == val {
			continue
		}
		v.pub[i] = val
		_, sc, _ := strings.Cut(val, ":")
		score, err := strconv.ParseInt(sc, 10, 64)
		if err != nil {
			continue
		}
		if !v.has[i] || score < v.at[i] {
			v.has[i], v.at[i], v.name[i], v.ready[i] = true, score, "?", 0
		}
	}
	return nil
}

func (v *view) verOf() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ver
}

// verify reads every shard's first ready keys and first lease expiry, in
// one pipelined round, and learns them as it learns a reply's tail: it
// reports whether the job is empty. A Store calls it when it knows of no
// ready key in any shard: only then may it report Idle. It changes
// nothing in Redis: a shard that woke without telling the wake index (a
// process died in between) is found by each Store's own check.
//
// The Claims that find it under way wait for it and take its answer: a
// read of every shard costs two commands a shard (512 on a cluster's
// default), and the idle workers of a process all ask at once.
func (s *Store) verify(ctx context.Context, now time.Time) (bool, error) {
	s.verifyMu.Lock()
	c := s.verifying
	if c == nil {
		c = &verifyCall{done: make(chan struct{})}
		s.verifying = c
		s.verifyMu.Unlock()
		c.idle, c.err = s.verifyRead(ctx, now)
		s.verifyMu.Lock()
		s.verifying = nil
		s.verifyMu.Unlock()
		close(c.done)
		return c.idle, c.err
	}
	c.waiters++
	s.verifyMu.Unlock()
	select {
	case <-c.done:
		return c.idle, c.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// verifyCall is a verify under way, and its answer once done is closed.
type verifyCall struct {
	done    chan struct{}
	idle    bool
	err     error
	waiters int // the Claims that wait for it (tests)
}

// verifyEvery is how long after a read of every shard a Store that holds
// leases asks no other (verifiedLately): a Poll for every 32 shards, so
// that those reads cost a job of 256 shards what they cost 32 — a
// shard that woke publishes it (see Shards), and the read is only the
// check of what a publication lost.
func (s *Store) verifyEvery() time.Duration {
	return s.opt.Poll * time.Duration(max(1, len(s.shards)/32))
}

// verifyRead is verify's read.
func (s *Store) verifyRead(ctx context.Context, now time.Time) (bool, error) {
	s.verifiedAt.Store(time.Now().UnixNano())
	rnow := s.clockNow(now)
	err := s.retry(ctx, "idle check", func() error {
		cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, sh := range s.shards {
				p.ZRangeWithScores(ctx, sh.prefix+"ready", 0, readyCap-1)
				p.ZRangeWithScores(ctx, sh.prefix+"exp", 0, 0)
			}
			return nil
		})
		if err != nil {
			return err
		}
		s.view.mu.Lock()
		defer s.view.mu.Unlock()
		for i := range s.shards {
			s.view.head(i, cmds[2*i].(*redis.ZSliceCmd).Val(), cmds[2*i+1].(*redis.ZSliceCmd).Val(), rnow)
		}
		s.view.notify()
		return nil
	})
	if err != nil {
		return false, err
	}
	if err := s.refresh(ctx, true); err != nil {
		return false, err
	}
	_, any := s.view.next()
	return !any, nil
}

// head records shard i's next event from its first ready keys and first
// lease expiry, read at now (µs), as tail (prelude.lua) tells it. v.mu is
// held.
func (v *view) head(i int, ready, exp []redis.Z, now int64) {
	v.has[i], v.at[i], v.name[i], v.ready[i] = false, 0, "", 0
	if len(ready) > 0 {
		v.has[i], v.at[i], v.name[i] = true, int64(ready[0].Score), fmt.Sprint(ready[0].Member)
		for _, z := range ready {
			if int64(z.Score) <= now {
				v.ready[i]++
			}
		}
	}
	if len(exp) > 0 && (!v.has[i] || int64(exp[0].Score) < v.at[i]) {
		v.has[i], v.at[i], v.name[i] = true, int64(exp[0].Score), ""
	}
}

// group is the part of a batch whose keys hash to one shard.
type group struct {
	sh  *shard
	idx []int // indexes in the batch
}

// split groups batch by shard, in the order of each shard's first item,
// except that the group of own, if any, comes last.
func (s *Store) split(n int, keyOf func(int) string, own *shard) []group {
	var gs []group
	at := map[*shard]int{}
	for i := range n {
		sh := s.shardOf(keyOf(i))
		j, ok := at[sh]
		if !ok {
			j = len(gs)
			at[sh] = j
			gs = append(gs, group{sh: sh})
		}
		gs[j].idx = append(gs[j].idx, i)
	}
	if j, ok := at[own]; ok && own != nil {
		g := gs[j]
		gs = append(append(gs[:j:j], gs[j+1:]...), g)
	}
	return gs
}

// errShards wraps the errors of a shard of a batch.
func errShards(op string, sh *shard, err error) error {
	return fmt.Errorf("redisstore: %s: shard %d: %w", op, sh.i, err)
}
