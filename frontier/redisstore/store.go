package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
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

// forgetBatch bounds how many memo entries one request clears.
const forgetBatch = 256

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
}

// Store is a frontier.Store in Redis, shared by every Store of the same job
// on the same Redis. It is safe for concurrent use. Make one with New or
// Open.
type Store struct {
	c       redis.UniversalClient
	own     bool // Close closes c
	job     string
	prefix  string   // heed:{job}:
	keys    []string // KEYS of every script: the counters hash
	memo    string   // this Store's memo hash
	opt     Options
	seen    string // what the seen-set holds: "hash" or "url"
	joined  atomic.Bool
	lastReq atomic.Uint64

	mu     sync.Mutex
	forget []string            // ids of requests whose replies arrived
	held   map[uint64]struct{} // tokens of the leases granted to this Store
	closed bool
}

var (
	_ frontier.Store     = (*Store)(nil)
	_ frontier.DoneAdder = (*Store)(nil)
)

// New returns a Store of job on client. job names the crawl: every Store
// of the same job shares its state. It may not be empty nor contain braces
// (it is the hash tag of the job's keys). Close does not close client.
func New(client redis.UniversalClient, job string, opts Options) (*Store, error) {
	if err := CheckJob(job); err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	rand.Read(id)
	s := &Store{
		c:      client,
		job:    job,
		prefix: "heed:{" + job + "}:",
		opt:    opts,
		seen:   "hash",
		held:   make(map[uint64]struct{}),
	}
	if opts.ExactSeen {
		s.seen = "url"
	}
	if s.opt.Poll <= 0 {
		s.opt.Poll = DefaultPoll
	}
	if s.opt.RetryFor == 0 {
		s.opt.RetryFor = DefaultRetryFor
	}
	s.keys = []string{s.prefix + "n"}
	s.memo = s.prefix + "memo:" + hex.EncodeToString(id)
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

// call runs the script sc, which changes the job's state, with the common
// arguments and args, and returns its reply. A transient failure is
// retried with the same request id, which the script answers from its memo
// if it ran already, for Options.RetryFor.
func (s *Store) call(ctx context.Context, sc *redis.Script, op string, now time.Time, args ...any) ([]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id := strconv.FormatUint(s.lastReq.Add(1), 36)
	argv := make([]any, 0, 7+len(args))
	argv = append(argv, s.prefix, s.memo, id, "", micros(now), flag(s.opt.CallerClock), "")
	argv = append(argv, args...)
	var reply []any
	err := s.retry(ctx, op, func() error {
		forget := s.takeForget()
		argv[3], argv[6] = forget, flag(s.joined.Load())
		v, err := sc.Run(ctx, s.c, s.keys, argv...).Result()
		if err != nil {
			s.giveBackForget(forget)
			return err
		}
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%w: reply %T", errCorrupt, v)
		}
		reply = arr
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.joined.Store(true)
	s.mu.Lock()
	s.forget = append(s.forget, id)
	s.mu.Unlock()
	return reply, nil
}

// takeForget returns, comma-separated, ids of requests whose replies
// arrived, for the next script to forget their memos.
func (s *Store) takeForget() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(len(s.forget), forgetBatch)
	if n == 0 {
		return ""
	}
	ids := strings.Join(s.forget[len(s.forget)-n:], ",")
	s.forget = s.forget[:len(s.forget)-n]
	return ids
}

// giveBackForget returns ids to forget later: the request that carried
// them failed, perhaps before it ran.
func (s *Store) giveBackForget(ids string) {
	if ids == "" {
		return
	}
	s.mu.Lock()
	s.forget = append(s.forget, strings.Split(ids, ",")...)
	s.mu.Unlock()
}

// retry runs f until it succeeds, fails for a reason that is not
// transient, ctx ends or Options.RetryFor has passed since its first
// failure, waiting between tries.
func (s *Store) retry(ctx context.Context, op string, f func() error) error {
	return retry(ctx, s.opt.RetryFor, op, f)
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
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// seenMember returns what the seen-set holds for url.
func (s *Store) seenMember(url string) string {
	if s.opt.ExactSeen {
		return url
	}
	sum := sha256.Sum256([]byte(url))
	return string(sum[:8])
}

// Add implements frontier.Store.
func (s *Store) Add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if len(batch) == 0 {
		return nil, ctx.Err()
	}
	r, err := s.call(ctx, addScript, "add", time.Time{}, s.addArgs(nil, time.Now(), batch, lim)...)
	if err != nil {
		return nil, err
	}
	return addAnswers("add", r, batch)
}

// DoneAdding implements frontier.DoneAdder: one script adds batch and ends l
// as Done does.
func (s *Store) DoneAdding(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if len(batch) == 0 {
		return []error{}, s.Done(ctx, l, now, o)
	}
	if err := checkRevisit(l, o); err != nil {
		refused, addErr := s.Add(ctx, batch, lim)
		if addErr != nil {
			return nil, addErr
		}
		return refused, err
	}
	args := s.addArgs(s.finishArgs(l, now, o, false), base(now), batch, lim)
	r, err := s.call(ctx, doneAddingScript, "done adding", now, args...)
	if err != nil {
		return nil, err
	}
	s.unhold(l.Token)
	if len(r) < 1 {
		return nil, fmt.Errorf("redisstore: done adding: %w: reply %v", errCorrupt, r)
	}
	refused, err := addAnswers("done adding", r[1:], batch)
	if err != nil {
		return nil, err
	}
	return refused, finishAnswer("done adding", r[:1])
}

// addArgs appends add.lua's arguments for batch, added at the caller's
// now, to args.
func (s *Store) addArgs(args []any, now time.Time, batch []frontier.Item, lim frontier.Limits) []any {
	args = slices.Grow(args, 5+5*len(batch))
	args = append(args, lim.MaxPages, lim.MaxPagesPerHost, lim.MaxSitemapsPerHost, lim.MaxSitemapURLsPerHost, s.seen)
	for i := range batch {
		it := &batch[i]
		class := "0"
		switch {
		case it.Kind == frontier.KindSitemap:
			class = "1"
		case it.FromSitemap:
			class = "2"
		}
		args = append(args, s.seenMember(it.URL), it.Key, class, encodeItem(nil, it), s.dueArg(it.Due, now))
	}
	return args
}

// dueArg returns how the scripts are told an item's Due (lua/prelude.lua,
// dueOf): "" for the zero time (due at once); with CallerClock, Unix µs;
// else µs from the caller's now, so that an item due in an hour on the
// caller's clock is due in an hour on Redis's. A Due between two
// microseconds falls due at the later one: never before it.
func (s *Store) dueArg(due, now time.Time) string {
	if due.IsZero() {
		return ""
	}
	if s.opt.CallerClock {
		us := due.UnixMicro()
		if due.Nanosecond()%1000 != 0 {
			us++
		}
		return strconv.FormatInt(us, 10)
	}
	d := due.Sub(now)
	if d <= 0 {
		return strconv.FormatInt(d.Microseconds(), 10)
	}
	return strconv.FormatInt(ceilMicros(d), 10)
}

// checkRevisit returns frontier.ErrRevisit if o queues again an item that
// is not l's, or frontier.ErrLeaseLost for no lease.
func checkRevisit(l *frontier.Lease, o frontier.Outcome) error {
	switch {
	case l == nil:
		return frontier.ErrLeaseLost
	case o.Revisit != nil && (l.URL == "" || o.Revisit.URL != l.URL || o.Revisit.Key != l.Key):
		return fmt.Errorf("redisstore: done: %w: %s for a lease of %q", frontier.ErrRevisit, o.Revisit.URL, l.URL)
	}
	return nil
}

// addAnswers reads add's codes in r, one per item of batch.
func addAnswers(op string, r []any, batch []frontier.Item) ([]error, error) {
	if len(r) != len(batch) {
		return nil, fmt.Errorf("redisstore: %s: %w: %d answers for %d items", op, errCorrupt, len(r), len(batch))
	}
	refused := make([]error, len(batch))
	for i, v := range r {
		switch n, _ := v.(int64); n {
		case 0:
		case 1:
			refused[i] = frontier.ErrSeen
		case 2:
			refused[i] = frontier.ErrGivenUp
		case 3:
			refused[i] = frontier.ErrLimit
		case 4:
			refused[i] = frontier.ErrHostLimit
		case 5:
			refused[i] = frontier.ErrSitemapLimit
		default:
			return nil, fmt.Errorf("redisstore: %s: %w: code %v", op, errCorrupt, v)
		}
	}
	return refused, nil
}

// leaseMicros is a lease's duration in microseconds.
func leaseMicros(d time.Duration) int64 {
	if d <= 0 {
		d = frontier.DefaultLease
	}
	return ceilMicros(d)
}

// Claim implements frontier.Store.
func (s *Store) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	if err := s.open(); err != nil {
		return frontier.Claim{}, err
	}
	r, err := s.call(ctx, claimScript, "claim", now, max(opt.PerHost, 1), leaseMicros(opt.Lease))
	if err != nil {
		return frontier.Claim{}, err
	}
	at := base(now)
	if len(r) == 9 && intOf(r[0]) == 1 {
		token := uint64(intOf(r[1]))
		s.hold(token)
		key := strOf(r[2])
		it, err := decodeItem([]byte(strOf(r[3])), key)
		if err != nil {
			return frontier.Claim{}, fmt.Errorf("redisstore: claim: item of %s: %w", key, err)
		}
		host, err := decodeHost([]byte(strOf(r[4])))
		if err != nil {
			return frontier.Claim{}, fmt.Errorf("redisstore: claim: host %s: %w", key, err)
		}
		host.NextAllowed = timeOf(intOf(r[5]))
		host.ClosedUntil = timeOf(intOf(r[8]))
		return frontier.Claim{Lease: &frontier.Lease{
			Item:    it,
			Pace:    host,
			Token:   token,
			Expires: at.Add(time.Duration(intOf(r[6])) * time.Microsecond),
			GivenUp: intOf(r[7]) == 1,
		}}, nil
	}
	if len(r) != 4 || intOf(r[0]) != 0 {
		return frontier.Claim{}, fmt.Errorf("redisstore: claim: %w: reply %v", errCorrupt, r)
	}
	c := frontier.Claim{Idle: intOf(r[3]) == 1}
	if intOf(r[1]) == 1 {
		c.Next = at.Add(time.Duration(intOf(r[2])) * time.Microsecond)
	}
	return c, nil
}

// ClaimKey implements frontier.Store.
func (s *Store) ClaimKey(ctx context.Context, key string, now time.Time, opt frontier.ClaimOptions) (*frontier.Lease, time.Time, error) {
	if err := s.open(); err != nil {
		return nil, time.Time{}, err
	}
	r, err := s.call(ctx, claimKeyScript, "claim key", now, max(opt.PerHost, 1), leaseMicros(opt.Lease), key, ceilMicros(fullRecheck))
	if err != nil {
		return nil, time.Time{}, err
	}
	at := base(now)
	switch {
	case len(r) == 6 && intOf(r[0]) == 1:
		token := uint64(intOf(r[1]))
		s.hold(token)
		host, err := decodeHost([]byte(strOf(r[2])))
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("redisstore: claim key: host %s: %w", key, err)
		}
		host.NextAllowed = timeOf(intOf(r[3]))
		host.ClosedUntil = timeOf(intOf(r[5]))
		return &frontier.Lease{
			Item:    frontier.Item{Key: key},
			Pace:    host,
			Token:   token,
			Expires: at.Add(time.Duration(intOf(r[4])) * time.Microsecond),
		}, time.Time{}, nil
	case len(r) == 2 && intOf(r[0]) == 0:
		return nil, at.Add(time.Duration(intOf(r[1])) * time.Microsecond), nil
	}
	return nil, time.Time{}, fmt.Errorf("redisstore: claim key: %w: reply %v", errCorrupt, r)
}

// Done implements frontier.Store.
func (s *Store) Done(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	return s.end(ctx, l, now, o, false)
}

// Requeue implements frontier.Store.
func (s *Store) Requeue(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome) error {
	return s.end(ctx, l, now, o, true)
}

func (s *Store) end(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, requeue bool) error {
	op := "done"
	if requeue {
		op = "requeue"
		o.Revisit = nil
	}
	if err := checkRevisit(l, o); err != nil {
		return err
	}
	r, err := s.call(ctx, finishScript, op, now, s.finishArgs(l, now, o, requeue)...)
	if err != nil {
		return err
	}
	s.unhold(l.Token)
	return finishAnswer(op, r)
}

// finishArgs returns finish.lua's arguments for ending l with o.
func (s *Store) finishArgs(l *frontier.Lease, now time.Time, o frontier.Outcome, requeue bool) []any {
	var item []byte
	if requeue && l.URL != "" {
		item = encodeItem(nil, &l.Item) // with what it has been through since
	}
	cp := o.Checkpoint
	if cp == nil {
		cp = []byte{}
	}
	// ClosedUntil goes as a duration, like Rest: Redis decides on its
	// own clock.
	closedFor := int64(0)
	if !o.Pace.ClosedUntil.IsZero() {
		closedFor = max(o.Pace.ClosedUntil.Sub(base(now)).Microseconds(), 0)
	}
	var revisit []byte
	var due string
	if !requeue && o.Revisit != nil {
		revisit, due = encodeItem(nil, o.Revisit), s.dueArg(o.Revisit.Due, base(now))
	}
	return []any{strconv.FormatUint(l.Token, 10), l.Key, flag(requeue), item,
		encodeHost(&o.Pace), ceilMicros(o.Pace.Delay), ceilMicros(o.Rest),
		flag(o.Checkpoint != nil), cp, s.opt.Checkpoint, closedFor, revisit, due}
}

// finishAnswer reads finish's reply r.
func finishAnswer(op string, r []any) error {
	if len(r) != 1 {
		return fmt.Errorf("redisstore: %s: %w: reply %v", op, errCorrupt, r)
	}
	switch intOf(r[0]) {
	case 0:
		return nil
	case 1:
		return frontier.ErrLeaseLost
	}
	return fmt.Errorf("redisstore: %s: %w: reply %v", op, errCorrupt, r)
}

// GiveUp implements frontier.Store.
func (s *Store) GiveUp(ctx context.Context, key string) error {
	_, err := s.call(ctx, giveUpScript, "give up", time.Time{}, key)
	return err
}

// read runs the read-only script for what ("counts" or "host").
func (s *Store) read(ctx context.Context, op string, now time.Time, what, key string) ([]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var reply []any
	err := s.retry(ctx, op, func() error {
		v, err := readScript.Run(ctx, s.c, s.keys, s.prefix, what, micros(now), flag(s.opt.CallerClock), key).Result()
		if err != nil {
			return err
		}
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%w: reply %T", errCorrupt, v)
		}
		reply = arr
		return nil
	})
	return reply, err
}

// Host implements frontier.Store. A key that must rest after a Redis
// restart shows the rest already.
func (s *Store) Host(ctx context.Context, key string) (ratelimit.HostState, error) {
	r, err := s.read(ctx, "host", time.Time{}, "host", key)
	if err != nil {
		return ratelimit.HostState{}, err
	}
	if len(r) != 3 {
		return ratelimit.HostState{}, fmt.Errorf("redisstore: host: %w: reply %v", errCorrupt, r)
	}
	h, err := decodeHost([]byte(strOf(r[1])))
	if err != nil {
		return ratelimit.HostState{}, fmt.Errorf("redisstore: host %s: %w", key, err)
	}
	h.NextAllowed = timeOf(intOf(r[0]))
	h.ClosedUntil = timeOf(intOf(r[2]))
	return h, nil
}

// Counts implements frontier.Store. Ready and Resting count the keys by
// their place in the ready set: a key that must rest after a Redis restart
// counts as ready until a script touches it.
func (s *Store) Counts(ctx context.Context, now time.Time) (frontier.Counts, error) {
	r, err := s.read(ctx, "counts", now, "counts", "")
	if err != nil {
		return frontier.Counts{}, err
	}
	if len(r) != 7 {
		return frontier.Counts{}, fmt.Errorf("redisstore: counts: %w: reply %v", errCorrupt, r)
	}
	n := func(i int) int { return int(intOf(r[i])) }
	return frontier.Counts{
		Queued: n(0), Leased: n(1), Hosts: n(2), Busy: n(3), Scheduled: n(4),
		Ready: n(5), Resting: n(6),
	}, nil
}

// Meta implements frontier.Store.
func (s *Store) Meta(ctx context.Context, name string) ([]byte, error) {
	var v []byte
	err := s.retry(ctx, "meta", func() error {
		b, err := s.c.HGet(ctx, s.prefix+"meta", name).Bytes()
		if errors.Is(err, redis.Nil) {
			v = nil
			return nil
		}
		v = b
		return err
	})
	return v, err
}

// SetMeta implements frontier.Store. It is as durable as Redis's
// persistence makes it.
func (s *Store) SetMeta(ctx context.Context, name string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.retry(ctx, "set meta", func() error {
		return s.c.HSet(ctx, s.prefix+"meta", name, value).Err()
	})
}

// AddScope adds names to the job's scope, a set every process adds its
// seeds' hosts (or domains) to (frontier.ScopeStore).
func (s *Store) AddScope(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	return s.retry(ctx, "add scope", func() error {
		return s.c.SAdd(ctx, s.prefix+"scope", args...).Err()
	})
}

// Scope returns the job's scope (frontier.ScopeStore).
func (s *Store) Scope(ctx context.Context) ([]string, error) {
	var names []string
	err := s.retry(ctx, "scope", func() error {
		var err error
		names, err = s.c.SMembers(ctx, s.prefix+"scope").Result()
		return err
	})
	return names, err
}

// robotsTTL is how long Redis keeps a robots.txt entry: longer than any
// entry lives (its own Expires governs), short enough that a job's hosts
// do not pile up in memory for ever.
const robotsTTL = 31 * 24 * time.Hour

// LoadEntry returns the robots.txt entry kept for authority, or nil: the
// crawler's robots gate reads it (gate.EntryKeeper), so the processes of a
// job fetch a site's robots.txt once between them.
func (s *Store) LoadEntry(ctx context.Context, authority string) ([]byte, error) {
	var v []byte
	err := s.retry(ctx, "load robots entry", func() error {
		b, err := s.c.Get(ctx, s.prefix+"robots:"+authority).Bytes()
		if errors.Is(err, redis.Nil) {
			v = nil
			return nil
		}
		v = b
		return err
	})
	return v, err
}

// SaveEntry keeps the robots.txt entry of authority for a month.
func (s *Store) SaveEntry(ctx context.Context, authority string, data []byte) error {
	return s.retry(ctx, "save robots entry", func() error {
		return s.c.Set(ctx, s.prefix+"robots:"+authority, data, robotsTTL).Err()
	})
}

// Checkpoint implements frontier.Store: the checkpoint of the last Done of
// any Store of the job with the same Options.Checkpoint.
func (s *Store) Checkpoint(ctx context.Context) ([]byte, error) {
	var v []byte
	err := s.retry(ctx, "checkpoint", func() error {
		b, err := s.c.Get(ctx, s.prefix+"cp:"+s.opt.Checkpoint).Bytes()
		if errors.Is(err, redis.Nil) {
			v = nil
			return nil
		}
		v = b
		return err
	})
	return v, err
}

// Close ends the leases this Store granted and that were not ended — their
// items go back to the front of their queues, their keys rest a full Delay
// — so that other processes need not wait for them to expire; and closes
// the client if Open made it. Items stay in Redis: the job goes on with
// other Stores, or a later one.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	tokens := make([]any, 0, len(s.held))
	for t := range s.held {
		tokens = append(tokens, strconv.FormatUint(t, 10))
	}
	clear(s.held)
	s.mu.Unlock()
	var err error
	if len(tokens) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		_, err = s.call(ctx, dropScript, "close", time.Time{}, tokens...)
		cancel()
	}
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

func (s *Store) hold(token uint64) {
	s.mu.Lock()
	if !s.closed {
		s.held[token] = struct{}{}
	}
	s.mu.Unlock()
}

func (s *Store) unhold(token uint64) {
	s.mu.Lock()
	delete(s.held, token)
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

// The scripts. Each is the bucket's arithmetic and the prelude, shared,
// and its own part.
var (
	//go:embed lua/bucket.lua
	bucketSrc string
	//go:embed lua/prelude.lua
	preludeSrc string
	//go:embed lua/add.lua
	addSrc string
	//go:embed lua/claim.lua
	claimSrc string
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

	prelude = bucketSrc + preludeSrc

	// add.lua and finish.lua define a function each, which these run.
	addScript        = redis.NewScript(prelude + addSrc + "return reply(add(8))\n")
	finishScript     = redis.NewScript(prelude + finishSrc + "return reply({finish()})\n")
	doneAddingScript = redis.NewScript(prelude + addSrc + finishSrc + doneAddingSrc)
	claimScript      = redis.NewScript(prelude + claimSrc)
	claimKeyScript   = redis.NewScript(prelude + claimKeySrc)
	giveUpScript     = redis.NewScript(prelude + giveUpSrc)
	dropScript       = redis.NewScript(prelude + dropSrc)
	readScript       = redis.NewScript(readSrc)
)
