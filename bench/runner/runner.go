// Package runner runs the crawlers heed is compared with, colly and gocrawl,
// each configured for polite crawling the way its documentation recommends,
// so that the harness can run them as separate processes (see cmd/collyrun
// and cmd/gocrawlrun) and tests can run them in-process against a
// testweb.Virtual.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/PuerkitoBio/gocrawl"
	"github.com/PuerkitoBio/goquery"
	"github.com/gocolly/colly/v2"
)

// Options configure a crawl. The same options go to every crawler.
type Options struct {
	Seeds     []string
	Agent     string        // product token matched against robots.txt groups
	UserAgent string        // full User-Agent header
	Delay     time.Duration // minimum delay between requests to a host
	// Transport replaces the crawler's HTTP transport (tests use
	// testweb.Virtual.Transport); nil keeps the library's default.
	Transport http.RoundTripper
	// HeaderTimeout gives up on a request whose response headers have not
	// come within it, as heed's -header-timeout does, so that a robots.txt
	// or page that never answers cannot hold the crawl (gocrawl has no
	// timeout of its own, colly only its 10 s for a whole request); 0
	// keeps the library's behaviour.
	HeaderTimeout time.Duration
}

// errHeaderTimeout is the cause of a request given up by HeaderTimeout.
var errHeaderTimeout = errors.New("timeout awaiting response headers")

// withHeaderTimeout returns rt (http.DefaultTransport if nil), giving up on
// requests whose response headers take longer than d; d 0 leaves it as is.
func withHeaderTimeout(rt http.RoundTripper, d time.Duration) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if d <= 0 {
		return rt
	}
	return headerTimeout{rt: rt, d: d}
}

type headerTimeout struct {
	rt http.RoundTripper
	d  time.Duration
}

// RoundTrip is rt's, cancelled if the response headers do not come in
// time; the body then reads within the request's own context.
func (h headerTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(h.d, func() { cancel(errHeaderTimeout) })
	resp, err := h.rt.RoundTrip(req.WithContext(ctx))
	timer.Stop()
	if err != nil {
		if errors.Is(context.Cause(ctx), errHeaderTimeout) {
			err = fmt.Errorf("%w after %v: %w", errHeaderTimeout, h.d, err)
		}
		cancel(nil)
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

// cancelOnClose releases the request's context when the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// Result counts what the crawler reports about itself; the harness trusts
// only the server's log, this is for the runner's own summary line.
type Result struct {
	Visited int64 // responses handed to the crawler's page callback
	Errors  int64 // errors the crawler reported
}

// Colly crawls with colly v2: robots.txt obeyed (IgnoreRobotsTxt = false),
// asynchronous, and one LimitRule per seed host with Parallelism 1 and the
// delay, because a rule's parallelism and delay are shared by all hosts its
// glob matches. Links are followed from every a[href].
func Colly(ctx context.Context, o Options) (Result, error) {
	var res Result
	c := colly.NewCollector(colly.Async(true), colly.UserAgent(o.UserAgent), colly.StdlibContext(ctx))
	c.IgnoreRobotsTxt = false
	if o.Transport != nil || o.HeaderTimeout > 0 {
		c.WithTransport(withHeaderTimeout(o.Transport, o.HeaderTimeout))
	}
	seen := make(map[string]bool)
	for _, s := range o.Seeds {
		u, err := url.Parse(s)
		if err != nil {
			return res, fmt.Errorf("colly: seed %q: %w", s, err)
		}
		if seen[u.Host] {
			continue
		}
		seen[u.Host] = true
		if err := c.Limit(&colly.LimitRule{DomainGlob: u.Host, Parallelism: 1, Delay: o.Delay}); err != nil {
			return res, fmt.Errorf("colly: limit rule for %s: %w", u.Host, err)
		}
	}
	var visited, failed atomic.Int64
	c.OnResponse(func(*colly.Response) { visited.Add(1) })
	c.OnError(func(*colly.Response, error) { failed.Add(1) })
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		e.Request.Visit(e.Attr("href")) //nolint:errcheck // already visited, robots-blocked … are expected
	})
	for _, s := range o.Seeds {
		c.Visit(s) //nolint:errcheck // counted through OnError
	}
	c.Wait()
	res.Visited, res.Errors = visited.Load(), failed.Load()
	return res, ctx.Err()
}

// Gocrawl crawls with gocrawl: its robots.txt support (the temoto robots.txt parser)
// with Agent as the robots user agent, the delay as CrawlDelay (a larger
// Crawl-delay in robots.txt wins), links to any host followed, and its
// default URL normalisation. Its robots.txt requests go through the same
// client as its pages, HeaderTimeout included.
func Gocrawl(ctx context.Context, o Options) (Result, error) {
	ext := &gocrawlExtender{ctx: ctx}
	if o.Transport != nil || o.HeaderTimeout > 0 {
		ext.client = &http.Client{Transport: withHeaderTimeout(o.Transport, o.HeaderTimeout), CheckRedirect: gocrawl.HttpClient.CheckRedirect}
	}
	opts := gocrawl.NewOptions(ext)
	opts.UserAgent = o.UserAgent
	opts.RobotUserAgent = o.Agent
	opts.CrawlDelay = o.Delay
	opts.SameHostOnly = false
	opts.LogFlags = gocrawl.LogNone
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	// Cancellation drains the crawl through the extender (Filter rejects,
	// Fetch fails) rather than Crawler.Stop, which races with Run's set-up.
	err := gocrawl.NewCrawlerWithOptions(opts).Run(o.Seeds)
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return Result{Visited: ext.visited.Load(), Errors: ext.errors.Load()}, err
}

type gocrawlExtender struct {
	gocrawl.DefaultExtender
	ctx     context.Context
	client  *http.Client // nil: gocrawl.HttpClient, as DefaultExtender.Fetch
	visited atomic.Int64
	errors  atomic.Int64
}

// Visit counts the page and lets gocrawl harvest its links.
func (e *gocrawlExtender) Visit(*gocrawl.URLContext, *http.Response, *goquery.Document) (any, bool) {
	e.visited.Add(1)
	return nil, true
}

// Error counts the error.
func (e *gocrawlExtender) Error(*gocrawl.CrawlError) { e.errors.Add(1) }

// Log discards gocrawl's log lines.
func (e *gocrawlExtender) Log(gocrawl.LogFlags, gocrawl.LogFlags, string) {}

// Filter is DefaultExtender.Filter, refusing everything once the crawl is
// cancelled.
func (e *gocrawlExtender) Filter(_ *gocrawl.URLContext, isVisited bool) bool {
	return !isVisited && e.ctx.Err() == nil
}

// Fetch is DefaultExtender.Fetch with a replaceable client, failing once the
// crawl is cancelled.
func (e *gocrawlExtender) Fetch(ctx *gocrawl.URLContext, userAgent string, headRequest bool) (*http.Response, error) {
	if err := e.ctx.Err(); err != nil {
		return nil, err
	}
	if e.client == nil {
		return e.DefaultExtender.Fetch(ctx, userAgent, headRequest)
	}
	method := http.MethodGet
	if headRequest {
		method = http.MethodHead
	}
	req, err := http.NewRequest(method, ctx.URL().String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	return e.client.Do(req)
}
