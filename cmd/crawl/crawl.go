package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
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
	if fs.NArg() != 1 {
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

	seeds, code := loadSeeds(seedsName, stdin, stderr)
	if code != 0 {
		return code
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

	opts, err := f.options(logger)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v; see crawl -h\n", err)
		return 2
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
	if f.out != "" {
		of, err := os.Create(f.out)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: -o: %v\n", err)
			return 2
		}
		defer of.Close() // on the early returns; closeOut is the one that counts
		out, closeOut = of, of.Close
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
	rec := newRecorder(out, f.body, isTerminal(out))
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
	c.OnError(func(ctx context.Context, u string, err error) {
		if fails.failed(u, err) {
			rec.failure(ctx, u, err)
		}
	})
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		logger.Info("disallowed by robots.txt", "url", u.String(), "reason", string(why))
		fails.disallowed(why)
	})

	stopWatch := watchSignals(cancel, stderr, func() {
		// A second signal: write what was fetched, and say what it was.
		rec.flush()
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
	runErr := c.Run(ctx, seeds...)
	stopMetrics()
	if err := stopProfiles(); err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
	}
	close(progressDone)
	progressWG.Wait()
	outErr := stopFlushing()
	if err := closeOut(); err != nil && outErr == nil {
		outErr = err
		fmt.Fprintf(stderr, "crawl: %s\n", outputErrorText(err))
	}
	s := c.Stats()
	summary(stderr, s, fails, &f)

	var sig signalled
	switch cause := context.Cause(ctx); {
	case outErr != nil:
		return 1
	case errors.As(cause, &sig):
		return signalStatus(sig.sig)
	case runErr != nil && errors.Is(runErr, context.Canceled):
		return signalStatus(os.Interrupt)
	case runErr != nil:
		fmt.Fprintf(stderr, "crawl: %v\n", runErr)
		return 1
	}
	if msg, failed := fails.nothingFetched(s); msg != "" {
		fmt.Fprintf(stderr, "crawl: %s\n", msg)
		if failed {
			return 1
		}
	}
	return 0
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
