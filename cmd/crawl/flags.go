package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/heedcrawl/heed/fetch/warc"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/redisstore"
	"github.com/heedcrawl/heed/frontier/revisit"
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
	metrics                  string
	ui, uiToken              string
	warcDir                  string
	warcSize                 byteSize
	warcDedup                bool
	follow                   bool
	cpuProfile, memProfile   string
	sortQuery, stripTracking bool
	maxRedirects             int
	robotsWait               time.Duration
	maxLinks                 int
	maxSitemaps, sitemapURLs int
	maxPathSegs, segRepeats  int
	hostFailures             int
	allowPrivate             bool
	state                    string
	stateOverride            bool
	redis, job, process      string
	redisShards              int
	lease, redisRetry        time.Duration
	revisit                  bool
	minRevisit, maxRevisit   time.Duration
	forDuration              time.Duration
	include, exclude         pathPatterns
	render                   renderFlags
}

// flagGroups orders the -h output, and the README's flags table, by topic.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Identity", []string{"agent", "ua"}},
	{"Politeness", []string{"delay", "max-delay", "per-host", "key", "retries", "robots-wait", "max-failures"}},
	{"Scope and limits", []string{"scope", "include", "exclude", "follow", "allow-private", "max-depth", "max-pages", "max-pages-per-host", "sitemaps", "max-sitemaps", "max-sitemap-urls", "nofollow", "max-links", "max-redirects", "max-path-segments", "max-segment-repeats", "sort-query", "strip-tracking"}},
	{"Throughput and timeouts", []string{"workers", "connect-timeout", "header-timeout", "timeout", "max-body", "grace"}},
	{"Output", []string{"o", "body", "log", "progress", "v", "metrics", "ui", "ui-token", "warc", "warc-size", "warc-dedup", "cpuprofile", "memprofile"}},
	{"State", []string{"state", "state-override"}},
	{"Revisiting", []string{"revisit", "min-revisit", "max-revisit", "for"}},
	{"Distributed", []string{"redis", "job", "process", "lease", "redis-retry", "redis-shards"}},
	{"Rendering", renderFlagNames},
}

// flagArgs names what the string flags without a `NAME` in their usage
// take.
var flagArgs = map[string]string{
	"agent":    "NAME",
	"include":  "PATTERN",
	"exclude":  "PATTERN",
	"scope":    "seeds|domain|any",
	"key":      "host|domain|ip",
	"progress": "auto|on|off",
	"render":   "never|always|auto",
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
	limit := func(p *int, name string, def int, usage string) {
		*p = def
		fs.Var((*limitValue)(p), name, usage+" (none: no limit)")
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
	duration(&f.robotsWait, "robots-wait", 0, "how long URLs wait for an unreachable robots.txt (5xx, 429, timeouts) to come back before they are given up as errors (robots-unavailable)")
	limit(&f.hostFailures, "max-failures", crawler.DefaultHostFailures, "consecutive failed requests (timeouts, resets, 429, 5xx) after which a host is given up and its URLs reported")
	fs.StringVar(&f.scope, "scope", "seeds", "links followed: to the seed hosts, to their registrable domains, or anywhere")
	fs.Var(&f.include, "include", "follow only links whose path and query (/docs/a?b=1, percent-encoded) begin with PATTERN, a path such as /docs/, or match it, a regular expression beginning with ^ such as ^/(en|fr)/docs/; may be given many times (any one matches); seeds and redirect targets are not filtered")
	fs.Var(&f.exclude, "exclude", "follow no link whose path and query begin with, or match, PATTERN (as for -include), e.g. /whatsnew/ or ^/.*\\.pdf$; may be given many times; wins over -include")
	boolean(&f.allowPrivate, "allow-private", false, "allow loopback, private, link-local and multicast addresses (by default refused unless the seeds are on such addresses)")
	limit(&f.maxDepth, "max-depth", crawler.NoLimit, "links followed from a seed at most; pages listed in sitemaps count as depth 0")
	limit(&f.maxPages, "max-pages", crawler.NoLimit, "pages scheduled in all; a URL found past it has one skip record")
	limit(&f.maxPagesHost, "max-pages-per-host", crawler.NoLimit, "pages scheduled per host; a URL found past it has one skip record")
	boolean(&f.sitemaps, "sitemaps", true, "read the sitemaps robots.txt names (or /sitemap.xml) and crawl what they list")
	limit(&f.maxSitemaps, "max-sitemaps", crawler.DefaultMaxSitemaps, "sitemap documents fetched per host")
	limit(&f.sitemapURLs, "max-sitemap-urls", crawler.DefaultMaxSitemapURLs, "pages taken from sitemaps per host")
	boolean(&f.nofollow, "nofollow", true, "respect nofollow: rel=nofollow links, robots <meta>, X-Robots-Tag")
	limit(&f.maxLinks, "max-links", crawler.DefaultMaxLinks, "followable links taken from one page; the rest are counted as skipped")
	integer(&f.maxRedirects, "max-redirects", crawler.DefaultMaxRedirects, "redirect hops followed per chain (0: none)")
	limit(&f.maxPathSegs, "max-path-segments", crawler.DefaultMaxPathSegments, "skip URLs whose path has more segments")
	limit(&f.segRepeats, "max-segment-repeats", crawler.DefaultMaxSegmentRepeats, "skip URLs repeating a path segment, or run of segments, more often in a row, as in /a/a/a/")
	boolean(&f.sortQuery, "sort-query", true, "treat URLs that differ only in the order of query parameters as one")
	boolean(&f.stripTracking, "strip-tracking", false, "drop tracking query parameters (utm_*, gclid, fbclid, ...) from URLs")
	integer(&f.workers, "workers", crawler.DefaultWorkers, "fetches in flight across all hosts (the per-host limits keep it polite)")
	duration(&f.connect, "connect-timeout", crawler.DefaultConnectTimeout, "TCP and TLS connect timeout")
	duration(&f.header, "header-timeout", crawler.DefaultHeaderTimeout, "timeout for the response headers")
	duration(&f.timeout, "timeout", crawler.DefaultFetchTimeout, "timeout for a whole fetch, body included")
	f.bodyLimit = crawler.DefaultBodyLimit
	fs.Var(&f.bodyLimit, "max-body", "largest body downloaded per page, e.g. 512KiB, 10MiB; the rest is not downloaded and the page is marked truncated")
	duration(&f.grace, "grace", crawler.DefaultGracePeriod, "how long fetches in flight may finish after an interrupt or SIGTERM")
	fs.StringVar(&f.out, "o", "", "write the JSON Lines to `FILE` (\"-\": standard output, the default)")
	boolean(&f.body, "body", false, "include each page's body in its record")
	fs.StringVar(&f.logFile, "log", "", "write robots.txt fetches and decisions, disallowed URLs, skips and errors as JSON log records to `FILE`")
	fs.StringVar(&f.progress, "progress", "auto", "the live progress line on stderr (auto: when stderr is a terminal)")
	boolean(&f.verbose, "v", false, "log to stderr as well")
	fs.BoolVar(&f.follow, "follow", true, "follow the links of pages (false: fetch only the listed URLs and where they redirect; no sitemaps)")
	fs.StringVar(&f.warcDir, "warc", "", "archive every HTTP exchange (pages, robots.txt, sitemaps, redirects) as WARC/1.1 files in `DIR` (heed-<time>-<serial>.warc.gz)")
	f.warcSize = byteSize(warc.DefaultMaxSize)
	fs.Var(&f.warcSize, "warc-size", "start a new WARC file past this size, e.g. 100MiB")
	fs.BoolVar(&f.warcDedup, "warc-dedup", false, "write a revisit record instead of a body already archived in this crawl")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics during the crawl, e.g. localhost:9090 (port 0: any free port; the address is printed on stderr)")
	fs.StringVar(&f.ui, "ui", "", "serve the live page of the crawl at http://`ADDR`/ (its JSON under /api/, Prometheus at /metrics), e.g. :8080 — a host left out is 127.0.0.1, loopback; the address and the controls' token are printed on stderr")
	fs.StringVar(&f.uiToken, "ui-token", "", "the `TOKEN` the live page's pause, resume and stop controls need (default: a random one, printed on stderr)")
	f.registerStateFlags(fs, duration, integer, boolean)
	boolean(&f.revisit, "revisit", false, "keep the copy fresh: crawl as without it, then keep revisiting every page found, conditionally (If-None-Match, If-Modified-Since), each as often as its changes call for within the hosts' politeness, until stopped (Ctrl-C, -for); records then say what each fetch found (change, etag, last_modified, digest, previous_fetch)")
	duration(&f.minRevisit, "min-revisit", revisit.DefaultMinInterval, "with -revisit: the shortest interval between two fetches of a page, however often it changes")
	duration(&f.maxRevisit, "max-revisit", revisit.DefaultMaxInterval, "with -revisit: the longest interval between two fetches of a page, however rarely it changes; gone (404, 410) and failing pages are asked again this often")
	duration(&f.forDuration, "for", 0, "stop the crawl gracefully after this long, as an interrupt does, and exit 0 (with -state or -redis: resumable); 0s: no time limit")
	f.render.register(fs, duration, integer, boolean)
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the crawl to `FILE` (go tool pprof)")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile taken at the end of the crawl to `FILE`")
	return fs
}

// registerStateFlags defines the flags of where the crawl keeps its state:
// -state, or a -redis job and this process in it.
func (f *flags) registerStateFlags(fs *flag.FlagSet, duration func(*time.Duration, string, time.Duration, string), integer func(*int, string, int, string), boolean func(*bool, string, bool, string)) {
	fs.StringVar(&f.state, "state", "", "keep the crawl's state in `DIR` (created if missing): run the same command again after Ctrl-C, a kill or a crash to resume it; with -o FILE each record appears in FILE exactly once across restarts (on standard output at least once)")
	boolean(&f.stateOverride, "state-override", false, "resume a -state crawl, or join a -redis job, with flags (scope, limits, agent, -o, ...) other than those it was started with, and keep these from then on")
	fs.StringVar(&f.redis, "redis", "", "keep the crawl's state in the Redis server at `URL` (redis://[user:password@]host:port[/db], rediss:// for TLS) or in a Redis Cluster (redis://host1:port1?addr=host2:port2&addr=host3:port3, or the plain URL of any one node), shared by every process of the -job, on any machine; the seeds (URLs, seeds files) are then optional")
	fs.StringVar(&f.job, "job", "", "the crawl on -redis this process joins, by `NAME`: the first process with seeds starts it, any number of others, with or without seeds, join it")
	fs.StringVar(&f.process, "process", "", "this process's `NAME` in the -job, as crawl status lists it (default HOST-PID)")
	duration(&f.lease, "lease", frontier.DefaultLease, "the liveness timeout of this process in the -redis job: it holds the URLs it took while it beats (a heartbeat every fifth of it), however long its fetches take; if it dies or is paused or cut off from Redis for longer, its URLs go to the other processes at once")
	duration(&f.redisRetry, "redis-retry", redisstore.DefaultRetryFor, "how long an operation on -redis that failed for a transient reason (Redis unreachable, restarting) is retried before the crawl stops with the error; 0s: only the client's own few retries")
	integer(&f.redisShards, "redis-shards", 0, "the shards of a -job this process starts (a job keeps those it started with): a job spreads over at most as many Redis Cluster primaries as it has shards, and each shard a batch touches costs Redis work; 0: one a primary of a cluster, one on a single Redis (give more to a job that is to grow onto more primaries, or to move from one Redis into a cluster)")
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage:
  crawl [flags] URL|seeds.txt|- ...
                                crawl from the URLs given and those in the seeds files (one per line;
                                "-": standard input, crawled as lines arrive)
  crawl -redis URL -job NAME [flags] [URL|seeds.txt|- ...]
                                start or join a crawl shared by many processes
  crawl status -redis URL -job NAME
                                show how a -redis crawl is going
  crawl robots URL|FILE [agent] [path ...]
                                show how heed reads a site's robots.txt for an agent

Flags may come before or after the URLs and files ("--" ends them). Records
go to standard output as JSON Lines, as the crawl goes: one object per URL
the crawl schedules, a page, an error or a skip (robots.txt rules); a
summary goes to standard error at the end. Durations are Go
durations (500ms, 2s, 1m).
`)
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.names {
			if fl := fs.Lookup(name); fl != nil {
				printFlag(w, fl)
			}
		}
	}
	fmt.Fprint(w, `
Traps: a link loop that repeats path segments (/a/a/a/...) is refused by
-max-path-segments and -max-segment-repeats; an endless calendar or generated
pages (/cal/2025/01, /cal/2025/02, ...) are stopped by -max-depth and
-max-pages-per-host; sitemap chains by -max-sitemaps and -max-sitemap-urls; a
dead or failing host by -max-failures.

Resuming: with -state DIR, run the same command again after Ctrl-C, SIGTERM,
kill -9 or a power cut and the crawl goes on where it stopped, without
fetching again what it wrote out; once it is complete, a rerun says so, and
crawls only seeds new to it. Exactly-once records need -o FILE: it is cut
back to the last record the state counts, then appended to.

Revisiting: with -revisit, the crawl keeps revisiting what it found, each
page as often as its changes call for, until stopped (Ctrl-C, -for); with
-state or -redis the schedule survives restarts, without a burst of
refetches.

Distributed: with -redis URL -job NAME, every process started so, on any
machine, crawls the same job: the seen URLs, the queues and each host's
pace are in Redis, so the job is as polite as one process. Each writes its
own output (-o is appended to); all exit when nothing is queued or held.
`)
}

// printFlag writes one line of -h: the flag's head, its usage and its
// default, unless that is empty, 0 or false.
func printFlag(w io.Writer, fl *flag.Flag) {
	_, text := flag.UnquoteUsage(fl)
	def := ""
	if fl.DefValue != "" && fl.DefValue != "0" && fl.DefValue != "false" {
		def = " (default " + fl.DefValue + ")"
	}
	fmt.Fprintf(w, "  %-26s %s%s\n", flagHead(fl), text, def)
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
	case *intFlag, *limitValue:
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

// limitValue is an int flag value for a limit: a positive number, or "none" for
// no limit (crawler.NoLimit). Zero is refused: a limit of nothing would
// crawl nothing, and zero is not a spelling of "no limit".
type limitValue int

func (n *limitValue) String() string {
	if *n == crawler.NoLimit {
		return "none"
	}
	return strconv.Itoa(int(*n))
}

func (n *limitValue) Set(s string) error {
	if s == "none" {
		*n = crawler.NoLimit
		return nil
	}
	v, err := strconv.ParseInt(s, 10, strconv.IntSize)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return errors.New("out of range")
	case err != nil || v < 1:
		return errors.New("want a positive whole number, or none for no limit")
	}
	*n = limitValue(v)
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
		crawler.WithConnectTimeout(f.connect),
		crawler.WithHeaderTimeout(f.header),
		crawler.WithFetchTimeout(f.timeout),
		crawler.WithBodyLimit(int64(f.bodyLimit)),
		crawler.WithGracePeriod(f.grace),
		crawler.WithRetries(f.retries),
		crawler.WithRobotsWait(f.robotsWait),
		crawler.WithMaxRedirects(f.maxRedirects),
		crawler.WithMaxLinks(f.maxLinks),
		crawler.WithMaxSitemaps(f.maxSitemaps),
		crawler.WithMaxSitemapURLs(f.sitemapURLs),
		crawler.WithMaxPathSegments(f.maxPathSegs),
		crawler.WithMaxSegmentRepeats(f.segRepeats),
		crawler.WithHostFailures(f.hostFailures),
		crawler.WithAllowPrivate(f.allowPrivate),
		crawler.WithFollowLinks(f.follow),
		crawler.WithLogger(logger),
	}
	if f.ua != "" {
		opts = append(opts, crawler.WithUserAgent(f.ua))
	}
	if f.revisit {
		opts = append(opts, crawler.WithRevisit(crawler.Revisit{Min: f.minRevisit, Max: f.maxRevisit}))
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
		cz := frontier.Canonicalizer{KeepQueryOrder: !f.sortQuery}
		if f.stripTracking {
			cz.StripParam = frontier.TrackingParam
		}
		opts = append(opts, crawler.WithCanonicalizer(cz))
	}
	return opts, nil
}

// optionFlags names the flag that sets each crawler option.
var optionFlags = map[string]string{
	"WithAgent": "agent", "WithUserAgent": "ua", "WithWorkers": "workers", "WithPerHost": "per-host",
	"WithDelay": "delay", "WithMaxDelay": "max-delay", "WithRetries": "retries", "WithRobotsWait": "robots-wait",
	"WithHostFailures": "max-failures", "WithMaxDepth": "max-depth", "WithMaxPages": "max-pages",
	"WithMaxPagesPerHost": "max-pages-per-host", "WithMaxSitemaps": "max-sitemaps", "WithMaxSitemapURLs": "max-sitemap-urls",
	"WithMaxLinks": "max-links", "WithMaxRedirects": "max-redirects", "WithMaxPathSegments": "max-path-segments",
	"WithMaxSegmentRepeats": "max-segment-repeats", "WithConnectTimeout": "connect-timeout",
	"WithHeaderTimeout": "header-timeout", "WithFetchTimeout": "timeout", "WithBodyLimit": "max-body",
	"WithGracePeriod": "grace", "WithLease": "lease", "WithRevisit": "revisit",
}

// optionErrorText says what is wrong with the flags in an error of
// crawler.New: the flag behind a bad option, by its name.
func optionErrorText(err error) string {
	var oe *crawler.OptionError
	if errors.As(err, &oe) {
		if name, ok := optionFlags[oe.Option]; ok {
			return "invalid -" + name + ": " + oe.Problem
		}
	}
	return err.Error()
}
