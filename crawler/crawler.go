package crawler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots/gate"
)

// Version is heed's version, sent in the default User-Agent.
const Version = "0.1"

// Page is a fetched page as handlers see it: the response with its bounded
// body, a goquery document built on first use (Page.Document), and the links
// the extractors found and the crawler scheduled or refused.
type Page struct {
	*fetch.Page
	// Links are the followable links found on the page: empty for
	// redirects, non-2xx responses and pages whose directives say nofollow.
	Links []Link
	// Meta is the metadata given with the page's URL (a Seed's, or
	// Follow's and Enqueue's meta); nil when there is none. Handlers must
	// not modify it.
	Meta map[string]string

	run  *crawl
	item *frontier.Item
}

// Link is a URL found on a page by an extractor.
type Link = fetch.Link

// Errors Run and Enqueue return.
var (
	// ErrRunning: Run was called while the Crawler was already running.
	ErrRunning = errors.New("crawler: already running")
	// ErrNotRunning: Enqueue was called outside Run.
	ErrNotRunning = errors.New("crawler: not running")
	// ErrNoSeeds: Run got no seed that could be scheduled, and its Store
	// holds no work to resume.
	ErrNoSeeds = errors.New("crawler: no valid seed")
)

// DisallowReason says why a URL was not fetched for robots.txt reasons.
type DisallowReason string

// Reasons passed to OnDisallowed handlers.
const (
	// DisallowedByRules: the site's robots.txt rules forbid the URL.
	DisallowedByRules DisallowReason = "rules"
	// DisallowedUnavailable: the site's robots.txt could not be fetched
	// (5xx, 429, network error), which means complete disallow (RFC 9309
	// §2.3.1.4), and did not come back within WithRobotsWait.
	DisallowedUnavailable DisallowReason = "robots-unavailable"
)

// Crawler crawls the web from seed URLs, politely: every URL passes the
// robots.txt of its authority, every host is paced by its own token bucket,
// and the frontier hands workers only hosts that may be fetched now.
//
// Configure it with options and hooks before Run; hooks registered during
// Run are ignored until the next Run. A Crawler runs one crawl at a time.
type Crawler struct {
	cfg config

	mu           sync.Mutex
	onPage       []func(context.Context, *Page)
	onError      []func(context.Context, *url.URL, error)
	onDisallowed []func(context.Context, *url.URL, DisallowReason)
	onHTML       []htmlHandler
	filters      []func(u *url.URL, from *url.URL, depth int) bool
	feed         <-chan Seed // RunFeed's, while it runs

	running atomic.Bool
	cur     atomic.Pointer[crawl]
	last    *stats
}

// New returns a Crawler configured by opts, or an error wrapping
// ErrInvalidOption naming the first bad option.
func New(opts ...Option) (*Crawler, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.recorder != nil && (cfg.client != nil || cfg.transport != nil) {
		return nil, invalid("WithWARC records through the crawler's own transport: it cannot be combined with WithHTTPClient or WithTransport")
	}
	if cfg.maxDelay < cfg.minDelay {
		return nil, invalid("max delay %v is below the minimum delay %v", cfg.maxDelay, cfg.minDelay)
	}
	if cfg.userAgent == "" {
		cfg.userAgent = fmt.Sprintf("%s/%s (+https://github.com/heedcrawl/heed)", cfg.agent, Version)
		if cfg.agent != DefaultAgent {
			cfg.userAgent = fmt.Sprintf("%s (heed/%s; +https://github.com/heedcrawl/heed)", cfg.agent, Version)
		}
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	return &Crawler{cfg: cfg}, nil
}

// Agent returns the product token robots.txt is read for.
func (c *Crawler) Agent() string { return c.cfg.agent }

// UserAgent returns the User-Agent header the crawler sends.
func (c *Crawler) UserAgent() string { return c.cfg.userAgent }

// OnPage registers f to be called for every response received for a page
// (any status, redirects included). Handlers run on the worker that fetched
// the page: handlers of different pages run concurrently, the handlers of
// one page run one after the other in registration order, and Run returns
// only after every handler has returned. A panicking handler is recovered,
// counted under Stats.Errors["handler-panic"] and reported to OnError; the
// crawl goes on.
func (c *Crawler) OnPage(f func(ctx context.Context, p *Page)) {
	c.mu.Lock()
	c.onPage = append(c.onPage, f)
	c.mu.Unlock()
}

// OnError registers f to be called when fetching or handling u fails, and
// when u is dropped unfetched for a reason the caller would not otherwise
// hear of (a seed refused, a host at an address the crawl may not reach, a
// redirect target that cannot be scoped). err is always an *Error: a
// failure has a Kind, the ErrorKind Stats.Errors counts it under — each
// count there is one call, whatever the kind — and a dropped URL a Skipped,
// the SkipReason Stats.Skipped counts it under. u is a *url.URL like every
// hook's; a seed that is not a URL at all comes whole in u.Opaque, so
// u.String() gives it back. Same concurrency guarantees as OnPage.
func (c *Crawler) OnError(f func(ctx context.Context, u *url.URL, err error)) {
	c.mu.Lock()
	c.onError = append(c.onError, f)
	c.mu.Unlock()
}

// OnDisallowed registers f to be called for every URL robots.txt kept the
// crawler from fetching. Same concurrency guarantees as OnPage.
func (c *Crawler) OnDisallowed(f func(ctx context.Context, u *url.URL, reason DisallowReason)) {
	c.mu.Lock()
	c.onDisallowed = append(c.onDisallowed, f)
	c.mu.Unlock()
}

// Filter registers f to decide which discovered URLs are scheduled: a link u
// found at the given depth on the page (or sitemap) from is followed only if
// every filter returns true. Seeds and redirect targets are not filtered.
// Filters run concurrently and must be safe for it.
func (c *Crawler) Filter(f func(u *url.URL, from *url.URL, depth int) bool) {
	c.mu.Lock()
	c.filters = append(c.filters, f)
	c.mu.Unlock()
}

// Enqueue schedules rawURL from inside a running crawl, for instance from an
// OnPage handler that found a URL the extractors did not. from, if non-nil,
// is the page it was found on: rawURL may then be relative, and is resolved
// against the page's base URL (see Page.Follow); it gets one more depth than
// from and from's URL as referrer. Without from, rawURL must be absolute
// and is scheduled like a seed but without widening the scope. meta, if not
// nil, travels with the URL to its Page.Meta. The URL goes through
// canonicalisation, dedup, scope, filters and robots like any other.
func (c *Crawler) Enqueue(ctx context.Context, rawURL string, from *Page, meta map[string]string) error {
	r := c.cur.Load()
	if r == nil {
		return ErrNotRunning
	}
	if from != nil && from.Page != nil && from.run == r {
		return from.Follow(ctx, rawURL, meta)
	}
	it := frontier.Item{URL: rawURL, Meta: meta}
	var fromURL *url.URL
	if from != nil && from.Page != nil {
		it.Depth = from.Depth + 1
		if from.URL != nil {
			it.Referrer = from.URL.String()
			fromURL = from.URL
		}
	}
	return r.add(ctx, it, fromURL, true)
}

// Seed is a URL to start a crawl from, with metadata that travels with it
// to its Page.Meta.
type Seed struct {
	URL  string
	Meta map[string]string
}

// HostInfo is what a running crawl knows about one host: how it reads its
// robots.txt and how fast it may fetch from it.
type HostInfo struct {
	// Key is the politeness key the host is paced under (see
	// WithPolitenessKey).
	Key string
	// Robots is the host's robots.txt entry (outcome, rules for our agent,
	// Crawl-delay, sitemaps, when it was fetched and expires), or nil if
	// it has not been fetched or has left the cache.
	Robots *gate.Entry
	// Pace is the host's effective delay and why (minimum delay,
	// Crawl-delay, back-off, adaptive) and any Retry-After pause.
	Pace ratelimit.HostStatus
}

// Host reports what the running crawl knows about the host of rawURL,
// without fetching anything. It returns ErrNotRunning outside Run.
func (c *Crawler) Host(rawURL string) (HostInfo, error) {
	r := c.cur.Load()
	if r == nil {
		return HostInfo{}, ErrNotRunning
	}
	canon, err := r.cfg.canonicalizer.Canonical(rawURL)
	if err != nil {
		return HostInfo{}, err
	}
	u, err := url.Parse(canon)
	if err != nil {
		return HostInfo{}, err
	}
	info := HostInfo{Key: r.keys.Key(u)}
	info.Robots, _ = r.gate.Cached(u)
	h, err := r.fr.Host(context.Background(), info.Key)
	if err != nil {
		return HostInfo{}, err
	}
	info.Pace = r.policy.Status(info.Key, h, r.now())
	return info, nil
}

// Stats returns the crawl's counters: live during Run, final after it.
func (c *Crawler) Stats() Stats {
	if r := c.cur.Load(); r != nil {
		return r.stats.snapshot(r.now())
	}
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last == nil {
		return newStats(time.Time{}).snapshot(time.Time{})
	}
	return last.snapshot(time.Time{})
}

// Run crawls from seeds until no reachable URL is left, a page limit is
// reached, or ctx is cancelled. On cancellation it stops handing out work,
// lets fetches in flight finish within the grace period, and returns
// ctx's error; Stats then gives the summary. Seeds that are not absolute
// http(s) URLs are reported to OnError and skipped; ErrNoSeeds is returned if
// none is left. If the frontier's Store fails, the crawl stops as on
// cancellation and Run returns that error (wrapping frontier.ErrStore): no
// URL is silently lost. Run starts no goroutine that outlives it.
func (c *Crawler) Run(ctx context.Context, seeds ...string) error {
	s := make([]Seed, len(seeds))
	for i, u := range seeds {
		s[i].URL = u
	}
	return c.RunSeeds(ctx, s...)
}
