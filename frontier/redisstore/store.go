package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
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
	// Shards is the number of shards of a job this Store starts (zero:
	// DefaultShards, at most MaxShards); a job keeps the number it was
	// started with.
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
	lastNow atomic.Int64 // the latest caller's now, µs, for CallerClock
	cpStamp atomic.Int64 // the stamp of the last checkpoint stored

	setupMu  sync.Mutex
	shards   []*shard // set once by setup
	view     *view
	reserved bool // the job's page reservations are counted

	mu     sync.Mutex
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

// request is a script call on a shard, with its request id.
type request struct {
	sh     *shard
	sc     *redis.Script
	op     string
	argv   []any
	id     string
	forget string
	sent   bool // it may have run: a retry asks the script's memo first
	// refresh: the script moves the memo's expiry later.
	refresh bool
}

// prepare makes the request to run the script sc, which changes the state
// of shard sh, with the common arguments and args.
func (s *Store) prepare(sh *shard, sc *redis.Script, op string, now time.Time, args ...any) *request {
	if s.opt.CallerClock && !now.IsZero() {
		for last := s.lastNow.Load(); micros(now) > last && !s.lastNow.CompareAndSwap(last, micros(now)); last = s.lastNow.Load() {
		}
	}
	r := &request{sh: sh, sc: sc, op: op, id: strconv.FormatUint(s.lastReq.Add(1), 36), forget: sh.takeForget()}
	forget := r.forget
	if last := sh.memoAt.Load(); forget != "" || time.Since(time.Unix(0, last)) >= memoRefresh {
		forget = "!" + forget // see prelude.lua: the memo's expiry moves
		r.refresh = true
	}
	r.argv = make([]any, 0, 7+len(args))
	r.argv = append(r.argv, sh.prefix, sh.memo, r.id, forget, micros(now), flag(s.opt.CallerClock), flag(sh.joined.Load()))
	r.argv = append(r.argv, args...)
	return r
}

// call runs the script sc, which changes the state of shard sh, with the
// common arguments and args, and returns its reply, without the shard's
// tail, which it learns (and publishes if the shard woke). A transient
// failure is retried with the same request id, which the script answers
// from its memo if it ran already, for Options.RetryFor.
func (s *Store) call(ctx context.Context, sh *shard, sc *redis.Script, op string, now time.Time, args ...any) ([]any, error) {
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
			v, err = r.sc.Run(ctx, s.c, r.sh.keys, r.argv...).Result()
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
	return reply[:len(reply)-tailLen], nil
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
	cmds := make([]*redis.Cmd, len(rs))
	if len(rs) > 1 {
		s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, r := range rs {
				cmds[i] = r.sc.EvalSha(ctx, p, r.sh.keys, r.argv...)
			}
			return nil
		})
	}
	out := make([][]any, len(rs))
	var errs []error
	for i, r := range rs {
		first := cmds[i]
		r.sent = first != nil
		if first != nil && first.Err() != nil {
			first = nil // NOSCRIPT, or a failure to retry
		}
		reply, err := s.send(ctx, r, first)
		if err == nil {
			out[i], err = s.received(ctx, r, reply)
		}
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// tailLen is the length of the tail of a script's reply (prelude.lua).
const tailLen = 6

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
func (s *Store) retry(ctx context.Context, op string, f func() error) error {
	reload, cluster := s.c.(interface{ ReloadState(context.Context) })
	if !cluster {
		return retry(ctx, s.opt.RetryFor, op, f)
	}
	return retry(ctx, s.opt.RetryFor, op, func() error {
		err := f()
		if err != nil && transient(err) {
			// A cluster client learns a failover only from a MOVED reply
			// or its periodic reload (a minute by default): a slot whose
			// primary died stays routed to it, refused, until then.
			reload.ReloadState(ctx)
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

// Add implements frontier.Store. The batch is added one shard at a time,
// each shard's items in one script.
func (s *Store) Add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if len(batch) == 0 {
		return nil, ctx.Err()
	}
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	refused := make([]error, len(batch))
	now := s.addNow()
	budget, err := s.reserve(ctx, batch, lim)
	if err != nil {
		return nil, err
	}
	for _, g := range s.split(len(batch), func(i int) string { return batch[i].Key }, nil) {
		if err := s.addGroup(ctx, g, addScript, "add", nil, now, batch, lim, &budget, refused); err != nil {
			return nil, s.giveBack(ctx, lim, budget, err)
		}
	}
	return refused, s.giveBack(ctx, lim, budget, nil)
}

// addNow is the now of an Add: with CallerClock, the latest now a caller
// gave this Store (the shard takes its own latest if none).
func (s *Store) addNow() time.Time {
	if s.opt.CallerClock {
		return timeOf(s.lastNow.Load())
	}
	return time.Time{}
}

// addGroup adds the items of g with script sc (add, or doneadding with
// finish's arguments pre, whose answer goes to the last of refused), their
// answers into refused, and takes the pages it added from *budget
// (negative: no limit).
func (s *Store) addGroup(ctx context.Context, g group, sc *redis.Script, op string, pre []any, now time.Time, batch []frontier.Item, lim frontier.Limits, budget *int, refused []error) error {
	r, err := s.call(ctx, g.sh, sc, op, now, s.addArgs(pre, base(now), g.items(batch), lim, *budget)...)
	if err != nil {
		return err
	}
	return s.addAnswered(r, g, op, pre != nil, batch, budget, refused)
}

// addGroups adds the items of gs, one shard each, in one pipelined round;
// the batch has no page limit.
func (s *Store) addGroups(ctx context.Context, gs []group, now time.Time, batch []frontier.Item, lim frontier.Limits, refused []error) error {
	rs := make([]*request, len(gs))
	for i, g := range gs {
		rs[i] = s.prepare(g.sh, addScript, "add", now, s.addArgs(nil, base(now), g.items(batch), lim, -1)...)
	}
	replies, err := s.callMany(ctx, rs)
	if err != nil {
		return err
	}
	budget := -1
	for i, g := range gs {
		if err := s.addAnswered(replies[i], g, "add", false, batch, &budget, refused); err != nil {
			return err
		}
	}
	return nil
}

// items returns g's items of batch.
func (g group) items(batch []frontier.Item) []frontier.Item {
	items := make([]frontier.Item, len(g.idx))
	for j, i := range g.idx {
		items[j] = batch[i]
	}
	return items
}

// addAnswered reads the reply r of an add of g (after finish's code, with
// done), into refused, and takes the pages added from *budget.
func (s *Store) addAnswered(r []any, g group, op string, done bool, batch []frontier.Item, budget *int, refused []error) error {
	items := g.items(batch)
	head := 0
	if done {
		head = 1
		if len(r) < 1 {
			return fmt.Errorf("redisstore: %s: %w: reply %v", op, errCorrupt, r)
		}
		refused[len(refused)-1] = finishAnswer(op, r[:1])
	}
	got, err := addAnswers(op, r[head:], items)
	if err != nil {
		return err
	}
	for j, i := range g.idx {
		refused[i] = got[j]
		if got[j] == nil && items[j].Kind != frontier.KindSitemap && *budget > 0 {
			*budget--
		}
	}
	return nil
}

// reserve returns how many pages batch may add under lim.MaxPages,
// reserved of the job's count (in its own slot), or -1 for no limit.
func (s *Store) reserve(ctx context.Context, batch []frontier.Item, lim frontier.Limits) (int, error) {
	if lim.MaxPages <= 0 {
		return -1, nil
	}
	pages := 0
	for i := range batch {
		if batch[i].Kind != frontier.KindSitemap {
			pages++
		}
	}
	if pages == 0 {
		return 0, nil
	}
	start := 0
	if !s.reserved {
		// The job's first reservation starts from what its shards
		// scheduled while no limit was asked for.
		c, err := s.Counts(ctx, time.Time{})
		if err != nil {
			return 0, err
		}
		start = c.Scheduled
	}
	var grant int64
	err := s.retry(ctx, "reserve pages", func() (err error) {
		grant, err = reserveScript.Run(ctx, s.c, []string{s.prefix + "n"}, lim.MaxPages, pages, start).Int64()
		return err
	})
	s.reserved = s.reserved || err == nil
	return int(grant), err
}

// giveBack returns the pages reserved and not added to the job's count,
// and err.
func (s *Store) giveBack(ctx context.Context, lim frontier.Limits, budget int, err error) error {
	if lim.MaxPages <= 0 || budget <= 0 {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	back := s.retry(ctx, "give back pages", func() error {
		return reserveScript.Run(ctx, s.c, []string{s.prefix + "n"}, lim.MaxPages, -budget, 0).Err()
	})
	return errors.Join(err, back)
}

// DoneAdding implements frontier.DoneAdder: the links of shards other than
// l's are added first, a script a shard; then one script of l's shard
// adds the links of that shard and ends l as Done does. A process that
// dies in between leaves l's page to be fetched again once its lease
// expires: the links added already are seen, none is lost.
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
	if err := s.setup(ctx); err != nil {
		return nil, err
	}
	own := s.shardOf(l.Key)
	if shardOfToken(l.Token) != own.i {
		refused, err := s.Add(ctx, batch, lim)
		if err != nil {
			return nil, err
		}
		return refused, frontier.ErrLeaseLost
	}
	budget, err := s.reserve(ctx, batch, lim)
	if err != nil {
		return nil, err
	}
	refused := make([]error, len(batch)+1) // the last is the Done's
	ownDone := false
	gs := s.split(len(batch), func(i int) string { return batch[i].Key }, own)
	if budget < 0 && (len(gs) > 1 || gs[0].sh != own) && s.oneServer() {
		return s.doneAddingAll(ctx, l, own, gs, now, o, batch, lim)
	}
	if budget < 0 && len(gs) > 2 {
		// No page limit to share out in order: the other shards' links
		// go in one pipelined round.
		n := len(gs) - 1
		if gs[n].sh != own {
			n++
		}
		if err := s.addGroups(ctx, gs[:n], now, batch, lim, refused); err != nil {
			return nil, err
		}
		gs = gs[n:]
	}
	for _, g := range gs {
		sc, op, pre := addScript, "add", []any(nil)
		if g.sh == own {
			sc, op, pre = doneAddingScript, "done adding", s.finishArgs(l, now, o, false)
			ownDone = true
		}
		if err := s.addGroup(ctx, g, sc, op, pre, now, batch, lim, &budget, refused); err != nil {
			return nil, s.giveBack(ctx, lim, budget, err)
		}
	}
	if err := s.giveBack(ctx, lim, budget, nil); err != nil {
		return nil, err
	}
	if !ownDone {
		return refused[:len(batch)], s.Done(ctx, l, now, o)
	}
	s.unhold(l.Token)
	return refused[:len(batch)], refused[len(batch)]
}

// addArgs appends add.lua's arguments for batch, added at the caller's
// now, to args.
func (s *Store) addArgs(args []any, now time.Time, batch []frontier.Item, lim frontier.Limits, budget int) []any {
	args = slices.Grow(args, 5+5*len(batch))
	args = append(args, budget, lim.MaxPagesPerHost, lim.MaxSitemapsPerHost, lim.MaxSitemapURLsPerHost, s.seen)
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
	if d <= 0 || !due.After(time.Now()) {
		// Due already on this machine's clock, if not at the caller's now
		// (a Frontier stamps its links' Due after the now of their
		// DoneAdding): at once, to the key's list, not its sorted set.
		return strconv.FormatInt(min(d.Microseconds(), 0), 10)
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

// Claim implements frontier.Store. It asks the shard whose ready key has
// waited longest, as far as the Store knows (see the package
// documentation, Shards), and with no shard ready, answers from what it
// knows: Idle only once every shard was read empty.
func (s *Store) Claim(ctx context.Context, now time.Time, opt frontier.ClaimOptions) (frontier.Claim, error) {
	if err := s.open(); err != nil {
		return frontier.Claim{}, err
	}
	if err := s.setup(ctx); err != nil {
		return frontier.Claim{}, err
	}
	at := base(now)
	for range 2 {
		rnow := s.clockNow(now)
		for probe := 0; probe < 4*maxProbes; probe++ {
			if err := s.refresh(ctx, false); err != nil {
				return frontier.Claim{}, err
			}
			i, bound, name, ok, busy := s.view.pick(rnow, probe < maxProbes)
			if !ok && busy != nil {
				// Every ready shard has as many claims in flight as it
				// has ready keys: wait for one to come back instead of
				// sending a claim that would find nothing.
				select {
				case <-busy:
					continue
				case <-ctx.Done():
					return frontier.Claim{}, ctx.Err()
				}
			}
			if !ok {
				break
			}
			l, err := s.claimShard(ctx, s.shards[i], now, opt, bound, name)
			s.view.release(i)
			if err != nil || l != nil {
				return frontier.Claim{Lease: l}, err
			}
		}
		if next, ok := s.view.next(); ok && s.view.knowsQueued() {
			return frontier.Claim{Next: at.Add(time.Duration(max(next-rnow, 0)) * time.Microsecond)}, nil
		}
		// Leases alone, as far as the Store knows: the crawl may be
		// over, which only reading every shard can tell.
		idle, err := s.verify(ctx, now)
		if err != nil || idle {
			return frontier.Claim{Idle: idle}, err
		}
		if !s.view.knowsQueued() {
			next, _ := s.view.next()
			return frontier.Claim{Next: at.Add(time.Duration(max(next-s.clockNow(now), 0)) * time.Microsecond)}, nil
		}
	}
	return frontier.Claim{}, nil
}

// claimShard runs claim.lua on sh, bounded by the key bound µs from now
// named name (none if bound is ""): a nil Lease if sh has no key to hand
// out.
func (s *Store) claimShard(ctx context.Context, sh *shard, now time.Time, opt frontier.ClaimOptions, bound, name string) (*frontier.Lease, error) {
	r, err := s.call(ctx, sh, claimScript, "claim", now, max(opt.PerHost, 1), leaseMicros(opt.Lease), bound, name)
	if err != nil {
		return nil, err
	}
	if len(r) == 4 && intOf(r[0]) == 0 {
		return nil, nil
	}
	if len(r) != 10 || intOf(r[0]) != 1 {
		return nil, fmt.Errorf("redisstore: claim: %w: reply %v", errCorrupt, r)
	}
	tok := token(sh, intOf(r[1]))
	s.hold(tok)
	key := strOf(r[2])
	it, err := decodeItem([]byte(strOf(r[3])), key)
	if err != nil {
		return nil, fmt.Errorf("redisstore: claim: item of %s: %w", key, err)
	}
	host, err := decodeHost([]byte(strOf(r[4])))
	if err != nil {
		return nil, fmt.Errorf("redisstore: claim: host %s: %w", key, err)
	}
	host.NextAllowed = timeOf(intOf(r[5]))
	host.ClosedUntil = timeOf(intOf(r[8]))
	rv, err := decodeRevisiting(r[9])
	if err != nil {
		return nil, fmt.Errorf("redisstore: claim: revisit state of %s: %w", key, err)
	}
	return &frontier.Lease{
		Item:       it,
		Pace:       host,
		Token:      tok,
		Expires:    base(now).Add(time.Duration(intOf(r[6])) * time.Microsecond),
		GivenUp:    intOf(r[7]) == 1,
		Revisiting: rv,
	}, nil
}

// ClaimKey implements frontier.Store.
func (s *Store) ClaimKey(ctx context.Context, key string, now time.Time, opt frontier.ClaimOptions) (*frontier.Lease, time.Time, error) {
	if err := s.open(); err != nil {
		return nil, time.Time{}, err
	}
	if err := s.setup(ctx); err != nil {
		return nil, time.Time{}, err
	}
	sh := s.shardOf(key)
	r, err := s.call(ctx, sh, claimKeyScript, "claim key", now, max(opt.PerHost, 1), leaseMicros(opt.Lease), key, ceilMicros(fullRecheck))
	if err != nil {
		return nil, time.Time{}, err
	}
	at := base(now)
	switch {
	case len(r) == 7 && intOf(r[0]) == 1:
		tok := token(sh, intOf(r[1]))
		s.hold(tok)
		host, err := decodeHost([]byte(strOf(r[2])))
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("redisstore: claim key: host %s: %w", key, err)
		}
		host.NextAllowed = timeOf(intOf(r[3]))
		host.ClosedUntil = timeOf(intOf(r[5]))
		rv, err := decodeRevisiting(r[6])
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("redisstore: claim key: revisit state of %s: %w", key, err)
		}
		return &frontier.Lease{
			Item:       frontier.Item{Key: key},
			Pace:       host,
			Token:      tok,
			Expires:    at.Add(time.Duration(intOf(r[4])) * time.Microsecond),
			Revisiting: rv,
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
	if err := s.setup(ctx); err != nil {
		return err
	}
	sh := s.shardOf(l.Key)
	if shardOfToken(l.Token) != sh.i {
		return frontier.ErrLeaseLost // not a token of the key's shard
	}
	r, err := s.call(ctx, sh, finishScript, op, now, s.finishArgs(l, now, o, requeue)...)
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
	} else if !s.legacy() {
		cp = s.stampCheckpoint(cp)
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
	var revisiting []byte
	if o.Revisiting != nil {
		revisiting, _ = o.Revisiting.MarshalBinary() // never fails
	}
	return []any{counterOf(l.Token), l.Key, flag(requeue), item,
		encodeHost(&o.Pace), ceilMicros(o.Pace.Delay), ceilMicros(o.Rest),
		flag(o.Checkpoint != nil), cp, s.opt.Checkpoint, closedFor, revisit, due, revisiting}
}

// stampCheckpoint returns cp behind its stamp, 8 bytes big-endian: µs on
// the Store's clock, and later than the stamp of every checkpoint the
// Store stored before, so that Checkpoint finds the last of the shards'.
func (s *Store) stampCheckpoint(cp []byte) []byte {
	t := time.Now().UnixMicro()
	for {
		last := s.cpStamp.Load()
		t = max(t, last+1)
		if s.cpStamp.CompareAndSwap(last, t) {
			break
		}
	}
	return append(binary.BigEndian.AppendUint64(nil, uint64(t)), cp...)
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
	if err := s.setup(ctx); err != nil {
		return err
	}
	_, err := s.call(ctx, s.shardOf(key), giveUpScript, "give up", s.addNow(), key)
	return err
}

// legacy reports whether the job is of an earlier release: one shard, in
// the job's own slot.
func (s *Store) legacy() bool { return s.shards[0].prefix == s.prefix }

// readArgs returns read.lua's keys and arguments on sh for what ("counts"
// or "host").
func (s *Store) readArgs(sh *shard, now time.Time, what, key string) ([]string, []any) {
	return sh.keys, []any{sh.prefix, what, micros(now), flag(s.opt.CallerClock), key}
}

// reply returns v as a script's array reply.
func reply(v any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: reply %T", errCorrupt, v)
	}
	return arr, nil
}

// Host implements frontier.Store. A key that must rest after a Redis
// restart shows the rest already.
func (s *Store) Host(ctx context.Context, key string) (ratelimit.HostState, error) {
	if ok, err := s.started(ctx); !ok {
		return ratelimit.HostState{}, err
	}
	var r []any
	err := s.retry(ctx, "host", func() (err error) {
		keys, args := s.readArgs(s.shardOf(key), time.Time{}, "host", key)
		r, err = reply(readScript.Run(ctx, s.c, keys, args...).Result())
		return err
	})
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

// Counts implements frontier.Store: the sums of the shards' counters,
// read in one pipelined round. Ready and Resting count the keys by their
// place in the ready sets: a key that must rest after a Redis restart
// counts as ready until a script touches it.
func (s *Store) Counts(ctx context.Context, now time.Time) (frontier.Counts, error) {
	if ok, err := s.started(ctx); !ok {
		return frontier.Counts{}, err
	}
	var sum [7]int
	err := s.retry(ctx, "counts", func() error {
		sum = [7]int{}
		if err := readScript.Load(ctx, s.c).Err(); err != nil {
			return err
		}
		cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, sh := range s.shards {
				keys, args := s.readArgs(sh, now, "counts", "")
				readScript.EvalSha(ctx, p, keys, args...)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, c := range cmds {
			r, err := reply(c.(*redis.Cmd).Result())
			if err != nil {
				return err
			}
			if len(r) != 7 {
				return fmt.Errorf("%w: reply %v", errCorrupt, r)
			}
			for i := range sum {
				sum[i] += int(intOf(r[i]))
			}
		}
		return nil
	})
	if err != nil {
		return frontier.Counts{}, err
	}
	return frontier.Counts{
		Queued: sum[0], Leased: sum[1], Hosts: sum[2], Busy: sum[3], Scheduled: sum[4],
		Ready: sum[5], Resting: sum[6],
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

// robotsKey returns the key of authority's robots.txt entry, in the shard
// of the authority.
func (s *Store) robotsKey(ctx context.Context, authority string) (string, error) {
	if err := s.setup(ctx); err != nil {
		return "", err
	}
	return s.shardOf(authority).prefix + "robots:" + authority, nil
}

// LoadEntry returns the robots.txt entry kept for authority, or nil: the
// crawler's robots gate reads it (gate.EntryKeeper), so the processes of a
// job fetch a site's robots.txt once between them.
func (s *Store) LoadEntry(ctx context.Context, authority string) ([]byte, error) {
	k, err := s.robotsKey(ctx, authority)
	if err != nil {
		return nil, err
	}
	var v []byte
	err = s.retry(ctx, "load robots entry", func() error {
		b, err := s.c.Get(ctx, k).Bytes()
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
	k, err := s.robotsKey(ctx, authority)
	if err != nil {
		return err
	}
	return s.retry(ctx, "save robots entry", func() error {
		return s.c.Set(ctx, k, data, robotsTTL).Err()
	})
}

// Checkpoint implements frontier.Store: the checkpoint of the last Done of
// any Store of the job with the same Options.Checkpoint — of the shards',
// the one stamped last.
func (s *Store) Checkpoint(ctx context.Context) ([]byte, error) {
	if ok, err := s.started(ctx); !ok {
		return nil, err
	}
	var v []byte
	err := s.retry(ctx, "checkpoint", func() error {
		v = nil
		cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, sh := range s.shards {
				p.Get(ctx, sh.prefix+"cp:"+s.opt.Checkpoint)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		var last uint64
		for _, c := range cmds {
			b, err := c.(*redis.StringCmd).Bytes()
			switch {
			case errors.Is(err, redis.Nil):
				continue
			case err != nil:
				return err
			case s.legacy():
				v = b
			case len(b) < 8:
				return fmt.Errorf("%w: checkpoint of %d bytes", errCorrupt, len(b))
			case v == nil || binary.BigEndian.Uint64(b) > last:
				last, v = binary.BigEndian.Uint64(b), b[8:]
			}
		}
		return nil
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
	byShard := map[int][]any{}
	for t := range s.held {
		i := shardOfToken(t)
		byShard[i] = append(byShard[i], counterOf(t))
	}
	clear(s.held)
	s.mu.Unlock()
	var err error
	if len(byShard) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		for i, counters := range byShard {
			_, e := s.call(ctx, s.shards[i], dropScript, "close", time.Time{}, counters...)
			err = errors.Join(err, e)
		}
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
	//go:embed lua/setup.lua
	setupSrc string
	//go:embed lua/reserve.lua
	reserveSrc string
	//go:embed lua/multi.lua
	multiSrc string

	prelude = bucketSrc + preludeSrc

	// add.lua and finish.lua define a function each, which these run.
	addScript        = redis.NewScript(prelude + addSrc + "return reply(add(8))\n")
	finishScript     = redis.NewScript(prelude + finishSrc + "return reply({finish()})\n")
	doneAddingScript = redis.NewScript(prelude + addSrc + finishSrc + doneAddingSrc)
	multiScript      = redis.NewScript(prelude + addSrc + finishSrc + multiSrc)
	claimScript      = redis.NewScript(prelude + claimSrc)
	claimKeyScript   = redis.NewScript(prelude + claimKeySrc)
	giveUpScript     = redis.NewScript(prelude + giveUpSrc)
	dropScript       = redis.NewScript(prelude + dropSrc)
	readScript       = redis.NewScript(readSrc)
	setupScript      = redis.NewScript(setupSrc)
	reserveScript    = redis.NewScript(reserveSrc)
)
