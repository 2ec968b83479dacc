package main

import (
	"bufio"
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
	"time"

	"github.com/andybalholm/cascadia"
	"github.com/heedcrawl/heed/crawler"
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

// flagGroups orders the -h output: flag names by topic.
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

func newFlagSet(f *flags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.agent, "agent", crawler.DefaultAgent, "product `NAME` robots.txt groups and agent-scoped directives are matched against")
	fs.StringVar(&f.ua, "ua", "", "full User-Agent `STRING` (default \"heed/0.1 (+https://github.com/heedcrawl/heed)\", or \"NAME (heed/0.1; +https://github.com/heedcrawl/heed)\" with -agent NAME)")
	fs.DurationVar(&f.delay, "delay", crawler.DefaultMinDelay, "minimum `DURATION` between requests to one host (0s allowed; robots.txt Crawl-delay can only lengthen it)")
	fs.DurationVar(&f.maxDelay, "max-delay", crawler.DefaultMaxDelay, "cap on any Crawl-delay or back-off `DURATION`")
	fs.IntVar(&f.perHost, "per-host", crawler.DefaultPerHost, "requests in flight per host at once")
	fs.StringVar(&f.key, "key", "host", "what shares one delay: host, domain (registrable domain) or ip")
	fs.IntVar(&f.retries, "retries", crawler.DefaultPageRetries, "tries again for a page that timed out or answered 429/5xx")
	fs.DurationVar(&f.robotsWait, "robots-wait", 0, "how long URLs wait for an unreachable robots.txt (5xx, timeouts) to come back before they are skipped")
	fs.StringVar(&f.scope, "scope", "seeds", "links followed: seeds (seed hosts), domain (their registrable domains) or any")
	fs.IntVar(&f.maxDepth, "max-depth", 0, "links followed from a seed at most (0: no limit)")
	fs.IntVar(&f.maxPages, "max-pages", 0, "pages scheduled in all (0: no limit)")
	fs.IntVar(&f.maxPagesHost, "max-pages-per-host", 0, "pages scheduled per host (0: no limit)")
	fs.BoolVar(&f.sitemaps, "sitemaps", true, "read sitemaps named in robots.txt (or /sitemap.xml) and crawl what they list")
	fs.BoolVar(&f.nofollow, "nofollow", true, "respect nofollow: rel=nofollow links, robots <meta> and X-Robots-Tag")
	fs.IntVar(&f.maxRedirects, "max-redirects", 10, "redirect hops followed per chain")
	fs.IntVar(&f.maxLinks, "max-links", crawler.DefaultMaxLinks, "followable links taken from one page (0: no limit); the rest are counted as skipped")
	fs.IntVar(&f.maxSitemaps, "max-sitemaps", crawler.DefaultMaxSitemaps, "sitemap documents fetched per host (0: no limit)")
	fs.IntVar(&f.sitemapURLs, "max-sitemap-urls", crawler.DefaultMaxSitemapURLs, "pages taken from sitemaps per host (0: no limit)")
	fs.IntVar(&f.maxPathSegs, "max-path-segments", frontier.DefaultMaxPathSegments, "skip URLs whose path has more segments (-1: no limit)")
	fs.IntVar(&f.segRepeats, "max-segment-repeats", frontier.DefaultMaxSegmentRepeats, "skip URLs repeating a path segment, or run of segments, more often in a row, as in /a/a/a/ (-1: no limit)")
	fs.IntVar(&f.hostFailures, "max-failures", crawler.DefaultHostFailures, "consecutive failed requests (timeouts, resets, 429, 5xx) after which a host is given up and its URLs reported (0: never)")
	fs.BoolVar(&f.allowPrivate, "allow-private", false, "allow loopback, private, link-local and multicast addresses (by default refused unless the seeds are on such addresses)")
	fs.BoolVar(&f.sortQuery, "sort-query", true, "treat URLs differing only in query parameter order as one")
	fs.BoolVar(&f.stripTracking, "strip-tracking", false, "drop tracking query parameters (utm_*, gclid, fbclid, ...) from URLs")
	fs.IntVar(&f.workers, "workers", crawler.DefaultWorkers, "fetches in flight across all hosts")
	fs.DurationVar(&f.connect, "connect-timeout", 10*time.Second, "TCP and TLS connect timeout")
	fs.DurationVar(&f.header, "header-timeout", 15*time.Second, "timeout for response headers")
	fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "timeout for a whole fetch, body included")
	f.bodyLimit = 10 << 20
	fs.Var(&f.bodyLimit, "max-body", "largest body downloaded per page, e.g. 512KiB, 10MiB (rest not downloaded)")
	fs.DurationVar(&f.grace, "grace", crawler.DefaultGracePeriod, "how long fetches in flight may finish after an interrupt")
	fs.StringVar(&f.out, "o", "", "write the JSON Lines to `FILE` instead of standard output")
	fs.BoolVar(&f.body, "body", false, "include each page's body in the output")
	fs.StringVar(&f.logFile, "log", "", "write robots.txt decisions, skips and errors as JSON to `FILE`")
	fs.StringVar(&f.progress, "progress", "auto", "live progress line on stderr: auto (when a terminal), on, off")
	fs.BoolVar(&f.verbose, "v", false, "log to stderr as well")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the crawl to `FILE` (go tool pprof)")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile taken at the end of the crawl to `FILE`")
	fs.Usage = func() { usage(fs, stderr) }
	return fs
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage:
  crawl [flags] seeds.txt       crawl from the URLs in seeds.txt (one per line; "-" reads stdin)
  crawl robots URL|FILE [agent] [path ...]
                                show how heed reads a site's robots.txt for an agent

Pages go to standard output as JSON Lines (one object per fetched page).
`)
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.names {
			fl := fs.Lookup(name)
			if fl == nil {
				continue
			}
			kind, text := flag.UnquoteUsage(fl)
			head := "  -" + fl.Name
			if kind != "" {
				head += " " + kind
			}
			def := ""
			if fl.DefValue != "" && fl.DefValue != "0" && fl.DefValue != "false" {
				def = " (default " + fl.DefValue + ")"
			}
			fmt.Fprintf(w, "%-28s %s%s\n", head, text, def)
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

// byteSize is a flag value in bytes that accepts KiB, MiB and GiB suffixes.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

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
		return nil, fmt.Errorf("-scope %q: want seeds, domain or any", f.scope)
	}
	switch f.key {
	case "host":
		opts = append(opts, crawler.WithPolitenessKey(ratelimit.KeyHost))
	case "domain":
		opts = append(opts, crawler.WithPolitenessKey(ratelimit.KeyDomain))
	case "ip":
		opts = append(opts, crawler.WithPolitenessKey(ratelimit.KeyIP))
	default:
		return nil, fmt.Errorf("-key %q: want host, domain or ip", f.key)
	}
	switch f.progress {
	case "auto", "on", "off":
	default:
		return nil, fmt.Errorf("-progress %q: want auto, on or off", f.progress)
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

func runCrawl(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f flags
	fs := newFlagSet(&f, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "crawl: want exactly one seeds file (or - for standard input); see crawl -h")
		return 2
	}

	seeds, code := loadSeeds(fs.Arg(0), stdin, stderr)
	if code != 0 {
		return code
	}

	var logW io.Writer = io.Discard
	if f.logFile != "" {
		lf, err := os.Create(f.logFile)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: -log: %v\n", err)
			return 2
		}
		defer lf.Close()
		bw := bufio.NewWriterSize(lf, 64<<10)
		defer bw.Flush() // before Close: defers run last-in first-out
		logW = bw
	}
	// Without -log, records are dropped before they are formatted.
	var handler slog.Handler = slog.DiscardHandler
	if f.logFile != "" {
		handler = slog.NewJSONHandler(logW, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	if f.verbose {
		handler = teeHandler{handler, slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})}
	}
	logger := slog.New(handler)

	opts, err := f.options(logger)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return 2
	}
	c, err := crawler.New(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return 2
	}

	out := stdout
	if f.out != "" {
		of, err := os.Create(f.out)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: -o: %v\n", err)
			return 2
		}
		defer of.Close()
		out = of
	}
	rec := newRecorder(out, f.body)
	c.OnPage(rec.page)
	c.OnError(rec.failure)
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		logger.Info("disallowed by robots.txt", "url", u.String(), "reason", string(why))
	})

	ctx, stop := interruptible(ctx, stderr, func() { rec.flush() })
	defer stop()

	showProgress := f.progress == "on" || f.progress == "auto" && isTerminal(stderr)
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if showProgress {
		progressWG.Go(func() { progress(c, stderr, progressDone) })
	}
	stopProfiles, err := startProfiles(f.cpuProfile, f.memProfile)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return 2
	}
	runErr := c.Run(ctx, seeds...)
	if err := stopProfiles(); err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
	}
	close(progressDone)
	progressWG.Wait()
	if err := rec.flush(); err != nil {
		fmt.Fprintf(stderr, "crawl: writing output: %v\n", err)
		return 1
	}
	summary(stderr, c.Stats())
	switch {
	case runErr == nil:
		return 0
	case errors.Is(runErr, context.Canceled):
		return 130
	default:
		fmt.Fprintf(stderr, "crawl: %v\n", runErr)
		return 1
	}
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

// recorder writes records; it is called from many workers at once.
type recorder struct {
	mu   sync.Mutex
	w    *bufio.Writer
	enc  *json.Encoder
	body bool
	err  error
}

func newRecorder(w io.Writer, body bool) *recorder {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &recorder{w: bw, enc: enc, body: body}
}

func (r *recorder) write(rec *record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = r.enc.Encode(rec)
	}
}

func (r *recorder) flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = r.w.Flush()
	}
	return r.err
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

// summary prints the final counters.
func summary(w io.Writer, s crawler.Stats) {
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
	if len(s.Errors) > 0 {
		fmt.Fprintf(w, "crawl: errors %s\n", countList(s.Errors))
	}
	if len(s.RobotsOutcomes) > 0 {
		fmt.Fprintf(w, "crawl: robots.txt %s\n", countList(s.RobotsOutcomes))
	}
	if len(s.Skipped) > 0 {
		fmt.Fprintf(w, "crawl: skipped %s\n", countList(s.Skipped))
	}
	if s.CrawlDelayHosts > 0 {
		fmt.Fprintf(w, "crawl: robots.txt Crawl-delay on %d hosts (longest applied %v)\n", s.CrawlDelayHosts, s.MaxCrawlDelay)
	}
	if s.Sitemaps > 0 {
		fmt.Fprintf(w, "crawl: %d sitemaps listing %d pages\n", s.Sitemaps, s.SitemapURLs)
	}
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
