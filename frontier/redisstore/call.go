package redisstore

// Calling the shards' scripts: requests, their memos, retries.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// request is a script call on a shard, with its request id.
type request struct {
	sh     *shard
	sc     script
	op     string
	argv   []any
	id     string
	seq    uint64 // the number id spells, in the order of requests made
	forget string
	sent   bool // it may have run: a retry asks the script's memo first
	// refresh: the script moves the memo's expiry later.
	refresh bool
}

// prepare makes the request to run the script sc, which changes the state
// of shard sh, with the common arguments and args.
func (s *Store) prepare(sh *shard, sc script, op string, now time.Time, args ...any) *request {
	s.noteNow(now)
	seq := s.lastReq.Add(1)
	r := &request{sh: sh, sc: sc, op: op, id: strconv.FormatUint(seq, 36), seq: seq, forget: sh.takeForget()}
	forget := r.forget
	if last := sh.memoAt.Load(); forget != "" || time.Since(time.Unix(0, last)) >= memoRefresh {
		forget = "!" + forget // see prelude.lua: the memo's expiry moves
		r.refresh = true
	}
	forget += sh.takeWritten()
	r.argv = make([]any, 0, 7+len(args))
	clock := flag(s.opt.CallerClock)
	if s.oneServer() {
		clock += "w" // see prelude.lua: the script tells the wake index
	}
	r.argv = append(r.argv, sh.prefix, sh.memo, r.id, forget, micros(now), clock, flag(sh.joined.Load())+s.memberArg())
	r.argv = append(r.argv, args...)
	return r
}

// noteNow keeps now as the latest now a caller gave, with CallerClock.
func (s *Store) noteNow(now time.Time) {
	if s.opt.CallerClock && !now.IsZero() {
		for last := s.lastNow.Load(); micros(now) > last && !s.lastNow.CompareAndSwap(last, micros(now)); last = s.lastNow.Load() {
		}
	}
}

// call runs the script sc, which changes the state of shard sh, with the
// common arguments and args, and returns its reply, without the shard's
// tail, which it learns (and publishes if the shard woke). A transient
// failure is retried with the same request id, which the script answers
// from its memo if it ran already, for Options.RetryFor.
func (s *Store) call(ctx context.Context, sh *shard, sc script, op string, now time.Time, args ...any) ([]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := s.prepare(sh, sc, op, now, args...)
	reply, err := s.send(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	return s.received(ctx, r, reply)
}

// send runs r, or takes first's result if not nil (the reply of r in a
// pipeline): a transient failure is retried for Options.RetryFor.
func (s *Store) send(ctx context.Context, r *request, first *redis.Cmd) ([]any, error) {
	var reply []any
	err := s.retry(ctx, r.op, func() error {
		var v any
		var err error
		if first != nil {
			v, err = first.Result()
			first = nil
		} else {
			if r.sent {
				r.argv[2] = "+" + r.id // see prelude.lua: the memo is read
			}
			r.sent = true
			v, err = r.sc.run(ctx, s, r.sh.keys, r.argv).Result()
		}
		if err != nil {
			return err
		}
		arr, ok := v.([]any)
		if !ok || len(arr) < tailLen {
			return fmt.Errorf("%w: reply %v", errCorrupt, v)
		}
		reply = arr
		return nil
	})
	if err != nil {
		r.sh.giveBackForget(r.forget)
	}
	return reply, err
}

// received notes that r's reply arrived, learns its tail, publishes the
// shard if it woke, and returns the rest of the reply.
func (s *Store) received(ctx context.Context, r *request, reply []any) ([]any, error) {
	r.noted()
	if err := s.learnTail(ctx, r.sh, reply[len(reply)-tailLen:]); err != nil {
		return nil, err
	}
	s.answeredBy(r)
	return reply[:len(reply)-tailLen], nil
}

// answeredBy notes that the reply of r came: Redis held the job, as it
// had, when r was sent — r's shard and the shards more it entered.
func (s *Store) answeredBy(r *request, more ...*shard) {
	as := []*atomic.Uint64{&r.sh.answered, &s.answered}
	for _, sh := range more { // the other shards a script entered
		as = append(as, &sh.answered)
	}
	for _, a := range as {
		for last := a.Load(); r.seq > last && !a.CompareAndSwap(last, r.seq); last = a.Load() {
		}
	}
}

// noted notes that r's reply arrived: its memo may be forgotten.
func (r *request) noted() {
	r.sh.joined.Store(true)
	if r.refresh {
		r.sh.memoAt.Store(time.Now().UnixNano())
	}
	r.sh.mu.Lock()
	r.sh.forget = append(r.sh.forget, r.id)
	r.sh.mu.Unlock()
}

// callMany runs rs in one pipelined round (a round per node of a
// cluster), and each that failed there, for want of its script or
// otherwise, on its own, with retries; it returns their replies.
func (s *Store) callMany(ctx context.Context, rs []*request) ([][]any, error) {
	replies, errs := s.sendMany(ctx, rs)
	out := make([][]any, len(rs))
	for i, r := range rs {
		if errs[i] == nil {
			out[i], errs[i] = s.received(ctx, r, replies[i])
		}
	}
	return out, errors.Join(errs...)
}

// sendMany sends rs in one pipelined round, and each that failed there,
// for want of its script or otherwise, on its own, with retries (send);
// it returns each one's reply or error.
func (s *Store) sendMany(ctx context.Context, rs []*request) ([][]any, []error) {
	cmds := make([]*redis.Cmd, len(rs))
	if len(rs) > 1 {
		s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, r := range rs {
				cmds[i] = r.sc.queue(ctx, s, p, r.sh.keys, r.argv)
			}
			return nil
		})
	}
	replies, errs := make([][]any, len(rs)), make([]error, len(rs))
	for i, r := range rs {
		first := cmds[i]
		r.sent = first != nil
		if first != nil && first.Err() != nil {
			first = nil // NOSCRIPT, or a failure to retry
		}
		replies[i], errs[i] = s.send(ctx, r, first)
	}
	return replies, errs
}

// tailLen is the length of the tail of a script's reply (prelude.lua).
const tailLen = 8

// takeForget returns, comma-separated, ids of requests whose replies
// arrived, for the next script to forget their memos.
func (sh *shard) takeForget() string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n := min(len(sh.forget), forgetBatch)
	if n < forgetMin {
		return ""
	}
	ids := strings.Join(sh.forget[len(sh.forget)-n:], ",")
	sh.forget = sh.forget[:len(sh.forget)-n]
	return ids
}

// giveBackForget returns ids to forget later: the request that carried
// them failed, perhaps before it ran.
func (sh *shard) giveBackForget(ids string) {
	if ids == "" {
		return
	}
	sh.mu.Lock()
	sh.forget = append(sh.forget, strings.Split(ids, ",")...)
	sh.mu.Unlock()
}

// retry runs f until it succeeds, fails for a reason that is not
// transient, ctx ends or Options.RetryFor has passed since its first
// failure, waiting between tries.
//
// A transient failure may be a restart or failover that lost writes: the
// Store forgets the URLs it knew seen (seenCache).
func (s *Store) retry(ctx context.Context, op string, f func() error) error {
	reload, cluster := s.c.(interface{ ReloadState(context.Context) })
	return retry(ctx, s.opt.RetryFor, op, func() error {
		err := f()
		if err != nil && (transient(err) || redis.HasErrorPrefix(err, "HEEDLOST")) {
			s.resetSeen()
			if cluster {
				// A cluster client learns a failover only from a MOVED
				// reply or its periodic reload (a minute by default): a
				// slot whose primary died stays routed to it, refused,
				// until then.
				reload.ReloadState(ctx)
			}
		}
		return err
	})
}

// retry calls f until it succeeds, fails for a reason that is not
// transient, ctx ends or retryFor (negative: no retries) has passed since
// its first failure.
func retry(ctx context.Context, retryFor time.Duration, op string, f func() error) error {
	var deadline time.Time
	wait := 20 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		switch {
		case redis.HasErrorPrefix(err, "HEEDLOST"):
			return fmt.Errorf("redisstore: %s: job: %w", op, ErrStateLost)
		case ctx.Err() != nil:
			return fmt.Errorf("redisstore: %s: %w", op, ctx.Err())
		case !transient(err) || retryFor < 0:
			return fmt.Errorf("redisstore: %s: %w", op, err)
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(retryFor)
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("redisstore: %s: still failing after %v: %w", op, retryFor, err)
		}
		t := time.NewTimer(min(wait, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("redisstore: %s: %w (after %w)", op, ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// transient reports whether err may go away if the request is tried again:
// the connection failed, or Redis is starting, failing over or full of
// clients.
func transient(err error) bool {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, redis.ErrClosed):
		return false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, redis.ErrPoolTimeout):
		return true
	case redis.IsLoadingError(err), redis.IsReadOnlyError(err), redis.IsClusterDownError(err),
		redis.IsTryAgainError(err), redis.IsMasterDownError(err), redis.IsMaxClientsError(err):
		return true
	case strings.Contains(err.Error(), "non local key"):
		// A node's batch entered a shard its node no longer serves: the
		// map of slots reloads (retry), and a failover moves every slot
		// of the node alike.
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}
