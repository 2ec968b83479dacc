package crawler

// A sitemap's <lastmod> as evidence for the revisits of the pages it
// lists.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// LastmodPolicy is a RevisitPolicy that also weighs a sitemap's <lastmod>
// for a page the crawl holds. When a revisiting crawl reads a sitemap
// again, Claim is asked, for each page it lists that waits to be
// revisited, when the page is due now that the sitemap, read at read,
// claims it last changed at lastmod: prev is when the page was fetched,
// due when it is due so far, h its host's revisit state as the sitemap's
// lease had it (the zero Host for a page of another host) and p its
// state. The crawler keeps the answer within Revisit's Min and Max of
// prev. The claim then reaches Schedule at the page's next fetch, as
// revisit.Fetch.Lastmod. *revisit.Default satisfies it; a RevisitPolicy
// that does not leaves each page's due time as it is.
type LastmodPolicy interface {
	RevisitPolicy
	Claim(h revisit.Host, p revisit.Page, prev, due, lastmod, read time.Time) time.Time
}

// lastmods collects, while a revisiting crawl reads a sitemap, the
// <lastmod> of each page it lists that the crawl holds already — whose
// Add was refused with frontier.ErrSeen —, by politeness key and
// canonical URL.
type lastmods struct {
	read  time.Time
	byKey map[string]map[string]time.Time
}

// note records the <lastmod> of each of pages refused as seen (errs[i]
// is pages[i]'s answer).
func (m *lastmods) note(fr *frontier.Frontier, pages []frontier.Item, errs []error) {
	for i, err := range errs {
		it := pages[i]
		if it.Lastmod.IsZero() || !errors.Is(err, frontier.ErrSeen) || fr.Identify(&it) != nil {
			continue
		}
		if m.byKey == nil {
			m.byKey = map[string]map[string]time.Time{}
		}
		urls := m.byKey[it.Key]
		if urls == nil {
			urls = map[string]time.Time{}
			m.byKey[it.Key] = urls
		}
		urls[it.URL] = it.Lastmod
	}
}

// applyLastmods hands what m collected from the sitemap of lease j to the
// queued revisits of the pages it names (Frontier.EditQueued). A Store
// that cannot edit its queue leaves the claims unused; one that fails
// ends the crawl.
func (r *crawl) applyLastmods(ctx context.Context, j *lease, m *lastmods) {
	for key, urls := range m.byKey {
		var h revisit.Host
		if key == j.Key {
			h = j.Revisiting
		}
		n, err := r.fr.EditQueued(ctx, key, r.revisit.lastmodEdit(h, urls, m.read))
		r.stats.update(func(s *Stats) { s.SitemapLastmods += int64(n) })
		switch {
		case err == nil:
		case errors.Is(err, errors.ErrUnsupported):
			r.log.Debug("crawler: the store cannot take sitemap <lastmod>s", "err", err)
			return
		case errors.Is(err, frontier.ErrEdit): // the policy's due time is beyond the Store
			r.log.Warn("crawler: sitemap <lastmod>s not kept", "key", key, "err", err)
		case errors.Is(err, frontier.ErrStore):
			r.fail(fmt.Errorf("crawler: sitemap <lastmod>s of %s: %w", key, err))
			return
		default: // the crawl is ending
			return
		}
	}
}

// lastmodEdit returns the edit that gives each queued revisit of a page in
// lastmods (by canonical URL) the <lastmod> a sitemap read at read claims
// for it, and, with a LastmodPolicy, the due time the policy makes of it
// for a host in state h.
func (rv *revisits) lastmodEdit(h revisit.Host, lastmods map[string]time.Time, read time.Time) func(*frontier.Item) bool {
	lp, _ := rv.Policy.(LastmodPolicy)
	return func(it *frontier.Item) bool {
		lastmod, ok := lastmods[it.URL]
		if !ok || it.Kind != frontier.KindPage || it.Visit == nil {
			return false
		}
		it.Lastmod, it.Visit.LastmodRead = lastmod, read
		if lp == nil {
			return true
		}
		v := it.Visit
		if due := lp.Claim(h, v.Estimator, v.Fetched, it.Due, lastmod, read); !due.Equal(it.Due) {
			it.Due = rv.bound(v.Fetched, due)
		}
		return true
	}
}
