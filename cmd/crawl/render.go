package main

import (
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch/render"
)

// renderFlags are the flags of rendering (-render and its bounds).
type renderFlags struct {
	mode        string
	tabs        int
	timeout     time.Duration
	maxRequests int
	maxBytes    byteSize
	scroll      int
	media       bool
	cacheSize   byteSize
}

// renderFlagNames lists them in -h order.
var renderFlagNames = []string{"render", "render-tabs", "render-timeout", "render-max-requests", "render-max-bytes", "render-scroll", "render-media", "render-cache"}

// register adds the rendering flags to fs; duration, integer and boolean
// are newFlagSet's helpers.
func (f *renderFlags) register(fs *flag.FlagSet, duration func(*time.Duration, string, time.Duration, string), integer func(*int, string, int, string), boolean func(*bool, string, bool, string)) {
	fs.StringVar(&f.mode, "render", "never", "render pages in headless Chromium (Debian's chromium) before extracting links: never (no browser starts), always (every HTML page), auto (page by page, where rendering is predicted to find links the static HTML lacks — from the page's HTML, its URL's shape and its scripts, and what renders of its kind found — a share of the skipped pages rendered to check); every request the browser makes obeys robots.txt, -delay, Crawl-delay, -per-host and back-off like a page")
	integer(&f.tabs, "render-tabs", 0, "pages rendered at once, each in a fresh browser context (0: one per core)")
	duration(&f.timeout, "render-timeout", render.DefaultTimeout, "cap on one render's wall time (load, quiet network, scrolling)")
	integer(&f.maxRequests, "render-max-requests", render.DefaultMaxRequests, "subrequests a rendered page may make (cached ones included); past it they are refused")
	f.maxBytes = render.DefaultMaxBytes
	fs.Var(&f.maxBytes, "render-max-bytes", "body bytes a rendered page's subrequests may fetch, e.g. 16MiB")
	integer(&f.scroll, "render-scroll", 0, "scroll a rendered page to its bottom up to N times, for pages that load more as they scroll (stops early when a step loads nothing)")
	boolean(&f.media, "render-media", false, "let rendered pages fetch images, media and fonts (refused by default: they do not change the DOM)")
	f.cacheSize = render.DefaultCacheBytes
	fs.Var(&f.cacheSize, "render-cache", "memory for the resources rendered pages share (scripts, stylesheets), so each is fetched once per crawl, e.g. 64MiB")
}

// renderer returns the crawler option and the Renderer of -render, or
// none for -render never (no browser is started).
func (f *renderFlags) renderer(logger *slog.Logger) (crawler.Option, *render.Renderer, error) {
	var mode crawler.RenderMode
	switch f.mode {
	case "never":
		return nil, nil, nil
	case "always":
		mode = crawler.RenderAlways
	case "auto":
		mode = crawler.RenderAuto
	default:
		return nil, nil, fmt.Errorf("invalid value %q for -render: want never, always or auto", f.mode)
	}
	r := &render.Renderer{
		Tabs:        f.tabs,
		Timeout:     f.timeout,
		MaxRequests: f.maxRequests,
		MaxBytes:    int64(f.maxBytes),
		Scroll:      f.scroll,
		AllowMedia:  f.media,
		Cache:       &render.Cache{MaxBytes: int64(f.cacheSize)},
		Logger:      logger,
	}
	return crawler.WithRenderer(r, mode), r, nil
}

// renderFields are a record's figures of its page's render (-render), all
// absent for a page not rendered.
type renderFields struct {
	Rendered           bool    `json:"rendered,omitempty"`
	RenderMS           float64 `json:"render_ms,omitempty"`
	Subrequests        int     `json:"subrequests,omitempty"`
	SubrequestsCached  int     `json:"subrequests_cached,omitempty"`
	SubrequestsRefused int     `json:"subrequests_refused,omitempty"`
}

func renderRecord(p *crawler.Page) renderFields {
	res := p.Render
	if res == nil {
		return renderFields{}
	}
	return renderFields{
		Rendered:           true,
		RenderMS:           float64(res.Duration.Microseconds()) / 1000,
		Subrequests:        res.Requests,
		SubrequestsCached:  res.Cached,
		SubrequestsRefused: res.Refused + res.Blocked,
	}
}
