package redisstore

// Leases whose Dones a failover lost: a Done acknowledged by a primary
// that died before its replica received it leaves the lease, in the
// promoted replica, with its member — held while the member beats, though
// its process ended it long ago. Once a reply tells the Store of a new
// epoch of a shard, its next heartbeat hands such leases back
// (handback.lua).

import (
	"context"
	_ "embed"
	"time"
)

var (
	//go:embed lua/handback.lua
	handBackSrc string

	handBackScript = newScript(prelude + takeBackSrc + handBackSrc)
)

// epochChanged notes that shard sh began a new epoch (a restart or
// failover): the Store's next heartbeat hands back its leases there that
// it no longer holds. Not at once: a claim granted before the new epoch
// whose reply is still on its way is held by then.
func (s *Store) epochChanged(sh *shard) {
	if !s.opt.FixedLeases {
		sh.handBack.Store(true)
	}
}

// handBackLater hands back (handBack) on its own (background), within
// timeout; what fails is tried again at the next heartbeat.
func (s *Store) handBackLater(timeout time.Duration) {
	due := false
	for _, sh := range s.shards {
		due = due || sh.handBack.Load()
	}
	if !due || s.live.cur.Load() == nil {
		return
	}
	s.background(timeout, func(ctx context.Context) error {
		err := s.handBack(ctx)
		if err != nil && s.opt.Log != nil {
			s.opt.Log.Warn("redisstore: handing back leases a failover kept; the next heartbeat tries again", "job", s.job, "err", err)
		}
		return err
	})
}

// handBack hands back, in each shard that began a new epoch, the leases
// of the Store's member granted before it that the Store no longer holds.
func (s *Store) handBack(ctx context.Context) error {
	var rs []*request
	var shs []*shard
	for _, sh := range s.shards {
		if !sh.handBack.CompareAndSwap(true, false) {
			continue
		}
		s.mu.Lock()
		var args []any
		for t := range s.held {
			if int(t>>counterBits) == sh.i {
				args = append(args, counterOf(t))
			}
		}
		s.mu.Unlock()
		rs = append(rs, s.prepare(sh, handBackScript, "hand back", timeOf(s.callerNow()), args...))
		shs = append(shs, sh)
	}
	out, err := s.callMany(ctx, rs)
	for i, sh := range shs {
		if err != nil && out[i] == nil {
			sh.handBack.Store(true)
		} else if len(out[i]) > 0 && intOf(out[i][0]) > 0 && s.opt.Log != nil {
			s.opt.Log.Warn("redisstore: handed back leases of this process that a restart or failover of Redis kept after their Done was acknowledged; their pages are fetched again",
				"job", s.job, "shard", sh.i, "leases", intOf(out[i][0]))
		}
	}
	return err
}
