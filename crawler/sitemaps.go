package crawler

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
)

// fetchSitemap reads one sitemap, sitemap index or feed and schedules what
// it lists: pages (Item.FromSitemap, counted against the host's sitemap
// URL budget) and nested sitemaps (one level deeper in SitemapDepth, not
// in Depth). The host rests from when the body has been read, not from
// the headers: a sitemap of 50 MiB is one long request. A revisiting
// crawl asks again every SitemapInterval, conditionally: the entries of a
// sitemap that changed are scheduled again, and the Store refuses those it
// has seen, so only the URLs the site added are new.
func (r *crawl) fetchSitemap(ctx context.Context, j *lease, u *url.URL) {
	req := fetch.Request{URL: j.URL, Depth: j.Depth, Referrer: j.Referrer, MaxBodySize: fetch.MaxSitemapBytes, RedirectChain: j.Redirects}
	if r.revisit != nil {
		req.Header = conditional(&j.Item)
	}
	w := r.requestStarting(ctx, j.Key, j.URL, false)
	p, body, err := r.fetcher.Stream(ctx, req)
	if err != nil {
		a := answer(0, nil, r.now().Sub(w.started), err)
		r.observe(j, a)
		r.pageAnswered(ctx, j, w, a, 0, 0, err)
		r.fetchFailed(ctx, j, fmt.Errorf("sitemap: %w", err), a.Failure, false)
		return
	}
	var status int
	var header http.Header
	if p != nil {
		status, header = p.Status, p.Header
	}
	var readErr error
	digest := fnv.New64a() // of the body as read, to tell a sitemap changed
	if body != nil {
		if status >= 200 && status <= 299 {
			readErr = r.readSitemap(ctx, j, u, io.TeeReader(body, digest))
		}
		io.Copy(io.Discard, io.LimitReader(body, 64<<10)) // let the connection be reused
		if err := body.Close(); errors.Is(err, fetch.ErrRecord) {
			r.fail(fmt.Errorf("crawler: recording %s: %w", j.URL, err))
		}
	}
	a := answer(status, header, r.now().Sub(w.started), nil)
	r.observe(j, a)
	r.pageAnswered(ctx, j, w, a, status, 0, nil)
	if r.revisit != nil && readErr == nil {
		r.revisited(j, p, digest.Sum64())
	}
	var target []frontier.Item
	switch {
	case p.Redirect != nil:
		target = r.redirectTarget(ctx, j, p)
	case p.NotModified():
	case status < 200 || status > 299:
		r.log.Info("crawler: sitemap skipped", "url", j.URL, "status", status)
	}
	var report func()
	if readErr != nil {
		report = func() { r.failed(ctx, j.URL, FailedSitemap, readErr) }
	}
	r.done(ctx, j, report, target)
}

// sitemapBatch is how many sitemap entries are scheduled at once.
const sitemapBatch = 500

// readSitemap parses body and schedules its entries until the page limit
// is reached. It returns why the document is not a sitemap or was read in
// part, if it was.
//
// A revisiting crawl also hands the <lastmod> of each page it lists that
// the crawl holds to the page's queued revisit (applyLastmods), once the
// whole sitemap is read: one edit of each key's queue per sitemap read.
func (r *crawl) readSitemap(ctx context.Context, j *lease, u *url.URL, body io.Reader) error {
	it := &j.Item
	opts := fetch.SitemapOptions{}
	if it.Referrer != "" {
		opts.RobotsURL = it.Referrer
	}
	var urls int64
	// Entries are scheduled in batches: one Store call (one round trip to
	// a shared Store) per sitemapBatch URLs, not per URL.
	var pages, nested []frontier.Item
	var claims *lastmods
	if r.revisit != nil {
		claims = &lastmods{read: r.now()}
	}
	flush := func() {
		r.addAll(ctx, nested, u, false)
		pages = r.filter(ctx, pages, u)
		if errs := r.addAll(ctx, pages, u, false); claims != nil {
			claims.note(r.fr, pages, errs)
		}
		pages, nested = pages[:0], nested[:0]
	}
	st, err := fetch.ParseSitemap(body, u, opts, func(e fetch.SitemapEntry) bool {
		if e.Sitemap {
			if it.SitemapDepth < r.cfg.maxSitemapNest {
				nested = append(nested, frontier.Item{URL: e.Loc, Kind: frontier.KindSitemap, SitemapDepth: it.SitemapDepth + 1, Referrer: it.Referrer})
			} else {
				r.stats.skipped(SkippedSitemapDepth)
			}
		} else {
			urls++
			pages = append(pages, frontier.Item{URL: e.Loc, Referrer: it.URL, Lastmod: e.Lastmod, Priority: float32(e.Priority), FromSitemap: true})
		}
		if len(pages)+len(nested) < sitemapBatch {
			return ctx.Err() == nil
		}
		flush()
		// With the page limit reached nothing more can be scheduled: stop
		// reading rather than refuse the rest of a 50,000-URL file.
		return ctx.Err() == nil && !r.fr.LimitReached()
	})
	flush()
	if claims != nil {
		r.applyLastmods(ctx, j, claims)
	}
	r.stats.update(func(s *Stats) {
		s.Sitemaps++
		s.SitemapURLs += urls
	})
	if err != nil {
		r.log.Info("crawler: sitemap read in part", "url", it.URL, "urls", st.URLs, "err", err)
	}
	return err
}
