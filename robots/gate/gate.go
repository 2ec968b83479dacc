package gate

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

	"github.com/heedcrawl/heed/internal/hostid"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots"
)

// Gate defaults, used for zero Config fields.
const (
	DefaultCacheSize        = 10000
	DefaultCacheBytes       = 64 << 20
	DefaultTTL              = 24 * time.Hour
	DefaultMinTTL           = time.Minute
	DefaultTimeout          = 30 * time.Second
	DefaultRetryMin         = time.Minute
	DefaultRetryMax         = time.Hour
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
	ErrInvalidConfig     = errors.New("robots: invalid gate config")
	ErrTooManyRedirects  = errors.New("robots: too many redirects")
	ErrRedirectScheme    = errors.New("robots: redirect to a URL that is not http or https")
	// ErrFetchPanicked: the Get function, the Pacer or a key function
	// panicked while robots.txt was being fetched.
	ErrFetchPanicked = errors.New("robots: robots.txt fetch panicked")
)

// Pacer paces the gate's robots.txt requests like any other request to
// their host, under the key Config.Key gives. Acquire waits until a
// request to key may start and takes a slot for it; it returns a Release,
// which the gate calls exactly once, when the request is over, with its
// outcome: the answer's status and header — redirects, 429 and 5xx
// included — or the transport error (context.Canceled when the gate's
// caller gave up on the request, which says nothing about the host). A
// host answering 429 or 503 to its robots.txt thus slows down, or pauses
// for its Retry-After, for its pages too, even while a stale copy of its
// robots.txt still allows them.
//
// The wait is not part of a fetch: Config.Timeout starts when the
// request is sent, so a host paced seconds apart is never mistaken for an
// unreachable one. heed's crawler implements Pacer over the leases of its
// frontier, the one owner of when a host may next be asked: each worker
// passes CheckWith a Pacer bound to the lease it holds.
type Pacer interface {
	Acquire(ctx context.Context, key string) (Release, error)
}

// Release ends a request taken by Pacer.Acquire and reports its outcome
// (status and header, or err; rtt is how long it took). It returns when the
// key may next be asked again, or the zero time if the Pacer cannot say:
// the gate retries an unreachable robots.txt no sooner than that, which is
// how a Retry-After header is honoured — the gate does not read it itself.
type Release = func(status int, header http.Header, rtt time.Duration, err error) (ready time.Time)

// Response is the answer to one robots.txt request, as Config.Get
// returns it.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers. The gate reads Location (to
	// follow redirects) and Cache-Control, and hands it to the Pacer's
	// Release.
	Header http.Header
	// Body is the body of a 2xx response as robots.Parse reads it:
	// decompressed and, where its charset is known (a UTF-16 byte order
	// mark included), decoded to UTF-8 by Get; the gate does neither. At
	// most robots.MaxSize+1 bytes are needed, so that Parse can tell a line
	// cut by its limit from a complete one; bytes past robots.MaxSize+1
	// are ignored.
	Body []byte
	// Truncated reports that the body went on past what Body holds. The
	// gate then drops Body's last line if it does not end in a line break,
	// when Body is too short for Parse to see the cut itself (a body that
	// shrank in charset decoding).
	Truncated bool
}

// Config configures a Gate. Zero durations and sizes mean the defaults.
type Config struct {
	// Get makes one GET request for a robots.txt URL and returns the
	// answer without following redirects: a 3xx comes back as it is, with
	// its Location header, and the gate follows it. It decompresses and
	// decodes the body and bounds it as Response.Body says, and may return
	// a Response together with an error when the body broke off after the
	// headers (robots.txt is then unreachable). The context it gets
	// carries the gate's Timeout. Required: the gate has no HTTP client of
	// its own.
	//
	// A crawler passes its page fetcher here, so that robots.txt travels
	// the same road as its pages: same transport, User-Agent, address
	// checks, decompression, charset decoding, header timeout and
	// recording (heed's crawler does, see crawler.RobotsEntry).
	Get func(ctx context.Context, rawURL string) (*Response, error)

	// Agent is the crawler's product token ("heedbot"), which chooses the
	// robots.txt group. Required.
	Agent string

	// Host returns the identity of a URL's host and port, as it appears in
	// a URL: "example.com", "xn--bcher-kva.example:8080", "[::1]:8443",
	// or "" if u has none. The gate caches robots.txt per scheme + "://" +
	// Host(u) and fetches it from there. A crawler passes the one function
	// it identifies hosts with everywhere. Nil means the canonical host
	// heed's crawler identifies hosts by (see Authority), so that a gate
	// configured without it agrees with the crawler.
	Host func(u *url.URL) string

	// Keeper, if set, keeps every entry the gate fetches beyond its memory
	// and its process, and is asked for an authority the memory lacks
	// before robots.txt is fetched: a crawl that resumes from a Store does
	// not ask every site for robots.txt again while its entries last.
	Keeper EntryKeeper
	// ResumeWait is, with a Keeper, how long after an earlier run started
	// a robots.txt request whose answer it did not keep (it stopped
	// meanwhile) the gate waits before asking again: the longest delay a
	// host may have asked for, so that the site never sees two requests
	// closer than its Crawl-delay, even across a crash. Zero means no wait.
	ResumeWait time.Duration
	// Pacer, if set, paces the robots.txt fetches of Check and Entry;
	// CheckWith takes a Pacer of its own. See Pacer.
	Pacer Pacer

	// Key returns the Pacer's key for a robots.txt URL. Pass the same key
	// function the frontier and the pacing use (heed's crawler passes
	// ratelimit.Keys.Key), so that a robots.txt fetch is paced under its
	// host's key. Nil means the canonical host, as for Host.
	Key func(u *url.URL) string

	// Clock supplies time. Nil means real time.
	Clock ratelimit.Clock

	// CacheSize bounds the number of authorities cached.
	CacheSize int

	// CacheBytes bounds the memory the cached rules hold, approximated by
	// the size of the robots.txt bodies they were parsed from plus a small
	// overhead per entry. The least recently used entries go first; the
	// entry just fetched always stays.
	CacheBytes int64

	// TTL is how long a fetched robots.txt is used, at most; MinTTL is the
	// floor below which Cache-Control cannot push it.
	TTL, MinTTL time.Duration

	// Timeout bounds each request of a robots.txt fetch, its body
	// included; a redirect starts a new request with a new Timeout. The
	// wait for the Pacer before each request is not counted. A request
	// that times out makes robots.txt unreachable. A shorter wait for the
	// response headers is Get's to apply.
	Timeout time.Duration

	// RetryMin and RetryMax bound the back-off between fetches of an
	// unreachable robots.txt.
	RetryMin, RetryMax time.Duration

	// AssumeAllowAfter is how long robots.txt must stay unreachable, with
	// no copy cached, before the gate allows everything.
	AssumeAllowAfter time.Duration

	// Logger receives fetch outcomes (Debug), failures (Info) and panics
	// (Error). Nil discards them.
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
	// Authority is the scheme://host[:port] the entry is for, the host
	// as Config.Host names it.
	Authority string
	// URL is the robots.txt URL fetched (before redirects).
	URL string
	// Outcome says how Robots was obtained.
	Outcome Outcome
	// Robots holds the rules in force; never nil: robots.AllowAll and
	// robots.DisallowAll stand in when robots.txt is unavailable or
	// unreachable.
	Robots *robots.Robots
	// Group holds the rules for the gate's agent; nil allows everything.
	Group *robots.Group
	// CrawlDelay is the Crawl-delay for the gate's agent, if HasCrawlDelay.
	CrawlDelay    time.Duration
	HasCrawlDelay bool
	// Sitemaps lists the file's Sitemap URLs.
	Sitemaps []string
	// Status is the HTTP status of the last response, after redirects; 0
	// if the last request got none.
	Status int
	// Err is why the last attempt failed, or nil: the error Get returned
	// (a network error, a timeout, a body that would not decode),
	// ErrFetchPanicked, ErrTooManyRedirects or ErrRedirectScheme.
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

	// size approximates the memory the entry holds, for CacheBytes.
	size int64
	// body is the robots.txt the rules were parsed from, kept only for an
	// EntryKeeper.
	body []byte
}

// Verdict is the gate's answer for one URL.
type Verdict struct {
	// Allowed reports whether the URL may be fetched.
	Allowed bool
	// Fetched reports that this call fetched robots.txt: of the callers
	// that asked about an authority while its robots.txt was being
	// fetched, exactly one, the one that made the requests, sees Fetched.
	// Count fetches by it. The host's Pacer has just spent a token on
	// robots.txt, so a scheduler should ask the pacer again before
	// fetching the URL.
	Fetched bool
	// Waited reports that this call waited for another caller's fetch of
	// robots.txt. The Pacer may have spent a token on it as for Fetched,
	// but the fetch is the other caller's to count.
	Waited bool
	// Restored reports that this call read the entry back from the
	// Config.Keeper rather than fetching it: exactly one caller sees
	// it. A crawler that acts on a fetch (scheduling the sitemaps
	// robots.txt names) should act again, since the process that fetched
	// it may have stopped before it did.
	Restored bool
	// RetryAt is set when the URL is disallowed only because robots.txt is
	// unreachable (OutcomeUnreachable): the URL should be put aside until
	// RetryAt, when robots.txt will be fetched again, not dropped.
	RetryAt time.Time
	// Entry is the authority's robots.txt entry.
	Entry *Entry
}

// Gate answers, for every URL a crawler is about to fetch, whether the
// site's robots.txt lets it, fetching and caching robots.txt per authority
// (scheme, and host and port as Config.Host names them): the package
// documentation says how it reads each answer, paces its requests and
// shares one fetch between callers.
//
// A Gate is safe for concurrent use. Create one with New.
type Gate struct {
	get         func(ctx context.Context, rawURL string) (*Response, error)
	agent       string
	host        func(u *url.URL) string
	pacer       Pacer
	keeper      EntryKeeper
	resumeWait  time.Duration
	key         func(u *url.URL) string
	clock       ratelimit.Clock
	log         *slog.Logger
	cacheSize   int
	cacheBytes  int64
	ttl, minTTL time.Duration
	timeout     time.Duration
	retryMin    time.Duration
	retryMax    time.Duration
	assumeAllow time.Duration

	mu      sync.Mutex
	entries map[string]*list.Element // authority → *Entry, in lru
	lru     list.List                // front is the most recently used
	bytes   int64                    // sum of the cached entries' size
	flights map[string]*flight
}

// flight is one robots.txt fetch in progress; done is closed when it
// ends, with entry set if it produced one.
type flight struct {
	done  chan struct{}
	entry *Entry
}

// New returns a Gate configured by cfg, or an error wrapping
// ErrInvalidConfig: Agent and Get are required.
func New(cfg Config) (*Gate, error) {
	if strings.TrimSpace(cfg.Agent) == "" {
		return nil, fmt.Errorf("%w: Agent is required", ErrInvalidConfig)
	}
	if cfg.Get == nil {
		return nil, fmt.Errorf("%w: Get is required", ErrInvalidConfig)
	}
	if cfg.CacheSize < 0 || cfg.CacheBytes < 0 || cfg.TTL < 0 || cfg.MinTTL < 0 || cfg.Timeout < 0 ||
		cfg.RetryMin < 0 || cfg.RetryMax < 0 || cfg.AssumeAllowAfter < 0 {
		return nil, fmt.Errorf("%w: negative size or duration", ErrInvalidConfig)
	}
	g := &Gate{
		get:         cfg.Get,
		agent:       cfg.Agent,
		host:        cfg.Host,
		pacer:       cfg.Pacer,
		keeper:      cfg.Keeper,
		resumeWait:  cfg.ResumeWait,
		key:         cfg.Key,
		clock:       cfg.Clock,
		log:         cfg.Logger,
		cacheSize:   cfg.CacheSize,
		cacheBytes:  cfg.CacheBytes,
		ttl:         orDefault(cfg.TTL, DefaultTTL),
		minTTL:      orDefault(cfg.MinTTL, DefaultMinTTL),
		timeout:     orDefault(cfg.Timeout, DefaultTimeout),
		retryMin:    orDefault(cfg.RetryMin, DefaultRetryMin),
		retryMax:    orDefault(cfg.RetryMax, DefaultRetryMax),
		assumeAllow: orDefault(cfg.AssumeAllowAfter, DefaultAssumeAllowAfter),
		entries:     make(map[string]*list.Element),
		flights:     make(map[string]*flight),
	}
	if g.minTTL > g.ttl {
		return nil, fmt.Errorf("%w: MinTTL %v exceeds TTL %v", ErrInvalidConfig, g.minTTL, g.ttl)
	}
	if g.retryMin > g.retryMax {
		return nil, fmt.Errorf("%w: RetryMin %v exceeds RetryMax %v", ErrInvalidConfig, g.retryMin, g.retryMax)
	}
	if g.key == nil {
		g.key = hostid.Key
	}
	if g.cacheSize == 0 {
		g.cacheSize = DefaultCacheSize
	}
	if g.cacheBytes == 0 {
		g.cacheBytes = DefaultCacheBytes
	}
	if g.clock == nil {
		g.clock = ratelimit.SystemClock{}
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Check reports whether the gate's agent may fetch u, fetching the
// authority's robots.txt first if the gate holds no fresh copy, its
// requests paced by Config.Pacer. It fails only for a URL that is not
// absolute http(s) (ErrUnsupportedScheme, ErrNoHost) or when ctx ends while
// it waits; a robots.txt that cannot be fetched is an outcome, not an error
// (see Verdict.RetryAt).
func (g *Gate) Check(ctx context.Context, u *url.URL) (Verdict, error) {
	return g.CheckWith(ctx, u, nil)
}

// CheckWith is Check with p pacing the robots.txt requests in place of
// Config.Pacer (nil: Config.Pacer). A crawler passes a Pacer bound to the
// permission it holds for u's host — heed's crawler, the lease of u's key —
// so that a request to that host goes at once under it, while a redirect
// hop to another host waits for that host's turn.
//
// One fetch serves every caller that asks about an authority while it is
// in flight, and it is paced by the Pacer of the caller that started it;
// the Pacers of the callers that wait for it (Verdict.Waited) are not
// asked. If that caller's context ends first, a waiting caller fetches in
// its stead, paced by its own Pacer.
func (g *Gate) CheckWith(ctx context.Context, u *url.URL, p Pacer) (Verdict, error) {
	if p == nil {
		p = g.pacer
	}
	e, got, err := g.entry(ctx, u, p)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{
		Allowed:  e.Group.Allowed(pathQuery(u)),
		Fetched:  got == howFetched,
		Waited:   got == howWaited,
		Restored: got == howRestored,
		Entry:    e,
	}
	if !v.Allowed && e.Outcome == OutcomeUnreachable {
		v.RetryAt = e.Expires
	}
	return v, nil
}

// Entry returns the robots.txt entry for u's authority, fetching it if the
// gate holds no fresh copy; it fails as Check does.
func (g *Gate) Entry(ctx context.Context, u *url.URL) (*Entry, error) {
	e, _, err := g.entry(ctx, u, g.pacer)
	return e, err
}

// Cached returns the entry the gate holds for u's authority, fresh or
// expired, without fetching anything: for status pages and diagnostics.
func (g *Gate) Cached(u *url.URL) (*Entry, bool) {
	auth, err := g.authority(u)
	if err != nil {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.cachedLocked(auth)
	return e, e != nil
}

// Disallows reports whether the gate's fresh copy of the robots.txt of
// u's authority, read successfully, disallows u — without fetching or
// loading anything. A crawler asks it of the links it finds, so that a URL
// it may not fetch never takes a place in its queues: the answer only
// ever keeps a URL out, and a URL it lets in is checked again (Check)
// before it is fetched. It is false when the gate holds no fresh copy, and
// for a robots.txt that could not be read (unreachable: Check decides,
// with its retry).
func (g *Gate) Disallows(u *url.URL) bool {
	auth, err := g.authority(u)
	if err != nil {
		return false
	}
	now := g.clock.Now()
	g.mu.Lock()
	e := g.peekLocked(auth) // a link found is not a use of its robots.txt
	g.mu.Unlock()
	if e == nil || !now.Before(e.Expires) || e.Outcome != OutcomeOK {
		return false
	}
	return !e.Group.Allowed(pathQuery(u))
}

// Known returns the entry the gate holds for u's authority — in memory, or
// else with its Keeper — fresh or expired, without making any request; ok
// is false if it holds none. A crawler whose scheduler hands out a URL of
// a host it may not ask now (its robots.txt unreachable, its rest not over)
// reads the verdict here. An unreachable entry read from the Keeper is
// cached; any other is left for Check, which reports it Restored.
func (g *Gate) Known(ctx context.Context, u *url.URL) (e *Entry, ok bool) {
	auth, err := g.authority(u)
	if err != nil {
		return nil, false
	}
	g.mu.Lock()
	e = g.cachedLocked(auth)
	g.mu.Unlock()
	if e != nil || g.keeper == nil {
		return e, e != nil
	}
	if e, _ = g.load(ctx, auth); e == nil {
		return nil, false
	}
	if e.Outcome == OutcomeUnreachable {
		g.mu.Lock()
		if g.cachedLocked(auth) == nil && g.flights[auth] == nil {
			g.storeLocked(e)
		}
		g.mu.Unlock()
	}
	return e, true
}

// Len returns the number of authorities cached.
func (g *Gate) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.entries)
}

// pathQuery returns the path and query robots.Group.Allowed expects.
func pathQuery(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		p += "?" + u.RawQuery
	}
	return p
}

// how says how a call to entry came by its entry.
type how uint8

const (
	howCached   how = iota // from the cache
	howFetched             // this call fetched it
	howWaited              // another call fetched it while this one waited
	howRestored            // this call read it back from the Keeper
)

// entry returns u's entry: cached, read back from the Keeper, fetched by
// this call, its requests paced by p, or fetched by another call meanwhile,
// paced by that call's Pacer.
func (g *Gate) entry(ctx context.Context, u *url.URL, p Pacer) (*Entry, how, error) {
	auth, err := g.authority(u)
	if err != nil {
		return nil, howCached, err
	}
	got := howCached
	for {
		if err := ctx.Err(); err != nil {
			return nil, got, fmt.Errorf("robots: gate for %s: %w", auth, err)
		}
		now := g.clock.Now()
		g.mu.Lock()
		prev := g.cachedLocked(auth)
		if prev != nil && now.Before(prev.Expires) {
			g.mu.Unlock()
			return prev, got, nil
		}
		if f := g.flights[auth]; f != nil {
			g.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, howWaited, fmt.Errorf("robots: waiting for %s/robots.txt: %w", auth, ctx.Err())
			case <-f.done:
			}
			got = howWaited
			if f.entry != nil {
				return f.entry, howWaited, nil
			}
			continue // its fetcher gave up; try again, perhaps fetching
		}
		f := &flight{done: make(chan struct{})}
		g.flights[auth] = f
		g.mu.Unlock()

		fetched := howFetched
		var e *Entry
		var pending time.Time
		if prev == nil && g.keeper != nil {
			// Not in memory: perhaps kept from an earlier run.
			e, pending = g.load(ctx, auth)
			if e != nil && !now.Before(e.Expires) {
				prev, e = e, nil // due again; its copy may still serve as stale
			}
		}
		if e != nil {
			fetched = howRestored
		} else {
			var note []byte
			err = g.waitForPending(ctx, pending)
			if err == nil && g.keeper != nil {
				note = g.savePending(ctx, auth, prev)
			}
			if err == nil {
				e, err = g.fetchRecovering(ctx, auth, prev, p)
			}
			var unasked *unaskedError
			switch {
			case err == nil && g.keeper != nil:
				g.save(ctx, e)
			case errors.As(err, &unasked) && note != nil:
				g.unsavePending(ctx, auth, note, prev)
			}
		}

		g.mu.Lock()
		delete(g.flights, auth)
		if err == nil {
			g.storeLocked(e)
			f.entry = e
		}
		close(f.done)
		g.mu.Unlock()
		if err != nil {
			return nil, fetched, err
		}
		return e, fetched, nil
	}
}

// authority returns u's cache key: scheme://Host(u).
func (g *Gate) authority(u *url.URL) (string, error) {
	if g.host == nil {
		return Authority(u)
	}
	// A Host function of the caller's: the scheme and the separator stay
	// this package's to add.
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%w: %q", ErrUnsupportedScheme, u.Redacted())
	}
	host := g.host(u)
	if host == "" {
		return "", fmt.Errorf("%w: %q", ErrNoHost, u.Redacted())
	}
	return scheme + "://" + host, nil
}

// Authority returns the authority a Gate without Config.Host caches u's
// robots.txt under, "scheme://host[:port]", in the one spelling heed's
// crawler gives a host everywhere (its frontier, pacing and gate): the
// scheme and name lower-cased, an internationalised name in punycode (IDNA
// UTS #46, as browsers map it), a trailing dot dropped, an IPv6 literal in
// RFC 5952 form, the scheme's default port dropped and any other written
// without leading zeros ("HTTP://BÜCHER.Example.:080/a" is
// "http://xn--bcher-kva.example"). Only http and https URLs with a valid
// host and a port in 1–65535 have one; an IPv6 zone, which names a local
// interface, not a host, is refused.
func Authority(u *url.URL) (string, error) {
	a, err := hostid.Authority(u)
	switch {
	case errors.Is(err, hostid.ErrScheme):
		return "", fmt.Errorf("%w: %q", ErrUnsupportedScheme, u.Redacted())
	case err != nil:
		return "", fmt.Errorf("%w: %q: %v", ErrNoHost, u.Redacted(), err)
	}
	return a, nil
}
