package redisstore

// Runs: a Claim with ClaimOptions.Affinity leases several items of a key
// at once, which this Store hands out one after the other, each once the
// key has rested.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// runMax bounds the items of a run: how many a key is served in a row
// ahead of the keys that wait, and how many a process that dies mid-run
// may have fetched that are fetched again.
const runMax = 16

// runSize returns how many items a Claim with opt may lease at once: one
// unless it asks for Affinity with one lease a key, then up to
// Affinity+1 (the memory store's streak: a claim, then Affinity more in
// a row), at most runMax.
func runSize(opt frontier.ClaimOptions) int {
	if opt.Affinity <= 0 || opt.PerHost > 1 {
		return 1
	}
	return min(opt.Affinity+1, runMax)
}

// claimArg returns the claim scripts' PerHost argument for opt: with the
// run size behind a slash when it is more than one (prelude.lua,
// setClaim).
func claimArg(opt frontier.ClaimOptions) string {
	p := strconv.Itoa(max(opt.PerHost, 1))
	if n := runSize(opt); n > 1 {
		return p + "/" + strconv.Itoa(n)
	}
	return p
}

// run is a lease of several items of one key: the first was handed out
// by the Claim that leased them, each other by a Claim of this Store
// once the key has rested after the Done of the one before. The Dones in
// between are the Store's alone (deferred): the lease ends in Redis once,
// with the Done of the last item handed out, and the items not handed out
// go back to the front of the key's queue. A process that dies mid-run
// thus leaves its items to be fetched again once it is declared dead (see
// Liveness in the package documentation), as for a lease of one.
//
// A run goes on only while Redis answers: a Done is held back only once a
// request the Store sent after the item was handed out came back (the
// page's links, mostly; on a cluster a request of the run's shard; if
// none did, the Done asks for the shard's tail alone, in a batch with
// the calls waiting: probe), and no reply said the shard's Redis
// restarted or failed over since the run began. A process that lost
// Redis thus stops after the request under way, and one whose lease a
// failover lost hands out one item more at most before it learns of it.
type run struct {
	sh    *shard
	key   string
	token uint64
	items [][]byte // encoded, after the first
	next  int      // the index in items of the next to hand out
	mark  uint64   // the last request made before the item out was handed out (request.seq)
	// keep is how long a lease an item is handed out with, at least: the
	// lease the Claim asked for (the run's is a quarter longer); mem is,
	// instead, the member whose run it is: its items are handed out while
	// the member may start requests (Store.alive).
	keep time.Duration
	mem  int64
	// done is the deferred Done of the item handed out last, nil while it
	// is out; stop says the run ends at the next Done (GiveUp).
	done *deferred
	stop bool
	// revisits are the revisits of the items done before the one handed
	// out last (their Dones deferred), queued when the run ends;
	// revisiting is the host's revisit state the last of those Dones
	// gave, if any.
	revisits   []frontier.Item
	revisiting *revisit.Host
	// done are the items whose Dones the run held back, with their
	// revisits: done by this process, though Redis does not know it
	// until the run ends (lost.go).
	doneItems []lostItem
}

// deferred is a Done a run holds back: the lease it ended, at now, with
// o; the run's next item may be handed out at at, once the key rested.
type deferred struct {
	l   *frontier.Lease
	now time.Time
	o   frontier.Outcome
	at  time.Time
}

// handed returns how many of r's items were handed out, its first
// included.
func (r *run) handed() int { return 1 + r.next }

// startRun records the run of token on key of shard sh whose items
// after the first are packed in more (claimone.lua), leased for left:
// nothing if more is empty. left is the lease's µs to go, or -ID for a
// lease held while member ID beats.
func (s *Store) startRun(sh *shard, token uint64, key string, more []byte, left int64) error {
	if len(more) == 0 {
		return nil
	}
	r := &run{sh: sh, key: key, token: token, mark: s.lastReq.Load()}
	if left < 0 {
		r.mem = -left
	} else {
		r.keep = time.Duration(left) * time.Microsecond * 4 / 5
	}
	for len(more) > 0 {
		if len(more) < 4 || int(binary.BigEndian.Uint32(more)) > len(more)-4 {
			return fmt.Errorf("redisstore: claim: run of %s: %w", key, errCorrupt)
		}
		n := int(binary.BigEndian.Uint32(more))
		r.items = append(r.items, more[4:4+n])
		more = more[4+n:]
	}
	s.mu.Lock()
	if !s.closed {
		s.runs[token] = r
	}
	s.mu.Unlock()
	return nil
}

// continues reports whether the Done of l at now with o may be deferred
// — l is an item of a run with items left, the next of which would be
// handed out after o.Rest with at least a lease to go, and o neither
// closes the key nor carries a checkpoint (its revisit waits for the
// run's end) — and whether Redis answered since the item was handed out
// (see run), which it must have too. s.mu is held.
func (s *Store) continues(l *frontier.Lease, now time.Time, o frontier.Outcome) (r *run, ok, answered bool) {
	r = s.runs[l.Token]
	if r == nil || r.key != l.Key {
		return nil, false, false
	}
	last := r.sh.answered.Load()
	if s.oneServer() {
		last = s.answered.Load() // every shard's Redis
	}
	ok = !r.stop && r.done == nil && r.next < len(r.items) && !s.closed &&
		o.Pace.ClosedUntil.IsZero() && o.Checkpoint == nil &&
		(r.mem != 0 && s.alive(r.mem) || r.mem == 0 && l.Expires.Sub(readyAt(now, o)) > r.keep)
	return r, ok, last > r.mark
}

// deferDone defers the Done of l at now with o if its run continues
// (continues), and reports whether it did: the next Claim of the Store
// hands out the run's next item. If Redis did not answer since the item
// was handed out, it asks (probe) first.
func (s *Store) deferDone(ctx context.Context, sh *shard, l *frontier.Lease, now time.Time, o frontier.Outcome) (bool, error) {
	s.mu.Lock()
	_, ok, answered := s.continues(l, now, o)
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	if !answered {
		if !s.oneServer() && !s.perSlot() {
			return false, nil // a job of an earlier release: no batches
		}
		if err := s.probe(ctx, sh, now); err != nil {
			return false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok, answered := s.continues(l, now, o)
	if ok && answered {
		r.done = &deferred{l: l, now: now, o: o, at: readyAt(now, o)}
		r.doneItems = append(r.doneItems, lostItem{url: l.URL, revisit: o.Revisit})
		s.ready = append(s.ready, r)
	}
	return ok && answered, nil
}

// readyAt is when a key whose lease ended at now with o may be fetched
// again: once its rest is over.
func readyAt(now time.Time, o frontier.Outcome) time.Time {
	return base(now).Add(max(o.Rest, 0))
}

// probe asks Redis for shard sh's tail alone, in a batch with the other
// calls of the Store that wait (an Add of nothing): Redis answers, and
// says whether it restarted.
func (s *Store) probe(ctx context.Context, sh *shard, now time.Time) error {
	b, run := s.batcherOf(ctx, sh)
	w, err := b.join(ctx, batchOp{sh: sh, now: now}, run)
	if err != nil {
		return err
	}
	return w.err
}

// willDefer reports whether the Done of l at now with o would be
// deferred, Redis answering (DoneAdding adds the page's links on their
// own then).
func (s *Store) willDefer(l *frontier.Lease, now time.Time, o frontier.Outcome) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok, _ := s.continues(l, now, o)
	return ok
}

// runEnd returns what the script that ends the lease token at now needs
// of its run: how many items were handed out (1 for a lease of one), the
// revisits of those done before (finish.lua's ARGV[23], and their Dues,
// ARGV[24]), and the host's revisit state the last Done deferred gave.
func (s *Store) runEnd(token uint64, now time.Time) (handed int, revisits []byte, dues string, rv *revisit.Host) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[token]
	if r == nil {
		return 1, []byte{}, "", nil
	}
	revisits = []byte{}
	var d []string
	for i := range r.revisits {
		it := encodeItem(nil, &r.revisits[i])
		revisits = binary.BigEndian.AppendUint32(revisits, uint32(len(it)))
		revisits = append(revisits, it...)
		d = append(d, s.dueArg(r.revisits[i].Due, base(now)))
	}
	return r.handed(), revisits, strings.Join(d, ","), r.revisiting
}

// claimRun hands out the next item of the run whose Done was deferred
// and whose key rested first, at now; with none rested, it returns when
// the first will have (zero for none). A run whose member may be dead
// (Store.alive), or, with FixedLeases, whose next item would have less
// than a lease left, ends instead, with its deferred Done.
func (s *Store) claimRun(ctx context.Context, now time.Time) (*frontier.Lease, time.Time, error) {
	for {
		s.mu.Lock()
		first := -1
		for i, r := range s.ready {
			if first < 0 || r.done.at.Before(s.ready[first].done.at) {
				first = i
			}
		}
		if first < 0 || s.ready[first].done.at.After(base(now)) {
			var next time.Time
			if first >= 0 {
				next = s.ready[first].done.at
			}
			s.mu.Unlock()
			return nil, next, nil
		}
		r := s.ready[first]
		s.ready = append(s.ready[:first], s.ready[first+1:]...)
		d := r.done
		if r.mem != 0 && !s.alive(r.mem) || r.mem == 0 && d.l.Expires.Sub(base(now)) <= r.keep || r.stop {
			s.mu.Unlock()
			if err := s.end(ctx, d.l, d.now, d.o, false); err != nil && !errors.Is(err, frontier.ErrLeaseLost) {
				return nil, time.Time{}, err // lost: its items came back already
			}
			continue
		}
		raw := r.items[r.next]
		r.next++
		r.done, r.mark = nil, s.lastReq.Load()
		// The deferred Done is the run's now: what it stores waits for
		// the run's end. (Ended otherwise, it carries them itself.)
		if d.o.Revisit != nil {
			r.revisits = append(r.revisits, *d.o.Revisit)
		}
		if d.o.Revisiting != nil {
			r.revisiting = d.o.Revisiting
		}
		s.mu.Unlock()
		it, err := decodeItem(raw, r.key)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("redisstore: claim: item of %s: %w", r.key, err)
		}
		pace := d.o.Pace
		pace.NextAllowed = d.at
		rv := d.l.Revisiting
		if d.o.Revisiting != nil {
			rv = *d.o.Revisiting
		}
		exp := d.l.Expires
		if r.mem != 0 {
			exp = s.expiresAt(now, r.mem)
		}
		return &frontier.Lease{
			Item:       it,
			Pace:       pace,
			Token:      r.token,
			Expires:    exp,
			Revisiting: rv,
		}, time.Time{}, nil
	}
}

// endRunOf ends the run of key whose Done was deferred, if any, with
// that Done: ClaimKey asks for the key, which the run holds.
func (s *Store) endRunOf(ctx context.Context, key string) error {
	s.mu.Lock()
	var d *deferred
	for i, r := range s.ready {
		if r.key == key {
			d = r.done
			s.ready = append(s.ready[:i], s.ready[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	if d == nil {
		return nil
	}
	if err := s.end(ctx, d.l, d.now, d.o, false); !errors.Is(err, frontier.ErrLeaseLost) {
		return err
	}
	return nil // its items came back already
}

// stopRunsOn makes the runs of shard sh end at their next Done (on a
// single Redis, every run): a reply said its Redis restarted or failed
// over, which may have lost their leases.
func (s *Store) stopRunsOn(sh *shard) {
	one := s.oneServer()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runs {
		if one || r.sh == sh {
			r.stop = true
		}
	}
}

// stopRuns makes the runs of key end at their next Done: it was given up.
func (s *Store) stopRuns(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runs {
		if r.key == key {
			r.stop = true
		}
	}
}

// doneOf returns how many items of the run of token were done, for the
// script that drops it (Close) while an item is out: 0 for a lease of one,
// and for a run whose Dones deferred revisits, which would be lost — its
// items are fetched again instead. s.mu is held.
func (s *Store) doneOf(token uint64) int {
	r := s.runs[token]
	if r == nil || len(r.revisits) > 0 {
		return 0
	}
	return r.handed() - 1
}
