package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/crawler/metrics"
	"github.com/heedcrawl/heed/fetch/warc"
)

// runCrawl is the crawl command proper: it reads the flags and the seeds,
// crawls, writes a record per page or failed URL, and prints the summary.
// It takes the same steps in each mode (plain, -state, -redis: see mode)
// until one refuses to go on, and returns the exit status exitStatus gives
// for how the command ended.
func runCrawl(ctx context.Context, args []string, stdin io.Reader, stdout, rawStderr io.Writer) int {
	c := &crawlCmd{args: args, stdin: stdin, stdout: stdout, rawStderr: rawStderr, stderr: &syncWriter{w: rawStderr}}
	defer c.unwind()
	var o outcome
	for _, step := range []func(context.Context) refusal{
		c.parse,         // the flags and the seeds
		c.listenMetrics, // first: an address in use stops the command before it creates a file
		c.listenUI,
		c.openMode, // before any file too: a -state in use, or a -redis job with other flags, leaves nothing behind
		c.openLog,
		c.newCrawler,
		c.openOutput,
		c.begin, // the mode records this run's start
	} {
		if o.refused = step(ctx); o.refused != notRefused {
			break
		}
	}
	if o.refused == notRefused {
		o = c.crawl(ctx)
	}
	code, how := exitStatus(o)
	c.report(how, o)
	return code
}

// crawlCmd is a run of the crawl command, as its steps set it up.
type crawlCmd struct {
	args      []string
	stdin     io.Reader
	stdout    io.Writer
	rawStderr io.Writer
	stderr    *syncWriter // rawStderr, shared by the crawl's goroutines

	f         flags
	fs        *flag.FlagSet
	seeds     []string // those of the arguments, standard input's too unless streaming
	streaming bool     // standard input's seeds are read as the crawl goes

	metricsLn      net.Listener
	metricsHandler http.Handler
	uiLn           net.Listener
	uiHandler      http.Handler
	uiStopMu       sync.Mutex
	uiStop         func() // the live page's stop, once the crawl can be stopped
	m              mode
	logW           *syncWriter // the -log file
	logger         *slog.Logger
	crawler        *crawler.Crawler
	out            io.Writer
	outBase        int64 // where this run's records begin in -o
	closeOut       func() error
	stopProfiles   func() error
	rec            *recorder
	fails          *failures

	// At the end.
	stats          crawler.Stats
	nothingFetched string // what became of the seeds when no page was fetched

	undo []func() // what the steps opened, closed in reverse order by unwind
}

// later has unwind call f.
func (c *crawlCmd) later(f func()) { c.undo = append(c.undo, f) }

// unwind closes, last first, what the steps opened: on an early return
// what they left open, at the end what is left to close.
func (c *crawlCmd) unwind() {
	for i := len(c.undo) - 1; i >= 0; i-- {
		c.undo[i]()
	}
}

// parse reads the flags, checks that they go together, and reads the
// seeds: URLs and seeds files, in any mix.
func (c *crawlCmd) parse(context.Context) refusal {
	f := &c.f
	c.fs = newFlagSet(f)
	if code, ok := parseFlags(c.fs, c.args, func(w io.Writer) { usage(c.fs, w) }, c.stdout, c.stderr); !ok {
		if code == 0 {
			return helpShown
		}
		return badUsage
	}
	if r := checkModeFlags(c.fs, f, c.stderr); r != notRefused {
		return r
	}
	if r := checkRevisitFlags(c.fs, f, c.stderr); r != notRefused {
		return r
	}
	if f.redis == "" && c.fs.NArg() == 0 {
		fmt.Fprintln(c.stderr, "crawl: want a URL or a seeds file to start from (- for standard input); see crawl -h")
		return badUsage
	}
	if f.out == "-" {
		f.out = ""
	}
	args, r := seedArgs(c.fs.Args(), c.stderr)
	if r != notRefused {
		return r
	}
	if err := checkOutputs(f, args.files, c.stdin); err != nil {
		fmt.Fprintf(c.stderr, "crawl: %v\n", err)
		return badUsage
	}
	// "-" streams: crawling starts as lines arrive on standard input,
	// after the seeds of the other arguments. A crawl with a state to
	// resume, or a job to join, reads it whole first.
	c.streaming = args.stdin && f.state == "" && f.redis == ""
	c.seeds, r = loadSeeds(args, !c.streaming, c.stdin, c.stderr)
	return r
}

// listenMetrics takes the -metrics address.
func (c *crawlCmd) listenMetrics(context.Context) refusal {
	if c.f.metrics == "" {
		return notRefused
	}
	ln, err := net.Listen("tcp", c.f.metrics)
	if err != nil {
		fmt.Fprintf(c.stderr, "crawl: -metrics: %v\n", err)
		return badUsage
	}
	c.later(func() { ln.Close() }) // on the early returns; stopping the metrics closes it otherwise
	c.metricsLn = ln
	return notRefused
}

// openMode opens the -state or the -redis job, and checks this run's
// flags against it.
func (c *crawlCmd) openMode(ctx context.Context) refusal {
	m, r := openMode(ctx, &c.f, c.stderr)
	if r != notRefused {
		return r
	}
	c.m = m
	c.later(m.release) // on the early returns; close has let it go otherwise
	return m.check(ctx, c.fs, &c.f, len(c.seeds) > 0, c.stderr)
}

// openLog creates the -log file, and the command's logger.
func (c *crawlCmd) openLog(context.Context) refusal {
	if c.f.logFile != "" {
		lf, err := os.Create(c.f.logFile)
		if err != nil {
			fmt.Fprintf(c.stderr, "crawl: -log: %v\n", err)
			return badUsage
		}
		c.later(func() { lf.Close() })
		c.logW = &syncWriter{w: bufio.NewWriterSize(lf, 64<<10)}
		c.later(func() { c.logW.Flush() }) // before Close: unwind goes last first
	}
	// Without -log, records are dropped before they are formatted.
	var handler slog.Handler = slog.DiscardHandler
	if c.logW != nil {
		handler = slog.NewJSONHandler(c.logW, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	if c.f.verbose {
		handler = teeHandler{handler, slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelInfo})}
	}
	c.logger = slog.New(handler)
	return notRefused
}

// newCrawler makes the crawler of the flags and the mode, with the -warc
// writer and the -metrics it serves.
func (c *crawlCmd) newCrawler(context.Context) refusal {
	opts, err := c.f.options(c.logger)
	if err != nil {
		fmt.Fprintf(c.stderr, "crawl: %v; see crawl -h\n", err)
		return badUsage
	}
	opts = append(opts, c.m.options(c.logger)...)
	if c.f.warcDir != "" {
		// The warcinfo record names the User-Agent sent, which the
		// crawler makes of -agent and -ua: asked of a crawler of the same
		// options, before the one that writes the WARC.
		probe, err := crawler.New(opts...)
		if err != nil {
			fmt.Fprintf(c.stderr, "crawl: %s; see crawl -h\n", optionErrorText(err))
			return badUsage
		}
		w, err := warc.NewWriter(c.f.warcDir, warc.Options{
			MaxSize:  int64(c.f.warcSize),
			Dedup:    c.f.warcDedup,
			Software: "heed/" + crawler.Version + " (crawl)",
			Info:     warcInfo(&c.f, c.fs.Args(), probe.UserAgent()),
		})
		if err != nil {
			fmt.Fprintf(c.stderr, "crawl: -warc: %v\n", err)
			return badUsage
		}
		c.later(func() {
			if err := w.Close(); err != nil {
				fmt.Fprintf(c.stderr, "crawl: -warc: %v\n", err)
			}
		})
		opts = append(opts, crawler.WithWARC(w))
	}
	ro, rend, err := c.f.render.renderer(c.logger)
	if err != nil {
		fmt.Fprintf(c.stderr, "crawl: %v; see crawl -h\n", err)
		return badUsage
	}
	if rend != nil {
		// Closed on every way out — Ctrl-C, an error — and the browser
		// dies with the process on a kill or a panic (parent-death signal).
		c.later(func() { rend.Close() })
		opts = append(opts, ro)
	}
	if c.crawler, err = crawler.New(opts...); err != nil {
		fmt.Fprintf(c.stderr, "crawl: %s; see crawl -h\n", optionErrorText(err))
		return badUsage
	}
	if filter := pathFilter(c.f.include, c.f.exclude); filter != nil {
		c.crawler.Filter(filter)
	}
	if rend != nil {
		// Scripts that read navigator.userAgent see the crawl's, as the
		// sites see it on the wire.
		rend.UserAgent = c.crawler.UserAgent()
	}
	// Before Run: the metrics record each page through an OnPage handler
	// from its registration on.
	if c.metricsLn != nil || c.uiLn != nil {
		m, err := metrics.New(c.crawler, metrics.WithRuntimeMetrics())
		if err != nil {
			fmt.Fprintf(c.stderr, "crawl: -metrics: %v\n", err)
			return badUsage
		}
		c.metricsHandler = m.Handler()
	}
	if c.uiLn != nil {
		c.uiHandler = c.newLivePage(c.metricsHandler)
	}
	return notRefused
}

// openOutput opens -o FILE, as the mode does it, and starts the profiles.
func (c *crawlCmd) openOutput(context.Context) refusal {
	c.out, c.closeOut = c.stdout, func() error { return nil }
	if c.f.out != "" {
		of, base, r := c.m.openOutput(c.f.out, c.f.stateOverride, c.stderr)
		if r != notRefused {
			return r
		}
		c.later(func() { of.Close() }) // on the early returns; closeOut is the one that counts
		c.out, c.closeOut, c.outBase = of, of.Close, base
	}
	var err error
	if c.stopProfiles, err = startProfiles(c.f.cpuProfile, c.f.memProfile); err != nil {
		fmt.Fprintf(c.stderr, "crawl: %v\n", err)
		return badUsage
	}
	return notRefused
}

// begin makes the recorder of the output, hands it what the crawler
// finds, and lets the mode record this run's start.
func (c *crawlCmd) begin(ctx context.Context) refusal {
	// A terminal shows each record as it comes; a pipe or a file gets the
	// first at once, then the rest at least once a second, so a reader
	// sees the crawl go on and a crash or kill loses at most a second of
	// it.
	c.rec = newRecorder(c.out, c.f.body, isTerminal(c.out))
	c.rec.base, c.rec.syncOut = c.outBase, syncFunc(c.out)
	c.rec.revisit = c.f.revisit
	c.fails = newFailures()
	c.crawler.OnPage(c.rec.page)
	c.crawler.OnError(func(ctx context.Context, u *url.URL, err error) {
		if c.fails.failed(u.String(), err) {
			c.rec.failure(ctx, u.String(), err)
		}
	})
	c.crawler.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		c.logger.Info("disallowed by robots.txt", "url", u.String(), "reason", string(why))
		c.fails.disallowed(why)
		if why == crawler.DisallowedByRules {
			// One whose robots.txt is unreachable has its error record.
			c.rec.disallowed(ctx, u.String())
		}
	})
	return c.m.begin(ctx, c.crawler, c.rec, len(c.seeds) > 0, c.stderr)
}

// crawl runs the crawl until it ends, or a signal or a failed output
// stops it, and closes the mode and the output.
func (c *crawlCmd) crawl(ctx context.Context) outcome {
	ctx, cancel := context.WithCancelCause(ctx)
	c.later(func() { cancel(nil) })
	showProgress := c.f.progress == "on" || c.f.progress == "auto" && isTerminal(c.rawStderr)
	c.rec.onFail = func(err error) {
		// The output is gone: fetching more would only lose it.
		cancel(outputFailed{err})
		erase := "" // the progress line
		if showProgress {
			erase = "\r\033[K"
		}
		fmt.Fprintf(c.stderr, "%scrawl: %s; stopping the crawl\n", erase, outputErrorText(err))
	}
	stopFlushing := c.rec.flushEvery(time.Second)
	c.later(watchSignals(cancel, c.stderr, c.quit))
	c.uiStopMu.Lock()
	c.uiStop = stopFromPage(cancel, c.stderr)
	c.uiStopMu.Unlock()
	stopTimer := stopAfter(c.f.forDuration, cancel, c.stderr)
	o := outcome{streamed: c.streaming, runErr: c.run(ctx, showProgress)}
	stopTimer() // a crawl that ended by itself is not stopped by -for
	o.outErr, o.cause = stopFlushing(), context.Cause(ctx)
	// Before the output closes: a -state's last sync makes it durable
	// first.
	o = c.m.close(ctx, o)
	if err := c.closeOut(); err != nil && o.outErr == nil {
		o.outErr = err
		fmt.Fprintf(c.stderr, "crawl: %s\n", outputErrorText(err))
	}
	o.cause = context.Cause(ctx) // a signal may have come since
	c.stats = statsNow(c.crawler)
	o.nothingNew = nothingNew(c.stats, c.rec)
	c.nothingFetched, o.seedsFailed = c.fails.nothingFetched(c.stats)
	return o
}

// quit writes what was fetched, and says what it was: a second signal
// ends the process.
func (c *crawlCmd) quit() {
	c.rec.flush()
	c.m.sync()
	if c.logW != nil {
		c.logW.Flush()
	}
	summary(c.stderr, statsNow(c.crawler), c.fails, &c.f)
}

// run crawls the seeds, or those of standard input as they arrive, with
// the -metrics endpoint and the progress line up meanwhile.
func (c *crawlCmd) run(ctx context.Context, showProgress bool) error {
	stopMetrics := func() {}
	if c.metricsLn != nil {
		stopMetrics = serveMetrics(c.metricsLn, c.metricsHandler, c.stderr)
		fmt.Fprintf(c.stderr, "crawl: metrics on http://%s/metrics\n", c.metricsLn.Addr())
	}
	stopPage := func() {}
	if c.uiLn != nil {
		stopPage = servePage(c.uiLn, c.uiHandler, c.f.uiToken, c.stderr)
	}
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if showProgress {
		progressWG.Go(func() { progress(c.crawler, c.stderr, progressDone) })
	}
	var runErr error
	if c.streaming {
		feed := make(chan crawler.Seed)
		go streamSeeds(ctx, c.seeds, c.stdin, feed, c.stderr)
		runErr = c.crawler.RunFeed(ctx, feed)
	} else {
		runErr = c.crawler.Run(ctx, c.seeds...)
	}
	stopMetrics()
	stopPage()
	if err := c.stopProfiles(); err != nil {
		fmt.Fprintf(c.stderr, "crawl: %v\n", err)
	}
	close(progressDone)
	progressWG.Wait()
	return runErr
}

// report says how the command ended, after the summary of the crawl
// unless it refused to crawl, or found nothing to.
func (c *crawlCmd) report(how ending, o outcome) {
	switch how {
	case endRefused:
		return
	case endNoSeeds:
		fmt.Fprintln(c.stderr, "crawl: -: no seed URLs")
		return
	case endComplete, endNothingToDo:
	default:
		summary(c.stderr, c.stats, c.fails, &c.f)
	}
	switch {
	case how == endStoreFailed, how == endRunFailed:
		fmt.Fprintf(c.stderr, "crawl: %v\n", o.runErr)
	case how == endSeedsCrawled && c.nothingFetched != "":
		fmt.Fprintf(c.stderr, "crawl: %s\n", c.nothingFetched)
	}
	c.m.report(c.stderr, how, o)
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
// shaped it, as the command shows them (limits "none" when there is none),
// and ua, the User-Agent sent.
func warcInfo(f *flags, args []string, ua string) []warc.Field {
	return []warc.Field{
		{Name: "robots", Value: "classic"},
		{Name: "http-header-user-agent", Value: ua},
		{Name: "description", Value: "crawl " + strings.Join(args, " ")},
		{Name: "scope", Value: f.scope},
		{Name: "delay", Value: f.delay.String()},
		{Name: "max-depth", Value: (*limitValue)(&f.maxDepth).String()},
		{Name: "max-pages", Value: (*limitValue)(&f.maxPages).String()},
	}
}
