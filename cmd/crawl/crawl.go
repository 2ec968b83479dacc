package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/heedcrawl/heed/fetch/warc"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/crawler/metrics"
)

// runCrawl is the crawl command proper: it reads the flags and the seeds,
// crawls, writes a record per page or failed URL, and prints the summary.
// It returns the exit status.
func runCrawl(ctx context.Context, args []string, stdin io.Reader, stdout, rawStderr io.Writer) int {
	stderr := &syncWriter{w: rawStderr}
	var f flags
	fs := newFlagSet(&f)
	if code, ok := parseFlags(fs, args, func(w io.Writer) { usage(fs, w) }, stdout, stderr); !ok {
		return code
	}
	if code := checkModeFlags(fs, &f, stderr); code != 0 {
		return code
	}
	switch {
	case f.redis != "" && fs.NArg() > 1:
		fmt.Fprintln(stderr, "crawl: want at most one seeds file with -redis (without one, the process joins the job as it is); see crawl -h")
		return 2
	case f.redis == "" && fs.NArg() != 1:
		fmt.Fprintln(stderr, "crawl: want exactly one seeds file (or - for standard input); see crawl -h")
		return 2
	}
	seedsName := fs.Arg(0)
	if f.out == "-" {
		f.out = ""
	}
	if err := checkOutputs(&f, seedsName, stdin); err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return 2
	}

	var seeds []string
	code := 0
	// "-" streams: crawling starts as lines arrive on standard input. A
	// crawl with a state to resume, or a job to join, reads it whole first.
	streaming := seedsName == "-" && f.state == "" && f.redis == ""
	if seedsName != "" && !streaming {
		if seeds, code = loadSeeds(seedsName, stdin, stderr); code != 0 {
			return code
		}
	}

	// Listen before anything else is set up, so that an address in use
	// fails the command before it creates files or fetches anything.
	var metricsLn net.Listener
	if f.metrics != "" {
		ln, err := net.Listen("tcp", f.metrics)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: -metrics: %v\n", err)
			return 2
		}
		defer ln.Close() // on the early returns; stopMetrics closes it otherwise
		metricsLn = ln
	}

	// Lock the state before any file is created: a second crawl on the
	// same directory must not clobber the first one's output or log.
	var st *crawlState
	if f.state != "" {
		st, code = openState(ctx, f.state, stderr)
		if code != 0 {
			return code
		}
		defer st.store.Close() // on the early returns; a second Close does nothing
		if code := st.check(fs, &f, stderr); code != 0 {
			return code
		}
	}
	// Join the job before any file is created too: a process whose flags
	// are not the job's leaves nothing behind.
	var rj *redisJob
	if f.redis != "" {
		rj, code = openRedis(ctx, &f, stderr)
		if code != 0 {
			return code
		}
		defer rj.drop() // on the early returns; close has dropped it otherwise
		if code := rj.check(ctx, fs, &f, len(seeds) > 0, stderr); code != 0 {
			return code
		}
	}

	var logW *syncWriter
	if f.logFile != "" {
		lf, err := os.Create(f.logFile)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: -log: %v\n", err)
			return 2
		}
		defer lf.Close()
		logW = &syncWriter{w: bufio.NewWriterSize(lf, 64<<10)}
		defer logW.Flush() // before Close: defers run last-in first-out
	}
	// Without -log, records are dropped before they are formatted.
	var handler slog.Handler = slog.DiscardHandler
	if logW != nil {
		handler = slog.NewJSONHandler(logW, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	if f.verbose {
		handler = teeHandler{handler, slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})}
	}
	logger := slog.New(handler)
	if rj != nil {
		rj.setLog(logger)
	}

	opts, err := f.options(logger)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v; see crawl -h\n", err)
		return 2
	}
	var rec *recorder // made once the output is open, before Run
	if st != nil {
		opts = append(opts, crawler.WithStore(st.store), crawler.WithCheckpoint(func() []byte {
			cp, err := rec.checkpoint()
			if err != nil {
				st.failStore(err)
			}
			return cp
		}))
	}
	if rj != nil {
		opts = append(opts, crawler.WithStore(rj.store), crawler.WithLease(f.lease))
	}
	if f.warcDir != "" {
		w, err := warc.NewWriter(f.warcDir, warc.Options{
			MaxSize:  int64(f.warcSize),
			Dedup:    f.warcDedup,
			Software: "heed/" + crawler.Version + " (crawl)",
			Info:     warcInfo(&f, fs.Args()),
		})
		if err != nil {
			fmt.Fprintf(stderr, "crawl: -warc: %v\n", err)
			return 2
		}
		defer func() {
			if err := w.Close(); err != nil {
				fmt.Fprintf(stderr, "crawl: -warc: %v\n", err)
			}
		}()
		opts = append(opts, crawler.WithWARC(w))
	}
	c, err := crawler.New(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v; see crawl -h\n", err)
		return 2
	}

	// Before Run: the metrics record each page through an OnPage handler,
	// which the crawler takes when Run starts.
	var metricsHandler http.Handler
	if metricsLn != nil {
		m, err := metrics.New(c, metrics.WithRuntimeMetrics())
		if err != nil {
			fmt.Fprintf(stderr, "crawl: -metrics: %v\n", err)
			return 2
		}
		metricsHandler = m.Handler()
	}

	var out io.Writer = stdout
	closeOut := func() error { return nil }
	var outBase int64
	syncOut := syncFunc(stdout)
	if f.out != "" {
		var of *os.File
		if st != nil {
			of, outBase, code = st.openOutput(f.out, f.stateOverride, stderr)
			if code != 0 {
				return code
			}
		} else if rj != nil {
			// Appended to: a process that rejoins its job keeps what it
			// wrote before.
			if of, err = os.OpenFile(f.out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
				fmt.Fprintf(stderr, "crawl: -o: %v\n", err)
				return 2
			}
		} else if of, err = os.Create(f.out); err != nil {
			fmt.Fprintf(stderr, "crawl: -o: %v\n", err)
			return 2
		}
		defer of.Close() // on the early returns; closeOut is the one that counts
		out, closeOut, syncOut = of, of.Close, syncFunc(of)
	}
	stopProfiles, err := startProfiles(f.cpuProfile, f.memProfile)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return 2
	}
	showProgress := f.progress == "on" || f.progress == "auto" && isTerminal(rawStderr)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A terminal shows each record as it comes; a pipe or a file gets them
	// at least once a second, so a reader sees the crawl go on and a
	// crash or kill loses at most a second of it.
	// With -redis each record is written out before its page is
	// acknowledged to the job: a process killed at any moment loses no
	// record of a page the job counts done.
	rec = newRecorder(out, f.body, isTerminal(out) || rj != nil)
	rec.base = outBase
	if st != nil {
		rec.gen, rec.syncOut = st.now.OutputGen, syncOut
		st.out.Store(rec)
		if err := st.begin(ctx); err != nil {
			fmt.Fprintf(stderr, "crawl: -state %s: %v\n", st.dir, err)
			return 1
		}
		if line := st.resumeLine(); line != "" {
			fmt.Fprintln(stderr, line)
		}
	}
	if rj != nil {
		if err := rj.begin(ctx, len(seeds) > 0); err != nil {
			fmt.Fprintf(stderr, "crawl: %s: %v\n", rj.where(), err)
			return 1
		}
		if line := rj.joinedLine(); line != "" {
			fmt.Fprintln(stderr, line)
		}
	}
	rec.onFail = func(err error) {
		// The output is gone: fetching more would only lose it.
		cancel(outputFailed{err})
		erase := "" // the progress line
		if showProgress {
			erase = "\r\033[K"
		}
		fmt.Fprintf(stderr, "%scrawl: %s; stopping the crawl\n", erase, outputErrorText(err))
	}
	stopFlushing := rec.flushEvery(time.Second)
	fails := newFailures()
	c.OnPage(rec.page)
	c.OnError(func(ctx context.Context, u *url.URL, err error) {
		if fails.failed(u.String(), err) {
			rec.failure(ctx, u.String(), err)
		}
	})
	if rj != nil {
		// The heartbeat's counts: the crawler's Stats would ask Redis.
		c.OnPage(func(context.Context, *crawler.Page) { rj.pages.Add(1) })
		c.OnError(func(context.Context, *url.URL, error) { rj.errored.Add(1) })
	}
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		logger.Info("disallowed by robots.txt", "url", u.String(), "reason", string(why))
		fails.disallowed(why)
	})

	stopWatch := watchSignals(cancel, stderr, func() {
		// A second signal: write what was fetched, and say what it was.
		rec.flush()
		if st != nil {
			// As far as it goes: a worker may hold the Store.
			st.store.Sync()
		}
		if logW != nil {
			logW.Flush()
		}
		summary(stderr, c.Stats(), fails, &f)
	})
	defer stopWatch()

	stopMetrics := func() {}
	if metricsLn != nil {
		stopMetrics = serveMetrics(metricsLn, metricsHandler, stderr)
		fmt.Fprintf(stderr, "crawl: metrics on http://%s/metrics\n", metricsLn.Addr())
	}
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if showProgress {
		progressWG.Go(func() { progress(c, stderr, progressDone) })
	}
	var runErr error
	if streaming {
		feed := make(chan crawler.Seed)
		go streamSeeds(ctx, stdin, feed, stderr)
		runErr = c.RunFeed(ctx, feed)
	} else {
		runErr = c.Run(ctx, seeds...)
	}
	stopMetrics()
	if err := stopProfiles(); err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
	}
	close(progressDone)
	progressWG.Wait()
	outErr := stopFlushing()
	ranToEnd := runErr == nil && outErr == nil && context.Cause(ctx) == nil
	var stateErr error
	if st != nil {
		// Before the output closes: the Store's last sync makes it
		// durable first.
		stateErr = st.close(context.WithoutCancel(ctx), ranToEnd)
	}
	if rj != nil {
		how := "failed"
		var sig signalled
		switch {
		case ranToEnd, errors.Is(runErr, crawler.ErrNoSeeds) && rj.existed:
			how = "done"
		case errors.As(context.Cause(ctx), &sig):
			how = "stopped"
		}
		stateErr = rj.close(ctx, ranToEnd, how)
	}
	if err := closeOut(); err != nil && outErr == nil {
		outErr = err
		fmt.Fprintf(stderr, "crawl: %s\n", outputErrorText(err))
	}
	s := c.Stats()
	o := outcome{mode: plainMode, streamed: streaming, runErr: runErr, cause: context.Cause(ctx), outErr: outErr, closeErr: stateErr, nothingNew: nothingNew(s, rec)}
	if st != nil {
		o.mode, o.started, o.complete = stateMode, st.resumed, st.complete
	}
	if rj != nil {
		o.mode, o.started, o.complete = redisMode, rj.existed, rj.complete
	}
	nothingFetched, failed := fails.nothingFetched(s)
	o.seedsFailed = failed
	code, how := exitStatus(o)
	switch how {
	case endNoSeeds:
		fmt.Fprintln(stderr, "crawl: -: no seed URLs")
		return code
	case endComplete, endNothingToDo:
	default:
		summary(stderr, s, fails, &f)
	}
	switch {
	case how == endStoreFailed, how == endRunFailed:
		fmt.Fprintf(stderr, "crawl: %v\n", runErr)
	case how == endSeedsCrawled && nothingFetched != "":
		fmt.Fprintf(stderr, "crawl: %s\n", nothingFetched)
	}
	if st != nil {
		st.report(stderr, how, o)
	}
	if rj != nil {
		rj.report(stderr, how, o)
	}
	return code
}

// teeHandler sends every record to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errA, errB error
	if t.a.Enabled(ctx, r.Level) {
		errA = t.a.Handle(ctx, r.Clone())
	}
	if t.b.Enabled(ctx, r.Level) {
		errB = t.b.Handle(ctx, r)
	}
	return errors.Join(errA, errB)
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{t.a.WithGroup(name), t.b.WithGroup(name)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// warcInfo is what a warcinfo record says of the crawl: the settings that
// shaped it.
func warcInfo(f *flags, args []string) []warc.Field {
	info := []warc.Field{
		{Name: "robots", Value: "classic"},
		{Name: "http-header-user-agent", Value: f.ua},
		{Name: "description", Value: "crawl " + strings.Join(args, " ")},
		{Name: "scope", Value: f.scope},
		{Name: "delay", Value: f.delay.String()},
		{Name: "max-depth", Value: strconv.Itoa(f.maxDepth)},
		{Name: "max-pages", Value: strconv.Itoa(f.maxPages)},
	}
	if f.ua == "" {
		info[1].Value = "(default for -agent " + f.agent + ")"
	}
	return info
}
