package redisstore

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
)

// Defaults of Options.
const (
	// DefaultPoll is how often a waiting Frontier asks a Store again by
	// default: other processes change the queues without telling it.
	DefaultPoll = 100 * time.Millisecond
	// DefaultRetryFor bounds by default how long a Store retries an
	// operation that failed for a transient reason: long enough for Redis
	// to restart or fail over.
	DefaultRetryFor = 30 * time.Second
)

// closeTimeout bounds how long Close spends ending the Store's leases.
const closeTimeout = 5 * time.Second

// fullRecheck is how far ahead ClaimKey points, at least, when every lease
// slot of a key is taken: the slot frees at a time no one knows yet.
const fullRecheck = 100 * time.Millisecond

// forgetBatch bounds how many memo entries one request clears, and
// forgetMin is how many a request waits for before it clears them: one
// HDEL per forgetMin requests of a shard instead of one per request.
const forgetBatch, forgetMin = 256, 16

// memoRefresh is how often, at most, a request moves the expiry of the
// Store's memo in its shard (MEMO_TTL, 10 minutes, in prelude.lua) later,
// besides when it clears memos: only a Store that stopped leaves a memo
// to expire.
const memoRefresh = time.Minute

var (
	// ErrStateLost: a job the Store had used is gone from Redis — it
	// restarted without persistence, or the keys were deleted. Going on
	// would end the crawl as if it were done.
	ErrStateLost = errors.New("redisstore: the job's state is gone from Redis")
	// ErrJob: New got a job name that cannot name a job's keys.
	ErrJob = errors.New("redisstore: invalid job name")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("redisstore: closed")
	// ErrURL is wrapped by the errors of Dial and Open for a URL that
	// cannot work: one that does not parse, or a database other than 0
	// on a Redis Cluster.
	ErrURL = errors.New("redisstore: bad Redis URL")
)

// Options configure a Store. The zero value suits a distributed crawl.
type Options struct {
	// ExactSeen makes the seen-set hold URLs instead of 64-bit
	// fingerprints: no false duplicates, more memory. Every Store of a job
	// must agree.
	ExactSeen bool
	// CallerClock makes the Store decide on the times its caller passes
	// (Claim's now, ...) instead of Redis's clock: for one process, or
	// tests on a controlled clock. Lease expiry then counts on the
	// callers' clocks too.
	CallerClock bool
	// Poll is what PollInterval returns; zero means DefaultPoll.
	Poll time.Duration
	// RetryFor bounds how long an operation that failed for a transient
	// reason (connection lost or refused, Redis loading or failing over)
	// is retried before its error is returned, on top of the retries of
	// the client (redis.Options.MaxRetries); zero means DefaultRetryFor,
	// negative no retries beyond the client's own.
	RetryFor time.Duration
	// Checkpoint names the checkpoint Done stores and Checkpoint returns:
	// give each process that keeps its own output its own name.
	Checkpoint string
	// FixedLeases makes the Store's leases expire ClaimOptions.Lease after
	// they were granted (a run's a quarter later), as before a Store was
	// a member of its job with a heartbeat: for tests of expiry on a
	// controlled clock. By default a lease lasts while its Store beats,
	// and ClaimOptions.Lease is the liveness timeout (see Liveness).
	FixedLeases bool
	// Log, if not nil, is told of what the Store does on its own: a
	// heartbeat that failed, a process presumed dead that joins again.
	Log *slog.Logger
	// Shards is the number of shards of a job this Store starts (zero:
	// ShardsPerPrimary for each primary of a cluster, one on a single
	// Redis; at most MaxShards); a job keeps the number it was started
	// with, and spreads over at most that many primaries. Give a job
	// that is to grow onto more primaries than it starts on, or to move
	// from a single Redis into a cluster, the shards it will need.
	Shards int
}

// Store is a frontier.Store in Redis, shared by every Store of the same job
// on the same Redis. It is safe for concurrent use. Make one with New or
// Open.
type Store struct {
	c       redis.UniversalClient
	own     bool // Close closes c
	job     string
	prefix  string // heed:{job}:, the job's own slot
	id      [8]byte
	opt     Options
	seen    string // what the seen-set holds: "hash" or "url"
	lastReq atomic.Uint64
	// answered is the latest request whose reply came, by number
	// (request.seq), whichever its shard.
	answered atomic.Uint64
	lastNow  atomic.Int64 // the latest caller's now, µs, for CallerClock
	// noFunctions: the server refused FCALL (Redis 6), so the scripts
	// loaded as functions run by EVALSHA (function).
	noFunctions atomic.Bool
	cpStamp     atomic.Int64 // the stamp of the last checkpoint stored
	// verifiedAt is when the Store last read every shard (verify), ns.
	verifiedAt atomic.Int64
	verifyMu   sync.Mutex
	verifying  *verifyCall // the read of every shard under way, if any
	// live is the Store's membership of its job (liveness.go).
	live liveness

	setupMu sync.Mutex
	shards  []*shard // set once by setup
	view    *view
	ops     batcher[batchOp] // Claims and ends of leases waiting for a batch, on a single Redis
	// slotOps are the batchers of the shards on a cluster, made once
	// (slotOpsOnce): a batch there enters one slot.
	slotOps     []batcher[batchOp]
	slotOpsOnce sync.Once
	// rounds are the script calls waiting for a pipelined round, on a
	// cluster (round.go).
	rounds batcher[roundOp]
	gate   roundGate // the batches' waits for the rounds (round.go)
	// nodes are the batchers of a cluster's nodes (node.go).
	nodes nodeBatchers
	// seenCache holds URLs known seen (nil with ExactSeen: a
	// fingerprint would let two URLs collide).
	seenCache *seenCache
	reserved  bool // the job's page reservations are counted

	mu     sync.Mutex
	held   map[uint64]string         // the leases granted to this Store: token → key
	runs   map[uint64]*run           // those of several items (run.go), by token
	ready  []*run                    // the runs whose next item may be handed out, in order
	lost   map[string]*frontier.Item // items done under leases lost, by URL, with their revisits (lost.go)
	closed bool
}

var (
	_ frontier.Store      = (*Store)(nil)
	_ frontier.DoneAdder  = (*Store)(nil)
	_ frontier.KeyCounter = (*Store)(nil)
)

// New returns a Store of job on client. job names the crawl: every Store
// of the same job shares its state. It may not be empty nor contain braces
// (it is the hash tag of the job's keys). Close does not close client.
func New(client redis.UniversalClient, job string, opts Options) (*Store, error) {
	if err := CheckJob(job); err != nil {
		return nil, err
	}
	s := &Store{
		c:      client,
		job:    job,
		prefix: "heed:{" + job + "}:",
		opt:    opts,
		seen:   "hash",
		held:   make(map[uint64]string),
		runs:   make(map[uint64]*run),
	}
	s.rounds.most = roundMax
	s.live.start = time.Now()
	s.live.stop, s.live.stopped = make(chan struct{}), make(chan struct{})
	if opts.ExactSeen {
		s.seen = "url"
	} else {
		s.seenCache = newSeenCache()
	}
	if s.opt.Poll <= 0 {
		s.opt.Poll = DefaultPoll
	}
	if s.opt.RetryFor == 0 {
		s.opt.RetryFor = DefaultRetryFor
	}
	rand.Read(s.id[:])
	return s, nil
}

// CheckJob returns an error wrapping ErrJob if job cannot name a job: it
// is empty or has a brace, which would break the hash tag of its keys.
func CheckJob(job string) error {
	if job == "" || strings.ContainsAny(job, "{}") {
		return fmt.Errorf("%w: %q", ErrJob, job)
	}
	return nil
}

// Open connects to the Redis at url, a single server or a Redis Cluster
// (see Dial), and returns a Store of job on it, which Close disconnects.
// For Sentinel, make the client and call New.
func Open(ctx context.Context, url, job string, opts Options) (*Store, error) {
	c, err := Dial(ctx, url, opts.RetryFor)
	if err != nil {
		return nil, err
	}
	s, err := New(c, job, opts)
	if err != nil {
		c.Close()
		return nil, err
	}
	s.own = true
	if err := s.retry(ctx, "ping", func() error { return c.Ping(ctx).Err() }); err != nil {
		c.Close()
		return nil, err
	}
	return s, nil
}

// Job returns the name of the Store's job.
func (s *Store) Job() string { return s.job }

// PollInterval tells the Frontier how often to ask again while it waits:
// other processes add items and end leases without telling this one.
func (s *Store) PollInterval() time.Duration { return s.opt.Poll }

// micros returns t in microseconds since 1970, or 0 for the zero time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// ceilMicros returns d in microseconds, rounded up: a rest is never cut
// short; negative durations are zero.
func ceilMicros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// timeOf returns the time of µs microseconds since 1970, or the zero time
// for 0.
func timeOf(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

// base is the caller's now that the times a script returns, relative to
// its clock, are translated to.
func base(now time.Time) time.Time {
	if now.IsZero() {
		return time.Now()
	}
	return now
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Close ends the leases this Store granted and that were not ended — their
// items go back to the front of their queues (a run's but those done),
// their keys rest a full Delay — so that other processes need not wait for them to expire; and closes
// the client if Open made it. Items stay in Redis: the job goes on with
// other Stores, or a later one.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	// A run waiting for its next Claim ends as its last Done would have,
	// its revisits queued.
	var ends []*deferred
	for _, r := range s.ready {
		ends = append(ends, r.done)
		delete(s.held, r.token)
	}
	byShard := map[int][]any{}
	for t, key := range s.held {
		i := shardOfToken(t)
		byShard[i] = append(byShard[i], counterOf(t), key, s.doneOf(t))
	}
	clear(s.held)
	s.ready = nil
	s.mu.Unlock()
	var err error
	if len(byShard)+len(ends) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		for _, d := range ends {
			if e := s.end(ctx, d.l, d.now, d.o, false); !errors.Is(e, frontier.ErrLeaseLost) {
				err = errors.Join(err, e)
			}
		}
		s.mu.Lock()
		clear(s.runs)
		s.mu.Unlock()
		for i, counters := range byShard {
			_, e := s.call(ctx, s.shards[i], dropScript, "close", time.Time{}, counters...)
			err = errors.Join(err, e)
		}
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	err = errors.Join(err, s.dropPending(ctx), s.leaveJob(ctx))
	cancel()
	if s.own {
		err = errors.Join(err, s.c.Close())
	}
	return err
}

// open returns ErrClosed once the Store is closed: it grants no more
// leases, which Close could not end.
func (s *Store) open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

func (s *Store) hold(token uint64, key string) {
	s.mu.Lock()
	if !s.closed {
		s.held[token] = key
	}
	s.mu.Unlock()
}

func (s *Store) unhold(token uint64) {
	s.mu.Lock()
	delete(s.held, token)
	delete(s.runs, token)
	s.mu.Unlock()
}

func intOf(v any) int64 {
	n, _ := v.(int64)
	return n
}

func strOf(v any) string {
	s, _ := v.(string)
	return s
}

// The scripts. Each is the bucket's arithmetic, the key's packed state and
// the prelude, shared, and its own part.
var (
	//go:embed lua/bucket.lua
	bucketSrc string
	//go:embed lua/keystate.lua
	keyStateSrc string
	//go:embed lua/prelude.lua
	preludeSrc string
	//go:embed lua/add.lua
	addSrc string
	//go:embed lua/claim.lua
	claimSrc string
	//go:embed lua/claimone.lua
	claimOneSrc string
	//go:embed lua/batch.lua
	batchSrc string
	//go:embed lua/shards.lua
	shardsSrc string
	//go:embed lua/claimkey.lua
	claimKeySrc string
	//go:embed lua/finish.lua
	finishSrc string
	//go:embed lua/doneadding.lua
	doneAddingSrc string
	//go:embed lua/giveup.lua
	giveUpSrc string
	//go:embed lua/drop.lua
	dropSrc string
	//go:embed lua/read.lua
	readSrc string
	//go:embed lua/setup.lua
	setupSrc string
	//go:embed lua/reserve.lua
	reserveSrc string

	// preludeDefs defines what every script shares; prelude also begins
	// the call (begin, prelude.lua): the head of a script run by EVALSHA.
	preludeDefs = bucketSrc + keyStateSrc + preludeSrc
	prelude     = preludeDefs + opening

	// add.lua and finish.lua define a function each, which these run.
	addScript        = newScript(prelude + addSrc + "return reply(add(8))\n")
	finishScript     = newScript(prelude + finishSrc + "return reply({finish()})\n")
	doneAddingScript = newScript(prelude + addSrc + finishSrc + doneAddingSrc)
	claimScript      = newScript(prelude + claimOneSrc + claimSrc)
	batchScript      = newFunction(preludeDefs+shardsSrc+addSrc+finishSrc+claimOneSrc, batchSrc)
	claimKeyScript   = newScript(prelude + claimKeySrc)
	giveUpScript     = newScript(prelude + giveUpSrc)
	dropScript       = newScript(prelude + dropSrc)
	readScript       = redis.NewScript(keyStateSrc + readSrc)
	setupScript      = redis.NewScript(setupSrc)
	reserveScript    = redis.NewScript(reserveSrc)
)

// opening begins a script run by EVALSHA after its prelude (begin,
// prelude.lua), and returns the reply a retried request had, if any.
const opening = "do local memoed = begin() if memoed then return memoed end end\n"
