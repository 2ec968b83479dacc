package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier/redisstore"
)

// metaProcess prefixes the name under which each process of a -redis job
// records its heartbeat.
const metaProcess = "crawl/process/"

// metaPaused marks a job paused (crawl status -ui's controls): every
// process follows it within a heartbeat.
const metaPaused = "crawl/paused"

const (
	// heartbeatEvery is how often a -redis process records that it is
	// alive, and how far it has got.
	heartbeatEvery = 2 * time.Second
	// recentWindow is how long ago crawl status counts a process as seen
	// recently: many heartbeats, so a busy Redis does not hide one.
	recentWindow = time.Minute
	// closeTimeout bounds the last writes of a process leaving its job:
	// the mark of a complete crawl and its last heartbeat.
	closeTimeout = 5 * time.Second
)

// redisFlags are the flags every process of a -redis job shares: those a
// -state crawl is bound to, and the pacing flags, since the processes
// pace the same hosts together (and Redis applies the -per-host of the
// last process that asked to all of them), and -revisit's bounds, since
// they share one revisit schedule.
var redisFlags = append(slices.Clone(stateFlags), "per-host", "delay", "max-delay", "min-revisit", "max-revisit")

// metaKey is the Redis hash that holds a job's SetMeta values, as the
// package documentation of redisstore lays out its keys. crawl reads and
// writes it directly for what the Store has no operation for: storing the
// settings only if no process has yet (HSETNX), and listing the
// processes' heartbeats (HSCAN).
func metaKey(job string) string { return "heed:{" + job + "}:meta" }

// redactedURL is a -redis URL fit for messages: without its password.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}

// defaultProcess names a process by where it runs: HOST-PID.
func defaultProcess() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// redisLog sends go-redis's own messages (a connection pool in trouble,
// a failed handshake) to the command's log, instead of standard error;
// nowhere until the log is open.
type redisLog struct{ l atomic.Pointer[slog.Logger] }

// logRedis makes go-redis log to a new redisLog, and returns it. go-redis
// has one logger per process, which this replaces.
func logRedis() *redisLog {
	r := new(redisLog)
	redis.SetLogger(r)
	return r
}

func (r *redisLog) Printf(ctx context.Context, format string, v ...any) {
	l := r.l.Load()
	if l == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	l.Log(ctx, slog.LevelWarn, "redis: "+strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// Enabled, Handle, WithAttrs and WithGroup make a redisLog the
// slog.Handler of the Store's own messages (a process presumed dead that
// joins again, a heartbeat that failed), which go to the command's log
// once it is open. The Store logs its attributes with each message: a
// logger of it With attributes keeps none.
func (r *redisLog) Enabled(ctx context.Context, level slog.Level) bool {
	l := r.l.Load()
	return l != nil && l.Handler().Enabled(ctx, level)
}

func (r *redisLog) Handle(ctx context.Context, rec slog.Record) error {
	if l := r.l.Load(); l != nil {
		return l.Handler().Handle(ctx, rec)
	}
	return nil
}

func (r *redisLog) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *redisLog) WithGroup(string) slog.Handler      { return r }

// redisClient connects to the Redis at rawURL, a server or a cluster,
// for job, with a Store of it. A URL or job that cannot work is a usage
// error (status 2), its error wrapping redisstore.ErrURL or ErrJob; any
// other error is Redis's, unreachable. Telling a cluster node from a
// server asks Redis, retried for opt.RetryFor as the Store retries (0:
// no retries). opt's Log is logs.
func redisClient(ctx context.Context, rawURL, job string, opt redisstore.Options, logs *redisLog) (redis.UniversalClient, *redisstore.Store, error) {
	if err := redisstore.CheckJob(job); err != nil {
		return nil, nil, fmt.Errorf("-job %q: not a job name (empty, or with { or }): %w", job, err)
	}
	if opt.RetryFor == 0 {
		opt.RetryFor = -1 // the Store's "no retries": its zero means the default
	}
	c, err := redisstore.Dial(ctx, rawURL, opt.RetryFor)
	switch {
	case errors.Is(err, redisstore.ErrURL):
		return nil, nil, fmt.Errorf("-redis %s: %w", redactedURL(rawURL), err)
	case err != nil:
		return nil, nil, errors.New(unreachable(rawURL, err))
	}
	opt.Log = slog.New(logs)
	s, err := redisstore.New(c, job, opt)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, s, nil
}

// badRedis reports whether err, from redisClient, is a usage error.
func badRedis(err error) bool {
	return errors.Is(err, redisstore.ErrURL) || errors.Is(err, redisstore.ErrJob)
}

// unreachable says that Redis could not be asked anything, on one line.
func unreachable(rawURL string, err error) string {
	return fmt.Sprintf("cannot reach Redis at %s: %v", redactedURL(rawURL), err)
}

// heartbeat is what a process of a -redis job records under
// metaProcess+name.
type heartbeat struct {
	// Seen is when it was recorded, on Redis's clock, which every
	// process and crawl status share.
	Seen    time.Time `json:"seen"`
	Started time.Time `json:"started"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid"`
	// Pages and Errors are the process's own counts since it started.
	Pages  int64 `json:"pages"`
	Errors int64 `json:"errors"`
	// State is "crawling", or how the process ended: "done" (nothing left
	// to crawl), "stopped" (by a signal), "failed".
	State string `json:"state"`
}

// redisJob is this process's part in a -redis job.
type redisJob struct {
	rawURL  string
	job     string
	process string
	lease   time.Duration // -lease
	client  redis.UniversalClient
	store   *redisstore.Store
	// log is the command's log, once open; go-redis's messages go there
	// through redisLog.
	log      *slog.Logger
	redisLog *redisLog

	// What Redis held when the process joined.
	earlier

	now         settings // this process's settings
	diffs       []string // how they differ from was
	saveSetting bool     // now must replace was (-state-override)

	started        time.Time
	pages, errored atomic.Int64
	// crawler is the process's, paused while the job is; pausedByJob
	// says the pause is the job's, not the process's own page's.
	crawler     *crawler.Crawler
	pausedByJob bool
	stopBeat    func()
}

// openRedis connects to the job's Redis and reads what the job holds. On
// a refusal it has said why on stderr: badUsage for a URL or job name that
// cannot work, unavailable for a Redis that cannot be reached.
func openRedis(ctx context.Context, f *flags, stderr io.Writer) (*redisJob, refusal) {
	logs := logRedis() // before the client exists, which may log at once
	client, store, err := redisClient(ctx, f.redis, f.job, redisstore.Options{Checkpoint: f.process, RetryFor: f.redisRetry, Shards: f.redisShards}, logs)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		if badRedis(err) {
			return nil, badUsage
		}
		return nil, unavailable
	}
	rj := &redisJob{rawURL: f.redis, job: f.job, process: f.process, lease: f.lease, client: client, store: store, log: slog.New(slog.DiscardHandler), started: time.Now()}
	rj.redisLog = logs
	fail := func(err error) (*redisJob, refusal) {
		fmt.Fprintf(stderr, "crawl: %s\n", unreachable(f.redis, err))
		store.Close()
		client.Close()
		return nil, unavailable
	}
	// The first request: the Store retries it, for -redis-retry, while
	// Redis cannot be reached.
	rj.earlier, err = readEarlier(ctx, store)
	switch {
	case errors.Is(err, errSettings):
		fmt.Fprintf(stderr, "crawl: job %s on %s: %v\n", rj.job, redactedURL(rj.rawURL), err)
		rj.release()
		return nil, badUsage
	case err != nil:
		return fail(err)
	}
	rj.warnNamesake(ctx, stderr)
	return rj, notRefused
}

// warnNamesake warns when a process of the same name was crawling the job
// a moment ago: two processes of one name share a heartbeat, and crawl
// status would show one of them. A process restarted at once after a
// kill is its own namesake, hence a warning only.
func (rj *redisJob) warnNamesake(ctx context.Context, stderr io.Writer) {
	raw, err := rj.client.HGet(ctx, metaKey(rj.job), metaProcess+rj.process).Bytes()
	var hb heartbeat
	if err != nil || json.Unmarshal(raw, &hb) != nil || hb.State != "crawling" {
		return
	}
	now, err := rj.client.Time(ctx).Result()
	if err != nil || now.Sub(hb.Seen) > 3*heartbeatEvery {
		return
	}
	fmt.Fprintf(stderr, "crawl: a process named %s was crawling %s %v ago (pid %d on %s): if it still runs, give each process its own -process name\n",
		rj.process, rj.where(), max(now.Sub(hb.Seen), 0).Round(time.Second), hb.PID, hb.Host)
}

// release disconnects without a word to the job: nothing was done in it.
// After close, it does nothing.
func (rj *redisJob) release() {
	rj.store.Close()
	rj.client.Close()
}

// where names the job for messages: "job news on redis://host:6379".
func (rj *redisJob) where() string {
	return fmt.Sprintf("job %s on %s", rj.job, redactedURL(rj.rawURL))
}

// check compares this process's flags with those the job was started
// with, and starts the job, storing them, when it has not been. A process
// with other flags is refused unless -state-override; one without seeds
// needs a job to join.
func (rj *redisJob) check(ctx context.Context, fs *flag.FlagSet, f *flags, seeds bool, stderr io.Writer) refusal {
	now, err := currentSettings(fs, redisFlags, "")
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return badUsage
	}
	rj.now = now
	if !rj.startedBefore {
		if !seeds {
			fmt.Fprintf(stderr, "crawl: there is no %s to join: %s\n", rj.where(), startWithSeeds)
			return badUsage
		}
		b, err := json.Marshal(now)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %v\n", err)
			return badUsage
		}
		// Only if no other process has: processes started together must
		// not each take their own flags for the job's.
		set, err := rj.client.HSetNX(ctx, metaKey(rj.job), metaSettings, b).Result()
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %s\n", unreachable(rj.rawURL, err))
			return unavailable
		}
		if set {
			return notRefused
		}
		raw, err := rj.store.Meta(ctx, metaSettings)
		if err == nil {
			err = json.Unmarshal(raw, &rj.was)
		}
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %s: its settings: %v\n", rj.where(), err)
			return unavailable
		}
		rj.startedBefore = true
	}
	rj.diffs = rj.was.differences(fs, redisFlags, now)
	if len(rj.diffs) == 0 {
		if !seeds {
			return rj.awaitSeeds(ctx, stderr)
		}
		return notRefused
	}
	if !f.stateOverride {
		fmt.Fprintf(stderr, "crawl: %s was started with other settings:\n", rj.where())
		for _, d := range rj.diffs {
			fmt.Fprintf(stderr, "crawl:   %s\n", d)
		}
		fmt.Fprintln(stderr, "crawl: run every process of a job with the job's own flags, or add -state-override to go on with these")
		return badUsage
	}
	fmt.Fprintf(stderr, "crawl: -state-override: joining %s with %s\n", rj.where(), strings.Join(rj.diffs, ", "))
	rj.saveSetting = true
	if !seeds {
		return rj.awaitSeeds(ctx, stderr)
	}
	return notRefused
}

const (
	// seedsWait bounds how long a process without seeds waits for the
	// process that started the job to schedule its seeds.
	seedsWait = time.Minute
	// seedsPoll is how often it looks.
	seedsPoll = 100 * time.Millisecond
	// startWithSeeds says how to start a job that a process without seeds
	// found missing: seeds are URLs, seeds files or standard input, as
	// on any crawl's command line.
	startWithSeeds = "start it with seeds (URLs, seeds files, or - for standard input)"
)

// awaitSeeds waits, for a process without seeds, until the job has
// scheduled something. The process that starts a job stores its settings
// first, and the scope and address classes its seeds allow just before
// it schedules them: a process that began before those were stored would
// take every link for out of scope, and its seeds' loopback or private
// addresses for forbidden.
func (rj *redisJob) awaitSeeds(ctx context.Context, stderr io.Writer) refusal {
	if rj.counts.Scheduled > 0 || rj.complete {
		return notRefused
	}
	fmt.Fprintf(stderr, "crawl: waiting for the process that started %s to schedule its seeds\n", rj.where())
	deadline := time.Now().Add(seedsWait)
	tick := time.NewTicker(seedsPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return unavailable
		case <-tick.C:
		}
		c, err := rj.store.Counts(ctx, time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "crawl: %s\n", unreachable(rj.rawURL, err))
			return unavailable
		}
		if c.Scheduled > 0 {
			rj.counts = c
			return notRefused
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "crawl: %s has scheduled no URL in %v: %s\n", rj.where(), seedsWait, startWithSeeds)
			return badUsage
		}
	}
}

// options are the crawler's options for the job: its Store, and this
// process's -lease. go-redis's messages go to log from now on.
func (rj *redisJob) options(log *slog.Logger) []crawler.Option {
	rj.setLog(log)
	return []crawler.Option{crawler.WithStore(rj.store), crawler.WithLease(rj.lease)}
}

// openOutput opens -o name to append to it: a process that rejoins its
// job keeps what it wrote before.
func (rj *redisJob) openOutput(name string, _ bool, stderr io.Writer) (*os.File, int64, refusal) {
	of, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: -o: %v\n", err)
		return nil, 0, badUsage
	}
	return of, 0, notRefused
}

// begin joins the job: the process starts its part in it, says what the
// job held if it joined one under way, and counts its pages and errors
// for the heartbeat (the crawler's Stats would ask Redis). Each record is
// written out before its page is acknowledged to the job: a process
// killed at any moment loses no record of a page the job counts done.
func (rj *redisJob) begin(ctx context.Context, c *crawler.Crawler, rec *recorder, seeds bool, stderr io.Writer) refusal {
	rec.each = true
	rj.crawler = c
	if err := rj.start(ctx, seeds); err != nil {
		fmt.Fprintf(stderr, "crawl: %s: %v\n", rj.where(), err)
		return unavailable
	}
	if line := rj.joinedLine(); line != "" {
		fmt.Fprintln(stderr, line)
	}
	c.OnPage(func(context.Context, *crawler.Page) { rj.pages.Add(1) })
	c.OnError(func(context.Context, *url.URL, error) { rj.errored.Add(1) })
	return notRefused
}

// start stores this process's settings if -state-override replaces the
// job's, and clears the mark of a complete job when the process brings
// seeds, which may be new; then starts the heartbeat.
func (rj *redisJob) start(ctx context.Context, seeds bool) error {
	if rj.saveSetting {
		b, err := json.Marshal(rj.now)
		if err != nil {
			return err
		}
		if err := rj.store.SetMeta(ctx, metaSettings, b); err != nil {
			return err
		}
	}
	if rj.complete && seeds {
		if err := rj.store.SetMeta(ctx, metaComplete, nil); err != nil {
			return err
		}
	}
	beatCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			rj.beat(beatCtx, "crawling")
			rj.followPause(beatCtx)
			select {
			case <-beatCtx.Done():
				return
			case <-t.C:
			}
		}
	})
	rj.stopBeat = func() {
		cancel()
		wg.Wait()
	}
	return nil
}

// setLog makes l the log of the process's part in the job, go-redis's
// messages included.
func (rj *redisJob) setLog(l *slog.Logger) {
	rj.log = l
	rj.redisLog.l.Store(l)
}

// joinedLine says what the job held when this process joined it; "" for
// a job it started, or one complete.
func (rj *redisJob) joinedLine() string {
	if !rj.startedBefore || rj.complete {
		return ""
	}
	return fmt.Sprintf("crawl: process %s joining %s: %d URLs queued, %d held by processes, %d scheduled so far",
		rj.process, rj.where(), rj.counts.Queued, rj.counts.Leased, rj.counts.Scheduled)
}

// beat records the heartbeat. It is not retried: the next one comes soon,
// and a Redis that stays away stops the crawl anyway.
func (rj *redisJob) beat(ctx context.Context, state string) {
	now, err := rj.client.Time(ctx).Result()
	if err != nil {
		rj.log.Debug("crawl: heartbeat", "err", err)
		return
	}
	host, _ := os.Hostname()
	b, err := json.Marshal(heartbeat{
		Seen: now.UTC(), Started: rj.started.UTC(), Host: host, PID: os.Getpid(),
		Pages: rj.pages.Load(), Errors: rj.errored.Load(), State: state,
	})
	if err == nil {
		err = rj.client.HSet(ctx, metaKey(rj.job), metaProcess+rj.process, b).Err()
	}
	if err != nil {
		rj.log.Debug("crawl: heartbeat", "err", err)
	}
}

// followPause pauses or resumes the process as the job's pause mark says.
// A process paused by the mark is resumed when the mark goes; one paused
// on its own live page stays paused.
func (rj *redisJob) followPause(ctx context.Context) {
	v, err := rj.store.Meta(ctx, metaPaused)
	if err != nil || rj.crawler == nil {
		return
	}
	switch on := len(v) > 0; {
	case on && !rj.crawler.Paused():
		rj.crawler.Pause()
		rj.pausedByJob = true
		rj.log.Info("crawl: job paused")
	case !on && rj.pausedByJob:
		rj.crawler.Resume()
		rj.pausedByJob = false
		rj.log.Info("crawl: job resumed")
	}
}

// sync does nothing: what the job holds is Redis's to keep.
func (rj *redisJob) sync() {}

// close leaves the job, and says in the last heartbeat how the process
// ended: "done" when the crawl ran to its end, or when the process found
// nothing to do in the job it joined; "stopped" by a signal; "failed".
func (rj *redisJob) close(ctx context.Context, o outcome) outcome {
	o.mode, o.started, o.complete = redisMode, rj.startedBefore, rj.complete
	how := "failed"
	var sig signalled
	var up timeUp
	switch {
	case o.ranToEnd(), errors.Is(o.runErr, crawler.ErrNoSeeds) && rj.startedBefore:
		how = "done"
	case errors.As(o.cause, &sig), errors.As(o.cause, &up):
		how = "stopped"
	}
	o.closeErr = rj.leave(ctx, o.ranToEnd(), how)
	return o
}

// leave leaves the job: a process whose crawl ran to its end marks the
// job complete (nothing is queued or held anywhere); the last heartbeat
// says how the process ended; the leases it holds go back to the job.
func (rj *redisJob) leave(ctx context.Context, ranToEnd bool, state string) error {
	if rj.stopBeat != nil {
		rj.stopBeat()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	var err error
	if ranToEnd {
		b, merr := json.Marshal(struct {
			Finished time.Time `json:"finished"`
		}{time.Now().UTC()})
		if merr == nil {
			err = rj.store.SetMeta(ctx, metaComplete, b)
		}
	}
	rj.beat(ctx, state)
	err = errors.Join(err, rj.store.Close())
	return errors.Join(err, rj.client.Close())
}

// redisFailureHint follows the message of a Store that failed.
func (rj *redisJob) redisFailureHint(err error) string {
	if errors.Is(err, redisstore.ErrStateLost) {
		return fmt.Sprintf("crawl: Redis no longer holds %s (restarted without persistence, or its keys deleted): it cannot go on; the outputs keep what was fetched", rj.where())
	}
	return fmt.Sprintf("crawl: %s is kept as Redis holds it: once Redis answers again, run the command again to rejoin it", rj.where())
}

// report writes what the job adds to what the command says of a crawl
// that ended how: the job's state, and how to go on.
func (rj *redisJob) report(w io.Writer, how ending, o outcome) {
	switch how {
	case endComplete:
		fmt.Fprintf(w, "crawl: %s is complete: nothing is left to crawl\n", rj.where())
	case endNothingToDo:
		fmt.Fprintf(w, "crawl: %s has nothing queued and nothing held: nothing to do\n", rj.where())
	case endStoreFailed:
		fmt.Fprintln(w, rj.redisFailureHint(o.runErr))
	case endSignalled, endTimeUp:
		fmt.Fprintf(w, "crawl: process %s left %s: its other processes go on, and the same command rejoins it\n", rj.process, rj.where())
	case endCloseFailed:
		fmt.Fprintf(w, "crawl: leaving %s: %v\n", rj.where(), o.closeErr)
	}
}

// checkModeFlags checks that the flags of -state and -redis go together.
// It names this process if -process does not.
func checkModeFlags(fs *flag.FlagSet, f *flags, stderr io.Writer) refusal {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	fail := func(format string, a ...any) refusal {
		fmt.Fprintf(stderr, "crawl: "+format+"; see crawl -h\n", a...)
		return badUsage
	}
	switch {
	case f.redis == "":
		if f.job != "" || set["job"] {
			return fail("-job needs -redis URL, the Redis that holds the job")
		}
		for _, name := range []string{"process", "lease", "redis-retry", "redis-shards"} {
			if set[name] {
				return fail("-%s is for a crawl with -redis", name)
			}
		}
		return notRefused
	case f.state != "":
		return fail("-state and -redis both keep the crawl's state: give one of them")
	case f.job == "":
		return fail("-redis needs -job NAME, the crawl to start or join")
	case f.lease <= 0:
		return fail("-lease must be positive, got %v", f.lease)
	case f.redisRetry < 0:
		return fail("-redis-retry must not be negative, got %v", f.redisRetry)
	case f.redisShards < 0 || f.redisShards > redisstore.MaxShards:
		return fail("-redis-shards must be 0 to %d, got %d", redisstore.MaxShards, f.redisShards)
	}
	if f.process == "" {
		f.process = defaultProcess()
	}
	return notRefused
}
