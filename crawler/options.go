package crawler

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots"
)

// Defaults of a Crawler made by New with no options. They are polite: one
// request at a time per host, at least a second apart, robots.txt always
// obeyed.
const (
	DefaultAgent = "heed"
	// DefaultWorkers keeps a few hundred slow hosts in flight at once. Each
	// worker's host keeps a connection, and the idle pool is capped at
	// twice the workers (see crawler.go): at 512, bench workload (c) held
	// 1,024 idle connections (44 KB each) for a peak of 130 MB, and was no
	// faster than at 256 (86 MB).
	DefaultWorkers     = 256
	DefaultPerHost     = 1
	DefaultMinDelay    = time.Second
	DefaultMaxDelay    = 60 * time.Second
	DefaultGracePeriod = 10 * time.Second
	DefaultRobotsCache = 100_000
	DefaultPageRetries = 2
	// DefaultMaxLinks caps the followable links taken from one page; the
	// rest are counted in Stats.Skipped["max-links"].
	DefaultMaxLinks = 10_000
	// DefaultMaxSitemaps and DefaultMaxSitemapURLs are each host's sitemap
	// budget: sitemap documents fetched, and pages taken from them.
	DefaultMaxSitemaps    = 100
	DefaultMaxSitemapURLs = 500_000
	// DefaultMaxSitemapDepth bounds sitemap index nesting below a root
	// sitemap (the protocol allows one level; some sites nest further).
	DefaultMaxSitemapDepth = fetch.DefaultSitemapDepth
	// DefaultHostFailures is how many consecutive failed requests
	// (timeouts, connection errors, 429 and 5xx answers) make the crawler
	// give a host up and report its remaining URLs.
	DefaultHostFailures = 8
)

// ErrInvalidOption is wrapped by the errors New returns for bad options.
var ErrInvalidOption = errors.New("crawler: invalid option")

// Option configures a Crawler; pass options to New.
type Option func(*config) error

type config struct {
	agent          string
	userAgent      string
	workers        int
	perHost        int
	minDelay       time.Duration
	maxDelay       time.Duration
	keyMode        ratelimit.KeyMode
	scope          frontier.Scope
	scopeFunc      func(*url.URL) bool
	maxDepth       int
	maxPages       int
	maxPagesHost   int
	connectTimeout time.Duration
	headerTimeout  time.Duration
	timeout        time.Duration
	bodyLimit      int64
	sitemaps       bool
	respectNofollw bool
	client         *http.Client
	transport      http.RoundTripper
	logger         *slog.Logger
	clock          ratelimit.Clock
	grace          time.Duration
	robotsCache    int
	pageRetries    int
	robotsWait     time.Duration
	maxRedirects   int
	canonicalizer  frontier.Canonicalizer
	adaptive       float64
	maxLinks       int
	maxSitemaps    int
	maxSitemapURLs int
	maxSitemapNest int
	maxPathSegs    int
	maxSegRepeats  int
	hostFailures   int
	allowPrivate   bool
	store          frontier.Store
	checkpoint     func() []byte
	recorder       fetch.Recorder
	lease          time.Duration
	follow         bool
	extractors     map[string][]fetch.Extractor // media type → extractors that replace the defaults
	extraExtract   []registration               // added to the defaults, in order
}

type registration struct {
	mediaType string
	e         fetch.Extractor
}

func defaultConfig() config {
	return config{
		agent:          DefaultAgent,
		workers:        DefaultWorkers,
		perHost:        DefaultPerHost,
		minDelay:       DefaultMinDelay,
		maxDelay:       DefaultMaxDelay,
		grace:          DefaultGracePeriod,
		robotsCache:    DefaultRobotsCache,
		pageRetries:    DefaultPageRetries,
		maxRedirects:   fetch.DefaultMaxRedirects,
		maxLinks:       DefaultMaxLinks,
		maxSitemaps:    DefaultMaxSitemaps,
		maxSitemapURLs: DefaultMaxSitemapURLs,
		maxSitemapNest: DefaultMaxSitemapDepth,
		hostFailures:   DefaultHostFailures,
		follow:         true,
		sitemaps:       true,
		canonicalizer:  frontier.Canonicalizer{},
		respectNofollw: true,
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
}

// WithAgent sets the product token robots.txt groups and agent-scoped
// directives are matched against ("heed" by default). It must be a robots.txt
// product token: letters, '_' and '-' only.
func WithAgent(token string) Option {
	return func(c *config) error {
		if token == "" {
			return invalid("agent token is empty")
		}
		if !robots.ValidProductToken(token) {
			return invalid("agent token %q: only letters, '_' and '-' may appear in a product token", token)
		}
		c.agent = token
		return nil
	}
}

// WithUserAgent sets the full User-Agent header. By default it is built from
// the agent token, heed's version and a contact URL.
func WithUserAgent(ua string) Option {
	return func(c *config) error {
		c.userAgent = ua
		return nil
	}
}

// WithWorkers sets how many fetches may be in flight at once across all hosts
// (DefaultWorkers). Workers are cheap goroutines; the per-host limits, not
// this number, keep a crawl polite.
func WithWorkers(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("workers must be at least 1, got %d", n)
		}
		c.workers = n
		return nil
	}
}

// WithPerHost sets how many requests may be in flight to one host at once
// (DefaultPerHost).
func WithPerHost(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("per-host concurrency must be at least 1, got %d", n)
		}
		c.perHost = n
		return nil
	}
}

// WithDelay sets the minimum delay between two requests to one host
// (DefaultMinDelay). With one request in flight per host (the default,
// WithPerHost(1)) it runs from the previous answer, however late the server
// saw that request; with WithPerHost above 1 it separates the starts of
// requests. Zero is allowed: then only robots.txt Crawl-delay
// and back-off pace a host. A site's Crawl-delay can lengthen the delay,
// never shorten it.
func WithDelay(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("delay must not be negative, got %v", d)
		}
		c.minDelay = d
		return nil
	}
}

// WithMaxDelay caps any delay a site asks for through Crawl-delay or that
// back-off reaches (DefaultMaxDelay); a host asking for more is crawled at the
// cap, and the clamp is logged.
func WithMaxDelay(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("max delay must be positive, got %v", d)
		}
		c.maxDelay = d
		return nil
	}
}

// WithAdaptiveDelay keeps each host's delay at least factor times its
// observed response time, so slow servers get room (off by default).
func WithAdaptiveDelay(factor float64) Option {
	return func(c *config) error {
		if factor < 0 {
			return invalid("adaptive factor must not be negative, got %v", factor)
		}
		c.adaptive = factor
		return nil
	}
}

// WithPolitenessKey chooses what shares one delay and one concurrency limit:
// the host (default), the registrable domain, or the resolved IP address.
func WithPolitenessKey(mode ratelimit.KeyMode) Option {
	return func(c *config) error {
		c.keyMode = mode
		return nil
	}
}

// WithScope chooses which links are followed, relative to the seeds: the seed
// hosts (default), their registrable domains, or any host.
func WithScope(s frontier.Scope) Option {
	return func(c *config) error {
		if s > frontier.ScopeAny {
			return invalid("unknown scope %d", s)
		}
		c.scope = s
		return nil
	}
}

// WithScopeFunc replaces the scope rule: a link is followed when in returns
// true. Seeds are always in scope.
func WithScopeFunc(in func(u *url.URL) bool) Option {
	return func(c *config) error {
		c.scopeFunc = in
		return nil
	}
}

// WithMaxDepth bounds how many links from a seed are followed; 0 means no
// limit (the default). Pages listed in sitemaps count as depth 0.
func WithMaxDepth(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("max depth must not be negative, got %d", n)
		}
		c.maxDepth = n
		return nil
	}
}

// WithMaxPages bounds the pages scheduled in the whole crawl; 0 means no limit.
func WithMaxPages(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("max pages must not be negative, got %d", n)
		}
		c.maxPages = n
		return nil
	}
}

// WithMaxPagesPerHost bounds the pages scheduled per host; 0 means no limit.
func WithMaxPagesPerHost(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("max pages per host must not be negative, got %d", n)
		}
		c.maxPagesHost = n
		return nil
	}
}

// WithTimeouts sets the connect, response-header and whole-fetch timeouts
// (10 s, 15 s and 60 s by default). Zero keeps a default.
func WithTimeouts(connect, header, total time.Duration) Option {
	return func(c *config) error {
		if connect < 0 || header < 0 || total < 0 {
			return invalid("timeouts must not be negative")
		}
		c.connectTimeout, c.headerTimeout, c.timeout = connect, header, total
		return nil
	}
}

// WithBodyLimit sets the largest body downloaded per page (10 MiB by
// default); the rest is not downloaded and the page is marked truncated.
func WithBodyLimit(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return invalid("body limit must be positive, got %d", n)
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
		c.respectNofollw = on
		return nil
	}
}

// WithHTTPClient makes the crawler use client for every request, robots.txt
// included. Its redirect policy is overridden: heed never follows redirects
// inline, it schedules their targets.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) error {
		if client == nil {
			return invalid("nil HTTP client")
		}
		c.client = client
		return nil
	}
}

// WithTransport makes the crawler's HTTP client use rt.
func WithTransport(rt http.RoundTripper) Option {
	return func(c *config) error {
		if rt == nil {
			return invalid("nil transport")
		}
		c.transport = rt
		return nil
	}
}

// WithLogger sends the crawler's log records to l; by default they are
// discarded.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}

// WithClock sets the time source (tests use a fake clock).
func WithClock(clk ratelimit.Clock) Option {
	return func(c *config) error {
		c.clock = clk
		return nil
	}
}

// WithGracePeriod sets how long in-flight fetches may go on after the crawl's
// context is cancelled (DefaultGracePeriod).
func WithGracePeriod(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("grace period must not be negative, got %v", d)
		}
		c.grace = d
		return nil
	}
}

// WithRobotsCacheSize bounds how many authorities' robots.txt are cached
// (DefaultRobotsCache), so memory stays bounded on crawls of many hosts.
func WithRobotsCacheSize(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("robots cache size must be at least 1, got %d", n)
		}
		c.robotsCache = n
		return nil
	}
}

// WithRetries sets how often a page that failed with a timeout, a connection
// error, 429 or 5xx is tried again, after its host's back-off
// (DefaultPageRetries).
func WithRetries(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("retries must not be negative, got %d", n)
		}
		c.pageRetries = n
		return nil
	}
}

// WithRobotsWait sets how long a URL may wait for its host's robots.txt to
// become reachable again. An unreachable robots.txt (5xx, 429, timeouts,
// network errors) means complete disallow (RFC 9309 §2.3.1.4); the gate
// retries it with back-off. By default (0) such URLs are given up at once,
// counted in Stats.Errors["robots-unavailable"] and reported to OnError (an
// *Error wrapping ErrRobotsUnavailable and the cause) and to OnDisallowed,
// so one failing host does not hold a crawl open.
func WithRobotsWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("robots wait must not be negative, got %v", d)
		}
		c.robotsWait = d
		return nil
	}
}

// WithMaxRedirects bounds redirect chains (10 by default); 0 follows no
// redirect: a redirect is then reported to OnError (kind "redirect").
func WithMaxRedirects(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("max redirects must not be negative, got %d", n)
		}
		c.maxRedirects = n
		if n == 0 {
			c.maxRedirects = fetch.NoRedirects // fetch's zero is its default
		}
		return nil
	}
}

// WithCanonicalizer sets the URL canonicalisation options. By default the
// crawler sorts query parameters (SortQuery), since servers that give
// "?a=1&b=2" and "?b=2&a=1" different content are rare and fetching both is
// the commonest duplicate; pass a zero Canonicalizer to keep their order.
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
			return invalid("extractor needs a media type and a non-nil extractor")
		}
		c.extraExtract = append(c.extraExtract, registration{mediaType, e})
		return nil
	}
}

// WithExtractors replaces the extractors of mediaType with es; with none, no
// links are extracted from such pages. WithExtractors("text/html", mine)
// replaces the default HTML extractor.
func WithExtractors(mediaType string, es ...fetch.Extractor) Option {
	return func(c *config) error {
		if mediaType == "" {
			return invalid("extractors need a media type")
		}
		if c.extractors == nil {
			c.extractors = map[string][]fetch.Extractor{}
		}
		c.extractors[mediaType] = es
		return nil
	}
}

// WithMaxLinks caps the followable links taken from one page
// (DefaultMaxLinks), so that a page of a million links costs no more than
// its body; the links past the cap are counted in
// Stats.Skipped["max-links"]. Zero means no cap.
func WithMaxLinks(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("max links must not be negative, got %d", n)
		}
		c.maxLinks = n
		return nil
	}
}

// WithSitemapLimits sets each host's sitemap budget: at most sitemaps
// sitemap documents fetched (DefaultMaxSitemaps), at most urls pages taken
// from them (DefaultMaxSitemapURLs), and index nesting at most depth levels
// below a root sitemap (DefaultMaxSitemapDepth). Nesting does not use up
// WithMaxDepth, which counts links followed. Zero sitemaps or urls means no
// limit; what the budget refuses is counted in
// Stats.Skipped["sitemap-limit"] and ["sitemap-depth"].
func WithSitemapLimits(sitemaps, urls, depth int) Option {
	return func(c *config) error {
		if sitemaps < 0 || urls < 0 || depth < 0 {
			return invalid("sitemap limits must not be negative, got %d, %d, %d", sitemaps, urls, depth)
		}
		c.maxSitemaps, c.maxSitemapURLs, c.maxSitemapNest = sitemaps, urls, depth
		return nil
	}
}

// WithPathLimits sets the pathological-path rule: URLs whose path has more
// than segments segments, or repeats one segment or run of segments more
// than repeats times in a row (/a/a/a/…), are not scheduled and are counted
// in Stats.Skipped["pathological"]. Zero means the frontier's defaults
// (frontier.DefaultMaxPathSegments, DefaultMaxSegmentRepeats); negative
// turns a check off. Calendar-like traps, which do not repeat, are stopped
// by WithMaxDepth and the page limits.
func WithPathLimits(segments, repeats int) Option {
	return func(c *config) error {
		c.maxPathSegs, c.maxSegRepeats = segments, repeats
		return nil
	}
}

// WithHostFailures sets how many consecutive failed requests to one host
// (timeouts, connection errors, 429 and 5xx answers, after retries) make
// the crawler give it up (DefaultHostFailures): its remaining URLs are
// reported to OnError and counted in Stats.Errors["host-given-up"], and no
// more are scheduled, so one dead server cannot hold a crawl open for
// hours. Zero never gives a host up.
func WithHostFailures(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalid("host failures must not be negative, got %d", n)
		}
		c.hostFailures = n
		return nil
	}
}

// WithAllowPrivate lets the crawl reach hosts that are or resolve to
// loopback, private (RFC 1918, fc00::/7), link-local or multicast
// addresses. By default such addresses are refused — a redirect to
// 169.254.169.254 or 10.0.0.1 is never followed, and the address actually
// dialled is checked, so DNS rebinding cannot get round it — unless the
// seeds themselves are on that kind of address, so that an intranet or a
// local test site crawls as expected. Refusals are counted in
// Stats.Skipped["private-address"].
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
		c.recorder = rec
		return nil
	}
}

// WithLease sets how long a worker holds a URL it was handed, for a Store
// shared by several processes (frontier/redisstore): if the process dies,
// the URL goes back to its queue that long after it was handed out, and its
// host rests a full delay from then. Zero means frontier.DefaultLease. It
// must outlast a fetch (WithTimeouts) with room to spare: a worker never
// starts a request on an expired lease.
func WithLease(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("lease must not be negative, got %v", d)
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
