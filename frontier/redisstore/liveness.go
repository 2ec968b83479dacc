package redisstore

// Liveness: each Store that claims is a member of its job, with a
// heartbeat in the job's slot; its leases last while it beats, and are
// anyone's to take back once it stops.

import (
	"context"
	cryptorand "crypto/rand"
	_ "embed"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
)

// beatsPerTimeout is how many heartbeats a member sends per liveness
// timeout: four may be lost or late before the member is presumed dead.
const beatsPerTimeout = 5

// minBeat is the shortest interval between heartbeats, whatever the
// timeout.
const minBeat = 10 * time.Millisecond

// runLease bounds a member's runs as the default lease bounded them
// before members: a run holds no more items than its key's Delay lets be
// fetched in a quarter of it (see Affinity).
const runLease = 5 * time.Minute

// holdsMax bounds how many of a member's hosts its heartbeat names.
const holdsMax = 32

var (
	//go:embed lua/beat.lua
	beatSrc string
	//go:embed lua/reclaim.lua
	reclaimSrc string
	//go:embed lua/takeback.lua
	takeBackSrc string

	beatScript    = redis.NewScript(beatSrc)
	reclaimScript = newScript(prelude + addSrc + takeBackSrc + reclaimSrc)
)

// member is one membership of the Store in its job: the id its leases
// carry in Redis, its liveness timeout, and when its last acknowledged
// heartbeat was sent. A Store that finds its member dead (it was paused
// or cut off past the timeout) joins again as a new one; the old stays
// known, for the Expires of the leases it was granted.
type member struct {
	id      int64
	timeout time.Duration
	acked   atomic.Int64 // when the last heartbeat Redis acknowledged was sent, ns on the Store's monotonic clock
	dead    atomic.Bool
}

// until returns when, on the Store's monotonic clock, m may no longer
// start a request under its leases: three quarters of its timeout after
// its last acknowledged heartbeat was sent. Redis declares it dead a
// whole timeout after that heartbeat arrived: the last quarter is for a
// request that was about to start when the process stopped.
func (m *member) until() time.Duration {
	return time.Duration(m.acked.Load()) + m.timeout*3/4
}

// liveness is the Store's membership of its job.
type liveness struct {
	mu      sync.Mutex // held while joining
	cur     atomic.Pointer[member]
	byID    sync.Map // id → *member, every member the Store was
	start   time.Time
	clock   func() time.Duration // the monotonic clock, since start
	loop    sync.Once
	running atomic.Bool // the beat loop was started
	// reclaiming is set while a reclaim runs (reclaimLater); pending
	// counts them, for Close.
	reclaiming atomic.Bool
	pending    sync.WaitGroup
	stop       chan struct{}
	stopped    chan struct{}
	manual     bool // tests beat (export_test.go)
}

// mono returns the Store's monotonic clock: time since it was made,
// which a paused process sees jump and a wall-clock step does not move.
func (s *Store) mono() time.Duration {
	if s.live.clock != nil {
		return s.live.clock()
	}
	return time.Since(s.live.start)
}

// livenessTimeout is the liveness timeout a Claim with lease asks for.
func livenessTimeout(lease time.Duration) time.Duration {
	if lease <= 0 {
		return frontier.DefaultLease
	}
	return lease
}

// memberArg returns the suffix of the scripts' ARGV[7] that names the
// Store's member (prelude.lua), "" for none. A member known dead is named
// all the same: a claim of it must grant nothing (it would be a lease no
// heartbeat keeps), and the script's tail says so again.
func (s *Store) memberArg() string {
	if m := s.live.cur.Load(); m != nil {
		return ":" + strconv.FormatInt(m.id, 10)
	}
	return ""
}

// ensureMember makes the Store a member of its job, with liveness
// timeout lease, before it claims: it joins if it is not one, or if its
// member is dead; if its member may be presumed dead (no heartbeat
// acknowledged for three quarters of the timeout: the process was
// paused or cut off), it beats first, and joins again if Redis says so.
func (s *Store) ensureMember(ctx context.Context, lease time.Duration) error {
	if s.opt.FixedLeases {
		return nil
	}
	m := s.live.cur.Load()
	if m != nil && !m.dead.Load() && s.mono() < m.until() {
		return nil
	}
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	m = s.live.cur.Load()
	if m != nil && !m.dead.Load() && s.mono() >= m.until() {
		if err := s.beat(ctx); err != nil {
			return err
		}
	}
	if m = s.live.cur.Load(); m != nil && !m.dead.Load() {
		return nil
	}
	if err := s.join(ctx, livenessTimeout(lease), m); err != nil {
		return err
	}
	s.live.loop.Do(func() {
		if !s.live.manual {
			s.live.running.Store(true)
			go s.beatLoop()
		}
	})
	return nil
}

// join makes the Store a new member with timeout, the one before, old
// (nil for none), being dead. s.live.mu is held.
func (s *Store) join(ctx context.Context, timeout time.Duration, old *member) error {
	var b [8]byte
	cryptorand.Read(b[:])
	// An id is a positive number below 2⁵²: Lua holds it exactly.
	m := &member{id: int64(binary.BigEndian.Uint64(b[:])>>12) + 1, timeout: timeout}
	sent := s.mono()
	alive, _, err := s.beatCall(ctx, m, "join")
	if err != nil {
		return err
	}
	if !alive {
		return fmt.Errorf("redisstore: join: %w", errCorrupt)
	}
	m.acked.Store(int64(sent))
	s.live.byID.Store(m.id, m)
	s.live.cur.Store(m)
	if old != nil && s.opt.Log != nil {
		s.opt.Log.Warn("redisstore: this process was presumed dead by its job — no heartbeat for longer than its liveness timeout (paused, or cut off from Redis) — and its leases are anyone's: its pages fetched since may be fetched again; it goes on as a new member",
			"job", s.job, "member", old.id, "new", m.id, "timeout", old.timeout)
	}
	return nil
}

// beatCall runs beat.lua for m with op, and returns whether m is alive
// and the ids of the dead members whose leases are still to be taken
// back.
func (s *Store) beatCall(ctx context.Context, m *member, op string, extra ...any) (bool, []int64, error) {
	args := []any{m.id, op, ceilMicros(m.timeout), s.holds(), s.callerNow()}
	args = append(args, extra...)
	var v any
	err := s.retry(ctx, "heartbeat", func() error {
		var err error
		v, err = beatScript.Run(ctx, s.c, []string{s.prefix + "live", s.prefix + "dead"}, args...).Result()
		return err
	})
	if err != nil {
		return false, nil, err
	}
	r, ok := v.([]any)
	if !ok || len(r) < 2 {
		return false, nil, fmt.Errorf("redisstore: heartbeat: %w: reply %v", errCorrupt, v)
	}
	var dead []int64
	for _, d := range r[2:] {
		if id, err := strconv.ParseInt(strOf(d), 10, 64); err == nil {
			dead = append(dead, id)
		}
	}
	return intOf(r[0]) == 1, dead, nil
}

// callerNow is the now a job-slot script decides on: 0 for Redis's clock,
// or with CallerClock the latest now a caller gave.
func (s *Store) callerNow() int64 {
	if s.opt.CallerClock {
		return s.lastNow.Load()
	}
	return 0
}

// beat sends the member's heartbeat, joins again if Redis declared the
// member dead, and takes back the leases of the dead members. s.live.mu
// is held, or the caller is the beat loop (which takes it).
func (s *Store) beat(ctx context.Context) error {
	m := s.live.cur.Load()
	if m == nil {
		return nil
	}
	var dead []int64
	if !m.dead.Load() {
		sent := s.mono()
		alive, d, err := s.beatCall(ctx, m, "beat")
		if err != nil {
			return err
		}
		dead = d
		if alive {
			for last := m.acked.Load(); int64(sent) > last && !m.acked.CompareAndSwap(last, int64(sent)); last = m.acked.Load() {
			}
		} else {
			m.dead.Store(true)
		}
	}
	if m.dead.Load() {
		if err := s.join(ctx, m.timeout, m); err != nil {
			return err
		}
	}
	s.reclaimLater(dead, m.timeout)
	s.handBackLater(m.timeout)
	return nil
}

// reclaimLater takes back the leases of the dead members ids (reclaim)
// on its own (background): a shard that fails over meanwhile must not
// hold the heartbeats back, or the Store would be presumed dead in turn.
func (s *Store) reclaimLater(ids []int64, timeout time.Duration) {
	if len(ids) == 0 {
		return
	}
	s.background(timeout, func(ctx context.Context) error {
		err := s.reclaim(ctx, ids)
		if err != nil && s.opt.Log != nil {
			s.opt.Log.Warn("redisstore: taking back the leases of dead members failed; the next heartbeat tries again", "job", s.job, "members", ids, "err", err)
		}
		return err
	})
}

// background runs fn in a goroutine of its own, within timeout, unless
// a reclaim or hand-back of the Store is under way (the next heartbeat
// tries again); Close waits for it.
func (s *Store) background(timeout time.Duration, fn func(context.Context) error) {
	if !s.live.reclaiming.CompareAndSwap(false, true) {
		return
	}
	s.live.pending.Add(1)
	go func() {
		defer s.live.pending.Done()
		defer s.live.reclaiming.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		fn(ctx) //nolint:errcheck // fn logs its failure
	}()
}

// beatLoop beats every timeout/beatsPerTimeout until Close.
func (s *Store) beatLoop() {
	defer close(s.live.stopped)
	for {
		m := s.live.cur.Load()
		t := time.NewTimer(max(m.timeout/beatsPerTimeout, minBeat))
		select {
		case <-s.live.stop:
			t.Stop()
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
		s.live.mu.Lock()
		err := s.beat(ctx)
		s.live.mu.Unlock()
		cancel()
		if err != nil && s.opt.Log != nil {
			s.opt.Log.Warn("redisstore: heartbeat failed", "job", s.job, "err", err)
		}
	}
}

// reclaim takes back, in every shard, the leases of the dead members
// ids, and tells the job's slot they are taken back once every shard
// answered.
func (s *Store) reclaim(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.setup(ctx); err != nil {
		return err
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	// With CallerClock, on the latest now a caller gave: the keys rest
	// from the moment the heartbeat found the members dead.
	now := timeOf(s.callerNow())
	rs := make([]*request, len(s.shards))
	for i, sh := range s.shards {
		rs[i] = s.prepare(sh, reclaimScript, "reclaim", now, args...)
	}
	if _, err := s.callMany(ctx, rs); err != nil {
		return err
	}
	m := s.live.cur.Load()
	_, _, err := s.beatCall(ctx, m, "forget", args...)
	return err
}

// expiresAt returns the Lease.Expires, on the clock of now, of a lease
// held by member id: when the member may no longer start a request under
// it (member.until); now itself if the member is dead or not this
// Store's.
func (s *Store) expiresAt(now time.Time, id int64) time.Time {
	at := base(now)
	v, ok := s.live.byID.Load(id)
	if !ok {
		return at
	}
	m := v.(*member)
	if m.dead.Load() {
		return at
	}
	return at.Add(max(m.until()-s.mono(), 0))
}

// alive reports whether member id of the Store may still start a
// request under its leases.
func (s *Store) alive(id int64) bool {
	v, ok := s.live.byID.Load(id)
	if !ok {
		return false
	}
	m := v.(*member)
	return !m.dead.Load() && s.mono() < m.until()
}

// memberDied notes that a script found member id dead in a shard: its
// leases there were taken back. The next Claim joins again.
func (s *Store) memberDied(id int64) {
	if v, ok := s.live.byID.Load(id); ok {
		v.(*member).dead.Store(true)
	}
}

// leaveJob ends the Store's membership: its heartbeat stops and its entry
// goes (Close, after its leases were ended).
func (s *Store) leaveJob(ctx context.Context) error {
	m := s.live.cur.Load()
	if m == nil {
		return nil
	}
	s.live.loop.Do(func() {}) // no loop starts after this
	close(s.live.stop)
	if s.live.running.Load() {
		<-s.live.stopped
	}
	s.live.pending.Wait()
	if m.dead.Load() {
		return nil
	}
	_, _, err := s.beatCall(ctx, m, "leave")
	return err
}

// dropPending deletes, in every shard, the pending fields of the Store's
// member (prelude.lua, pendingOf): its crawl closes cleanly, every report
// written. A member presumed dead has none left: reclaim.lua queued them.
func (s *Store) dropPending(ctx context.Context) error {
	m := s.live.cur.Load()
	if m == nil || m.dead.Load() {
		return nil
	}
	prefix := "p:" + strconv.FormatInt(m.id, 10) + ":"
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, sh := range s.shards {
			p.Eval(ctx, dropPendingSrc, sh.keys[:1], prefix)
		}
		return nil
	})
	return err
}

// dropPendingSrc deletes the fields of hash KEYS[1] whose names begin
// with ARGV[1].
const dropPendingSrc = `local f = {}
for _, k in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(k, 1, #ARGV[1]) == ARGV[1] then f[#f + 1] = k end
end
if #f > 0 then redis.call('HDEL', KEYS[1], unpack(f)) end
return #f`
