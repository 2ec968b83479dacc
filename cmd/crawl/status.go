package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/crawler/live"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/redisstore"
)

// statusRetry is how long crawl status retries a Redis that does not
// answer, by default: someone is waiting for the answer.
const statusRetry = 5 * time.Second

// runStatus is `crawl status -redis URL -job NAME`: how a -redis job is
// going. It returns the exit status: 0 when it could tell, 1 when Redis
// could not be reached, 2 for bad flags or a job Redis does not hold (a
// name given wrong, like a seeds file that does not exist).
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawl status", flag.ContinueOnError)
	var rawURL, job, ui string
	retry := statusRetry
	fs.StringVar(&rawURL, "redis", "", "the Redis server or cluster holding the job, at `URL` (redis://[user:password@]host:port[/db], or a cluster as for crawl -redis)")
	fs.StringVar(&job, "job", "", "the job's `NAME`")
	fs.Var((*durationFlag)(&retry), "redis-retry", "how long to retry a Redis that cannot be reached")
	fs.StringVar(&ui, "ui", "", "serve the job's live view at http://`ADDR`/ until interrupted, instead of printing its status once (a host left out is 127.0.0.1, loopback)")
	usage := func(w io.Writer) {
		fmt.Fprint(w, `Usage:
  crawl status -redis URL -job NAME [-ui ADDR]

Shows how a crawl shared through Redis (crawl -redis URL -job NAME) is going:
URLs queued and held, hosts, pages scheduled and fetched, errors, the
processes seen in the last minute, and the job's members: each process
that takes URLs, with its last heartbeat and the URLs and hosts it holds.

Flags:
`)
		fs.VisitAll(func(fl *flag.Flag) { printFlag(w, fl) })
	}
	if code, ok := parseFlags(fs, args, usage, stdout, stderr); !ok {
		return code
	}
	switch {
	case rawURL == "" || job == "":
		fmt.Fprintln(stderr, "crawl status: want -redis URL and -job NAME; see crawl status -h")
		return 2
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "crawl status: unexpected argument %q; see crawl status -h\n", fs.Arg(0))
		return 2
	}
	// What go-redis would print, the error returned says.
	client, store, err := redisClient(ctx, rawURL, job, redisstore.Options{RetryFor: retry}, logRedis())
	if err != nil {
		fmt.Fprintf(stderr, "crawl status: %v\n", err)
		if badRedis(err) {
			return 2
		}
		return 1
	}
	defer client.Close()
	defer store.Close()

	fail := func(err error) int {
		fmt.Fprintf(stderr, "crawl status: %s\n", unreachable(rawURL, err))
		return 1
	}
	j, err := readJob(ctx, client, store, job)
	if err != nil {
		return fail(err)
	}
	where := fmt.Sprintf("job %s on %s", job, redactedURL(rawURL))
	if !j.settings && j.counts == (frontier.Counts{}) && len(j.procs) == 0 {
		noSuchJob(ctx, stderr, client, rawURL, job)
		return 2
	}
	if ui != "" {
		return serveJobView(ctx, ui, func(token string) http.Handler { return jobView(client, store, job, token) }, stderr)
	}
	writeStatus(stdout, where, j.now, j.counts, j.complete, j.procs)
	writeMembers(stdout, j.now, j.members)
	return 0
}

// jobRead is what the Store of a job holds of its progress.
type jobRead struct {
	settings, complete bool // the job was started; it ran to its end
	paused             bool // the job is paused
	counts             frontier.Counts
	procs              []namedBeat
	members            []redisstore.Member // the processes that take URLs, from their heartbeats
	now                time.Time           // Redis's clock
}

// readJob reads job's progress from its Store and Redis.
func readJob(ctx context.Context, client redis.UniversalClient, store *redisstore.Store, job string) (jobRead, error) {
	var j jobRead
	settingsRaw, err := store.Meta(ctx, metaSettings)
	if err != nil {
		return j, err
	}
	completeRaw, err := store.Meta(ctx, metaComplete)
	if err != nil {
		return j, err
	}
	j.settings, j.complete = settingsRaw != nil, len(completeRaw) > 0
	pausedRaw, err := store.Meta(ctx, metaPaused)
	if err != nil {
		return j, err
	}
	j.paused = len(pausedRaw) > 0
	if j.counts, err = store.Counts(ctx, time.Now()); err != nil {
		return j, err
	}
	if j.procs, err = heartbeats(ctx, client, job); err != nil {
		return j, err
	}
	if j.members, err = store.Members(ctx); err != nil {
		return j, err
	}
	j.now, err = client.Time(ctx).Result()
	return j, err
}

// view is j as the job view shows it.
func (j jobRead) view(name string) live.Job {
	v := live.Job{Name: name, Now: j.now, Counts: j.counts, State: jobState(j.now, j.counts, j.complete, j.procs), Paused: j.paused}
	for _, p := range j.procs {
		v.Pages += p.Pages
		v.Errors += p.Errors
		v.Processes = append(v.Processes, live.JobProcess{Name: p.name, State: p.State, Seen: p.Seen, Started: p.Started,
			Host: p.Host, PID: p.PID, Pages: p.Pages, Errors: p.Errors})
	}
	slices.SortFunc(v.Processes, func(a, b live.JobProcess) int { return b.Seen.Compare(a.Seen) })
	return v
}

// jobView is the job view of job, read from its Store and Redis: its
// processes and counts, its frontier panel (the Store's DueCounts, for
// the whole job), and the controls, with token, that pause and resume it.
func jobView(client redis.UniversalClient, store *redisstore.Store, job, token string) *live.JobHandler {
	return live.NewJobHandler(func(ctx context.Context) (live.Job, error) {
		j, err := readJob(ctx, client, store, job)
		return j.view(job), err
	}, live.JobOptions{
		Token: token,
		Pause: func(ctx context.Context, on bool) error {
			var mark []byte
			if on {
				mark = []byte("1")
			}
			return store.SetMeta(ctx, metaPaused, mark)
		},
		Frontier: func(ctx context.Context, edges []time.Duration) (frontier.DueCounts, error) {
			return store.DueCounts(ctx, time.Now(), edges)
		},
	})
}

// serveJobView serves the job view view makes on addr until ctx ends or a
// signal comes, its controls needing the token it prints; it returns the
// exit status.
func serveJobView(ctx context.Context, addr string, view func(token string) http.Handler, stderr io.Writer) int {
	ln, err := listenLoopback(addr)
	if err != nil {
		fmt.Fprintf(stderr, "crawl status: -ui: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, stopSignals...)
	defer stop()
	token := live.NewToken()
	srv := &http.Server{Handler: view(token), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "crawl status: job view on http://%s/#token=%s (interrupt to stop)\n", ln.Addr(), token)
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), metricsShutdown)
		defer cancel()
		srv.Shutdown(shut)
	})
	err = srv.Serve(ln)
	stop()
	wg.Wait()
	if !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "crawl status: -ui: %v\n", err)
		return 1
	}
	return 0
}

// writeMembers writes the job's members — each process that claims, by
// its heartbeat in Redis — with what each holds, and those declared dead
// whose URLs are being taken back.
func writeMembers(w io.Writer, now time.Time, ms []redisstore.Member) {
	alive := 0
	for _, m := range ms {
		if !m.Dead {
			alive++
		}
	}
	fmt.Fprintf(w, "members:    %d alive", alive)
	if dead := len(ms) - alive; dead > 0 {
		fmt.Fprintf(w, ", %d dead whose URLs are being taken back", dead)
	}
	fmt.Fprintln(w)
	for _, m := range ms {
		ago := max(now.Sub(m.LastBeat), 0).Round(100 * time.Millisecond)
		if m.Dead {
			fmt.Fprintf(w, "  member %d  dead since %s ago: its URLs go back to their queues\n", m.ID, ago)
			continue
		}
		fmt.Fprintf(w, "  member %d  last heartbeat %s ago (liveness timeout %s), holds %d leases (%d of them runs)",
			m.ID, ago, m.Timeout, m.Holds.Leases, m.Holds.Runs)
		if len(m.Holds.Hosts) > 0 {
			fmt.Fprintf(w, ", hosts %s", strings.Join(m.Holds.Hosts, " "))
			if m.Holds.More > 0 {
				fmt.Fprintf(w, " and %d more", m.Holds.More)
			}
		}
		fmt.Fprintln(w)
	}
}

// noSuchJob says on stderr that the Redis at rawURL holds no job named
// job, which jobs it does hold, and how to start this one. Asking changes
// nothing in Redis.
func noSuchJob(ctx context.Context, stderr io.Writer, client redis.UniversalClient, rawURL, job string) {
	at := redactedURL(rawURL)
	fmt.Fprintf(stderr, "crawl status: there is no job %s on %s: no process has started a job of that name there\n", job, at)
	jobs, more, err := listJobs(ctx, client)
	switch {
	case err != nil:
		// The answer is already given; the list only helps.
	case len(jobs) == 0:
		fmt.Fprintf(stderr, "crawl status: %s holds no job at all%s: is it the right server and database?\n",
			at, database(client))
	default:
		list := strings.Join(jobs, ", ")
		if more {
			list += ", …"
		}
		fmt.Fprintf(stderr, "crawl status: the jobs on %s: %s\n", at, list)
	}
	fmt.Fprintf(stderr, "crawl status: to start it: crawl -redis %s -job %s seeds.txt\n", shellWord(at), shellWord(job))
}

// shellWord is s as one word of a POSIX shell command line: as it is if
// no character of it is special, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

const (
	// listJobsMax is how many job names noSuchJob shows at most.
	listJobsMax = 20
	// listJobsScans bounds the SCAN calls that look for them, of
	// listJobsCount keys each: a Redis of many jobs, or of jobs with many
	// hosts queued, is not read whole for a message.
	listJobsScans = 1000
	listJobsCount = 1000
)

// listJobs returns the names of the jobs in client's database, sorted, at
// most listJobsMax of them; more reports that there may be others. A job is
// known by its meta hash (crawl stores its settings there when it starts
// one) or its counters hash, heed:{job}:meta or heed:{job}:n (the key
// layout of package redisstore).
func listJobs(ctx context.Context, client redis.UniversalClient) (jobs []string, more bool, err error) {
	seen := map[string]bool{}
	var mu sync.Mutex // a cluster's primaries are scanned at once
	scan := func(ctx context.Context, c *redis.Client) error {
		names, partial, err := scanJobs(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		for _, name := range names {
			seen[name] = true
		}
		more = more || partial
		return err
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, scan)
	} else if c, ok := client.(*redis.Client); ok {
		err = scan(ctx, c)
	}
	if err != nil {
		return nil, false, err
	}
	for name := range seen {
		jobs = append(jobs, name)
	}
	slices.Sort(jobs)
	if len(jobs) > listJobsMax {
		jobs, more = jobs[:listJobsMax], true
	}
	return jobs, more, nil
}

// scanJobs returns the names of the jobs whose keys one server holds
// (a name may come more than once); partial reports that it stopped
// before the end.
func scanJobs(ctx context.Context, client *redis.Client) (names []string, partial bool, err error) {
	var cursor uint64
	for range listJobsScans {
		var keys []string
		keys, cursor, err = client.Scan(ctx, cursor, "heed:{*", listJobsCount).Result()
		if err != nil {
			return nil, false, err
		}
		for _, k := range keys {
			name, rest, ok := strings.Cut(strings.TrimPrefix(k, "heed:{"), "}")
			if ok && name != "" && (rest == ":meta" || rest == ":n") {
				names = append(names, name)
			}
		}
		if cursor == 0 {
			return names, false, nil
		}
	}
	return names, true, nil
}

// database names client's database for a message, if it has a choice of
// them (a cluster has database 0 alone).
func database(client redis.UniversalClient) string {
	if c, ok := client.(*redis.Client); ok {
		return fmt.Sprintf(" (database %d)", c.Options().DB)
	}
	return ""
}

// namedBeat is a process's last heartbeat.
type namedBeat struct {
	name string
	heartbeat
}

// heartbeats reads every process's last heartbeat in job.
func heartbeats(ctx context.Context, client redis.UniversalClient, job string) ([]namedBeat, error) {
	var beats []namedBeat
	var cursor uint64
	for {
		kv, next, err := client.HScan(ctx, metaKey(job), cursor, metaProcess+"*", 256).Result()
		if err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			var hb heartbeat
			if json.Unmarshal([]byte(kv[i+1]), &hb) != nil {
				continue // not one of ours: nothing to tell of it
			}
			beats = append(beats, namedBeat{strings.TrimPrefix(kv[i], metaProcess), hb})
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	// HSCAN may return a field twice.
	slices.SortFunc(beats, func(a, b namedBeat) int { return cmp.Compare(a.name, b.name) })
	return slices.CompactFunc(beats, func(a, b namedBeat) bool { return a.name == b.name }), nil
}

// jobState says how a job is going at now (Redis's clock), by its
// Store's counts and the processes' heartbeats.
func jobState(now time.Time, c frontier.Counts, complete bool, procs []namedBeat) string {
	crawling := 0
	for _, p := range procs {
		if p.State == "crawling" && now.Sub(p.Seen) <= recentWindow {
			crawling++
		}
	}
	switch {
	case c.Queued+c.Leased == 0 && complete:
		return "complete"
	case c.Queued+c.Leased == 0:
		return "idle: nothing queued or held"
	case crawling == 0:
		return "stopped: URLs are queued but no process is crawling; start one (crawl -redis URL -job NAME) to go on"
	}
	return "running"
}

// writeStatus writes the status of a job at now (Redis's clock).
func writeStatus(w io.Writer, where string, now time.Time, c frontier.Counts, complete bool, procs []namedBeat) {
	var recent []namedBeat
	var pages, errs int64
	for _, p := range procs {
		pages += p.Pages
		errs += p.Errors
		if now.Sub(p.Seen) <= recentWindow {
			recent = append(recent, p)
		}
	}
	fmt.Fprintf(w, "%s: %s\n", where, jobState(now, c, complete, procs))
	fmt.Fprintf(w, "queued:     %d URLs, %d held by processes\n", c.Queued, c.Leased)
	fmt.Fprintf(w, "hosts:      %d with work: %d busy, %d ready, %d resting\n", c.Hosts, c.Busy, c.Ready, c.Resting)
	fmt.Fprintf(w, "scheduled:  %d pages\n", c.Scheduled)
	fmt.Fprintf(w, "fetched:    %d pages, %d errors (as the processes last reported)\n", pages, errs)
	fmt.Fprintf(w, "processes:  %d seen in the last minute", len(recent))
	if older := len(procs) - len(recent); older > 0 {
		fmt.Fprintf(w, " (%d more before)", older)
	}
	fmt.Fprintln(w)
	slices.SortFunc(recent, func(a, b namedBeat) int { return b.Seen.Compare(a.Seen) })
	for _, p := range recent {
		how := p.State
		if how != "crawling" {
			how = "exited: " + how
		}
		fmt.Fprintf(w, "  %s  %s, seen %s ago, %d pages, %d errors (pid %d on %s)\n", p.name, how,
			max(now.Sub(p.Seen), 0).Round(time.Second), p.Pages, p.Errors, p.PID, p.Host)
	}
}
