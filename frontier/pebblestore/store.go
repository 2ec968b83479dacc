package pebblestore

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
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
	applied    bool   // a Done has carried a checkpoint since Open
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

var (
	_ frontier.Store       = (*Store)(nil)
	_ frontier.DoneAdder   = (*Store)(nil)
	_ frontier.QueueEditor = (*Store)(nil)
	_ frontier.KeyCounter  = (*Store)(nil)
)
