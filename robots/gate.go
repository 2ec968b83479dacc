package robots

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Gate defaults, used for zero GateConfig fields.
const (
	DefaultGateCacheSize    = 10000
	DefaultGateTTL          = 24 * time.Hour
	DefaultGateMinTTL       = time.Minute
	DefaultGateTimeout      = 30 * time.Second
	DefaultGateRetryMin     = time.Minute
	DefaultGateRetryMax     = time.Hour
	DefaultAssumeAllowAfter = 30 * 24 * time.Hour
)

// MaxRedirects is the number of consecutive redirects the gate follows for
// a robots.txt (RFC 9309 §2.3.1.2 asks for at least five).
const MaxRedirects = 5

// Errors reported by the gate. Fetch failures are not errors of Check: they
// are outcomes, recorded with their cause in Entry.Err.
var (
	ErrUnsupportedScheme = errors.New("robots: URL scheme is not http or https")
	ErrNoHost            = errors.New("robots: URL has no host")
	ErrInvalidGateConfig = errors.New("robots: invalid gate config")
	ErrTooManyRedirects  = errors.New("robots: too many redirects")
	ErrRedirectScheme    = errors.New("robots: redirect to a URL that is not http or https")
)

// Pacer paces the gate's robots.txt fetches like any other request: Wait
// blocks until a request to key may start and takes a slot for it, Done
// releases the slot. *ratelimit.HostLimiter satisfies it.
type Pacer interface {
	Wait(ctx context.Context, key string) error
	Done(key string)
}

// A PaceObserver is a Pacer that also learns how each robots.txt fetch
// went, so that a host answering 429 or 503 to its robots.txt slows down
// for its pages too. The gate uses Observe when its Pacer has it.
// *ratelimit.HostLimiter implements it.
type PaceObserver interface {
	Pacer
	Observe(key string, status int, header http.Header, rtt time.Duration, err error)
}

// Clock is the gate's source of time. *fakeclock.Clock satisfies it; nil
// means real time.
type Clock interface {
	Now() time.Time
}

type gateRealClock struct{}

func (gateRealClock) Now() time.Time { return time.Now() }

// GateConfig configures a Gate. Zero durations and sizes mean the defaults.
type GateConfig struct {
	// Client makes the requests. The gate uses a copy with its own
	// CheckRedirect. Nil means a zero http.Client.
	Client *http.Client

	// Agent is the crawler's product token ("heedbot"), which chooses the
	// robots.txt group. Required.
	Agent string

	// UserAgent is the User-Agent header sent ("heedbot/1.0
	// (+https://example.com/bot)"). Empty means Agent.
	UserAgent string

	// Pacer, if set, paces robots.txt fetches; see Pacer and PaceObserver.
	Pacer Pacer

	// Key returns the Pacer's key for a robots.txt URL. Pass the same key
	// function the frontier and the limiter use (a *ratelimit.HostLimiter's
	// Key method value), so that a robots.txt fetch is paced under its
	// host's key. Nil means u.Host: the host, lower-cased and in punycode,
	// with any non-default port, which is also the frontier's default.
	Key func(u *url.URL) string

	// Clock supplies time. Nil means real time.
	Clock Clock

	// CacheSize bounds the number of authorities cached.
	CacheSize int

	// TTL is how long a fetched robots.txt is used, at most; MinTTL is the
	// floor below which Cache-Control cannot push it.
	TTL, MinTTL time.Duration

	// Timeout bounds one robots.txt fetch, redirects and body included,
	// not counting the wait for the Pacer. A fetch that times out makes
	// robots.txt unreachable.
	Timeout time.Duration

	// RetryMin and RetryMax bound the back-off between fetches of an
	// unreachable robots.txt.
	RetryMin, RetryMax time.Duration

	// AssumeAllowAfter is how long robots.txt must stay unreachable, with
	// no copy cached, before the gate allows everything.
	AssumeAllowAfter time.Duration

	// Logger receives fetch outcomes (Debug) and failures (Info). Nil
	// discards them.
	Logger *slog.Logger
}

// Outcome says how the rules of an Entry were obtained.
type Outcome uint8

// Outcomes of a robots.txt fetch (RFC 9309 §2.3.1).
const (
	// OutcomeOK: robots.txt was fetched and parsed.
	OutcomeOK Outcome = iota + 1
	// OutcomeUnavailable: there is no robots.txt (4xx but 429, too many
	// redirects); everything is allowed.
	OutcomeUnavailable
	// OutcomeUnreachable: robots.txt could not be fetched (429, 5xx,
	// network error) and no copy is cached; everything is disallowed until
	// Entry.Expires, when it is fetched again.
	OutcomeUnreachable
	// OutcomeStale: robots.txt could not be fetched; the rules of the copy
	// fetched at Entry.FetchedAt apply until Entry.Expires.
	OutcomeStale
	// OutcomeAssumedAllow: robots.txt has been unreachable, with no copy,
	// for AssumeAllowAfter; everything is allowed until Entry.Expires.
	OutcomeAssumedAllow
)

// String returns a short name for o, for logs and metrics.
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeUnavailable:
		return "unavailable"
	case OutcomeUnreachable:
		return "unreachable"
	case OutcomeStale:
		return "stale"
	case OutcomeAssumedAllow:
		return "assumed-allow"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Entry is what the gate knows about one authority's robots.txt. Entries
// are shared by every caller and must not be modified.
type Entry struct {
	// Authority is the normalised scheme://host[:port] the entry is for.
	Authority string
	// URL is the robots.txt URL fetched (before redirects).
	URL string
	// Outcome says how Robots was obtained.
	Outcome Outcome
	// Robots holds the rules in force; never nil: AllowAll and DisallowAll
	// stand in when robots.txt is unavailable or unreachable.
	Robots *Robots
	// Group holds the rules for the gate's agent; nil allows everything.
	Group *Group
	// CrawlDelay is the Crawl-delay for the gate's agent, if HasCrawlDelay.
	CrawlDelay    time.Duration
	HasCrawlDelay bool
	// Sitemaps lists the file's Sitemap URLs.
	Sitemaps []string
	// Status is the HTTP status of the last attempt, after redirects; 0 if
	// it got no response.
	Status int
	// Err is why the last attempt failed (network error, timeout,
	// ErrTooManyRedirects, ErrRedirectScheme), or nil.
	Err error
	// FetchedAt is when the rules in force were fetched: for OutcomeStale,
	// the time of the copy.
	FetchedAt time.Time
	// CheckedAt is the time of the last attempt.
	CheckedAt time.Time
	// Expires is when the entry is due to be fetched again: after TTL for
	// a successful fetch, after the back-off for a failed one.
	Expires time.Time
	// Failures counts consecutive failed attempts (429, 5xx, network).
	Failures int
	// UnreachableSince is the time of the first of those failures; zero
	// when the last attempt succeeded.
	UnreachableSince time.Time
}

// Verdict is the gate's answer for one URL.
type Verdict struct {
	// Allowed reports whether the URL may be fetched.
	Allowed bool
	// Fetched reports that this call waited for a robots.txt fetch (its
	// own or a concurrent caller's), so the host's Pacer may just have
	// spent a token on it: a scheduler should ask the pacer again before
	// fetching the URL.
	Fetched bool
	// RetryAt is set when the URL is disallowed only because robots.txt is
	// unreachable (OutcomeUnreachable): the URL should be put aside until
	// RetryAt, when robots.txt will be fetched again, not dropped.
	RetryAt time.Time
	// Entry is the authority's robots.txt entry.
	Entry *Entry
}

// Gate answers, for every URL a crawler is about to fetch, whether the
// site's robots.txt lets it, fetching and caching robots.txt per authority
// (scheme, host and port) as RFC 9309 §2.3–2.4 describes:
//
//   - 2xx: the first MaxSize bytes are parsed (the rest is not downloaded)
//     and the rules for the gate's agent apply (OutcomeOK).
//   - Redirects are followed, even to other hosts, up to five; the rules
//     found apply to the original authority. More redirects, a redirect to
//     a non-HTTP URL, any other 3xx and any 4xx but 429 mean there is no
//     robots.txt: everything is allowed (OutcomeUnavailable).
//   - 429, 5xx, timeouts, DNS and connection errors make robots.txt
//     unreachable: everything is disallowed (OutcomeUnreachable) until a
//     retry, scheduled with exponential back-off (RetryMin doubling up to
//     RetryMax, or later if Retry-After says so). The Verdict says when, so
//     a crawler can put the URL aside instead of dropping it. If the gate
//     holds an earlier copy of robots.txt it keeps using it
//     (OutcomeStale); if robots.txt stays unreachable with no copy for
//     AssumeAllowAfter (30 days), everything is allowed (OutcomeAssumedAllow)
//     while retries go on.
//   - Results are cached for TTL (24 h, RFC 9309 §2.4), less if the
//     response's Cache-Control says max-age or no-store/no-cache, but never
//     less than MinTTL: a robots.txt that forbids caching is fetched again
//     after MinTTL rather than before every page, which would double the
//     requests a site receives. The cache is an LRU of CacheSize
//     authorities; expired entries are refetched lazily, by the next Check.
//
// However many goroutines ask about one authority, one fetch is in flight;
// the others wait for it, each giving up when its own context ends. The
// fetch runs under the context of the goroutine that started it: if that
// context ends, nothing is cached and a waiting goroutine fetches in its
// stead. The fetch is paced like any page request through the Pacer, so a
// robots.txt request counts against the host's politeness budget.
//
// In a crawler the gate sits between the frontier and the rate limiter, all
// three keyed by one function (the limiter's Key method). For each item the
// frontier hands out:
//
//	v, err := gate.Check(ctx, u)
//	key := lim.Key(u)
//	lim.SetCrawlDelay(key, v.Entry.CrawlDelay) // cheap; restores a forgotten key
//	switch {
//	case !v.Allowed && !v.RetryAt.IsZero():
//		fr.Defer(it, v.RetryAt) // robots.txt unreachable: put aside, not dropped
//	case !v.Allowed:
//		fr.Done(it) // disallowed by the site's rules
//	case v.Fetched:
//		fr.Defer(it, lim.ReadyAt(key)) // robots.txt took the host's token
//	default:
//		// lim.Wait (at once), fetch, lim.Observe, lim.Done, fr.Done
//	}
//
// A Gate is safe for concurrent use. Create one with NewGate.
type Gate struct {
	client      *http.Client
	agent       string
	userAgent   string
	pacer       Pacer
	observer    PaceObserver
	key         func(u *url.URL) string
	clock       Clock
	log         *slog.Logger
	cacheSize   int
	ttl, minTTL time.Duration
	timeout     time.Duration
	retryMin    time.Duration
	retryMax    time.Duration
	assumeAllow time.Duration

	mu      sync.Mutex
	entries map[string]*list.Element // authority → *Entry, in lru
	lru     list.List                // front is the most recently used
	flights map[string]*gateFlight
}

// gateFlight is one robots.txt fetch in progress; done is closed when it
// ends, with entry set if it produced one.
type gateFlight struct {
	done  chan struct{}
	entry *Entry
}

// NewGate returns a Gate configured by cfg, or an error wrapping
// ErrInvalidGateConfig.
func NewGate(cfg GateConfig) (*Gate, error) {
	if strings.TrimSpace(cfg.Agent) == "" {
		return nil, fmt.Errorf("%w: Agent is required", ErrInvalidGateConfig)
	}
	if cfg.CacheSize < 0 || cfg.TTL < 0 || cfg.MinTTL < 0 || cfg.Timeout < 0 ||
		cfg.RetryMin < 0 || cfg.RetryMax < 0 || cfg.AssumeAllowAfter < 0 {
		return nil, fmt.Errorf("%w: negative size or duration", ErrInvalidGateConfig)
	}
	g := &Gate{
		agent:       cfg.Agent,
		userAgent:   cfg.UserAgent,
		pacer:       cfg.Pacer,
		key:         cfg.Key,
		clock:       cfg.Clock,
		log:         cfg.Logger,
		cacheSize:   cfg.CacheSize,
		ttl:         gateOr(cfg.TTL, DefaultGateTTL),
		minTTL:      gateOr(cfg.MinTTL, DefaultGateMinTTL),
		timeout:     gateOr(cfg.Timeout, DefaultGateTimeout),
		retryMin:    gateOr(cfg.RetryMin, DefaultGateRetryMin),
		retryMax:    gateOr(cfg.RetryMax, DefaultGateRetryMax),
		assumeAllow: gateOr(cfg.AssumeAllowAfter, DefaultAssumeAllowAfter),
		entries:     make(map[string]*list.Element),
		flights:     make(map[string]*gateFlight),
	}
	if g.minTTL > g.ttl {
		return nil, fmt.Errorf("%w: MinTTL %v exceeds TTL %v", ErrInvalidGateConfig, g.minTTL, g.ttl)
	}
	if g.retryMin > g.retryMax {
		return nil, fmt.Errorf("%w: RetryMin %v exceeds RetryMax %v", ErrInvalidGateConfig, g.retryMin, g.retryMax)
	}
	if g.userAgent == "" {
		g.userAgent = g.agent
	}
	if g.cacheSize == 0 {
		g.cacheSize = DefaultGateCacheSize
	}
	if g.clock == nil {
		g.clock = gateRealClock{}
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if o, ok := g.pacer.(PaceObserver); ok {
		g.observer = o
	}
	var client http.Client
	if cfg.Client != nil {
		client = *cfg.Client
	}
	client.CheckRedirect = gateCheckRedirect
	g.client = &client
	return g, nil
}

func gateOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func gateCheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return ErrTooManyRedirects
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return ErrRedirectScheme
	}
	if hop, ok := req.Context().Value(gateHopKey{}).(func(*http.Request) error); ok {
		return hop(req)
	}
	return nil
}

// gateHopKey marks the context value holding the function that paces each
// redirect hop of a robots.txt fetch (see Gate.fetch).
type gateHopKey struct{}

// Check reports whether the gate's agent may fetch u, fetching the
// authority's robots.txt first if the gate holds no fresh copy. It fails
// only for a URL that is not absolute http(s) (ErrUnsupportedScheme,
// ErrNoHost) or when ctx ends while it waits; a robots.txt that cannot be
// fetched is an outcome, not an error (see Verdict.RetryAt).
func (g *Gate) Check(ctx context.Context, u *url.URL) (Verdict, error) {
	e, fetched, err := g.entry(ctx, u)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Allowed: e.Group.Allowed(gatePathQuery(u)), Fetched: fetched, Entry: e}
	if !v.Allowed && e.Outcome == OutcomeUnreachable {
		v.RetryAt = e.Expires
	}
	return v, nil
}

// Entry returns the robots.txt entry for u's authority, fetching it if the
// gate holds no fresh copy; it fails as Check does.
func (g *Gate) Entry(ctx context.Context, u *url.URL) (*Entry, error) {
	e, _, err := g.entry(ctx, u)
	return e, err
}

// Cached returns the entry the gate holds for u's authority, fresh or
// expired, without fetching anything: for status pages and diagnostics.
func (g *Gate) Cached(u *url.URL) (*Entry, bool) {
	auth, err := Authority(u)
	if err != nil {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.cachedLocked(auth)
	return e, e != nil
}

// Len returns the number of authorities cached.
func (g *Gate) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.entries)
}

// gatePathQuery returns the path and query Group.Allowed expects.
func gatePathQuery(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		p += "?" + u.RawQuery
	}
	return p
}

func (g *Gate) entry(ctx context.Context, u *url.URL) (e *Entry, fetched bool, err error) {
	auth, err := Authority(u)
	if err != nil {
		return nil, false, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, fetched, fmt.Errorf("robots: gate for %s: %w", auth, err)
		}
		now := g.clock.Now()
		g.mu.Lock()
		prev := g.cachedLocked(auth)
		if prev != nil && now.Before(prev.Expires) {
			g.mu.Unlock()
			return prev, fetched, nil
		}
		if f := g.flights[auth]; f != nil {
			g.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, fetched, fmt.Errorf("robots: waiting for %s/robots.txt: %w", auth, ctx.Err())
			case <-f.done:
			}
			fetched = true
			if f.entry != nil {
				return f.entry, true, nil
			}
			continue // its fetcher gave up; try again, perhaps fetching
		}
		f := &gateFlight{done: make(chan struct{})}
		g.flights[auth] = f
		g.mu.Unlock()

		e, err := g.fetch(ctx, auth, prev)

		g.mu.Lock()
		delete(g.flights, auth)
		if err == nil {
			g.storeLocked(e)
			f.entry = e
		}
		close(f.done)
		g.mu.Unlock()
		if err != nil {
			return nil, true, err
		}
		return e, true, nil
	}
}

// Authority returns the normalised authority of u, the key of the gate's
// cache: "scheme://host[:port]" with scheme and host lower-cased, an
// internationalised host name in punycode (IDNA's full mapping is left to
// the URL canonicaliser upstream; here a name is lower-cased and each
// non-ASCII label encoded), and the scheme's default port dropped. Only
// http and https URLs with a host have one.
func Authority(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%w: %q", ErrUnsupportedScheme, u.Redacted())
	}
	host, err := gateASCIIHost(u.Hostname())
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrNoHost, u.Redacted(), err)
	}
	if host == "" {
		return "", fmt.Errorf("%w: %q", ErrNoHost, u.Redacted())
	}
	if strings.Contains(host, ":") { // IPv6 literal
		host = "[" + strings.ReplaceAll(host, "%", "%25") + "]"
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return "", fmt.Errorf("%w: %q: bad port", ErrNoHost, u.Redacted())
		}
		port = strconv.FormatUint(n, 10) // "080" is port 80
		if scheme == "http" && n == 80 || scheme == "https" && n == 443 {
			port = ""
		}
	}
	if port == "" {
		return scheme + "://" + host, nil
	}
	return scheme + "://" + host + ":" + port, nil
}
