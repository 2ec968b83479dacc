package testweb

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// ErrNotInWeb is returned (wrapped) for a seed that is not a page of the web.
var ErrNotInWeb = errors.New("testweb: URL is not a page of this web")

// TruthOptions says what a crawl starts from and how far it may go.
type TruthOptions struct {
	// Seeds are the crawl's start URLs, in any spelling; nil means
	// Web.Seeds() (every home page).
	Seeds []string
	// SeedHostsOnly keeps the crawl on the seeds' hosts (scope "seeds").
	// Otherwise it follows links to every host of the web.
	SeedHostsOnly bool
	// NoSitemaps describes a crawler that does not read the sitemaps
	// listed in robots.txt; then no page is sitemap-only.
	NoSitemaps bool
}

// Truth is what a complete and polite crawl of the web from given seeds
// fetches and must not fetch. URLs are in canonical form (see Canonical) and
// sorted.
type Truth struct {
	// Seeds are the canonical seeds.
	Seeds []string
	// Reachable are the URLs a complete, polite crawler requests besides
	// robots.txt and sitemap files: pages reachable from the seeds by
	// followable links, redirects or sitemaps, and allowed by robots.txt.
	// Redirecting URLs (3xx) are included; trap pages are not.
	Reachable []string
	// SitemapOnly are the Reachable URLs that only sitemaps lead to.
	SitemapOnly []string
	// NofollowOnly are allowed pages linked only by rel="nofollow" anchors
	// or from pages with <meta name="robots" content="nofollow">.
	NofollowOnly []string
	// Disallowed are the URLs a crawler meets (in followable links,
	// sitemaps, redirects or seeds) but must not request: robots.txt
	// forbids them, or their host's robots.txt is unreachable (answers
	// 503, hangs, or the host refuses connections).
	Disallowed []string
	// NoIndex are the Reachable pages carrying a noindex meta robots tag.
	NoIndex []string
	// Trap is the URL of the spider trap's entry if the crawl meets it, else "".
	// Every URL with its prefix up to "/cal/" is a trap page.
	Trap string
	// Depth is the link depth of each Reachable URL: seeds 0, sitemap
	// entries 1, a link or redirect target one more than its source.
	Depth map[string]int
	// MaxDepth is the largest Depth.
	MaxDepth int
	// Requests is, per authority of every host the crawl meets, how many
	// requests a complete polite crawler makes: robots.txt (two for a
	// redirected robots.txt; none for HostRefused, whose connections fail
	// before any request), the three sitemap files, and its Reachable URLs
	// (twice each on the hosts whose pages fail once: the failure and the
	// retry).
	Requests map[string]int
	// Spellings maps a canonical URL to the other spellings it has in the
	// links of fetched pages, after resolution against the page (and its
	// <base href>) but before canonicalisation.
	Spellings map[string][]string

	web         *Web
	reachable   map[string]bool
	sitemapOnly map[string]bool
	nofollow    map[string]bool
}

type pageState struct {
	enqueued bool
	viaLink  bool // reached by a seed, a followable link or a redirect
}

// Truth computes the ground truth of a crawl of the web.
func (w *Web) Truth(opts TruthOptions) (*Truth, error) {
	seeds := opts.Seeds
	if seeds == nil {
		seeds = w.Seeds()
	}
	t := &Truth{
		web:         w,
		Depth:       make(map[string]int),
		Requests:    make(map[string]int),
		Spellings:   make(map[string][]string),
		reachable:   make(map[string]bool),
		sitemapOnly: make(map[string]bool),
		nofollow:    make(map[string]bool),
	}
	c := &truthCrawl{
		web:          w,
		opts:         opts,
		seedHosts:    make(map[*host]bool),
		states:       make(map[*page]*pageState),
		reachedHosts: make(map[*host]bool),
		disallowed:   make(map[*page]bool),
	}
	var seedPages []*page
	for _, s := range seeds {
		p, err := w.lookup(s)
		if err != nil {
			return nil, err
		}
		seedPages = append(seedPages, p)
		c.seedHosts[p.host] = true
		t.Seeds = append(t.Seeds, p.host.url(p.target))
	}
	for _, p := range seedPages {
		c.mark(p, true)
	}
	c.run(t)

	if err := t.addFetched(c.fetched, c.states); err != nil {
		return nil, err
	}
	t.addHostRequests(c.reachedHosts, opts)
	for p := range c.disallowed {
		t.Disallowed = append(t.Disallowed, p.host.url(p.target))
	}
	for _, p := range c.nofollowCand {
		u := p.host.url(p.target)
		if c.states[p] == nil && !w.disallowedTarget(p.host, p.target) && !t.nofollow[u] {
			t.nofollow[u] = true
			t.NofollowOnly = append(t.NofollowOnly, u)
		}
	}
	t.depths(seedPages, c.reachedHosts, opts)
	for _, s := range []*[]string{&t.Reachable, &t.SitemapOnly, &t.NofollowOnly, &t.Disallowed, &t.NoIndex} {
		slices.Sort(*s)
	}
	return t, nil
}

// truthCrawl is the polite crawl Truth plays out: pages in breadth-first
// order from the seeds, robots.txt obeyed, nofollow links not followed.
type truthCrawl struct {
	web          *Web
	opts         TruthOptions
	seedHosts    map[*host]bool
	states       map[*page]*pageState
	reachedHosts map[*host]bool
	queue        []*page

	fetched      []*page
	nofollowCand []*page // pages linked with nofollow, perhaps never reached
	disallowed   map[*page]bool
}

// mark queues p once, and the sitemaps of its host when it is the host's
// first page.
func (c *truthCrawl) mark(p *page, viaLink bool) {
	if c.opts.SeedHostsOnly && !c.seedHosts[p.host] {
		return
	}
	st := c.states[p]
	if st == nil {
		st = &pageState{}
		c.states[p] = st
	}
	st.viaLink = st.viaLink || viaLink
	if st.enqueued {
		return
	}
	st.enqueued = true
	c.queue = append(c.queue, p)
	if !c.reachedHosts[p.host] {
		c.reachedHosts[p.host] = true
		if !c.opts.NoSitemaps && p.host.hasSitemaps() {
			for _, sp := range p.host.sitemap {
				c.mark(sp, false)
			}
		}
	}
}

// run fetches the queued pages until none is left, noting the spider
// trap's URL in t.
func (c *truthCrawl) run(t *Truth) {
	for len(c.queue) > 0 {
		p := c.queue[0]
		c.queue = c.queue[1:]
		if c.web.disallowedTarget(p.host, p.target) {
			c.disallowed[p] = true
			continue
		}
		if p.kind == kindTrap {
			t.Trap = p.host.url(p.target)
			continue
		}
		c.fetched = append(c.fetched, p)
		if p.redirect != nil {
			c.mark(p.redirect, true)
		}
		for _, l := range p.links {
			if l.follow && !p.metaNofollow {
				c.mark(l.to, true)
			} else {
				c.nofollowCand = append(c.nofollowCand, l.to)
			}
		}
	}
}

// addFetched records the fetched pages: reachable, their requests, found
// through a sitemap only, noindex, and their links' spellings.
func (t *Truth) addFetched(fetched []*page, states map[*page]*pageState) error {
	for _, p := range fetched {
		u := p.host.url(p.target)
		t.reachable[u] = true
		t.Reachable = append(t.Reachable, u)
		t.Requests[p.host.authority]++
		if p.host.kind.pagesFailOnce() {
			t.Requests[p.host.authority]++
		}
		if !states[p].viaLink {
			t.sitemapOnly[u] = true
			t.SitemapOnly = append(t.SitemapOnly, u)
		}
		if p.noindex {
			t.NoIndex = append(t.NoIndex, u)
		}
		if err := t.addSpellings(p); err != nil {
			return err
		}
	}
	return nil
}

// addHostRequests counts the requests of each reached host beyond its
// pages: robots.txt and the sitemap files.
func (t *Truth) addHostRequests(reachedHosts map[*host]bool, opts TruthOptions) {
	for h := range reachedHosts {
		n := 1
		switch h.kind {
		case HostRobotsRedirect:
			n = 2
		case HostRefused:
			continue
		}
		if !opts.NoSitemaps && h.hasSitemaps() {
			n += 3
		}
		t.Requests[h.authority] += n
	}
}

// depths assigns link depths by breadth-first search over the fetched pages.
func (t *Truth) depths(seeds []*page, reachedHosts map[*host]bool, opts TruthOptions) {
	var cur []*page
	for _, p := range seeds {
		u := p.host.url(p.target)
		if _, ok := t.Depth[u]; !ok && t.reachable[u] {
			t.Depth[u] = 0
			cur = append(cur, p)
		}
	}
	visit := func(p *page, d int, next []*page) []*page {
		u := p.host.url(p.target)
		if _, ok := t.Depth[u]; ok || !t.reachable[u] {
			return next
		}
		t.Depth[u] = d
		t.MaxDepth = max(t.MaxDepth, d)
		return append(next, p)
	}
	for d := 0; len(cur) > 0; d++ {
		var next []*page
		if d == 0 && !opts.NoSitemaps {
			for h := range reachedHosts {
				for _, sp := range h.sitemap {
					next = visit(sp, 1, next)
				}
			}
		}
		for _, p := range cur {
			if p.redirect != nil {
				next = visit(p.redirect, d+1, next)
			}
			if p.metaNofollow {
				continue
			}
			for _, l := range p.links {
				if l.follow {
					next = visit(l.to, d+1, next)
				}
			}
		}
		cur = next
	}
}

func (t *Truth) addSpellings(p *page) error {
	base, err := url.Parse(p.host.url(p.target))
	if err != nil {
		return err
	}
	if p.base != "" {
		b, err := url.Parse(p.base)
		if err != nil {
			return err
		}
		base = base.ResolveReference(b)
	}
	for _, l := range p.links {
		ref, err := url.Parse(l.href)
		if err != nil {
			return err
		}
		raw := base.ResolveReference(ref).String()
		canon := l.to.host.url(l.to.target)
		if raw != canon && !slices.Contains(t.Spellings[canon], raw) {
			t.Spellings[canon] = append(t.Spellings[canon], raw)
		}
	}
	return nil
}

// lookup finds the page a URL (in any spelling) names.
func (w *Web) lookup(raw string) (*page, error) {
	c, err := Canonical(raw)
	if err != nil {
		return nil, err
	}
	rest := strings.TrimPrefix(c, "http://")
	authority, _, _ := strings.Cut(rest, "/")
	h := w.byAuthority[authority]
	if h == nil {
		return nil, fmt.Errorf("%w: %s (unknown host)", ErrNotInWeb, raw)
	}
	p := h.byTarget[rest[len(authority):]]
	if p == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotInWeb, raw)
	}
	return p, nil
}

// IdealMakespan is the shortest time a complete crawl can take while
// keeping a host's requests at least its delay apart (the larger of its
// Crawl-delay and minDelay) and one at a time: the busiest host's
// (requests − 1) × max(delay, latency) + latency, where on HostRateLimited
// each page's 429 is followed by its Retry-After instead. A hanging
// robots.txt costs what the crawler's header timeout does, which the truth
// cannot know: it counts as one response.
func (t *Truth) IdealMakespan(minDelay time.Duration) time.Duration {
	latency := t.web.cfg.Latency
	var ideal time.Duration
	for a, n := range t.Requests {
		h := t.web.byAuthority[a]
		gap := max(h.delay, minDelay, latency)
		d := time.Duration(n-1)*gap + latency
		if h.kind == HostRateLimited {
			d += time.Duration((n-1)/2) * max(RateLimitedRetryAfter+latency-gap, 0)
		}
		ideal = max(ideal, d)
	}
	return ideal
}

// IsReachable reports whether the URL (in any spelling) is in Reachable.
func (t *Truth) IsReachable(raw string) bool {
	c, err := Canonical(raw)
	return err == nil && t.reachable[c]
}
