package crawler

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots"
)

// Defaults of a Crawler made by New with no options. They are polite: one
// request at a time per host, at least a second apart, robots.txt always
// obeyed. A limit not listed here (WithMaxDepth, WithMaxPages,
// WithMaxPagesPerHost) is NoLimit by default.
const (
	DefaultAgent = "heed"
	// DefaultWorkers keeps a few hundred slow hosts in flight at once. Each
	// worker's host keeps a connection, and the idle pool is capped at
	// twice the workers (see run.go): at 512, bench workload (c) held
	// 1,024 idle connections (44 KB each) for a peak of 130 MB, and was no
	// faster than at 256 (86 MB).
	DefaultWorkers     = 256
	DefaultPerHost     = 1
	DefaultMinDelay    = time.Second
	DefaultMaxDelay    = 60 * time.Second
	DefaultGracePeriod = 10 * time.Second
	DefaultRobotsCache = 100_000
	DefaultPageRetries = 2
	// DefaultConnectTimeout, DefaultHeaderTimeout and DefaultFetchTimeout
	// bound a TCP and TLS connect, the wait for a response's headers, and
	// a whole fetch, body included.
	DefaultConnectTimeout = fetch.DefaultConnectTimeout
	DefaultHeaderTimeout  = fetch.DefaultHeaderTimeout
	DefaultFetchTimeout   = fetch.DefaultTimeout
	// DefaultBodyLimit is the largest body downloaded per page.
	DefaultBodyLimit    = fetch.DefaultMaxBodySize
	DefaultMaxRedirects = fetch.DefaultMaxRedirects
	// DefaultMaxLinks caps the followable links taken from one page; the
	// rest are counted in Stats.SkippedLinks[SkippedMaxLinks].
	DefaultMaxLinks = 10_000
	// DefaultMaxSitemaps and DefaultMaxSitemapURLs are each host's sitemap
	// budget: sitemap documents fetched, and pages taken from them.
	DefaultMaxSitemaps    = 100
	DefaultMaxSitemapURLs = 500_000
	// DefaultMaxSitemapDepth bounds sitemap index nesting below a root
	// sitemap (the protocol allows one level; some sites nest further).
	DefaultMaxSitemapDepth = fetch.DefaultSitemapDepth
	// DefaultMaxPathSegments and DefaultMaxSegmentRepeats are the
	// pathological-path rule's bounds (WithMaxPathSegments,
	// WithMaxSegmentRepeats).
	DefaultMaxPathSegments   = frontier.DefaultMaxPathSegments
	DefaultMaxSegmentRepeats = frontier.DefaultMaxSegmentRepeats
	// DefaultHostFailures is how many consecutive failed requests
	// (timeouts, connection errors, 429 and 5xx answers) make the crawler
	// give a host up and report its remaining URLs.
	DefaultHostFailures = 8
)

// NoLimit, given to an option that sets a limit (WithMaxPages,
// WithMaxDepth, WithMaxLinks, WithHostFailures, ...), lifts it. It is the
// only way to: zero is never "no limit" (see the package documentation's
// Options).
const NoLimit = -1

// ErrInvalidOption is wrapped by the errors New returns for bad options,
// each an *OptionError.
var ErrInvalidOption = errors.New("crawler: invalid option")

// OptionError is the error New returns for a bad option: which one, and
// what is wrong with its value. It wraps ErrInvalidOption, and the cause
// when another package refused the value.
type OptionError struct {
	// Option is the option's name, "WithWorkers".
	Option string
	// Problem says what is wrong: "must be at least 1, got 0".
	Problem string
	// Err is the cause, or nil.
	Err error
}

// Error names the option and the problem.
func (e *OptionError) Error() string {
	return "crawler: invalid option " + e.Option + ": " + e.Problem
}

// Unwrap returns ErrInvalidOption and the cause, if any.
func (e *OptionError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidOption}
	}
	return []error{ErrInvalidOption, e.Err}
}

func invalid(option, format string, args ...any) error {
	return &OptionError{Option: option, Problem: fmt.Sprintf(format, args...)}
}

// limit checks the value of an option that sets a limit: at least 1, or
// NoLimit.
func limit(option string, n int) error {
	if n < 1 && n != NoLimit {
		return invalid(option, "must be at least 1, or NoLimit, got %d", n)
	}
	return nil
}

// Option configures a Crawler; pass options to New.
type Option func(*config) error

// config is a Crawler's configuration. Limits hold what the options were
// given, NoLimit included; frontierConfig and newRegistry translate them
// into their packages' spellings.
type config struct {
	agent              string
	userAgent          string
	workers            int
	perHost            int
	minDelay           time.Duration
	maxDelay           time.Duration
	keyMode            ratelimit.KeyMode
	scope              frontier.Scope
	scopeFunc          func(*url.URL) bool
	maxDepth           int
	maxPages           int
	maxPagesHost       int
	connectTimeout     time.Duration
	headerTimeout      time.Duration
	timeout            time.Duration // a whole fetch's
	bodyLimit          int64
	sitemaps           bool
	respectNofollow    bool
	client             *http.Client
	transport          http.RoundTripper
	logger             *slog.Logger
	clock              ratelimit.Clock
	grace              time.Duration
	robotsCache        int
	pageRetries        int
	robotsWait         time.Duration
	maxRedirects       int // fetch's spelling: fetch.NoRedirects for none
	canonicalizer      frontier.Canonicalizer
	adaptive           float64
	maxLinks           int
	maxSitemaps        int
	maxSitemapURLs     int
	maxSitemapNest     int // math.MaxInt for NoLimit: sitemaps.go compares depths with it
	maxPathSegs        int
	maxSegRepeats      int
	hostFailures       int
	allowPrivate       bool
	store              frontier.Store
	checkpoint         func() []byte
	recorder           fetch.Recorder
	renderer           Renderer      // nil: no page is rendered
	renderMode         RenderMode    // with renderer: which pages
	lease              time.Duration // 0 until WithLease or New's default
	follow             bool
	revisit            *Revisit                     // nil: each URL is fetched once
	replacedExtractors map[string][]fetch.Extractor // media type → extractors that replace the defaults
	addedExtractors    []addedExtractor             // added to the defaults, in order
}

// addedExtractor is an extractor WithExtractor adds for a media type.
type addedExtractor struct {
	mediaType string
	e         fetch.Extractor
}

func defaultConfig() config {
	return config{
		agent:           DefaultAgent,
		workers:         DefaultWorkers,
		perHost:         DefaultPerHost,
		minDelay:        DefaultMinDelay,
		maxDelay:        DefaultMaxDelay,
		maxDepth:        NoLimit,
		maxPages:        NoLimit,
		maxPagesHost:    NoLimit,
		connectTimeout:  DefaultConnectTimeout,
		headerTimeout:   DefaultHeaderTimeout,
		timeout:         DefaultFetchTimeout,
		bodyLimit:       DefaultBodyLimit,
		grace:           DefaultGracePeriod,
		robotsCache:     DefaultRobotsCache,
		pageRetries:     DefaultPageRetries,
		maxRedirects:    DefaultMaxRedirects,
		maxLinks:        DefaultMaxLinks,
		maxSitemaps:     DefaultMaxSitemaps,
		maxSitemapURLs:  DefaultMaxSitemapURLs,
		maxSitemapNest:  DefaultMaxSitemapDepth,
		maxPathSegs:     DefaultMaxPathSegments,
		maxSegRepeats:   DefaultMaxSegmentRepeats,
		hostFailures:    DefaultHostFailures,
		follow:          true,
		sitemaps:        true,
		respectNofollow: true,
		logger:          slog.New(slog.DiscardHandler),
	}
}

// check validates what no single option can, the options together, and
// completes cfg.
func (cfg *config) check() error {
	if cfg.recorder != nil && (cfg.client != nil || cfg.transport != nil) {
		return invalid("WithWARC", "it records through the crawler's own transport: it cannot be combined with WithHTTPClient or WithTransport")
	}
	if cfg.maxDelay < cfg.minDelay {
		return invalid("WithMaxDelay", "%v is below the minimum delay %v", cfg.maxDelay, cfg.minDelay)
	}
	*cfg = cfg.completed()
	return nil
}

// completed returns cfg with the defaults that depend on other options
// filled in: the User-Agent from the agent token, the lease.
func (cfg config) completed() config {
	if cfg.lease == 0 {
		cfg.lease = frontier.DefaultLease
	}
	if cfg.userAgent == "" {
		cfg.userAgent = fmt.Sprintf("%s/%s (+https://github.com/heedcrawl/heed)", cfg.agent, Version)
		if cfg.agent != DefaultAgent {
			cfg.userAgent = fmt.Sprintf("%s (heed/%s; +https://github.com/heedcrawl/heed)", cfg.agent, Version)
		}
	}
	return cfg
}

// WithAgent sets the product token robots.txt groups and agent-scoped
// directives are matched against (DefaultAgent). It must be a robots.txt
// product token: letters, '_' and '-' only.
func WithAgent(token string) Option {
	return func(c *config) error {
		if token == "" {
			return invalid("WithAgent", "empty product token")
		}
		if !robots.ValidProductToken(token) {
			return invalid("WithAgent", "%q: only letters, '_' and '-' may appear in a product token", token)
		}
		c.agent = token
		return nil
	}
}

// WithUserAgent sets the full User-Agent header. By default it is built from
// the agent token, heed's version and a contact URL.
func WithUserAgent(ua string) Option {
	return func(c *config) error {
		if ua == "" {
			return invalid("WithUserAgent", "empty User-Agent")
		}
		c.userAgent = ua
		return nil
	}
}

// WithWorkers sets how many fetches may be in flight at once across all
// hosts (DefaultWorkers), at least 1. Workers are cheap goroutines; the
// per-host limits, not this number, keep a crawl polite.
func WithWorkers(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("WithWorkers", "must be at least 1, got %d", n)
		}
		c.workers = n
		return nil
	}
}

// WithPerHost sets how many requests may be in flight to one host at once
// (DefaultPerHost), at least 1.
func WithPerHost(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("WithPerHost", "must be at least 1, got %d", n)
		}
		c.perHost = n
		return nil
	}
}

// WithDelay sets the minimum delay between two requests to one host
// (DefaultMinDelay). With one request in flight per host (the default,
// WithPerHost(1)) it runs from the previous answer, however late the server
// saw that request; with WithPerHost above 1 it separates the starts of
// requests. Zero is no delay: then only robots.txt Crawl-delay and back-off
// pace a host. A site's Crawl-delay can lengthen the delay, never shorten
// it.
func WithDelay(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("WithDelay", "must not be negative, got %v", d)
		}
		c.minDelay = d
		return nil
	}
}

// WithMaxDelay caps any delay a site asks for through Crawl-delay or that
// back-off reaches (DefaultMaxDelay); a host asking for more is crawled at
// the cap, and the clamp is logged. It must be positive, and no shorter
// than WithDelay's.
func WithMaxDelay(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("WithMaxDelay", "must be positive, got %v", d)
		}
		c.maxDelay = d
		return nil
	}
}

// WithAdaptiveDelay keeps each host's delay at least factor times its
// observed response time, so slow servers get room. Zero, the default,
// adds nothing to the delay.
func WithAdaptiveDelay(factor float64) Option {
	return func(c *config) error {
		if factor < 0 || math.IsNaN(factor) || math.IsInf(factor, 0) {
			return invalid("WithAdaptiveDelay", "must be a number not below 0, got %v", factor)
		}
		c.adaptive = factor
		return nil
	}
}

// WithPolitenessKey chooses what shares one delay and one concurrency limit:
// the host (ratelimit.KeyHost, the default), the registrable domain, or the
// resolved IP address.
func WithPolitenessKey(mode ratelimit.KeyMode) Option {
	return func(c *config) error {
		if mode > ratelimit.KeyIP {
			return invalid("WithPolitenessKey", "unknown key mode %d", mode)
		}
		c.keyMode = mode
		return nil
	}
}

// WithScope chooses which links are followed, relative to the seeds: the seed
// hosts (frontier.ScopeSeedHosts, the default), their registrable domains,
// or any host.
func WithScope(s frontier.Scope) Option {
	return func(c *config) error {
		if s > frontier.ScopeAny {
			return invalid("WithScope", "unknown scope %d", s)
		}
		c.scope = s
		return nil
	}
}

// WithScopeFunc replaces the scope rule: a link is followed when in returns
// true. Seeds are always in scope.
func WithScopeFunc(in func(u *url.URL) bool) Option {
	return func(c *config) error {
		if in == nil {
			return invalid("WithScopeFunc", "nil scope function")
		}
		c.scopeFunc = in
		return nil
	}
}

// WithMaxDepth bounds how many links from a seed are followed: at least 1,
// or NoLimit (the default). Pages listed in sitemaps count as depth 0. To
// fetch only the seeds, use WithFollowLinks(false).
func WithMaxDepth(n int) Option {
	return func(c *config) error {
		c.maxDepth = n
		return limit("WithMaxDepth", n)
	}
}

// WithMaxPages bounds the pages scheduled in the whole crawl: at least 1,
// or NoLimit (the default). A link that the robots.txt already fetched
// disallows is not scheduled, and does not count. A URL found once the
// limit is reached is reported once, to OnError, skipped
// (SkippedMaxPages; see Reports in the package documentation).
func WithMaxPages(n int) Option {
	return func(c *config) error {
		c.maxPages = n
		return limit("WithMaxPages", n)
	}
}

// WithMaxPagesPerHost bounds the pages scheduled per host: at least 1, or
// NoLimit (the default). A URL of a host whose limit is reached is
// reported once, to OnError, skipped (SkippedMaxPagesPerHost).
func WithMaxPagesPerHost(n int) Option {
	return func(c *config) error {
		c.maxPagesHost = n
		return limit("WithMaxPagesPerHost", n)
	}
}

// WithConnectTimeout bounds a TCP and TLS connect (DefaultConnectTimeout);
// it must be positive.
func WithConnectTimeout(d time.Duration) Option {
	return timeoutOption("WithConnectTimeout", d, func(c *config) *time.Duration { return &c.connectTimeout })
}

// WithHeaderTimeout bounds the wait for a response's headers once the
// request has been sent (DefaultHeaderTimeout); it must be positive.
func WithHeaderTimeout(d time.Duration) Option {
	return timeoutOption("WithHeaderTimeout", d, func(c *config) *time.Duration { return &c.headerTimeout })
}

// WithFetchTimeout bounds a whole fetch, connect, headers and body
// included (DefaultFetchTimeout); it must be positive.
func WithFetchTimeout(d time.Duration) Option {
	return timeoutOption("WithFetchTimeout", d, func(c *config) *time.Duration { return &c.timeout })
}

func timeoutOption(name string, d time.Duration, field func(*config) *time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid(name, "must be positive, got %v", d)
		}
		*field(c) = d
		return nil
	}
}

// WithBodyLimit sets the largest body downloaded per page
// (DefaultBodyLimit), at least 1 byte; the rest is not downloaded and the
// page is marked truncated.
func WithBodyLimit(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return invalid("WithBodyLimit", "must be positive, got %d", n)
		}
		c.bodyLimit = n
		return nil
	}
}

// WithSitemaps turns sitemap discovery on (the default) or off. When on, the
// Sitemap: lines of every robots.txt fetched in scope (or /sitemap.xml when a
// robots.txt names none) are read and the pages they list crawled.
func WithSitemaps(on bool) Option {
	return func(c *config) error {
		c.sitemaps = on
		return nil
	}
}

// WithRespectNofollow decides whether rel="nofollow" links, nofollow robots
// <meta> tags and X-Robots-Tag headers stop links being followed (they do
// by default).
func WithRespectNofollow(on bool) Option {
	return func(c *config) error {
		c.respectNofollow = on
		return nil
	}
}

// WithHTTPClient makes the crawler use client for every request, robots.txt
// included. Its redirect policy is overridden: heed never follows redirects
// inline, it schedules their targets.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) error {
		if client == nil {
			return invalid("WithHTTPClient", "nil HTTP client")
		}
		c.client = client
		return nil
	}
}

// WithTransport makes the crawler's HTTP client use rt.
func WithTransport(rt http.RoundTripper) Option {
	return func(c *config) error {
		if rt == nil {
			return invalid("WithTransport", "nil transport")
		}
		c.transport = rt
		return nil
	}
}

// WithLogger sends the crawler's log records to l; by default, and with a
// nil l, they are discarded.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.logger = l
		return nil
	}
}

// WithClock sets the time source (tests use a fake clock).
func WithClock(clk ratelimit.Clock) Option {
	return func(c *config) error {
		if clk == nil {
			return invalid("WithClock", "nil clock")
		}
		c.clock = clk
		return nil
	}
}

// WithGracePeriod sets how long in-flight fetches may go on after the crawl's
// context is cancelled (DefaultGracePeriod). Zero stops them at once.
func WithGracePeriod(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("WithGracePeriod", "must not be negative, got %v", d)
		}
		c.grace = d
		return nil
	}
}

// WithRobotsCacheSize bounds how many authorities' robots.txt are cached
// (DefaultRobotsCache), at least 1, so memory stays bounded on crawls of
// many hosts.
func WithRobotsCacheSize(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("WithRobotsCacheSize", "must be at least 1, got %d", n)
		}
		c.robotsCache = n
		return nil
	}
}

// WithRetries sets how often a page that failed with a timeout, a connection
// error, 429 or 5xx is tried again, after its host's back-off
// (DefaultPageRetries). Zero tries each page once.
func WithRetries(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("WithRetries", "must not be negative, got %d", n)
		}
		c.pageRetries = n
		return nil
	}
}

// WithRobotsWait sets how long a URL may wait for its host's robots.txt to
// become reachable again. An unreachable robots.txt (5xx, 429, timeouts,
// network errors) means complete disallow (RFC 9309 §2.3.1.4); the gate
// retries it with back-off. With zero, the default, such URLs are given up
// at once, counted in Stats.Errors[FailedRobotsUnavailable] and reported to
// OnError (an *Error wrapping ErrRobotsUnavailable and the cause) and to
// OnDisallowed, so one failing host does not hold a crawl open.
func WithRobotsWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("WithRobotsWait", "must not be negative, got %v", d)
		}
		c.robotsWait = d
		return nil
	}
}

// WithMaxRedirects bounds redirect chains (DefaultMaxRedirects). Zero
// follows no redirect: a redirect is then reported to OnError (kind
// "redirect").
func WithMaxRedirects(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("WithMaxRedirects", "must not be negative, got %d", n)
		}
		c.maxRedirects = n
		if n == 0 {
			c.maxRedirects = fetch.NoRedirects // fetch's zero is its default
		}
		return nil
	}
}

// WithCanonicalizer sets the URL canonicalisation options. The zero
// Canonicalizer is the default: frontier.Canonical's rules, query
// parameters sorted, since servers that give "?a=1&b=2" and "?b=2&a=1"
// different content are rare and fetching both is the commonest
// duplicate; its fields depart from them (KeepQueryOrder, StripParam,
// MaxLength).
func WithCanonicalizer(cz frontier.Canonicalizer) Option {
	return func(c *config) error {
		c.canonicalizer = cz
		return nil
	}
}

// WithExtractor adds e to the extractors run on pages of mediaType
// ("application/json", "text/*", "*/*"), after the default HTML extractor
// for HTML. Links of all extractors of a page are merged.
func WithExtractor(mediaType string, e fetch.Extractor) Option {
	return func(c *config) error {
		if e == nil || mediaType == "" {
			return invalid("WithExtractor", "extractor needs a media type and a non-nil extractor")
		}
		c.addedExtractors = append(c.addedExtractors, addedExtractor{mediaType, e})
		return nil
	}
}

// WithExtractors replaces the extractors of mediaType with es; with none, no
// links are extracted from such pages. WithExtractors("text/html", mine)
// replaces the default HTML extractor.
func WithExtractors(mediaType string, es ...fetch.Extractor) Option {
	return func(c *config) error {
		if mediaType == "" {
			return invalid("WithExtractors", "extractors need a media type")
		}
		if slices.Contains(es, nil) {
			return invalid("WithExtractors", "nil extractor for %s", mediaType)
		}
		if c.replacedExtractors == nil {
			c.replacedExtractors = map[string][]fetch.Extractor{}
		}
		c.replacedExtractors[mediaType] = es
		return nil
	}
}

// WithMaxLinks caps the followable links taken from one page
// (DefaultMaxLinks), so that a page of a million links costs no more than
// its body: at least 1, or NoLimit. The links past the cap are counted in
// Stats.SkippedLinks[SkippedMaxLinks]. To follow no links, use
// WithFollowLinks(false).
func WithMaxLinks(n int) Option {
	return func(c *config) error {
		c.maxLinks = n
		return limit("WithMaxLinks", n)
	}
}

// WithMaxSitemaps caps the sitemap documents fetched per host
// (DefaultMaxSitemaps): at least 1, or NoLimit. Those refused are counted
// in Stats.SkippedLinks[SkippedSitemapLimit]. To read none, use WithSitemaps(false).
func WithMaxSitemaps(n int) Option {
	return func(c *config) error {
		c.maxSitemaps = n
		return limit("WithMaxSitemaps", n)
	}
}

// WithMaxSitemapURLs caps the pages taken from sitemaps per host
// (DefaultMaxSitemapURLs): at least 1, or NoLimit. Those refused are
// counted in Stats.SkippedLinks[SkippedSitemapLimit].
func WithMaxSitemapURLs(n int) Option {
	return func(c *config) error {
		c.maxSitemapURLs = n
		return limit("WithMaxSitemapURLs", n)
	}
}

// WithMaxSitemapDepth bounds sitemap index nesting below a root sitemap
// (DefaultMaxSitemapDepth), or NoLimit: zero reads the root sitemaps only,
// not the sitemaps an index among them lists. Nesting does not use up
// WithMaxDepth, which counts links followed. What it refuses is counted in
// Stats.SkippedLinks[SkippedSitemapDepth].
func WithMaxSitemapDepth(n int) Option {
	return func(c *config) error {
		switch {
		case n == NoLimit:
			c.maxSitemapNest = math.MaxInt
		case n < 0:
			return invalid("WithMaxSitemapDepth", "must be at least 0, or NoLimit, got %d", n)
		default:
			c.maxSitemapNest = n
		}
		return nil
	}
}

// WithMaxPathSegments bounds the segments of a URL's path
// (DefaultMaxPathSegments): URLs with more are not scheduled and are
// counted in Stats.SkippedLinks[SkippedPathological]. It takes at least 1, or
// NoLimit to turn the check off. With WithMaxSegmentRepeats it is the
// pathological-path rule against link loops; calendar-like traps, which
// do not repeat, are stopped by WithMaxDepth and the page limits.
func WithMaxPathSegments(n int) Option {
	return func(c *config) error {
		c.maxPathSegs = n
		return limit("WithMaxPathSegments", n)
	}
}

// WithMaxSegmentRepeats bounds how often one path segment, or run of
// segments, may repeat in a row, as in /a/a/a/ or /x/y/x/y/
// (DefaultMaxSegmentRepeats): URLs that repeat one more often are not
// scheduled and are counted in Stats.SkippedLinks[SkippedPathological]. It takes at
// least 1, or NoLimit to turn the check off.
func WithMaxSegmentRepeats(n int) Option {
	return func(c *config) error {
		c.maxSegRepeats = n
		return limit("WithMaxSegmentRepeats", n)
	}
}

// WithHostFailures sets how many consecutive failed requests to one host
// (timeouts, connection errors, 429 and 5xx answers, after retries) make
// the crawler give it up (DefaultHostFailures): its remaining URLs are
// reported to OnError and counted in Stats.Errors[FailedHostGivenUp], and no
// more are scheduled, so one dead server cannot hold a crawl open for
// hours. It takes at least 1, or NoLimit never to give a host up.
func WithHostFailures(n int) Option {
	return func(c *config) error {
		c.hostFailures = n
		return limit("WithHostFailures", n)
	}
}

// WithAllowPrivate lets the crawl reach hosts that are or resolve to
// loopback, private (RFC 1918, fc00::/7), link-local or multicast
// addresses. By default such addresses are refused — a redirect to
// 169.254.169.254 or 10.0.0.1 is never followed, and the address actually
// dialled is checked, so DNS rebinding cannot get round it — unless the
// seeds themselves are on that kind of address, so that an intranet or a
// local test site crawls as expected. Refusals are counted in
// Stats.SkippedLinks[SkippedPrivateAddress].
func WithAllowPrivate(on bool) Option {
	return func(c *config) error {
		c.allowPrivate = on
		return nil
	}
}

// WithStore sets where the frontier keeps the crawl's seen-set and queues
// (by default a new frontier.MemoryStore per Run). If the store fails, the
// crawl stops and Run returns the error, wrapping frontier.ErrStore.
func WithStore(s frontier.Store) Option {
	return func(c *config) error {
		if s == nil {
			return invalid("WithStore", "nil store")
		}
		c.store = s
		return nil
	}
}

// WithCheckpoint keeps a caller's output in step with the crawl's progress
// in its Store. Each time the crawl is done with a URL — fetched, failed,
// disallowed — it runs that URL's handlers (OnPage, OnError, OnDisallowed),
// then calls checkpoint, and stores what checkpoint returns with the URL's
// acknowledgement in one atomic step, all under one lock. A program that
// writes a record per URL from its handlers and returns its output's
// length as the checkpoint can, after any crash, cut its output back to
// the Store's last durable Checkpoint and resume: every record then
// appears exactly once, since the URLs acknowledged after that checkpoint
// are fetched again. Handlers of different URLs no longer run at the same
// time.
func WithCheckpoint(checkpoint func() []byte) Option {
	return func(c *config) error {
		if checkpoint == nil {
			return invalid("WithCheckpoint", "nil checkpoint function")
		}
		c.checkpoint = checkpoint
		return nil
	}
}

// WithWARC records every HTTP exchange of the crawl — pages, robots.txt,
// sitemaps, redirects, error statuses — as it came off the connection, to
// rec: a *warc.Writer (package fetch/warc) writes WARC/1.1 files. Recording
// needs the crawler's own transport, so it cannot be combined with
// WithHTTPClient or WithTransport. A recording that fails (a full disk)
// stops the crawl with the error, as a Store failure does.
func WithWARC(rec fetch.Recorder) Option {
	return func(c *config) error {
		if rec == nil {
			return invalid("WithWARC", "nil recorder")
		}
		c.recorder = rec
		return nil
	}
}

// WithLease sets the liveness timeout of a Store shared by several
// processes (frontier/redisstore): a worker holds a URL it was handed as
// long as its process keeps beating, however long its fetches take; once
// the process's last heartbeat is older than d (it died, or was paused or
// cut off), the URL goes back to its queue at once, and its host rests a
// full delay from then. A worker never starts a request on a lease its
// process may have lost. By default it is frontier.DefaultLease.
func WithLease(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("WithLease", "must be positive, got %v", d)
		}
		c.lease = d
		return nil
	}
}

// WithFollowLinks sets whether the links found on pages are followed (the
// default). With false the crawl fetches only its seeds — and the URLs they
// redirect to — politely, robots.txt obeyed; sitemaps are not read.
// Page.Links still lists each page's followable links.
func WithFollowLinks(on bool) Option {
	return func(c *config) error {
		c.follow = on
		return nil
	}
}
