package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
)

// Defaults of the zero SitemapWalker.
const (
	// DefaultSitemapDepth bounds how many index levels are followed below a
	// root sitemap. The protocol allows one; some sites nest further.
	DefaultSitemapDepth = 4
	// DefaultMaxSitemaps bounds the sitemap documents fetched by one Walk.
	DefaultMaxSitemaps = 1000
)

// SitemapWalker follows sitemaps from their roots through nested indexes,
// delivering the page URLs they list. It does no I/O of its own: Fetch does,
// so a crawler can route every sitemap request (redirect hops included)
// through its robots gate and rate limiter.
type SitemapWalker struct {
	// Fetch retrieves one sitemap document. Fetcher.Stream has the right
	// signature; a crawler wraps it with its robots and politeness checks
	// and returns an error to refuse a request. Required.
	Fetch func(ctx context.Context, req Request) (*Page, io.ReadCloser, error)
	// MaxDepth bounds index nesting below a root; zero means
	// DefaultSitemapDepth.
	MaxDepth int
	// MaxSitemaps bounds the documents fetched per Walk; zero means
	// DefaultMaxSitemaps.
	MaxSitemaps int
	// MaxRedirects bounds each sitemap's redirect chain; zero means
	// DefaultMaxRedirects.
	MaxRedirects int
	// Options are passed to ParseSitemap for every document (their
	// RobotsURL is replaced by Walk's argument).
	Options SitemapOptions
	// Logger receives one line per skipped or failed sitemap; nil discards.
	Logger *slog.Logger
}

// SitemapWalkStats counts a Walk: the documents and what they held.
type SitemapWalkStats struct {
	Fetched    int // documents parsed (wholly or in part)
	Failed     int // fetch errors, refused requests, non-2xx statuses, bad redirects
	Skipped    int // wrong content type or not a sitemap (e.g. an HTML error page)
	Malformed  int // broken XML or gzip; the entries before the break were kept
	TooLarge   int // documents cut at a protocol limit
	Loops      int // sitemaps reached again (by index or redirect) and not refetched
	TooDeep    int // nested sitemaps beyond MaxDepth
	OverBudget int // sitemaps not fetched because MaxSitemaps was reached
	Redirects  int // redirect hops followed

	URLs       int // page URLs delivered
	Invalid    int // entries that were not absolute http(s) URLs
	OutOfScope int // entries outside what their sitemap may list
	Old        int // entries dropped by Options.ModifiedSince
}

type sitemapJob struct {
	url   string
	depth int
}

// Walk fetches the root sitemaps in order, follows the nested sitemaps of
// every index (breadth first, to MaxDepth, each document at most once), and
// calls yield for each page URL until yield returns false. robotsURL is the
// robots.txt that named the roots, or empty if they were not named in one
// (for example the default /sitemap.xml); nested sitemaps inherit it.
//
// Problems with individual sitemaps are counted in the stats, logged and
// skipped; Walk itself fails only when ctx is done.
func (w *SitemapWalker) Walk(ctx context.Context, roots []string, robotsURL string, yield func(SitemapEntry) bool) (SitemapWalkStats, error) {
	var st SitemapWalkStats
	if w.Fetch == nil {
		return st, errors.New("fetch: SitemapWalker.Fetch is nil")
	}
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	maxDepth := w.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultSitemapDepth
	}
	budget := w.MaxSitemaps
	if budget <= 0 {
		budget = DefaultMaxSitemaps
	}
	opts := w.Options
	opts.RobotsURL = robotsURL
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = MaxSitemapBytes
	}

	visited := make(map[string]bool)
	var queue []sitemapJob
	scheduled := 0
	enqueue := func(raw string, depth int) {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			st.Failed++
			log.Warn("sitemap: bad URL", "url", raw)
			return
		}
		key := redirectKey(u)
		switch {
		case visited[key]:
			st.Loops++
		case depth > maxDepth:
			st.TooDeep++
			log.Info("sitemap: nested too deep", "url", raw, "depth", depth)
		case scheduled >= budget:
			st.OverBudget++
		default:
			scheduled++
			visited[key] = true
			queue = append(queue, sitemapJob{url: raw, depth: depth})
		}
	}
	for _, r := range roots {
		enqueue(r, 0)
	}

	stopped := false
	for len(queue) > 0 && !stopped {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		job := queue[0]
		queue = queue[1:]

		page, body, err := w.fetchFollowing(ctx, job.url, maxBytes, visited, &st)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return st, ctxErr
			}
			st.Failed++
			log.Warn("sitemap: fetch failed", "url", job.url, "err", err)
			continue
		}
		if page == nil {
			continue // redirect loop already counted
		}
		if page.Status < 200 || page.Status > 299 {
			body.Close()
			st.Failed++
			log.Warn("sitemap: bad status", "url", page.URL.String(), "status", page.Status)
			continue
		}
		if !sitemapMediaType(page.ContentType) {
			body.Close()
			st.Skipped++
			log.Warn("sitemap: wrong content type", "url", page.URL.String(), "type", page.ContentType)
			continue
		}
		ps, err := ParseSitemap(body, page.URL, opts, func(e SitemapEntry) bool {
			if e.Sitemap {
				enqueue(e.Loc, job.depth+1)
				return true
			}
			st.URLs++
			if !yield(e) {
				stopped = true
				return false
			}
			return true
		})
		body.Close()
		st.Fetched++
		st.Invalid += ps.Invalid
		st.OutOfScope += ps.OutOfScope
		st.Old += ps.Old
		switch {
		case err == nil:
		case errors.Is(err, ErrNotSitemap):
			st.Fetched--
			st.Skipped++
			log.Warn("sitemap: not a sitemap", "url", page.URL.String(), "err", err)
		case errors.Is(err, ErrSitemapTooLarge), errors.Is(err, ErrBodyTooLarge):
			st.TooLarge++
			log.Warn("sitemap: over protocol limits, kept the first entries", "url", page.URL.String(), "entries", ps.URLs+ps.Sitemaps, "err", err)
		case errors.Is(err, ErrMalformedSitemap):
			st.Malformed++
			log.Warn("sitemap: malformed, kept the entries before the error", "url", page.URL.String(), "entries", ps.URLs+ps.Sitemaps, "err", err)
		default:
			if ctxErr := ctx.Err(); ctxErr != nil {
				return st, ctxErr
			}
			st.Failed++
			log.Warn("sitemap: read failed, kept the entries before the error", "url", page.URL.String(), "err", err)
		}
	}
	return st, nil
}

// fetchFollowing fetches one sitemap, following redirects through w.Fetch
// so that every hop passes the caller's checks. It returns a nil Page when
// the chain ends at an already visited sitemap.
func (w *SitemapWalker) fetchFollowing(ctx context.Context, rawURL string, maxBytes int64, visited map[string]bool, st *SitemapWalkStats) (*Page, io.ReadCloser, error) {
	req := Request{URL: rawURL, MaxBodySize: maxBytes}
	for {
		page, body, err := w.Fetch(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		if page.Redirect == nil {
			if body == nil {
				// Filtered by the fetcher's Accept: nothing to parse.
				return nil, nil, fmt.Errorf("fetch: sitemap %s: response filtered out", rawURL)
			}
			return page, body, nil
		}
		if body != nil {
			body.Close()
		}
		next, err := page.RedirectRequest(w.MaxRedirects)
		if errors.Is(err, ErrRedirectLoop) {
			st.Loops++
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		st.Redirects++
		key := redirectKey(page.Redirect)
		if visited[key] {
			st.Loops++
			return nil, nil, nil
		}
		visited[key] = true
		next.MaxBodySize = maxBytes
		req = next
	}
}

// sitemapMediaType reports whether a response of media type mt may be a
// sitemap: XML, any text (the parser itself recognises HTML error pages),
// gzip under its many names, or no type at all.
func sitemapMediaType(mt string) bool {
	switch {
	case mt == "", isXMLType(mt), strings.HasPrefix(mt, "text/"):
		return true
	}
	switch mt {
	case "application/gzip", "application/x-gzip", "application/x-gunzip", "application/gzipped",
		"application/gzip-compressed", "application/x-gzip-compressed", "gzip/document",
		"application/octet-stream", "binary/octet-stream":
		return true
	}
	return false
}

// SitemapURLs returns the sitemaps to walk for one authority: the Sitemap
// lines of its robots.txt (resolved against authorityBase, http(s) only,
// duplicates removed, order kept) or, when there are none and tryDefault is
// set, authorityBase's /sitemap.xml. A crawler calls it once per authority,
// after the robots gate has fetched robots.txt, and passes the result to
// SitemapWalker.Walk with the robots.txt URL when the list came from it.
func SitemapURLs(authorityBase *url.URL, robotsSitemaps []string, tryDefault bool) []string {
	if authorityBase == nil {
		authorityBase = &url.URL{}
	}
	var out []string
	seen := make(map[string]bool)
	for _, s := range robotsSitemaps {
		u, err := authorityBase.Parse(strings.TrimSpace(s))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		if k := u.String(); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == 0 && tryDefault && authorityBase.Host != "" {
		out = append(out, (&url.URL{Scheme: authorityBase.Scheme, Host: authorityBase.Host, Path: "/sitemap.xml"}).String())
	}
	return out
}
