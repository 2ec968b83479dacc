package crawler

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/internal/hostid"
	"github.com/heedcrawl/heed/robots"
	"github.com/heedcrawl/heed/robots/gate"
	"golang.org/x/text/encoding/unicode"
)

// robots.txt travels the same road as the pages of a crawl: the gate
// decides what robots.txt means (redirects, outcomes, caching), the page
// fetcher makes each request (transport, address checks, header timeout,
// decompression, charset decoding), so that a site's robots.txt is read the
// same way by a crawl and by "crawl robots".

// RobotsEntry fetches the robots.txt of rawURL's authority the way a crawl
// with c's options does, through the same kind of fetcher and gate, and
// returns what the crawl would make of it: the outcome, the rules for c's
// agent, Crawl-delay and sitemaps. rawURL is canonicalised first, like a
// seed, and its host's address class is allowed like a seed's. Nothing is
// cached between calls and the one lookup is not paced. It fails for a URL
// that cannot be canonicalised or when ctx ends; a robots.txt that cannot
// be fetched is an outcome (Entry.Outcome and Entry.Err say why).
func (c *Crawler) RobotsEntry(ctx context.Context, rawURL string) (*gate.Entry, error) {
	canon, err := c.settings().canonicalizer.Canonical(rawURL) // settings: a zero Crawler gets its defaults
	if err != nil {
		return nil, fmt.Errorf("crawler: robots.txt for %q: %w", rawURL, err)
	}
	u, err := url.Parse(canon)
	if err != nil {
		return nil, fmt.Errorf("crawler: robots.txt for %q: %w", rawURL, err)
	}
	f := crawlFetcher(&c.cfg, c.addressPolicy(ctx, []string{canon}))
	defer f.CloseIdleConnections()
	g, err := newRobotsGate(&c.cfg, f, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return g.Entry(ctx, u)
}

// crawlFetcher returns the page fetcher of a crawl configured by cfg,
// connecting only where addrs allows.
func crawlFetcher(cfg *config, addrs *fetch.AddressPolicy) *fetch.Fetcher {
	f := &fetch.Fetcher{
		Addresses:      addrs,
		UserAgent:      cfg.userAgent,
		Client:         cfg.client,
		Transport:      cfg.transport,
		ConnectTimeout: cfg.connectTimeout,
		HeaderTimeout:  cfg.headerTimeout,
		Timeout:        cfg.timeout,
		MaxBodySize:    cfg.bodyLimit,
		MaxRedirects:   cfg.maxRedirects,
		Recorder:       cfg.recorder,
		Directives: fetch.DirectivePolicy{
			Agents:       []string{cfg.agent},
			IgnoreMeta:   !cfg.respectNofollow,
			IgnoreHeader: !cfg.respectNofollow,
			IgnoreRel:    !cfg.respectNofollow,
		},
	}
	if cfg.agent == DefaultAgent {
		f.Directives.Agents = nil // "heed" and "heedbot"
	}
	return f
}

// newRobotsGate returns the robots gate of a crawl configured by cfg:
// every robots.txt request made by f, paced by pacer (nil: not paced)
// under key (nil: the URL's host), its entries kept by keeper (nil: in
// memory only).
func newRobotsGate(cfg *config, f *fetch.Fetcher, pacer gate.Pacer, key func(*url.URL) string, keeper gate.EntryKeeper) (*gate.Gate, error) {
	gc := gate.Config{
		Keeper: keeper,
		// A robots.txt request a stopped run made, whose answer (and
		// Crawl-delay) it did not keep, is followed by the next only a
		// maximum delay later.
		ResumeWait: cfg.maxDelay,
		Get:        robotsGet(f),
		Agent:      cfg.agent,
		Host:       hostid.Key, // the crawl's one identity of a host
		Pacer:      pacer,
		Key:        key,
		CacheSize:  cfg.robotsCache,
		// A robots.txt request is given as long as a page request.
		Timeout: cfg.timeout,
		Logger:  cfg.logger,
	}
	if gc.Timeout == 0 {
		gc.Timeout = fetch.DefaultTimeout
	}
	if gc.Key == nil {
		gc.Key = hostid.Key
	}
	if cfg.clock != nil {
		gc.Clock = cfg.clock
	}
	if cfg.robotsWait > 0 {
		// Retry an unreachable robots.txt often enough that the wait can
		// pay off.
		gc.RetryMin = min(max(cfg.robotsWait/4, time.Second), gate.DefaultRetryMin)
	}
	g, err := gate.New(gc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return g, nil
}

// robotsGet makes f the gate's Get: one request, never following a
// redirect (the gate does, pacing each hop), the body decompressed,
// decoded to UTF-8 when its charset is known (a UTF-16 byte order mark
// included) and cut after robots.MaxSize+1 bytes, which is all Parse needs
// to tell a complete last line from a cut one. The gate decodes nothing
// itself.
func robotsGet(f *fetch.Fetcher) func(ctx context.Context, rawURL string) (*gate.Response, error) {
	return func(ctx context.Context, rawURL string) (*gate.Response, error) {
		p, err := f.Fetch(ctx, fetch.Request{URL: rawURL, MaxBodySize: robots.MaxSize + 1})
		if err != nil {
			return nil, err
		}
		body := p.Body
		if p.Charset == "" {
			body = robotsFromUTF16(body)
		}
		return &gate.Response{Status: p.Status, Header: p.Header, Body: body, Truncated: p.Truncated}, nil
	}
}

// robotsFromUTF16 decodes a body that starts with a UTF-16 byte order mark
// to UTF-8, and returns any other as it is. robots.txt is text whatever
// its server calls it, so one the fetcher left undecoded (served as
// application/octet-stream, say) is still read as the mark says; a cut
// last code unit becomes U+FFFD.
func robotsFromUTF16(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte{0xff, 0xfe}) && !bytes.HasPrefix(b, []byte{0xfe, 0xff}) {
		return b
	}
	out, err := unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder().Bytes(b)
	if err != nil {
		return b
	}
	return out
}
