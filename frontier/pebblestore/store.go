package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

// Defaults of Options.
//
// The sizes keep a crawl of ten million URLs over 100,000 hosts under 200
// MB of peak RSS, at about 59,000 URLs/s on two cores (BenchmarkStore);
// doubling the cache and memtables cost 60 to 70 MB more there for no
// measurable speed (measured on format 1's layout). The block cache
// serves few reads since the seen cache and the read-ahead answer most:
// at 8 MB rather than 16, workload (e)'s shape costs the same CPU
// (BenchmarkCrawlShape), and a crawl's peak RSS is about 15 MB lower
// (glibc keeps freed blocks in its arenas).
const (
	DefaultCacheSize    = 8 << 20
	DefaultMemTableSize = 8 << 20
	DefaultSyncInterval = 100 * time.Millisecond
	DefaultSeenCache    = 16 << 20
	DefaultReadAhead    = 4 << 20
)

// Errors of a Store.
var (
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("pebblestore: closed")
	// ErrFailed: a write or sync failed earlier; the Store refuses every
	// call since. The error also wraps that first failure.
	ErrFailed = errors.New("pebblestore: failed")
)

// Options configure a Store. The zero value is a usable default.
type Options struct {
	// CacheSize is the size in bytes of pebble's block cache, which keeps
	// the bloom filters, indexes and recent blocks of the tables in
	// memory; zero means DefaultCacheSize.
	CacheSize int64
	// MemTableSize is the size in bytes of one memtable, the writes not
	// yet flushed to a table; pebble holds two, the one written and the
	// one being flushed (briefly more when flushes fall behind). Zero means
	// DefaultMemTableSize.
	MemTableSize int64
	// SeenCache is the most memory in bytes that the cache of the URLs
	// seen most recently may take (about 16 bytes a URL it holds): a
	// link to a URL in it is known for seen without a lookup in pebble.
	// It takes 2 MB at most while links rarely lead to pages seen. Zero
	// means DefaultSeenCache; less than zero, no cache.
	SeenCache int
	// ReadAhead is the most memory in bytes that the items held ahead of
	// their queues' heads may take: a claim that reads its item from
	// pebble reads the next items of its key's queue too, in one seek,
	// and an item added to a short queue is held as it is added, so that
	// most claims read nothing. Zero means DefaultReadAhead; less than
	// zero, none.
	ReadAhead int
	// SyncInterval is how long a write may wait before a background sync
	// makes it durable, together with every other write of the interval:
	// one fsync per interval rather than per operation. Zero means
	// DefaultSyncInterval.
	SyncInterval time.Duration
	// BeforeSync, if not nil, is called before each sync: a crawl flushes
	// and syncs its output there, so that the output is never behind the
	// checkpoint that the sync makes durable. While it runs, and until the
	// sync ends, Done and Requeue calls carrying a Checkpoint wait; it must
	// therefore not call the Store, nor wait for a goroutine that is in
	// such a call. If it fails, the Store fails.
	BeforeSync func() error
	// Logger receives pebble's messages (Info as Debug, errors as Warn)
	// and the Store's failures; nil discards them.
	Logger *slog.Logger
	// Clock is the clock Open restores keys by (each waits a full Delay
	// from the reopening); nil means real time. The Store's methods take
	// the caller's time.
	Clock ratelimit.Clock
	// FS is the file system the Store lives on; nil means the operating
	// system's. Tests pass vfs.NewCrashableMem to simulate a crash, or an
	// errorfs to inject disk errors. Only on the operating system's file
	// system does the lock name its holder.
	FS vfs.FS

	// tune, if not nil, changes pebble's options before Open: for the
	// package's benchmarks.
	tune func(*pebble.Options)
}

// Store is a frontier.Store on disk, in a pebble database: a crawl that
// stops, however it stops, resumes from what was made durable. See the
// package documentation for the layout and the durability rules. A Store
// is safe for concurrent use; its operations are serialised.
type Store struct {
	db   *pebble.DB
	opts Options
	dir  string
	lock io.Closer

	failure atomic.Pointer[failedError]
	broken  atomic.Bool // pebble panicked: the database is left as it is

	// syncMu serialises syncs; cpMu holds back Done calls carrying a checkpoint
	// while BeforeSync and the sync that follows it run.
	syncMu sync.Mutex
	cpMu   sync.Mutex

	// Lookups that need no state in memory (a claimed item's entry, a URL
	// on disk) are made outside mu, holding closeMu shared; Close takes it
	// whole before closing pebble and freeing the filter.
	closeMu  sync.RWMutex
	dbClosed bool // under closeMu

	mu         sync.Mutex
	closed     bool
	sched      frontier.Schedule
	queues     map[string]*queue
	leases     map[uint64]lease
	token      uint64
	touched    []string // the keys an Add queued items of
	touchedSet map[string]struct{}
	dirty      bool   // written since the last sync began
	writes     uint64 // batches applied
	synced     uint64 // of those, how many a sync made durable
	checkpoint []byte // of the last Done applied
	applied    bool   // an Done has carried a checkpoint since Open
	durable    []byte // of the last Done made durable
	scratch    []byte
	inBatch    map[string]struct{}
	seen       *seenFilter // over the seen-set
	recent     *seenCache  // of the URLs seen most recently
	aheadBytes int         // held by the queues' read-aheads
	seenCount  uint64
	seenGen    atomic.Uint64 // seenCount, for readers outside mu

	wake chan struct{} // a write is waiting for the sync loop
	stop chan struct{}
	done chan struct{}
}

// queue is the Store's state of one key with queued items or leases. Its
// queued items are the entries of out.front, then those from head to
// tail-1; its leased items keep their entries, at the sequence numbers in
// out.leased, until they are done or released. It is kept small: the
// Store holds one for every key with work.
type queue struct {
	head, tail uint64
	out        *outState  // nil while nothing is out or released, and nothing carried
	ahead      *readAhead // nil while no entry is held ahead of head
}

// outState is what a key has out, and what its record carries: few keys
// have any.
type outState struct {
	front     []uint64 // released items, in order, before head
	leased    []uint64 // the items out
	keyLeases int      // ClaimKey's leases out
	// carry is what the key's record on disk counts beyond what the
	// Schedule does: the Schedule forgets idle keys and their counters,
	// while the records on disk add up to the crawl's totals.
	carry counters
}

type counters struct{ scheduled, sitemaps, sitemapURLs int32 }

// lease is what the Store remembers of a lease in memory: its key, and
// the sequence number of its item's entry (ClaimKey's have none).
type lease struct {
	key  string
	seq  uint64
	item bool
}

// queued is the number of items queued.
func (q *queue) queued() int { return len(q.front()) + int(q.tail-q.head) }

// front returns the sequence numbers of the released items.
func (q *queue) front() []uint64 {
	if q.out == nil {
		return nil
	}
	return q.out.front
}

// outState returns q.out, making it if needed.
func (q *queue) outState() *outState {
	if q.out == nil {
		q.out = new(outState)
	}
	return q.out
}

// tidy drops q.out once it holds nothing.
func (q *queue) tidy() {
	if o := q.out; o != nil && len(o.front) == 0 && len(o.leased) == 0 && o.keyLeases == 0 && o.carry == (counters{}) {
		q.out = nil
	}
}

// low is the first entry that may hold an item: what a record tells
// recovery to look from.
func (q *queue) low() uint64 {
	low := q.head
	if o := q.out; o != nil {
		if len(o.front) > 0 {
			low = min(low, o.front[0])
		}
		for _, seq := range o.leased {
			low = min(low, seq)
		}
	}
	return low
}

// unlease forgets the lease of the item at seq.
func (q *queue) unlease(seq uint64) {
	if o := q.out; o != nil {
		if i := slices.Index(o.leased, seq); i >= 0 {
			o.leased = slices.Delete(o.leased, i, i+1)
		}
	}
}

// failedError is the error of a failed Store, wrapping ErrFailed and the
// first failure.
type failedError struct{ err error }

func (e *failedError) Error() string   { return "pebblestore: failed: " + e.err.Error() }
func (e *failedError) Unwrap() []error { return []error{ErrFailed, e.err} }

var (
	_ frontier.Store     = (*Store)(nil)
	_ frontier.DoneAdder = (*Store)(nil)
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
	q := &queue{head: r.head, tail: r.tail}
	for seq := r.low; seq < r.head; seq++ {
		ok, err := s.has(queueKey(nil, key, seq))
		if err != nil {
			return err
		}
		if ok {
			q.outState().front = append(q.out.front, seq)
		}
	}
	if q.queued() > 0 {
		s.queues[key] = q
	}
	if low := q.low(); low != r.low || r.head != q.head {
		r.low, r.head = low, q.head
		b.Set(recordKey(nil, key), appendRecord(nil, &r), nil)
	}
	s.sched.Restore(key, r.KeyRecord, q.queued(), now)
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
		if string(v) != formatVersion {
			return fmt.Errorf("pebblestore: the store is in format %q, not %q", v, formatVersion)
		}
		return nil
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

// get returns a copy of the value under k, or nil if there is none.
func (s *Store) get(k []byte) ([]byte, error) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v = bytes.Clone(v)
	if v == nil {
		v = []byte{}
	}
	return v, closer.Close()
}

// has reports whether k is set.
func (s *Store) has(k []byte) (bool, error) {
	_, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

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

// queue returns the state of key's queue, reading what the key's record
// counts if the Store has none in memory.
func (s *Store) queue(key string) (*queue, error) {
	if q := s.queues[key]; q != nil {
		return q, nil
	}
	q := &queue{head: seqStart, tail: seqStart}
	v, err := s.get(recordKey(s.scratch[:0], key))
	if err != nil {
		return nil, s.fail(err)
	}
	if v != nil {
		r, err := decodeRecord(v)
		if err != nil {
			return nil, s.fail(fmt.Errorf("record of %q: %w", key, err))
		}
		// The queue is empty (the Store forgets only empty queues); it
		// goes on from where it ended.
		q.head, q.tail = r.tail, r.tail
		now := s.sched.Record(key)
		if c := (counters{
			scheduled:   int32(max(r.Scheduled-now.Scheduled, 0)),
			sitemaps:    int32(max(r.Sitemaps-now.Sitemaps, 0)),
			sitemapURLs: int32(max(r.SitemapURLs-now.SitemapURLs, 0)),
		}); c != (counters{}) {
			q.outState().carry = c
		}
	}
	s.queues[key] = q
	return q, nil
}

// setRecord writes key's record into b.
func (s *Store) setRecord(b *pebble.Batch, key string, q *queue) {
	r := record{KeyRecord: s.sched.Record(key), low: q.low(), head: q.head, tail: q.tail}
	if o := q.out; o != nil {
		r.Scheduled += int(o.carry.scheduled)
		r.Sitemaps += int(o.carry.sitemaps)
		r.SitemapURLs += int(o.carry.sitemapURLs)
	}
	s.scratch = recordKey(s.scratch[:0], key)
	n := len(s.scratch)
	s.scratch = appendRecord(s.scratch, &r)
	b.Set(s.scratch[:n], s.scratch[n:], nil)
}

// forgetIfIdle drops key's state once nothing is queued or leased: memory
// follows the keys with work.
func (s *Store) forgetIfIdle(key string, q *queue) {
	if q.tidy(); q.queued() == 0 && q.out == nil {
		delete(s.queues, key)
	}
}

// Add implements frontier.Store. It marks each new URL seen and queues it,
// with its key's record, in one batch.
func (s *Store) Add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pre, gen, err := s.seenBefore(batch)
	if err != nil {
		return nil, s.readFailed(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	refused, err := s.addTo(b, batch, lim, "", pre, gen)
	if err != nil {
		return nil, err
	}
	if err := s.apply(b); err != nil {
		return nil, err
	}
	s.addedSeen(batch, refused)
	return refused, nil
}

// DoneAdding implements frontier.DoneAdder: Add and Done in one batch, which
// writes the record of the page's own key, where most of its links go,
// once.
func (s *Store) DoneAdding(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	pre, gen, err := s.seenBefore(batch)
	if err != nil {
		return nil, s.readFailed(err)
	}
	unlock, err := s.lockToEnd(ctx, o)
	if err != nil {
		return nil, err
	}
	defer unlock()
	b := s.db.NewBatch()
	defer b.Close()
	ls, held := s.leases[l.Token]
	held = held && ls.key == l.Key
	skip := ""
	if held {
		skip = l.Key // endTo writes its record
	}
	refused, err := s.addTo(b, batch, lim, skip, pre, gen)
	if err != nil {
		return nil, err
	}
	var ackErr error
	var q *queue
	if held {
		if q, ackErr = s.endTo(b, l, ls, now, o, false); q == nil {
			return nil, ackErr // the Store failed
		}
	} else {
		ackErr = frontier.ErrLeaseLost
	}
	if err := s.apply(b); err != nil {
		return nil, err
	}
	s.addedSeen(batch, refused)
	if q != nil {
		s.forgetIfIdle(l.Key, q)
	}
	return refused, ackErr
}

// addTo writes into b what Add does for batch, and changes the Store's
// state in memory accordingly, but for the filter over the seen-set, which
// addedSeen updates once b is applied. It writes no record for key skip.
// pre and gen are seenBefore's answer: the URLs it found seen are, and
// those it did not need no second look while no URL was added since.
// s.mu is held.
func (s *Store) addTo(b *pebble.Batch, batch []frontier.Item, lim frontier.Limits, skip string, pre []bool, gen uint64) ([]error, error) {
	trust := gen == s.seenCount
	refused := make([]error, len(batch))
	touched := s.touched[:0]
	clear(s.inBatch)
	for i := range batch {
		it := &batch[i]
		if err := s.sched.Admit(it, lim); err != nil {
			refused[i] = err
			continue
		}
		seen := pre[i]
		if !seen && len(batch) > 1 && s.inBatch != nil {
			_, seen = s.inBatch[it.URL]
		}
		if !seen && !trust {
			if h := s.seen.hash(it.URL); s.seen.mayContainHash(h) {
				if seen = s.recent.contains(h); seen {
					s.recent.answered(1)
				} else {
					var err error
					if seen, err = s.has(seenKey(s.scratch[:0], it.URL)); err != nil {
						return nil, s.fail(err)
					}
					if seen {
						s.recent.found(h)
					}
				}
			}
		}
		if seen {
			refused[i] = frontier.ErrSeen
			continue
		}
		if len(batch) > 1 {
			if s.inBatch == nil {
				s.inBatch = make(map[string]struct{})
			}
			s.inBatch[it.URL] = struct{}{}
		}
		q, err := s.queue(it.Key)
		if err != nil {
			return nil, err
		}
		b.Set(seenKey(s.scratch[:0], it.URL), nil, nil)
		s.scratch = queueKey(s.scratch[:0], it.Key, q.tail)
		n := len(s.scratch)
		s.scratch = appendItem(s.scratch, it)
		b.Set(s.scratch[:n], s.scratch[n:], nil)
		q.tail++
		s.keepAhead(q, s.scratch[n:])
		s.sched.Queue(it, lim)
		touched = s.touch(touched, it.Key)
	}
	for _, key := range touched {
		if key != skip {
			s.setRecord(b, key, s.queues[key])
		}
	}
	clear(touched)
	s.touched = touched[:0]
	if len(s.touchedSet) > 1024 {
		s.touchedSet = nil // a huge batch's map is not kept
	}
	clear(s.touchedSet)
	if len(s.inBatch) > 1024 {
		s.inBatch = nil // a huge batch's map is not kept
	}
	return refused, nil
}

// addedSeen counts the URLs of batch that were added, and adds them to the
// filter over the seen-set, once their batch is applied. s.mu is held.
func (s *Store) addedSeen(batch []frontier.Item, refused []error) {
	for i := range batch {
		if refused[i] == nil {
			s.seenCount++
			h := s.seen.hash(batch[i].URL)
			s.seen.addHash(h)
			s.recent.added(h)
		}
	}
	s.seenGen.Store(s.seenCount)
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

// touch adds key to touched, the keys an Add queued items of, once.
func (s *Store) touch(touched []string, key string) []string {
	if n := len(touched); n > 0 && touched[n-1] == key {
		return touched // the common case: links to the page's own host
	}
	if len(touched) < 16 {
		if slices.Contains(touched, key) {
			return touched
		}
		return append(touched, key)
	}
	if s.touchedSet == nil {
		s.touchedSet = make(map[string]struct{})
	}
	if len(s.touchedSet) == 0 {
		for _, k := range touched {
			s.touchedSet[k] = struct{}{}
		}
	}
	if _, ok := s.touchedSet[key]; ok {
		return touched
	}
	s.touchedSet[key] = struct{}{}
	return append(touched, key)
}

// Claim implements frontier.Store. It writes nothing: the item keeps its
// entry, before its queue's head, until the lease ends, and goes back to
// the front of the queue if the process stops first.
func (s *Store) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	if err := ctx.Err(); err != nil {
		return frontier.Claim{}, err
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return frontier.Claim{}, err
	}
	var key string
	var host ratelimit.HostState
	var givenUp bool
	var q *queue
	var seq, readTo uint64
	var held []byte // the item's entry, held ahead of its queue's head
	for {
		var next time.Time
		var ok bool
		key, host, next, ok = s.sched.Claim(now, opt)
		if !ok {
			idle := s.sched.Idle()
			s.mu.Unlock()
			return frontier.Claim{Next: next, Idle: idle}, nil
		}
		q = s.queues[key]
		if q == nil || q.queued() == 0 {
			// The Schedule counts items the Store does not have: a bug,
			// which must not spin Claim.
			s.sched.End(key, now, frontier.Outcome{Pace: host}, false)
			s.sched.Lost(key)
			s.opts.Logger.Error("pebblestore: scheduled key has no queued item", "key", key)
			continue
		}
		givenUp = s.sched.GivenUp(key)
		seq = q.head
		o := q.outState()
		if len(o.front) > 0 {
			seq = o.front[0]
			o.front = o.front[1:]
		} else {
			q.head++
			if v, ok := s.takeAhead(q); ok {
				held = v
			} else {
				readTo = s.planAhead(q, seq)
			}
		}
		o.leased = append(o.leased, seq)
		break
	}
	s.token++
	token := s.token
	s.leases[token] = lease{key: key, seq: seq, item: true}
	s.mu.Unlock()
	// The entry is read outside the lock: it stays as it is until the
	// lease ends, which only its holder can do.
	var item frontier.Item
	var err error
	switch {
	case held != nil:
		item, err = decodeItem(held, key)
	case readTo > seq+1:
		item, err = s.claimRead(key, q, seq, readTo)
	default:
		err = s.read(queueKey(nil, key, seq), func(v []byte) (err error) {
			item, err = decodeItem(v, key)
			return err
		})
	}
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return frontier.Claim{}, s.readFailed(err)
		}
		return frontier.Claim{}, s.fail(fmt.Errorf("queue of %q at %d: %w", key, seq, err))
	}
	return frontier.Claim{Lease: &frontier.Lease{Item: item, Pace: host, Token: token, GivenUp: givenUp}}, nil
}

// read calls f with the value under k, outside s.mu: pebble's reads are
// safe beside its writes. It fails with ErrClosed once Close has begun
// closing pebble.
func (s *Store) read(k []byte, f func(v []byte) error) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.dbClosed || s.broken.Load() {
		return ErrClosed
	}
	v, closer, err := s.db.Get(k)
	if err != nil {
		return err
	}
	defer closer.Close()
	return f(v)
}

// seenBefore reports, for each URL of batch, whether it was seen before:
// looked up outside s.mu, in the filter and, for those it lets by, in the
// cache of recent URLs, then on disk. A URL seen stays seen, so a true
// answer holds; a false one must be checked again under the lock only if
// URLs were added since (gen, the count of URLs seen when the lookups
// began, says).
func (s *Store) seenBefore(batch []frontier.Item) (seen []bool, gen uint64, err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.dbClosed || s.broken.Load() {
		return nil, 0, ErrClosed
	}
	gen = s.seenGen.Load()
	seen = make([]bool, len(batch))
	hits := 0
	defer func() { s.recent.answered(hits) }()
	for i := range batch {
		h := s.seen.hash(batch[i].URL)
		if !s.seen.mayContainHash(h) {
			continue
		}
		if s.recent.contains(h) {
			seen[i] = true
			hits++
			continue
		}
		_, closer, err := s.db.Get(seenKey(nil, batch[i].URL))
		switch {
		case err == nil:
			closer.Close()
			seen[i] = true
			s.recent.found(h)
		case !errors.Is(err, pebble.ErrNotFound):
			return nil, 0, err
		}
	}
	return seen, gen, nil
}

// ClaimKey implements frontier.Store. A key lease holds no item: nothing
// is written until it ends.
func (s *Store) ClaimKey(ctx context.Context, key string, now time.Time, opt frontier.ClaimOptions) (*frontier.Lease, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, time.Time{}, err
	}
	host, next, ok := s.sched.ClaimKey(key, now, opt)
	if !ok {
		return nil, next, nil
	}
	q, err := s.queue(key)
	if err != nil {
		return nil, time.Time{}, err
	}
	q.outState().keyLeases++
	s.token++
	s.leases[s.token] = lease{key: key}
	return &frontier.Lease{Item: frontier.Item{Key: key}, Pace: host, Token: s.token}, time.Time{}, nil
}

// Done implements frontier.Store: the item's entry goes, and the key's
// record and the checkpoint change, in one batch.
func (s *Store) Done(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	return s.end(ctx, l, now, o, false)
}

// Requeue implements frontier.Store: the item's entry takes what it has
// been through and joins the front of its queue, and the key's record
// changes, in one batch.
func (s *Store) Requeue(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	return s.end(ctx, l, now, o, true)
}

func (s *Store) end(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, requeue bool) error {
	unlock, err := s.lockToEnd(ctx, o)
	if err != nil {
		return err
	}
	defer unlock()
	ls, ok := s.leases[l.Token]
	if !ok || ls.key != l.Key {
		return frontier.ErrLeaseLost
	}
	b := s.db.NewBatch()
	defer b.Close()
	q, err := s.endTo(b, l, ls, now, o, requeue)
	if q == nil {
		return err // the Store failed
	}
	if err := s.apply(b); err != nil {
		return err
	}
	s.forgetIfIdle(l.Key, q)
	return err
}

// lockToEnd takes the locks that ending a lease with o needs — cpMu too
// when o carries a checkpoint and a BeforeSync holds such ends back — and
// returns how to release them, or why the Store cannot be used.
func (s *Store) lockToEnd(ctx context.Context, o frontier.Outcome) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cp := o.Checkpoint != nil && s.opts.BeforeSync != nil
	if cp {
		s.cpMu.Lock()
	}
	s.mu.Lock()
	unlock = func() {
		s.mu.Unlock()
		if cp {
			s.cpMu.Unlock()
		}
	}
	if err := s.usable(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// endTo writes into b what ending lease l (held as ls) does, and changes
// the Store's state in memory accordingly. It returns the key's queue, or
// nil and an error if the Store failed. s.mu is
// held.
func (s *Store) endTo(b *pebble.Batch, l *frontier.Lease, ls lease, now time.Time, o frontier.Outcome, requeue bool) (*queue, error) {
	delete(s.leases, l.Token)
	q := s.queues[l.Key]
	if q == nil { // cannot be: a key with a lease keeps its state
		return nil, s.fail(fmt.Errorf("lease of %q without its queue", l.Key))
	}
	requeue = requeue && ls.item
	if !ls.item {
		q.outState().keyLeases--
	} else {
		q.unlease(ls.seq)
		s.scratch = queueKey(s.scratch[:0], l.Key, ls.seq)
		if requeue {
			// In place, before head: the front holds the released items
			// in the order of their entries, the order they would have
			// after a crash.
			n := len(s.scratch)
			s.scratch = appendItem(s.scratch, &l.Item)
			b.Set(s.scratch[:n], s.scratch[n:], nil)
			o := q.outState()
			i, _ := slices.BinarySearch(o.front, ls.seq)
			o.front = slices.Insert(o.front, i, ls.seq)
		} else {
			b.Delete(s.scratch, nil)
		}
	}
	s.sched.End(l.Key, now, o, requeue)
	s.setRecord(b, l.Key, q)
	if o.Checkpoint != nil {
		// An ack that wrote nothing to the caller's output (a URL
		// disallowed, a robots.txt) carries the checkpoint of the ack
		// before it, which is written already.
		if !bytes.Equal(o.Checkpoint, s.checkpoint) {
			cp := bytes.Clone(o.Checkpoint)
			b.Set(keyCheckpoint, cp, nil)
			s.checkpoint = cp
		}
		s.applied = true
	}
	return q, nil
}

// GiveUp implements frontier.Store: the key's record is marked given up in
// one batch; its queued items stay, to be handed out and done one by one,
// each with the checkpoint of its report.
func (s *Store) GiveUp(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	q, err := s.queue(key)
	if err != nil {
		return err
	}
	s.sched.GiveUp(key)
	b := s.db.NewBatch()
	defer b.Close()
	s.setRecord(b, key, q)
	if err := s.apply(b); err != nil {
		return err
	}
	s.forgetIfIdle(key, q)
	return nil
}

// Host implements frontier.Store.
func (s *Store) Host(ctx context.Context, key string) (ratelimit.HostState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return ratelimit.HostState{}, err
	}
	return s.sched.Host(key), nil
}

// Counts implements frontier.Store.
func (s *Store) Counts(ctx context.Context, now time.Time) (frontier.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return frontier.Counts{}, err
	}
	return s.sched.Counts(now), nil
}

// Meta implements frontier.Store.
func (s *Store) Meta(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	v, err := s.get(metaKey(nil, name))
	if err != nil {
		return nil, s.fail(err)
	}
	return v, nil
}

// SetMeta implements frontier.Store. The value is durable when SetMeta
// returns.
func (s *Store) SetMeta(ctx context.Context, name string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	err := s.usable()
	if err == nil {
		b := s.db.NewBatch()
		b.Set(metaKey(nil, name), value, nil)
		err = s.apply(b)
		b.Close()
	}
	w := s.writes
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.syncTo(w)
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
// acks for 2 ms).
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
