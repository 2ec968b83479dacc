package render

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"github.com/heedcrawl/heed/fetch"
)

// Defaults used by the zero Renderer.
const (
	DefaultExecPath        = "/usr/bin/chromium"
	DefaultTimeout         = 20 * time.Second
	DefaultQuiet           = 500 * time.Millisecond
	DefaultRequestTimeout  = 10 * time.Second
	DefaultMaxRequests     = 150
	DefaultMaxBytes        = 16 << 20
	DefaultPagesPerBrowser = 200
	DefaultMaxBrowserRSS   = 1 << 30
)

// Renderer renders pages in headless Chromium; see the package
// documentation. The zero value is ready to use with the defaults
// documented on each field; it starts no browser until the first Render.
// Fields must not be changed after the first Render. A Renderer is safe
// for concurrent use; Close it to end its browser.
type Renderer struct {
	// ExecPath is the Chromium binary; empty means "chromium" on the PATH,
	// or DefaultExecPath.
	ExecPath string
	// UserAgent is the browser's User-Agent, as navigator.userAgent gives
	// it to scripts; heed's fetcher sends its own on the wire. Empty
	// means fetch.DefaultUserAgent.
	UserAgent string
	// Tabs is how many pages render at once; zero means one per core.
	Tabs int
	// Timeout caps a render's wall time, from the start of navigation to
	// the snapshot of the DOM; zero means DefaultTimeout.
	Timeout time.Duration
	// Quiet is the network-quiet window after the load event that ends a
	// render; zero means DefaultQuiet.
	Quiet time.Duration
	// RequestTimeout caps one subrequest, its robots.txt and its pace
	// included, so a host that hangs cannot hold a render; zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxRequests caps the subrequests a page may have answered, from the
	// network or the cache; zero means DefaultMaxRequests.
	MaxRequests int
	// MaxBytes caps the bytes of the subrequests a page fetches; zero
	// means DefaultMaxBytes.
	MaxBytes int64
	// Scroll is how many times a rendered page is scrolled to its bottom,
	// each followed by a quiet window, for pages that load more as they
	// are scrolled; scrolling stops early when a step brings no request.
	// Zero: none.
	Scroll int
	// AllowMedia lets images, media and fonts be fetched; by default they
	// are refused, as they do not change the DOM.
	AllowMedia bool
	// PagesPerBrowser is how many pages a browser renders before it is
	// replaced by a fresh one; zero means DefaultPagesPerBrowser.
	PagesPerBrowser int
	// MaxBrowserRSS is the memory (proportional set size of its
	// processes) past which a browser is replaced once its pages are
	// done; zero means DefaultMaxBrowserRSS.
	MaxBrowserRSS int64
	// Cache holds the resources shared by the pages; nil means a Cache of
	// DefaultCacheBytes (a Cache with negative MaxBytes caches nothing).
	Cache *Cache
	// Logger receives debug records of failed subrequests and browser
	// restarts; nil means none.
	Logger *slog.Logger

	once   sync.Once
	sem    chan struct{}
	mu     sync.Mutex
	cur    *browser
	all    map[*browser]bool // browsers not closed yet
	closed bool
	stats  Stats
}

// Stats are a Renderer's counters.
type Stats struct {
	Pages    int64 // renders that produced a DOM
	Failed   int64 // renders that failed
	Browsers int64 // browsers started
	Crashes  int64 // browsers found crashed
	Recycled int64 // browsers replaced past PagesPerBrowser or MaxBrowserRSS
	// OverMemory counts the browsers among Recycled replaced past
	// MaxBrowserRSS.
	OverMemory int64
	PeakRSS    int64 // the most memory seen of one browser (proportional set size of its processes), in bytes
}

// Result is a rendered page and what its render did.
type Result struct {
	// Page is the fetched page with Body replaced by the rendered DOM
	// (UTF-8 HTML); every other field is the fetch's.
	Page *fetch.Page
	// Duration is the render's wall time.
	Duration time.Duration
	// Requests counts the subrequests fetched through the Policy, Cached
	// those the Cache answered, Refused those refused (by the Policy, the
	// budget or the render's end), Blocked the media and reports refused
	// by type, Failed those whose fetch failed.
	Requests, Cached, Refused, Blocked, Failed int
	// Bytes is the body bytes fetched for the subrequests.
	Bytes int64
	// OverBudget reports that MaxRequests or MaxBytes refused requests.
	OverBudget bool
	// TimedOut reports that the render reached its wall time.
	TimedOut bool
	// Retried reports that the browser crashed and the page was rendered
	// again in a new one.
	Retried bool
}

func (r *Renderer) init() {
	r.once.Do(func() {
		tabs := r.Tabs
		if tabs <= 0 {
			tabs = runtime.NumCPU()
		}
		r.sem = make(chan struct{}, tabs)
		r.all = make(map[*browser]bool)
		if r.ExecPath == "" {
			r.ExecPath = DefaultExecPath
			if p, err := exec.LookPath("chromium"); err == nil {
				r.ExecPath = p
			}
		}
		if r.UserAgent == "" {
			r.UserAgent = fetch.DefaultUserAgent
		}
		if r.Cache == nil {
			r.Cache = new(Cache)
		}
	})
}

func or[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

func (r *Renderer) requestTimeout() time.Duration { return or(r.RequestTimeout, DefaultRequestTimeout) }
func (r *Renderer) quietWindow() time.Duration    { return or(r.Quiet, DefaultQuiet) }
func (r *Renderer) maxRequests() int              { return or(r.MaxRequests, DefaultMaxRequests) }
func (r *Renderer) maxBytes() int64               { return or(r.MaxBytes, DefaultMaxBytes) }
func (r *Renderer) cache() *Cache                 { return r.Cache }

func (r *Renderer) log() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// Stats returns the Renderer's counters.
func (r *Renderer) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Render loads doc — a 2xx HTML page heed fetched — in a fresh tab,
// answering every request the page makes with pol (or the Cache), and
// returns the DOM once the page has loaded and the network been quiet for
// the Quiet window, or at the Timeout. A browser that crashes during the
// render is replaced and the page rendered once more. Render waits for a
// free tab within ctx.
func (r *Renderer) Render(ctx context.Context, doc *fetch.Page, pol Policy) (*Result, error) {
	r.init()
	if doc == nil || doc.URL == nil || doc.Status < 200 || doc.Status > 299 || !doc.IsHTML() {
		return nil, ErrNotHTML
	}
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.sem }()
	var res *Result
	var err error
	for try := 0; try < 2; try++ {
		var b *browser
		if b, err = r.acquire(); err != nil {
			break
		}
		res, err = r.renderIn(ctx, b, doc, pol)
		if res != nil {
			res.Retried = try > 0
		}
		crashed := err != nil && b.crashed()
		r.release(b, crashed)
		if !crashed || ctx.Err() != nil {
			break
		}
		r.log().Warn("render: browser crashed; rendering the page again in a new one", "url", doc.URL.String())
		if try == 0 {
			continue
		}
		err = fmt.Errorf("%w: crashed twice rendering %s: %w", ErrBrowser, doc.URL, err)
	}
	r.mu.Lock()
	if err != nil {
		r.stats.Failed++
	} else {
		r.stats.Pages++
	}
	r.mu.Unlock()
	return res, err
}

// acquire returns the browser to render the next page in, starting one
// when there is none or the current one is retiring.
func (r *Renderer) acquire() (*browser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if r.cur == nil {
		b, err := r.startBrowser()
		if err != nil {
			return nil, err
		}
		r.cur = b
		r.all[b] = true
		r.stats.Browsers++
	}
	b := r.cur
	b.mu.Lock()
	b.active++
	b.served++
	if b.served >= or(r.PagesPerBrowser, DefaultPagesPerBrowser) {
		b.retire = true
		r.cur = nil
		r.stats.Recycled++
	}
	b.mu.Unlock()
	return b, nil
}

// release returns b after a render: a crashed browser, or one past its
// pages or its memory, takes no more pages and is closed once its last
// page is done.
func (r *Renderer) release(b *browser, crashed bool) {
	rss := b.rss()
	r.mu.Lock()
	r.stats.PeakRSS = max(r.stats.PeakRSS, rss)
	if crashed {
		r.stats.Crashes++
	}
	b.mu.Lock()
	b.active--
	if !crashed && !b.retire && rss > or(r.MaxBrowserRSS, DefaultMaxBrowserRSS) {
		r.stats.Recycled++
		r.stats.OverMemory++
	}
	if crashed || rss > or(r.MaxBrowserRSS, DefaultMaxBrowserRSS) {
		b.retire = true
	}
	if b.retire && r.cur == b {
		r.cur = nil
	}
	done := b.retire && b.active == 0
	b.mu.Unlock()
	if done {
		delete(r.all, b)
	}
	r.mu.Unlock()
	if done {
		b.close()
	}
}

// Close ends the Renderer's browsers, waiting for nothing: renders under
// way fail. Render fails with ErrClosed after it.
func (r *Renderer) Close() error {
	r.init()
	r.mu.Lock()
	r.closed = true
	bs := make([]*browser, 0, len(r.all))
	for b := range r.all {
		bs = append(bs, b)
	}
	r.all, r.cur = map[*browser]bool{}, nil
	r.mu.Unlock()
	for _, b := range bs {
		b.close()
	}
	return nil
}
