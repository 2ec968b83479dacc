package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// failedError is the error of a failed Store, wrapping ErrFailed and the
// first failure.
type failedError struct{ err error }

func (e *failedError) Error() string   { return "pebblestore: failed: " + e.err.Error() }
func (e *failedError) Unwrap() []error { return []error{ErrFailed, e.err} }

// fail records err as the Store's failure if it is the first, and returns
// the Store's failure.
func (s *Store) fail(err error) error {
	if s.failure.CompareAndSwap(nil, &failedError{err}) {
		s.opts.Logger.Error("pebblestore: failed", "dir", s.dir, "err", err)
	}
	return s.failure.Load()
}

// failed returns the Store's failure, or nil.
func (s *Store) failed() error {
	if f := s.failure.Load(); f != nil {
		return f
	}
	return nil
}

// usable returns why the Store cannot be used, or nil. s.mu is held.
func (s *Store) usable() error {
	if s.closed {
		return ErrClosed
	}
	return s.failed()
}

// apply commits b, without waiting for it to be durable: the sync loop
// makes it so. s.mu is held, so that batches commit in the order the
// Store's state in memory changed.
func (s *Store) apply(b *pebble.Batch) error {
	if b.Empty() {
		return nil
	}
	if err := s.commit(b, pebble.NoSync, false); err != nil {
		return s.fail(err)
	}
	// pebble reports some failed commits through its logger only (see
	// pebbleLogger.Fatalf).
	if err := s.failed(); err != nil {
		return err
	}
	s.writes++
	if !s.dirty {
		s.dirty = true
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// commit applies b with opts. pebble panics when its log cannot be
// written (it is made for a process that dies with its disk); the panic
// is the Store's failure instead, and the database is not touched again,
// as pebble may have left its commit pipeline locked.
// With noSyncWait (and opts.Sync), it returns once b is applied, and
// b.SyncWait waits for the disk.
func (s *Store) commit(b *pebble.Batch, opts *pebble.WriteOptions, noSyncWait bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.broken.Store(true)
			perr, ok := r.(error)
			if !ok {
				perr = fmt.Errorf("%v", r)
			}
			err = fmt.Errorf("pebble panicked: %w", perr)
		}
	}()
	if noSyncWait {
		return s.db.ApplyNoSyncWait(b, opts)
	}
	return s.db.Apply(b, opts)
}

// readFailed is the error of a read outside the lock: ErrClosed as it
// is, any other the Store's failure.
func (s *Store) readFailed(err error) error {
	if errors.Is(err, ErrClosed) {
		if f := s.failed(); f != nil {
			return f
		}
		return err
	}
	return s.fail(err)
}

// Checkpoint implements frontier.Store: the checkpoint of the last Done
// that is durable, or nil. It first makes everything durable, as Sync: the
// last Done applied is then the last durable.
func (s *Store) Checkpoint(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.Sync(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.durable), nil
}

// Sync makes everything the Store has done durable now, instead of at the
// next background sync, calling Options.BeforeSync first.
func (s *Store) Sync() error {
	s.mu.Lock()
	w := s.writes
	s.mu.Unlock()
	return s.syncTo(w)
}

// syncTo makes the first w writes durable now, unless a sync has. Calls
// that come together share a sync: those that wait for one under way find
// their writes made durable by it, or by the next, which makes the writes
// of all of them durable at once (SetMeta's robots.txt entries at a
// crawl's start made 2,000 syncs on workload (e), each holding back the
// Done calls for 2 ms).
func (s *Store) syncTo(w uint64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	closed, done := s.closed, s.synced >= w
	s.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case done:
		return s.failed()
	}
	return s.sync()
}

// sync makes what was written durable; s.syncMu is held, and the database
// is open.
func (s *Store) sync() error {
	if s.opts.BeforeSync != nil {
		s.cpMu.Lock()
		defer s.cpMu.Unlock()
	}
	s.mu.Lock()
	dirty := s.dirty
	if !dirty { // the last sync, which has ended, made every write durable
		s.synced = s.writes
	}
	s.mu.Unlock()
	if err := s.failed(); err != nil || !dirty {
		return err
	}
	if bs := s.opts.BeforeSync; bs != nil {
		if err := bs(); err != nil {
			return s.fail(fmt.Errorf("BeforeSync: %w", err))
		}
	}
	// The sync is committed like every write, under s.mu, but waited for
	// outside it: operations go on meanwhile, and what they write is made
	// durable by the next sync, or by this one.
	s.mu.Lock()
	cp, applied, upTo := s.checkpoint, s.applied, s.writes
	s.dirty = false
	b := s.db.NewBatch()
	// The count of URLs seen only sizes the filter on Open, which counts
	// them again: written here, it costs one write a sync, not one an Add.
	b.Set(keySeenCount, binary.AppendUvarint(nil, s.seenCount), nil)
	err := s.commit(b, pebble.Sync, true)
	s.mu.Unlock()
	if err != nil {
		return s.fail(err) // b is left to the garbage collector, in whatever state pebble left it
	}
	err = b.SyncWait()
	b.Close()
	if err != nil {
		return s.fail(err)
	}
	if err := s.failed(); err != nil {
		return err
	}
	s.mu.Lock()
	s.synced = max(s.synced, upTo)
	if applied {
		s.durable = cp
	}
	s.mu.Unlock()
	return nil
}

// syncLoop is the group commit: after a write, it waits SyncInterval for
// more, then syncs them all at once.
func (s *Store) syncLoop() {
	defer close(s.done)
	t := time.NewTimer(s.opts.SyncInterval)
	t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		t.Reset(s.opts.SyncInterval)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
		}
		if s.Sync() != nil {
			return // failed or closed: nothing more to sync
		}
	}
}
