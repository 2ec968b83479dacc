package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/andybalholm/cascadia"
	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

// flags holds the crawl command's flags.
type flags struct {
	agent, ua                string
	delay, maxDelay          time.Duration
	workers, perHost         int
	maxPages, maxPagesHost   int
	maxDepth                 int
	scope, key               string
	sitemaps, nofollow       bool
	out, logFile             string
	body                     bool
	connect, header, timeout time.Duration
	bodyLimit                byteSize
	retries                  int
	grace                    time.Duration
	progress                 string
	verbose                  bool
	cpuProfile, memProfile   string
	sortQuery, stripTracking bool
	maxRedirects             int
	robotsWait               time.Duration
	maxLinks                 int
	maxSitemaps, sitemapURLs int
	maxPathSegs, segRepeats  int
	hostFailures             int
	allowPrivate             bool
}

// flagGroups orders the -h output, and the README's flags table, by topic.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Identity", []string{"agent", "ua"}},
	{"Politeness", []string{"delay", "max-delay", "per-host", "key", "retries", "robots-wait", "max-failures"}},
	{"Scope and limits", []string{"scope", "allow-private", "max-depth", "max-pages", "max-pages-per-host", "sitemaps", "max-sitemaps", "max-sitemap-urls", "nofollow", "max-links", "max-redirects", "max-path-segments", "max-segment-repeats", "sort-query", "strip-tracking"}},
	{"Throughput and timeouts", []string{"workers", "connect-timeout", "header-timeout", "timeout", "max-body", "grace"}},
	{"Output", []string{"o", "body", "log", "progress", "v", "cpuprofile", "memprofile"}},
}

// flagArgs names what the string flags without a `NAME` in their usage
// take.
var flagArgs = map[string]string{
	"agent":    "NAME",
	"scope":    "seeds|domain|any",
	"key":      "host|domain|ip",
	"progress": "auto|on|off",
}

func newFlagSet(f *flags) *flag.FlagSet {
	fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
	duration := func(p *time.Duration, name string, def time.Duration, usage string) {
		*p = def
		fs.Var((*durationFlag)(p), name, usage)
	}
	integer := func(p *int, name string, def int, usage string) {
		*p = def
		fs.Var((*intFlag)(p), name, usage)
	}
	boolean := func(p *bool, name string, def bool, usage string) {
		*p = def
		fs.Var((*boolFlag)(p), name, usage)
	}
	fs.StringVar(&f.agent, "agent", crawler.DefaultAgent, "product token robots.txt groups and agent-scoped directives (<meta name=NAME>, X-Robots-Tag: NAME: ...) are matched against; letters, _ and -")
	fs.StringVar(&f.ua, "ua", "", fmt.Sprintf("full User-Agent header (default %q, or \"NAME (heed/%s; +https://github.com/heedcrawl/heed)\" with another -agent NAME)", crawler.DefaultAgent+"/"+crawler.Version+" (+https://github.com/heedcrawl/heed)", crawler.Version))
	duration(&f.delay, "delay", crawler.DefaultMinDelay, "minimum time from a host's answer to the next request to it (with -per-host above 1: between request starts); 0s allowed; robots.txt Crawl-delay can only lengthen it")
	duration(&f.maxDelay, "max-delay", crawler.DefaultMaxDelay, "cap on any delay a site asks for (Crawl-delay) or back-off reaches")
	integer(&f.perHost, "per-host", crawler.DefaultPerHost, "requests in flight per host at once")
	fs.StringVar(&f.key, "key", "host", "what shares one delay and one concurrency limit: the host, the registrable domain, or the resolved IP address")
	integer(&f.retries, "retries", crawler.DefaultPageRetries, "more tries for a page that timed out, failed to connect or answered 429/5xx, after the host's back-off")
	duration(&f.robotsWait, "robots-wait", 0, "how long URLs wait for an unreachable robots.txt (5xx, 429, timeouts) to come back before they are skipped")
	integer(&f.hostFailures, "max-failures", crawler.DefaultHostFailures, "consecutive failed requests (timeouts, resets, 429, 5xx) after which a host is given up and its URLs reported (0: never)")
	fs.StringVar(&f.scope, "scope", "seeds", "links followed: to the seed hosts, to their registrable domains, or anywhere")
	boolean(&f.allowPrivate, "allow-private", false, "allow loopback, private, link-local and multicast addresses (by default refused unless the seeds are on such addresses)")
	integer(&f.maxDepth, "max-depth", 0, "links followed from a seed at most (0: no limit; pages listed in sitemaps count as depth 0)")
	integer(&f.maxPages, "max-pages", 0, "pages scheduled in all (0: no limit)")
	integer(&f.maxPagesHost, "max-pages-per-host", 0, "pages scheduled per host (0: no limit)")
	boolean(&f.sitemaps, "sitemaps", true, "read the sitemaps robots.txt names (or /sitemap.xml) and crawl what they list")
	integer(&f.maxSitemaps, "max-sitemaps", crawler.DefaultMaxSitemaps, "sitemap documents fetched per host (0: no limit)")
	integer(&f.sitemapURLs, "max-sitemap-urls", crawler.DefaultMaxSitemapURLs, "pages taken from sitemaps per host (0: no limit)")
	boolean(&f.nofollow, "nofollow", true, "respect nofollow: rel=nofollow links, robots <meta>, X-Robots-Tag")
	integer(&f.maxLinks, "max-links", crawler.DefaultMaxLinks, "followable links taken from one page (0: no limit); the rest are counted as skipped")
	integer(&f.maxRedirects, "max-redirects", 10, "redirect hops followed per chain")
	integer(&f.maxPathSegs, "max-path-segments", frontier.DefaultMaxPathSegments, "skip URLs whose path has more segments (-1: no limit)")
	integer(&f.segRepeats, "max-segment-repeats", frontier.DefaultMaxSegmentRepeats, "skip URLs repeating a path segment, or run of segments, more often in a row, as in /a/a/a/ (-1: no limit)")
	boolean(&f.sortQuery, "sort-query", true, "treat URLs that differ only in the order of query parameters as one")
	boolean(&f.stripTracking, "strip-tracking", false, "drop tracking query parameters (utm_*, gclid, fbclid, ...) from URLs")
	integer(&f.workers, "workers", crawler.DefaultWorkers, "fetches in flight across all hosts (the per-host limits keep it polite)")
	duration(&f.connect, "connect-timeout", 10*time.Second, "TCP and TLS connect timeout")
	duration(&f.header, "header-timeout", 15*time.Second, "timeout for the response headers")
	duration(&f.timeout, "timeout", 60*time.Second, "timeout for a whole fetch, body included")
	f.bodyLimit = 10 << 20
	fs.Var(&f.bodyLimit, "max-body", "largest body downloaded per page, e.g. 512KiB, 10MiB; the rest is not downloaded and the page is marked truncated")
	duration(&f.grace, "grace", crawler.DefaultGracePeriod, "how long fetches in flight may finish after an interrupt or SIGTERM")
	fs.StringVar(&f.out, "o", "", "write the JSON Lines to `FILE` (\"-\": standard output, the default)")
	boolean(&f.body, "body", false, "include each page's body in its record")
	fs.StringVar(&f.logFile, "log", "", "write robots.txt fetches and decisions, disallowed URLs, skips and errors as JSON log records to `FILE`")
	fs.StringVar(&f.progress, "progress", "auto", "the live progress line on stderr (auto: when stderr is a terminal)")
	boolean(&f.verbose, "v", false, "log to stderr as well")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the crawl to `FILE` (go tool pprof)")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile taken at the end of the crawl to `FILE`")
	return fs
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage:
  crawl [flags] seeds.txt       crawl from the URLs in seeds.txt (one per line; "-" reads stdin)
  crawl robots URL|FILE [agent] [path ...]
                                show how heed reads a site's robots.txt for an agent

Pages go to standard output as JSON Lines (one object per fetched page), as
the crawl goes; a summary goes to standard error at the end. Durations are Go
durations (500ms, 2s, 1m).
`)
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.names {
			fl := fs.Lookup(name)
			if fl == nil {
				continue
			}
			_, text := flag.UnquoteUsage(fl)
			def := ""
			if fl.DefValue != "" && fl.DefValue != "0" && fl.DefValue != "false" {
				def = " (default " + fl.DefValue + ")"
			}
			fmt.Fprintf(w, "  %-26s %s%s\n", flagHead(fl), text, def)
		}
	}
	fmt.Fprint(w, `
Traps: a link loop that repeats path segments (/a/a/a/...) is refused by
-max-path-segments and -max-segment-repeats; an endless calendar or generated
pages (/cal/2025/01, /cal/2025/02, ...) are stopped by -max-depth and
-max-pages-per-host; sitemap chains by -max-sitemaps and -max-sitemap-urls; a
dead or failing host by -max-failures.
`)
}

// flagHead is how -h and the README's flags table show a flag: its name and
// what it takes ("-delay DURATION", "-key host|domain|ip"); a boolean that is
// on by default shows how to turn it off ("-sitemaps=true|false").
func flagHead(fl *flag.Flag) string {
	head := "-" + fl.Name
	if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		if fl.DefValue == "true" {
			head += "=true|false"
		}
		return head
	}
	if c, ok := flagArgs[fl.Name]; ok {
		return head + " " + c
	}
	switch fl.Value.(type) {
	case *intFlag:
		return head + " N"
	case *durationFlag:
		return head + " DURATION"
	case *byteSize:
		return head + " SIZE"
	}
	if name, _ := flag.UnquoteUsage(fl); name != "" && name != "string" {
		return head + " " + name
	}
	return head + " STRING"
}

// durationFlag is a time.Duration flag whose errors say what is wrong with
// the value.
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("missing unit, e.g. %ss", s)
		}
		return errors.New("want a duration such as 500ms, 2s or 1m")
	}
	*d = durationFlag(v)
	return nil
}

// intFlag is an int flag whose errors say what is wrong with the value.
type intFlag int

func (n *intFlag) String() string { return strconv.Itoa(int(*n)) }

func (n *intFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, strconv.IntSize)
	if errors.Is(err, strconv.ErrRange) {
		return errors.New("out of range")
	}
	if err != nil {
		return errors.New("want a whole number")
	}
	*n = intFlag(v)
	return nil
}

// boolFlag is a boolean flag whose errors say what is wrong with the value.
type boolFlag bool

func (b *boolFlag) String() string { return strconv.FormatBool(bool(*b)) }

func (b *boolFlag) IsBoolFlag() bool { return true }

func (b *boolFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*b = boolFlag(v)
	return nil
}

// byteSize is a flag value in bytes that accepts KiB, MiB and GiB suffixes.
type byteSize int64

// String names the size with the largest binary unit that divides it, as
// Set accepts it back.
func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Set(s string) error {
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(s, suf.s) {
			s, mult = strings.TrimSuffix(s, suf.s), suf.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return errors.New("want a positive size such as 1048576, 512KiB or 10MiB")
	}
	*b = byteSize(n * mult)
	return nil
}

func (f *flags) options(logger *slog.Logger) ([]crawler.Option, error) {
	opts := []crawler.Option{
		crawler.WithAgent(f.agent),
		crawler.WithDelay(f.delay),
		crawler.WithMaxDelay(f.maxDelay),
		crawler.WithWorkers(f.workers),
		crawler.WithPerHost(f.perHost),
		crawler.WithMaxDepth(f.maxDepth),
		crawler.WithMaxPages(f.maxPages),
		crawler.WithMaxPagesPerHost(f.maxPagesHost),
		crawler.WithSitemaps(f.sitemaps),
		crawler.WithRespectNofollow(f.nofollow),
		crawler.WithTimeouts(f.connect, f.header, f.timeout),
		crawler.WithBodyLimit(int64(f.bodyLimit)),
		crawler.WithGracePeriod(f.grace),
		crawler.WithRetries(f.retries),
		crawler.WithRobotsWait(f.robotsWait),
		crawler.WithMaxRedirects(f.maxRedirects),
		crawler.WithMaxLinks(f.maxLinks),
		crawler.WithSitemapLimits(f.maxSitemaps, f.sitemapURLs, crawler.DefaultMaxSitemapDepth),
		crawler.WithPathLimits(f.maxPathSegs, f.segRepeats),
		crawler.WithHostFailures(f.hostFailures),
		crawler.WithAllowPrivate(f.allowPrivate),
		crawler.WithLogger(logger),
	}
	if f.ua != "" {
		opts = append(opts, crawler.WithUserAgent(f.ua))
	}
	switch f.scope {
	case "seeds":
		opts = append(opts, crawler.WithScope(frontier.ScopeSeedHosts))
	case "domain":
		opts = append(opts, crawler.WithScope(frontier.ScopeSeedDomains))
	case "any":
		opts = append(opts, crawler.WithScope(frontier.ScopeAny))
	default:
		return nil, fmt.Errorf("invalid value %q for -scope: want seeds, domain or any", f.scope)
	}
	switch f.key {
	case "host":
		opts = append(opts, crawler.WithPolitenessKey(ratelimit.KeyHost))
	case "domain":
		opts = append(opts, crawler.WithPolitenessKey(ratelimit.KeyDomain))
	case "ip":
		opts = append(opts, crawler.WithPolitenessKey(ratelimit.KeyIP))
	default:
		return nil, fmt.Errorf("invalid value %q for -key: want host, domain or ip", f.key)
	}
	switch f.progress {
	case "auto", "on", "off":
	default:
		return nil, fmt.Errorf("invalid value %q for -progress: want auto, on or off", f.progress)
	}
	if !f.sortQuery || f.stripTracking {
		cz := frontier.Canonicalizer{SortQuery: f.sortQuery}
		if f.stripTracking {
			cz.StripParam = frontier.TrackingParam
		}
		opts = append(opts, crawler.WithCanonicalizer(cz))
	}
	return opts, nil
}

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
	fails := newFailures(c)
	c.OnPage(rec.page)
	c.OnError(func(ctx context.Context, u string, err error) {
		if fails.failed(u, err) {
			rec.failure(ctx, u, err)
		}
	})
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		logger.Info("disallowed by robots.txt", "url", u.String(), "reason", string(why))
		fails.disallowed(u, why)
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

	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if showProgress {
		progressWG.Go(func() { progress(c, stderr, progressDone) })
	}
	runErr := c.Run(ctx, seeds...)
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

// checkOutputs refuses -o and -log files that would overwrite the seeds, or
// each other, before anything is created.
func checkOutputs(f *flags, seedsName string, stdin io.Reader) error {
	var seeds os.FileInfo
	if seedsName == "-" {
		if sf, ok := stdin.(*os.File); ok {
			seeds, _ = sf.Stat()
		}
	} else {
		seeds, _ = os.Stat(seedsName)
	}
	outputs := []struct{ flag, name string }{{"-o", f.out}, {"-log", f.logFile}}
	for i, o := range outputs {
		if o.name == "" {
			continue
		}
		st, err := os.Stat(o.name)
		if err != nil {
			st = nil // not there yet: it cannot be the seeds
		}
		if st != nil && seeds != nil && !seeds.IsDir() && os.SameFile(st, seeds) {
			return fmt.Errorf("%s %s is the seeds file: refusing to overwrite it", o.flag, o.name)
		}
		for _, p := range outputs[:i] {
			if p.name != "" && sameName(p.name, o.name) {
				return fmt.Errorf("%s and %s both name %s", p.flag, o.flag, o.name)
			}
		}
	}
	return nil
}

// sameName reports whether two file names are one file, existing or not.
func sameName(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// outputFailed is the cause of a crawl cancelled because its output could
// not be written.
type outputFailed struct{ err error }

func (o outputFailed) Error() string { return "writing output: " + o.err.Error() }
func (o outputFailed) Unwrap() error { return o.err }

// outputErrorText says what went wrong with the output: a reader that went
// away (crawl … | head) is no disaster, a full disk is.
func outputErrorText(err error) string {
	if errors.Is(err, syscall.EPIPE) {
		return "output closed by its reader"
	}
	return "writing output: " + err.Error()
}

// loadSeeds reads the seeds file (or stdin for "-"), reporting bad lines.
func loadSeeds(name string, stdin io.Reader, stderr io.Writer) ([]string, int) {
	var r io.Reader = stdin
	if name != "-" {
		sf, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: seeds: %v\n", err)
			return nil, 2
		}
		defer sf.Close()
		if st, err := sf.Stat(); err == nil && st.IsDir() {
			fmt.Fprintf(stderr, "crawl: seeds: %s is a directory\n", name)
			return nil, 2
		}
		r = sf
	}
	seeds, problems, err := readSeeds(r)
	for _, p := range problems {
		fmt.Fprintf(stderr, "crawl: %s: skipped %s\n", name, p)
	}
	if err != nil {
		fmt.Fprintf(stderr, "crawl: seeds: %v\n", err)
		return nil, 2
	}
	if len(seeds) == 0 {
		fmt.Fprintf(stderr, "crawl: %s: no seed URLs\n", name)
		return nil, 2
	}
	return seeds, 0
}

// titleSelector is compiled once; goquery's Find would compile it per page.
var titleSelector = cascadia.MustCompile("title")

// record is one line of the JSON Lines output; the README documents it.
type record struct {
	URL         string    `json:"url"`
	FinalURL    string    `json:"final_url,omitempty"`
	Status      int       `json:"status,omitempty"`
	ContentType string    `json:"content_type,omitempty"`
	Depth       int       `json:"depth"`
	Referrer    string    `json:"referrer,omitempty"`
	FetchedAt   time.Time `json:"fetched_at"`
	DurationMS  float64   `json:"duration_ms"`
	Bytes       int       `json:"bytes"`
	Title       string    `json:"title,omitempty"`
	Links       int       `json:"links"`
	Redirect    string    `json:"redirect,omitempty"`
	Truncated   bool      `json:"truncated,omitempty"`
	Noindex     bool      `json:"noindex"`
	Nofollow    bool      `json:"nofollow"`
	Error       string    `json:"error,omitempty"`
	Body        *string   `json:"body,omitempty"`
}

// recorder writes records; it is called from many workers at once. The
// first write error is kept, reported once to onFail, and ends all writing.
type recorder struct {
	mu     sync.Mutex
	w      *bufio.Writer
	enc    *json.Encoder
	body   bool
	each   bool // flush after every record
	err    error
	onFail func(error)
}

func newRecorder(w io.Writer, body, each bool) *recorder {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &recorder{w: bw, enc: enc, body: body, each: each}
}

func (r *recorder) write(rec *record) {
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return
	}
	err := r.enc.Encode(rec)
	if err == nil && r.each {
		err = r.w.Flush()
	}
	r.fail(err) // unlocks
}

// flush writes out what is buffered and returns the first write error.
func (r *recorder) flush() error {
	r.mu.Lock()
	if r.err != nil {
		defer r.mu.Unlock()
		return r.err
	}
	err := r.w.Flush()
	r.fail(err) // unlocks
	return err
}

// fail records err, if any, as the first write error and tells onFail. It
// is called with r.mu held and releases it, so that onFail runs unlocked.
func (r *recorder) fail(err error) {
	if err == nil || r.err != nil {
		r.mu.Unlock()
		return
	}
	r.err = err
	r.mu.Unlock()
	if r.onFail != nil {
		r.onFail(err)
	}
}

// flushEvery flushes the output every interval until stop is called; stop
// flushes what is left and returns the first write error.
func (r *recorder) flushEvery(interval time.Duration) (stop func() error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.flush()
			}
		}
	})
	return func() error {
		close(done)
		wg.Wait()
		return r.flush()
	}
}

func (r *recorder) page(_ context.Context, p *crawler.Page) {
	rec := &record{
		URL:         p.URL.String(),
		FinalURL:    p.URL.String(),
		Status:      p.Status,
		ContentType: p.ContentType,
		Depth:       p.Depth,
		Referrer:    p.Referrer,
		FetchedAt:   p.Timings.Start.UTC(),
		DurationMS:  float64(p.Timings.Total.Microseconds()) / 1000,
		Bytes:       len(p.Body),
		Links:       len(p.Links),
		Truncated:   p.Truncated,
	}
	if len(p.RedirectChain) > 0 {
		rec.URL = p.RedirectChain[0]
	}
	if p.Redirect != nil {
		rec.Redirect = p.Redirect.String()
	}
	d := p.Directives()
	rec.Noindex, rec.Nofollow = d.Noindex, d.Nofollow
	if p.IsHTML() && len(p.Body) > 0 {
		if doc, err := p.Document(); err == nil {
			rec.Title = strings.Join(strings.Fields(doc.FindMatcher(titleSelector).First().Text()), " ")
		}
	}
	if r.body {
		s := string(p.Body)
		rec.Body = &s
	}
	r.write(rec)
}

func (r *recorder) failure(_ context.Context, u string, err error) {
	r.write(&record{URL: u, FetchedAt: time.Now().UTC(), Error: err.Error()})
}

// failures keeps what the summary tells of what went wrong: one example of
// each kind of error, whether any was the network's, how many URLs
// robots.txt rules kept out, and the seeds a page limit kept out.
type failures struct {
	c           *crawler.Crawler
	mu          sync.Mutex
	examples    map[string]string // error kind → "URL (cause)"
	network     bool              // some failure was DNS, a refused connection or a timeout
	byRules     int
	unscheduled map[string]int // limit flag → seeds it refused
}

func newFailures(c *crawler.Crawler) *failures {
	return &failures{c: c, examples: map[string]string{}, unscheduled: map[string]int{}}
}

// failed notes an error reported for u. It returns whether the error
// deserves an output record: a seed refused by a page limit does not, it is
// counted for one line of the summary instead.
func (f *failures) failed(u string, err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if flag := limitFlag(err); flag != "" {
		f.unscheduled[flag]++
		return false
	}
	f.note(errorKind(err), u, causeText(err), isNetwork(err))
	return true
}

// disallowed notes a URL robots.txt kept out. For one whose robots.txt could
// not be fetched, the example says why, as the crawl's robots.txt entry
// tells it.
func (f *failures) disallowed(u *url.URL, why crawler.DisallowReason) {
	if why != crawler.DisallowedUnavailable {
		f.mu.Lock()
		f.byRules++
		f.mu.Unlock()
		return
	}
	cause, network := "robots.txt unreachable", false
	if info, err := f.c.Host(u.String()); err == nil && info.Robots != nil {
		switch e := info.Robots; {
		case e.Err != nil:
			cause += ": " + causeText(e.Err)
			network = isNetwork(e.Err)
		case e.Status != 0:
			cause += fmt.Sprintf(": answered %d %s", e.Status, http.StatusText(e.Status))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.note(string(crawler.DisallowedUnavailable), u.String(), cause, network)
}

// note keeps the first example of kind. f.mu must be held.
func (f *failures) note(kind, u, cause string, network bool) {
	if _, ok := f.examples[kind]; !ok {
		f.examples[kind] = u + " (" + cause + ")"
	}
	f.network = f.network || network
}

// limitFlag names the flag whose limit err reports, or "".
func limitFlag(err error) string {
	switch {
	case errors.Is(err, frontier.ErrLimit):
		return "-max-pages"
	case errors.Is(err, frontier.ErrHostLimit):
		return "-max-pages-per-host"
	}
	return ""
}

// nothingFetched explains a crawl that ended without a single page: msg is
// the line to print, failed whether that makes the crawl a failure — it does
// when every seed failed or its robots.txt could not be fetched, but not
// when robots.txt rules kept the seeds out.
func (f *failures) nothingFetched(s crawler.Stats) (msg string, failed bool) {
	if s.Pages > 0 {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byRules > 0 {
		return "no page fetched: robots.txt disallows the seeds; `crawl robots URL` shows its rules", false
	}
	if f.network {
		return "no seed could be fetched; offline? try `go run ./examples/titles`, which serves its own site", true
	}
	return "no seed could be fetched; the errors above say why", true
}

// kindedError is an error that names its kind among Stats.Errors' keys.
type kindedError interface{ ErrorKind() string }

// errorKind sorts an error reported to OnError into the kinds of
// Stats.Errors, so that the summary can give an example of each. It follows
// the crawler's own sorting; an error that names its kind is taken at its
// word.
func errorKind(err error) string {
	var k kindedError
	var dnsErr *net.DNSError
	var netErr net.Error
	msg := err.Error()
	switch {
	case errors.As(err, &k):
		return k.ErrorKind()
	case errors.Is(err, frontier.ErrGivenUp):
		return "host-given-up"
	case errors.Is(err, fetch.ErrExtractorPanic):
		return "extractor-panic"
	case strings.HasPrefix(msg, "crawler: handler panicked"):
		return "handler-panic"
	case strings.HasPrefix(msg, "extracting links: "):
		return "extract"
	case strings.HasPrefix(msg, "sitemap: "):
		return "sitemap"
	case strings.HasPrefix(msg, "robots gate: "):
		return "other"
	case errors.Is(err, fetch.ErrForbiddenAddress):
		return "private-address"
	case strings.HasPrefix(msg, "seed skipped: "), strings.HasPrefix(msg, "redirect target: "):
		return "skipped"
	case errors.Is(err, fetch.ErrTimeout), errors.Is(err, fetch.ErrHeaderTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.Is(err, fetch.ErrContentEncoding):
		return "encoding"
	case errors.Is(err, fetch.ErrTooManyRedirects), errors.Is(err, fetch.ErrRedirectLoop):
		return "redirect"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case isTLS(err):
		return "tls"
	case errors.As(err, new(*net.OpError)):
		return "connection"
	}
	return "other"
}

// isTLS reports whether err comes from a TLS handshake or certificate check.
func isTLS(err error) bool {
	return errors.As(err, new(tls.RecordHeaderError)) || errors.As(err, new(*tls.CertificateVerificationError)) ||
		errors.As(err, new(x509.UnknownAuthorityError)) || errors.As(err, new(x509.HostnameError)) ||
		errors.As(err, new(x509.CertificateInvalidError))
}

// isNetwork reports whether err says the network, not the site, failed: a
// name that did not resolve, a connection refused or reset, a timeout.
func isNetwork(err error) bool {
	var netErr net.Error
	return errors.As(err, new(*net.DNSError)) || errors.As(err, new(*net.OpError)) ||
		errors.As(err, &netErr) && netErr.Timeout()
}

// causeText is err without what the summary line says already: the URL
// (a fetch's "fetch URL: Get "URL": " prefix) and the name server asked.
func causeText(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "lookup " + dnsErr.Name + ": " + dnsErr.Err
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "fetch "); ok {
		if u, cause, ok := strings.Cut(rest, ": "); ok && !strings.Contains(u, " ") {
			return cause
		}
	}
	return msg
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

// progress rewrites one status line on w every second until done closes.
func progress(c *crawler.Crawler, w io.Writer, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastPages int64
	for {
		select {
		case <-done:
			fmt.Fprint(w, "\r\033[K")
			return
		case <-t.C:
		}
		s := c.Stats()
		fmt.Fprintf(w, "\r\033[K%d pages  %d/s  queue %d  hosts %d active %d waiting  disallowed %d  errors %d",
			s.Pages, s.Pages-lastPages, s.Queued, s.HostsActive, s.HostsWaiting, s.Disallowed, s.ErrorCount())
		lastPages = s.Pages
	}
}

// summary prints the final counters, with an example of each kind of
// error.
func summary(w io.Writer, s crawler.Stats, fails *failures, f *flags) {
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.Pages) / s.Elapsed.Seconds()
	}
	fmt.Fprintf(w, "crawl: %d pages, %s, in %s (%.1f pages/s); %d disallowed by robots.txt; %d errors; %d retries\n",
		s.Pages, humanBytes(s.Bytes), s.Elapsed.Round(time.Millisecond), rate, s.Disallowed, s.ErrorCount(), s.Retries)
	if len(s.Statuses) > 0 {
		var parts []string
		for _, code := range s.StatusCodes() {
			parts = append(parts, fmt.Sprintf("%d×%d", code, s.Statuses[code]))
		}
		fmt.Fprintf(w, "crawl: statuses %s\n", strings.Join(parts, " "))
	}
	fails.mu.Lock()
	examples := maps.Clone(fails.examples)
	unscheduled := maps.Clone(fails.unscheduled)
	fails.mu.Unlock()
	for _, kind := range slices.Sorted(maps.Keys(s.Errors)) {
		line := fmt.Sprintf("crawl: errors: %d %s", s.Errors[kind], kind)
		if ex, ok := examples[kind]; ok {
			line += ", e.g. " + ex
			delete(examples, kind)
		}
		fmt.Fprintln(w, line)
	}
	// Errors the crawler counts elsewhere (skipped seeds, refused
	// addresses), or under a kind the command sorted otherwise.
	for _, kind := range slices.Sorted(maps.Keys(examples)) {
		fmt.Fprintf(w, "crawl: %s: e.g. %s\n", kind, examples[kind])
	}
	if len(s.RobotsOutcomes) > 0 {
		fmt.Fprintf(w, "crawl: robots.txt %s\n", countList(s.RobotsOutcomes))
	}
	if len(s.Skipped) > 0 {
		fmt.Fprintf(w, "crawl: skipped %s\n", countList(s.Skipped))
	}
	for _, flag := range slices.Sorted(maps.Keys(unscheduled)) {
		limit := f.maxPages
		if flag == "-max-pages-per-host" {
			limit = f.maxPagesHost
		}
		fmt.Fprintf(w, "crawl: %d %s not scheduled: %s %d reached\n", unscheduled[flag], plural(unscheduled[flag], "seed", "seeds"), flag, limit)
	}
	if s.CrawlDelayHosts > 0 {
		fmt.Fprintf(w, "crawl: robots.txt Crawl-delay on %d hosts (longest applied %v)\n", s.CrawlDelayHosts, s.MaxCrawlDelay)
	}
	if s.Sitemaps > 0 {
		fmt.Fprintf(w, "crawl: %d sitemaps listing %d pages\n", s.Sitemaps, s.SitemapURLs)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func countList(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
