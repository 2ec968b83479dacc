package crawler

// Revisiting: keeping a crawled copy fresh (WithRevisit).

import (
	"net/http"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// RevisitPolicy decides when a page is fetched again. After each answer
// for a page the crawl holds, Schedule records the fetch f in the page's
// state p and its host's h, and returns when the page is next due. The
// crawler keeps the answer within Revisit's Min and Max of the fetch.
// *revisit.Default satisfies it; a custom policy keeps its state in the
// same two values, which the Store keeps: p in the page's
// frontier.Visit, h beside the host's pacing state
// (frontier.Lease.Revisiting), so that a resumed crawl, and every process
// of a shared one, goes on from them. Schedule may be called concurrently,
// each call with its own copies: with WithPerHost above one, two calls
// for one host may start from the same h, and the Store keeps the one
// ended last.
type RevisitPolicy interface {
	Schedule(h *revisit.Host, p *revisit.Page, f revisit.Fetch) time.Time
}

// Revisit configures revisiting (WithRevisit).
type Revisit struct {
	// Min and Max bound every page's interval between fetches: at least
	// Min, which must be positive, and at most Max, which must be at
	// least Min. A page gone (404, 410), or answering an error (403,
	// 5xx) or not at all, is asked again every Max.
	Min, Max time.Duration
	// Policy decides each page's next fetch within the bounds; nil is
	// revisit.NewDefault with the bounds, which learns each page's change
	// rate and spends each host's politeness budget where it keeps the
	// copy freshest (see package frontier/revisit).
	Policy RevisitPolicy
}

// GoneLimit is how many consecutive 404 or 410 answers a page may give
// before the crawl stops revisiting it (Stats.RevisitsDropped).
const GoneLimit = 3

// WithRevisit turns revisiting on: every page answered is queued again, to
// be fetched when rv.Policy says, conditionally (If-None-Match,
// If-Modified-Since) where the server sent validators. Revisits share each
// host's politeness budget with new URLs. Run then never runs out of work:
// it crawls until its context ends. Handlers learn what each fetch found
// from Page.Change and Page.Previous; a page that moved (3xx), was gone
// GoneLimit times in a row, or is now disallowed by robots.txt is no longer
// revisited. Sitemaps are read again every SitemapInterval, conditionally,
// for the URLs a site adds and for the <lastmod> of the pages held, which
// a LastmodPolicy weighs (with a Store that is a frontier.QueueEditor, as
// heed's three are).
func WithRevisit(rv Revisit) Option {
	return func(c *config) error {
		switch {
		case rv.Min <= 0:
			return invalid("WithRevisit", "Min must be positive, got %v (revisit.DefaultMinInterval is %v)", rv.Min, revisit.DefaultMinInterval)
		case rv.Max < rv.Min:
			return invalid("WithRevisit", "Max %v is below Min %v", rv.Max, rv.Min)
		}
		if rv.Policy == nil {
			d, err := revisit.NewDefault(revisit.Config{Bounds: revisit.Bounds{Min: rv.Min, Max: rv.Max}})
			if err != nil {
				return &OptionError{Option: "WithRevisit", Problem: err.Error(), Err: err}
			}
			rv.Policy = d
		}
		c.revisit = &rv
		return nil
	}
}

// ChangeKind says what a fetch found against the copy the crawl held
// (Page.Change).
type ChangeKind string

// What a fetch finds. ChangeKind is empty without WithRevisit, and for an
// answer that says nothing of the content (a 403 or a 5xx of a page held
// before: the held copy stays).
const (
	ChangeNew       ChangeKind = "new"       // the URL's first answer
	ChangeChanged   ChangeKind = "changed"   // content other than the held copy's (by content digest)
	ChangeUnchanged ChangeKind = "unchanged" // a 304, or a 200 with the held copy's digest
	ChangeGone      ChangeKind = "gone"      // 404 or 410
	ChangeMoved     ChangeKind = "moved"     // a redirect: the target is crawled as a new URL
)

// revisits is a crawl's revisit component. It keeps no state: each page's
// is its Visit, each host's its Lease.Revisiting, both in the Store.
type revisits struct {
	Revisit
}

func newRevisits(rv *Revisit) *revisits {
	if rv == nil {
		return nil
	}
	return &revisits{Revisit: *rv}
}

// conditional returns the headers that make a revisit of it conditional on
// the version held, nil if none.
func conditional(it *frontier.Item) http.Header {
	if it.Visit == nil {
		return nil
	}
	return fetch.Validators{ETag: it.Visit.ETag, LastModified: it.Visit.LastModified}.Header()
}

// classify says what p, the answer for a page held as held (nil for
// none), found against that copy; digest is p's content digest.
func classify(held *frontier.Visit, p *fetch.Page, digest uint64) ChangeKind {
	switch {
	case p.Redirect != nil:
		return ChangeMoved
	case p.Status == http.StatusNotFound || p.Status == http.StatusGone:
		return ChangeGone
	case held == nil:
		return ChangeNew
	case p.NotModified():
		return ChangeUnchanged
	case p.Status < 200 || p.Status > 299:
		return ""
	case digest == held.Digest:
		return ChangeUnchanged
	}
	return ChangeChanged
}

// fetched is what one answer for a page means for its revisits.
type fetched struct {
	change ChangeKind
	next   *frontier.Item // the item queued again, nil if it is not revisited
	saved  int64          // body bytes a 304 saved: the held version's
	drop   bool           // a page revisited so far is no longer
	host   bool           // the host's revisit state (the lease's) changed
}

// SitemapInterval is how often a revisiting crawl reads each sitemap
// again, within Revisit's Min and Max: daily, as robots.txt, which names
// them. A sitemap is read for the URLs a site adds, not kept fresh: it
// changes with every page it lists, and the policy would leave a page
// that changes so often at Max. A host's sitemaps are read more often
// while their <lastmod>s are weighed (revisit.Host's Sitemap trust): once
// in the host's uniform revisit interval (revisit.Host.Span) until
// enough of them were, so that trust is decided in a few intervals, and
// four times in it once they have proved true. One request then tells of
// every page the sitemap lists, which is worth more than the request it
// takes from the pages (the package frontier/revisit's simulations read a
// true sitemap so). Sitemaps found lying are read daily.
const SitemapInterval = 24 * time.Hour

// sitemapInterval is when a sitemap of a host in state h is next read
// after a read.
func sitemapInterval(h revisit.Host) time.Duration {
	span := time.Duration(h.Span * float64(time.Second))
	switch {
	case !(h.Span > 0):
		return SitemapInterval
	case h.Sitemap.Trusted():
		return min(SitemapInterval, span/4)
	case h.Sitemap.Undecided():
		return min(SitemapInterval, span)
	}
	return SitemapInterval
}

// after builds what follows the answer p, of content digest digest, to
// j's item, answered at: the new Visit, and when the item is next due —
// for a page, when the policy says, which records the fetch in
// j.Revisiting; for a sitemap, SitemapInterval later, or sooner for a
// host whose sitemaps proved true.
func (rv *revisits) after(j *lease, p *fetch.Page, digest uint64, delay time.Duration, at time.Time) fetched {
	held := j.Visit
	f := fetched{change: classify(held, p, digest)}
	if f.change == ChangeMoved {
		f.drop = held != nil
		return f
	}
	v := nextVisit(held, p, f.change, digest, at)
	if f.change == ChangeGone && v.Gone >= GoneLimit {
		f.drop = true
		return f
	}
	due := at.Add(rv.Max)
	switch f.change {
	case ChangeNew, ChangeChanged, ChangeUnchanged:
		if j.Kind == frontier.KindSitemap {
			due = at.Add(sitemapInterval(j.Revisiting))
			break
		}
		rf := revisit.Fetch{At: at, Changed: f.change == ChangeChanged, LastModified: p.Validators().LastModified, Delay: delay}
		if held != nil {
			rf.Prev, rf.Due = held.Fetched, j.Due
			if held.LastmodRead.After(held.Fetched) { // a sitemap read since
				rf.Lastmod, rf.LastmodRead = j.Lastmod, held.LastmodRead
			}
		}
		due = rv.Policy.Schedule(&j.Revisiting, &v.Estimator, rf)
		f.host = true
	}
	due = rv.bound(at, due)
	if p.NotModified() && held != nil {
		f.saved = held.Size
	}
	next := j.Item
	next.Retries, next.Due, next.Visit = 0, due, &v
	f.next = &next
	return f
}

// bound returns due kept within Min and Max of a fetch at fetched.
func (rv *revisits) bound(fetched, due time.Time) time.Time {
	if lo := fetched.Add(rv.Min); due.Before(lo) {
		return lo
	}
	if hi := fetched.Add(rv.Max); due.After(hi) {
		return hi
	}
	return due
}

// nextVisit is the Visit after the answer p, of content digest digest and
// found to be change, to a page held as held (nil for none), at at.
func nextVisit(held *frontier.Visit, p *fetch.Page, change ChangeKind, digest uint64, at time.Time) frontier.Visit {
	var v frontier.Visit
	if held != nil {
		v = *held
	}
	v.Fetched, v.Status = at, p.Status
	v.LastmodRead = time.Time{} // the sitemap's claim is spent on this fetch
	if change != ChangeGone {
		v.Gone = 0
	}
	switch change {
	case ChangeGone:
		v.Gone++
	case ChangeNew, ChangeChanged:
		v.Changed = at
		v.Digest, v.Size = digest, p.TransferSize
		v.ETag, v.LastModified = validators(p)
	case ChangeUnchanged:
		if p.NotModified() {
			// A 304 may update the validators of the version held.
			nv := p.Validators()
			if nv.ETag != "" {
				v.ETag = nv.ETag
			}
			if !nv.LastModified.IsZero() {
				v.LastModified = nv.LastModified
			}
		} else {
			v.Size = p.TransferSize
			v.ETag, v.LastModified = validators(p)
		}
	}
	return v
}

// validators returns p's validators as a Visit keeps them.
func validators(p *fetch.Page) (etag string, lastModified time.Time) {
	v := p.Validators()
	return v.ETag, v.LastModified
}

// revisitedPage classifies the answer page to j's item, tells the
// handlers through page what changed, counts it, and sets the item to
// queue again when j is done.
func (r *crawl) revisitedPage(j *lease, page *Page) {
	var digest uint64 // the one pass over the body: HTML is tokenised for it
	if !page.NotModified() && page.Redirect == nil {
		digest = page.Digest()
	}
	f := r.revisited(j, page.Page, digest)
	page.Change, page.Previous = f.change, j.Visit
	switch f.change {
	case ChangeNew, ChangeChanged, ChangeUnchanged:
		page.Held = f.next.Visit
	}
}

// revisited classifies the answer p, of content digest digest, to j's
// item (a page or a sitemap), counts it, and sets the item to queue again
// when j is done.
func (r *crawl) revisited(j *lease, p *fetch.Page, digest uint64) fetched {
	delay, _, _ := r.policy.Delay(j.Pace)
	f := r.revisit.after(j, p, digest, delay, j.answered)
	j.revisit = f.next
	j.revisited = f.host
	r.stats.update(func(s *Stats) {
		if j.Visit != nil {
			s.Revisits++
		}
		if f.change == ChangeChanged {
			s.RevisitChanges++
		}
		if p.NotModified() {
			s.NotModified++
		}
		s.BytesSaved += f.saved
		if f.drop {
			s.RevisitsDropped++
		}
	})
	return f
}

// keepRevisiting queues j's item again, its Visit as it was, a Max later,
// when a revisit of it failed: a page the crawl holds is not dropped for
// one timeout or refused connection.
func (r *crawl) keepRevisiting(j *lease) {
	if r.revisit == nil || j.Visit == nil {
		return
	}
	next := j.Item
	next.Retries, next.Due = 0, r.now().Add(r.revisit.Max)
	j.revisit = &next
}
