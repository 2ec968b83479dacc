package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/heedcrawl/heed/ratelimit"
)

// Open opens the Store in dir, creating it if needed. A Store found there
// is resumed: items that were leased when it stopped go back to the front of
// their queues, and every key waits a full Delay from now before it is
// claimed again. Open fails with ErrLocked if dir is open in another Store,
// naming the process that holds it.
func Open(dir string, opts Options) (*Store, error) {
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.MemTableSize <= 0 {
		opts.MemTableSize = DefaultMemTableSize
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	if opts.SeenCache == 0 {
		opts.SeenCache = DefaultSeenCache
	}
	if opts.ReadAhead == 0 {
		opts.ReadAhead = DefaultReadAhead
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = ratelimit.SystemClock{}
	}
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pebblestore: %w", err)
	}
	lock, err := lockDir(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	s := &Store{
		opts:   opts,
		dir:    dir,
		lock:   lock,
		queues: make(map[string]*queue),
		leases: make(map[uint64]lease),
		token:  uint64(opts.Clock.Now().UnixNano()),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	s.db, err = pebble.Open(dir, s.pebbleOptions(fs))
	if err == nil {
		err = s.failed()
	}
	if err == nil {
		err = s.recover(opts.Clock.Now())
	}
	if err != nil {
		if s.db != nil && !s.broken.Load() {
			s.db.Close()
		}
		if s.seen != nil {
			s.seen.free()
			s.recent.release()
		}
		lock.Close()
		return nil, fmt.Errorf("pebblestore: open %s: %w", dir, err)
	}
	go s.syncLoop()
	return s, nil
}

func (s *Store) pebbleOptions(fs vfs.FS) *pebble.Options {
	po := &pebble.Options{
		FS: fs,
		// pebble counts its memtables against the cache: without room for
		// them, no block would stay cached.
		CacheSize:          s.opts.CacheSize + 2*s.opts.MemTableSize,
		MemTableSize:       uint64(s.opts.MemTableSize),
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{log: s.opts.Logger, fail: s.fail},
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) {
				s.opts.Logger.Warn("pebblestore: background error", "err", err)
			},
			DiskSlow: func(info pebble.DiskSlowInfo) {
				s.opts.Logger.Warn("pebblestore: disk slow", "info", info.String())
			},
		},
	}
	// A bloom filter on every level, L0 included: a Get skips the tables
	// that cannot hold its key (a queue entry lies in one; a URL that got
	// past the Store's own filter is usually in none).
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	// A crawl's store is small and written all over (URLs of every host,
	// queue entries deleted as they are done): each compaction of L0
	// rewrites nearly the whole bottom level. Compacting L0 after 16 tables
	// rather than 4, not compacting for deletions alone (deleted queue
	// entries lie before their queue's head, where no read goes: claims
	// seek to the head by its sequence number), and not compressing (crawl
	// URLs compress about 3:1, but snappy cost more CPU than the extra
	// bytes) cut the Store's CPU per page by a quarter on workload (e)'s
	// shape, for about three times the disk. Reads pay for the deeper L0,
	// but few are left to pay since the seen cache and the read-ahead:
	// after 16 tables rather than 8 costs 1 CPU-s less a million pages
	// (BenchmarkCrawlShape).
	po.L0CompactionThreshold, po.L0StopWritesThreshold = 16, 48
	po.Experimental.TombstoneDenseCompactionThreshold = -1
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	if s.opts.tune != nil {
		s.opts.tune(po)
	}
	return po
}

// recover reads the state of an existing store at now: it puts the items
// leased at the stop back at the front of their queues and restores every
// key into the Schedule.
func (s *Store) recover(now time.Time) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := s.checkVersion(b); err != nil {
		return err
	}
	if v, err := s.get(keyCheckpoint); err != nil {
		return err
	} else if v != nil {
		s.checkpoint, s.durable = v, v
	}
	if err := s.loadSeen(); err != nil {
		return err
	}

	// Every key, with its record. The items leased at the stop kept their
	// entries, which lie before head: they are queued again, at the front.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixKey}, UpperBound: []byte{prefixKey + 1}})
	if err != nil {
		return err
	}
	for valid := it.First(); valid; valid = it.Next() {
		key := string(it.Key()[1:])
		r, err := decodeRecord(it.Value())
		if err == nil {
			err = s.restore(b, key, r, now)
		}
		if err != nil {
			it.Close()
			return fmt.Errorf("key %q: %w", key, err)
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	return s.commit(b, pebble.Sync, false)
}

// loadSeen builds the filter over the seen-set, sized for half as many
// URLs again as the last sync counted, and counts the URLs.
func (s *Store) loadSeen() error {
	v, err := s.get(keySeenCount)
	if err != nil {
		return err
	}
	var hint uint64
	if v != nil {
		d := decoder{b: v}
		hint = d.uvarint()
		if d.err || len(d.b) != 0 {
			return fmt.Errorf("%w: seen count %x", errCorrupt, v)
		}
	}
	s.seen = newSeenFilter(int(hint + hint/2))
	s.recent = newSeenCache(s.opts.SeenCache)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixSeen}, UpperBound: []byte{prefixSeen + 1}})
	if err != nil {
		return err
	}
	for valid := it.First(); valid; valid = it.Next() {
		h := s.seen.hashBytes(it.Key()[1:])
		s.seen.addHash(h)
		s.recent.added(h)
		s.seenCount++
	}
	s.seenGen.Store(s.seenCount)
	return it.Close()
}

// restore adds key, found with record r on opening at now, to the Store
// and its Schedule.
func (s *Store) restore(b *pebble.Batch, key string, r record, now time.Time) error {
	q := &queue{head: r.head, tail: r.tail, runDue: r.runDue}
	for seq := r.low; seq < r.head; seq++ {
		ok, err := s.has(queueKey(nil, key, seq))
		if err != nil {
			return err
		}
		if ok {
			q.outState().front = append(q.out.front, seq)
		}
	}
	dueLow := r.dueLow
	if r.dueCount > 0 {
		// Its entries from dueLow on, leased ones included, are all queued
		// now: the first is the first found.
		first, err := s.firstDueEntry(key, r.dueLow)
		if err != nil {
			return err
		}
		q.due = &dueState{first: first, n: int32(r.dueCount), next: r.dueNext}
		dueLow = first
	}
	if q.runQueued() > 0 || q.out != nil {
		s.queues[key] = q // the others are read back from their records
	}
	if low := q.low(); low != r.low || r.head != q.head || dueLow != r.dueLow {
		r.low, r.head, r.dueLow = low, q.head, dueLow
		b.Set(recordKey(nil, key), appendRecord(nil, &r), nil)
	}
	s.sched.Restore(key, r.KeyRecord, q.queued(), now)
	s.reportHead(key, q)
	return nil
}

// checkVersion makes sure the database is one of this package's, in the
// format it writes, marking a new one as such.
func (s *Store) checkVersion(b *pebble.Batch) error {
	v, err := s.get(keyVersion)
	if err != nil {
		return err
	}
	if v != nil {
		switch string(v) {
		case formatVersion:
			return nil
		case formatVersion3:
			// Format 4 without due entries: it is one now, which the
			// builds that wrote format 3 refuse from here on.
			return b.Set(keyVersion, []byte(formatVersion), nil)
		}
		return fmt.Errorf("pebblestore: the store is in format %q, not %q (nor %q, which this build reads)", v, formatVersion, formatVersion3)
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return err
	}
	empty := !it.First()
	if err := it.Close(); err != nil {
		return err
	}
	if !empty {
		return errors.New("pebblestore: the directory holds a pebble database that is not a heed store")
	}
	return b.Set(keyVersion, []byte(formatVersion), nil)
}

// Close implements frontier.Store: it makes everything durable and closes
// the database. Calls after the first return nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true // every call is refused from now on
	s.mu.Unlock()
	close(s.stop)
	<-s.done

	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	err := s.sync()
	s.closeMu.Lock() // no read is under way outside the lock, nor will be
	defer s.closeMu.Unlock()
	s.dbClosed = true
	if !s.broken.Load() { // else closing could wait for locks pebble left held
		if cerr := s.db.Close(); err == nil && s.failed() == nil {
			err = cerr
		}
	}
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	s.mu.Lock()
	s.seen.free()
	s.recent.release()
	s.mu.Unlock()
	return err
}

// pebbleLogger hands pebble's messages to a slog.Logger. pebble calls
// Fatalf on errors it cannot go on from (a failed commit, a corrupt
// table) and expects it not to return; the Store records the error as its
// failure instead, and refuses every call from then on, so that a library
// never exits its process.
type pebbleLogger struct {
	log  *slog.Logger
	fail func(error) error
}

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Warn("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	err := &fatalError{msg: "pebble: " + fmt.Sprintf(format, args...)}
	for _, a := range args {
		if e, ok := a.(error); ok {
			err.errs = append(err.errs, e)
		}
	}
	l.fail(err)
}

// fatalError is an error pebble reported through Fatalf: its message, and
// the errors among its arguments, so that errors.Is finds the cause (a
// disk's error) behind the failure.
type fatalError struct {
	msg  string
	errs []error
}

func (e *fatalError) Error() string   { return e.msg }
func (e *fatalError) Unwrap() []error { return e.errs }
