package testweb

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Paths with a fixed meaning on every host.
const (
	robotsPath         = "/robots.txt"
	robotsMovedPath    = "/config/robots.txt" // where HostRobotsRedirect's robots.txt redirects
	sitemapIndexPath   = "/sitemap_index.xml"
	sitemapGzipPath    = "/sitemaps/pages.xml.gz"
	sitemapTextPath    = "/sitemaps/more.txt"
	defaultSitemapPath = "/sitemap.xml" // probed by crawlers when robots.txt names no sitemap
	trapPrefix         = "/cal/"
	trapEntry          = "/cal/2025/01"
	defaultBodyBytes   = 1024
	minHostsForSpecial = 4
	// brokenSitePages is how many pages a broken host has at most: its
	// home page and two pages it links to; one on the hosts whose pages
	// fail once, where each costs a polite crawler a wait.
	brokenSitePages   = 3
	failOnceSitePages = 2
	// brokenTargets is how many URLs of a host whose robots.txt is
	// unreachable every healthy host's home page links to.
	brokenTargets = 3
)

// BrokenHosts is how many broken hosts a web of 4 or more hosts has beyond
// Config.Hosts unless Config.NoBrokenHosts: HostRobotsRetryDate,
// HostRobotsHang, HostRefused, HostRateLimited and HostResetting, in that
// order.
const BrokenHosts = 5

// Retry-After values of the web's hosts.
const (
	// UnavailableRetryAfter is what the robots.txt of HostRobotsUnavailable
	// (as "3600") and of HostRobotsRetryDate (as an HTTP-date) ask a
	// crawler to wait before asking again.
	UnavailableRetryAfter = time.Hour
	// RateLimitedRetryAfter is the Retry-After ("1") of HostRateLimited's
	// 429 answers.
	RateLimitedRetryAfter = time.Second
)

// ErrConfig is returned (wrapped) for a Config or host list that cannot make a web.
var ErrConfig = errors.New("testweb: invalid config")

// Config describes a synthetic web. The same Config and authorities always
// make the same web.
type Config struct {
	// Hosts is the number of hosts (at least 1) before the broken ones.
	// With 4 or more, the last three of them are the special robots
	// hosts: HostRobotsRedirect, HostRobotsNotFound and
	// HostRobotsUnavailable, in that order; and BrokenHosts more hosts
	// follow them unless NoBrokenHosts (see TotalHosts).
	Hosts int
	// PagesPerHost is the number of page slots per host (at least 1). About
	// 70% of the slots are pages a polite crawler fetches; the rest are
	// sitemap-only pages, nofollow-only pages and disallowed pages.
	PagesPerHost int
	// Latency is added before every response, robots.txt included.
	Latency time.Duration
	// CrawlDelay is the Crawl-delay line of every readable robots.txt;
	// zero writes none.
	CrawlDelay time.Duration
	// Trap adds a spider trap to the first host: an infinite calendar
	// under /cal/ linked from its home page.
	Trap bool
	// BodyBytes is the filler text per HTML page; zero means 1 KiB,
	// negative means none.
	BodyBytes int
	// Seed varies the random links and spellings.
	Seed uint64
	// NoBrokenHosts leaves out the broken hosts that a web of 4 or more
	// hosts has by default, after its Hosts: robots.txt answering 503
	// with an HTTP-date Retry-After, robots.txt hanging, connections
	// refused, pages answering 429, pages cut off by a reset (see
	// HostKind). Every healthy host's home page links to them.
	NoBrokenHosts bool
}

// TotalHosts is the number of hosts of the web cfg describes: Hosts, plus
// BrokenHosts when Hosts is 4 or more and NoBrokenHosts is false.
func (cfg Config) TotalHosts() int {
	if cfg.hasBroken() {
		return cfg.Hosts + BrokenHosts
	}
	return cfg.Hosts
}

func (cfg Config) hasBroken() bool { return cfg.Hosts >= minHostsForSpecial && !cfg.NoBrokenHosts }

// HostKind says how a host answers for its robots.txt and, for the broken
// hosts, for its pages.
type HostKind int

const (
	// HostNormal serves a robots.txt with rules, an optional Crawl-delay
	// and sitemaps.
	HostNormal HostKind = iota
	// HostRobotsUnavailable answers 503 with "Retry-After: 3600" for
	// robots.txt; under RFC 9309 a crawler must fetch nothing else from
	// it, though other hosts link to it, and ask for robots.txt again
	// only after an hour (UnavailableRetryAfter, or the crawler's cap on
	// any delay).
	HostRobotsUnavailable
	// HostRobotsNotFound answers 404 for robots.txt: everything is allowed,
	// including its /private/ pages, and it has no discoverable sitemaps.
	HostRobotsNotFound
	// HostRobotsRedirect redirects /robots.txt (301) to /config/robots.txt
	// on the same host, which holds the usual rules and sitemaps.
	HostRobotsRedirect
	// HostRobotsRetryDate is HostRobotsUnavailable with Retry-After as an
	// HTTP-date, an hour after the request.
	HostRobotsRetryDate
	// HostRobotsHang reads the request for robots.txt and never answers:
	// the response waits until the client goes away (or the web is
	// closed), past any crawler's header timeout. Unreachable, so
	// complete disallow.
	HostRobotsHang
	// HostRefused refuses every connection: Virtual's dialer refuses its
	// name with ECONNREFUSED, and on a Loopback web nothing listens on
	// its address. Its robots.txt is unreachable, so nothing may be
	// fetched; the server never sees a request.
	HostRefused
	// HostRateLimited serves a readable robots.txt (no sitemaps) and
	// answers the first request for each of its pages with 429 and
	// "Retry-After: 1" (RateLimitedRetryAfter); the next gets the page.
	// A complete crawler tries again, after the host's Retry-After.
	HostRateLimited
	// HostResetting serves a readable robots.txt (no sitemaps) and cuts
	// off the first response for each of its pages mid-body: the status
	// line, the headers and half of the body, then a TCP reset. The next
	// request gets the page. A complete crawler tries again.
	HostResetting
)

// RobotsUnreachable reports whether a crawler cannot read the robots.txt of
// a host of kind k: it answers 503, hangs, or the host refuses
// connections. RFC 9309 §2.3.1.4 makes that a complete disallow.
func (k HostKind) RobotsUnreachable() bool {
	switch k {
	case HostRobotsUnavailable, HostRobotsRetryDate, HostRobotsHang, HostRefused:
		return true
	}
	return false
}

// Broken reports whether hosts of kind k fail a crawler in a way it must
// survive without waiting on them: an unreachable robots.txt, or pages that
// fail on their first request.
func (k HostKind) Broken() bool {
	return k.RobotsUnreachable() || k == HostRateLimited || k == HostResetting
}

// healthy reports whether a crawler fetches pages of hosts of kind k and
// gets them at once: the hosts whose home pages link to the broken ones.
func (k HostKind) healthy() bool {
	return k == HostNormal || k == HostRobotsNotFound || k == HostRobotsRedirect
}

// pagesFailOnce reports whether the first request for each page of a host
// of kind k fails.
func (k HostKind) pagesFailOnce() bool { return k == HostRateLimited || k == HostResetting }

// String returns the kind's name.
func (k HostKind) String() string {
	switch k {
	case HostNormal:
		return "normal"
	case HostRobotsUnavailable:
		return "robots-503"
	case HostRobotsNotFound:
		return "robots-404"
	case HostRobotsRedirect:
		return "robots-redirect"
	case HostRobotsRetryDate:
		return "robots-503-date"
	case HostRobotsHang:
		return "robots-hang"
	case HostRefused:
		return "refused"
	case HostRateLimited:
		return "pages-429"
	case HostResetting:
		return "pages-reset"
	}
	return "HostKind(" + strconv.Itoa(int(k)) + ")"
}

// Host describes one host of the web.
type Host struct {
	Authority  string        // host[:port] as in its URLs, e.g. "h001.test" or "127.0.1.2:8080"
	Kind       HostKind      // how it answers for robots.txt (and, broken, for its pages)
	CrawlDelay time.Duration // the Crawl-delay its robots.txt states; 0 if none
	Sitemaps   bool          // its robots.txt lists a sitemap index
	// RetryAfter is how long its Retry-After asks a crawler to wait:
	// UnavailableRetryAfter after its robots.txt (HostRobotsUnavailable,
	// HostRobotsRetryDate), RateLimitedRetryAfter after a page
	// (HostRateLimited); 0 for the other kinds.
	RetryAfter time.Duration
}

// Web is a generated synthetic web: hosts, pages and links, robots.txt files
// and sitemaps. It is immutable and safe for concurrent use; Handler serves it.
type Web struct {
	cfg         Config
	hosts       []*host
	byAuthority map[string]*host
	filler      string
}

type host struct {
	index     int
	authority string
	kind      HostKind
	delay     time.Duration
	rules     []rule // nil allows everything
	robots    string // the robots.txt body, for kinds that serve one
	pages     []*page
	byTarget  map[string]*page
	linked    []*page // home and the pages of the link tree: targets for random links
	sitemap   []*page // pages listed in its sitemaps
	smIndex   []byte
	smGzip    []byte
	smText    []byte
}

func (h *host) hasSitemaps() bool { return h.kind == HostNormal || h.kind == HostRobotsRedirect }

func (h *host) url(target string) string { return "http://" + h.authority + target }

type pageKind uint8

const (
	kindHome         pageKind = iota
	kindPlain                 // /p/{k}
	kindQuery                 // /q?cat={c}&id={k}
	kindSitemapOnly           // /s/{k}: linked by nothing, listed in a sitemap
	kindOpen                  // /private/open/{k}: allowed by the longer Allow rule; has <base href="/">
	kindPrivate               // /private/{k}, /private/r{k}: disallowed
	kindNofollowOnly          // /nf/{k}: linked only by rel=nofollow or from a meta-nofollow page
	kindPDF                   // /files/{k}.pdf: disallowed by /*.pdf$
	kindPDFPage               // /files/{k}.pdf?page=2: allowed, "$" does not match
	kindRedirect              // /go/{k}: redirects to a disallowed page or to a landing page
	kindLanding               // /landing/{k}: reachable only through a redirect
	kindSorted                // /p/{k}?sort=asc: disallowed by /*?sort=
	kindTrap                  // /cal/2025/01: entry of the infinite calendar
)

type page struct {
	host         *host
	target       string // canonical path and query
	kind         pageKind
	k            int
	links        []link
	redirect     *page
	status       int // redirect status
	base         string
	metaNofollow bool
	noindex      bool
}

type link struct {
	href   string
	to     *page
	follow bool // false: rel="nofollow"
}

// isParent reports whether the page carries followable links of the link tree.
func (p *page) isParent() bool {
	switch p.kind {
	case kindHome, kindQuery, kindOpen:
		return true
	case kindPlain:
		return !p.metaNofollow
	}
	return false
}

// VirtualAuthorities returns n host names for a web served by name from one
// listener: "h000.test", "h001.test", … (port 80 implied).
func VirtualAuthorities(n int) []string {
	width := max(3, len(strconv.Itoa(n-1)))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("h%0*d.test", width, i)
	}
	return out
}

// New generates the web described by cfg whose hosts have the given
// authorities (host[:port], lower case, no default port), one per host:
// cfg.TotalHosts() of them, or cfg.Hosts, and then the broken hosts are
// named as VirtualAuthorities(cfg.TotalHosts()) names them.
func New(cfg Config, authorities []string) (*Web, error) {
	if cfg.Hosts < 1 || cfg.PagesPerHost < 1 {
		return nil, fmt.Errorf("%w: need at least 1 host and 1 page per host, got %d and %d", ErrConfig, cfg.Hosts, cfg.PagesPerHost)
	}
	total := cfg.TotalHosts()
	if len(authorities) == cfg.Hosts && total > cfg.Hosts {
		authorities = append(slices.Clone(authorities), VirtualAuthorities(total)[cfg.Hosts:]...)
	}
	if len(authorities) != total {
		return nil, fmt.Errorf("%w: %d authorities for %d hosts", ErrConfig, len(authorities), total)
	}
	if cfg.Latency < 0 || cfg.CrawlDelay < 0 {
		return nil, fmt.Errorf("%w: negative latency or crawl delay", ErrConfig)
	}
	w := &Web{cfg: cfg, byAuthority: make(map[string]*host, total)}
	bodyBytes := cfg.BodyBytes
	if bodyBytes == 0 {
		bodyBytes = defaultBodyBytes
	}
	w.filler = makeFiller(max(bodyBytes, 0))
	for i, a := range authorities {
		if c, err := Canonical("http://" + a + "/"); err != nil || c != "http://"+a+"/" {
			return nil, fmt.Errorf("%w: authority %q is not in canonical form", ErrConfig, a)
		}
		if w.byAuthority[a] != nil {
			return nil, fmt.Errorf("%w: authority %q twice", ErrConfig, a)
		}
		h := &host{index: i, authority: a, kind: HostNormal, byTarget: make(map[string]*page)}
		if cfg.Hosts >= minHostsForSpecial {
			switch {
			case i == cfg.Hosts-3:
				h.kind = HostRobotsRedirect
			case i == cfg.Hosts-2:
				h.kind = HostRobotsNotFound
			case i == cfg.Hosts-1:
				h.kind = HostRobotsUnavailable
			case i >= cfg.Hosts:
				h.kind = HostRobotsRetryDate + HostKind(i-cfg.Hosts)
			}
		}
		switch {
		case h.kind == HostNormal, h.kind == HostRobotsRedirect:
			h.delay = cfg.CrawlDelay
			h.rules = starRules
			h.robots = robotsTxt(h, cfg.CrawlDelay)
		case h.kind.pagesFailOnce():
			h.delay = cfg.CrawlDelay
			h.rules = brokenRules
			h.robots = brokenRobotsTxt(h, cfg.CrawlDelay)
		case h.kind.RobotsUnreachable():
			h.rules = disallowEverything
		}
		w.hosts = append(w.hosts, h)
		w.byAuthority[a] = h
	}
	for _, h := range w.hosts {
		w.makePages(h)
	}
	for _, h := range w.hosts {
		if h.index >= cfg.Hosts {
			continue // a broken host: a small site of its own
		}
		if err := w.makeLinks(h); err != nil {
			return nil, err
		}
	}
	for _, h := range w.hosts {
		if err := w.linkBroken(h); err != nil {
			return nil, err
		}
	}
	for _, h := range w.hosts {
		if h.hasSitemaps() {
			if err := makeSitemaps(h); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

func (w *Web) makePages(h *host) {
	add := func(p *page) *page {
		p.host = h
		h.pages = append(h.pages, p)
		h.byTarget[p.target] = p
		return p
	}
	home := add(&page{target: "/", kind: kindHome})
	h.linked = append(h.linked, home)
	if h.index >= w.cfg.Hosts {
		// A broken host: its home page links to its other pages, which
		// link back home.
		n := brokenSitePages
		if h.kind.pagesFailOnce() {
			n = failOnceSitePages
		}
		for k := 1; k < min(w.cfg.PagesPerHost, n); k++ {
			p := add(&page{target: "/p/" + strconv.Itoa(k), kind: kindPlain, k: k})
			h.linked = append(h.linked, p)
		}
		return
	}
	for k := 1; k < w.cfg.PagesPerHost; k++ {
		ks := strconv.Itoa(k)
		switch k % 10 {
		case 0, 2, 6:
			p := add(&page{target: "/p/" + ks, kind: kindPlain, k: k, metaNofollow: k%20 == 16})
			if k%10 == 2 {
				add(&page{target: "/p/" + ks + "?sort=asc", kind: kindSorted, k: k})
			}
			p.noindex = k%20 == 10
		case 1:
			add(&page{target: "/q?cat=" + strconv.Itoa(k%4) + "&id=" + ks, kind: kindQuery, k: k})
		case 3:
			add(&page{target: "/s/" + ks, kind: kindSitemapOnly, k: k})
		case 4:
			add(&page{target: "/private/open/" + ks, kind: kindOpen, k: k, base: "/"})
		case 5:
			add(&page{target: "/private/" + ks, kind: kindPrivate, k: k})
		case 7:
			add(&page{target: "/nf/" + ks, kind: kindNofollowOnly, k: k})
		case 8:
			add(&page{target: "/files/" + ks + ".pdf", kind: kindPDF, k: k})
			add(&page{target: "/files/" + ks + ".pdf?page=2", kind: kindPDFPage, k: k})
		case 9:
			r := add(&page{target: "/go/" + ks, kind: kindRedirect, k: k})
			if k%20 == 9 {
				r.status = 301
				r.redirect = add(&page{target: "/private/r" + ks, kind: kindPrivate, k: k})
			} else {
				r.status = 302
				r.redirect = add(&page{target: "/landing/" + ks, kind: kindLanding, k: k})
			}
		}
	}
	if w.cfg.Trap && h.index == 0 {
		add(&page{target: trapEntry, kind: kindTrap})
	}
}

// makeLinks builds a link tree (fan-out 3) over the host's linked pages so
// every one is reachable from home by followable links, then adds random
// same-host and cross-host links in varied spellings, nofollow links and
// links into disallowed paths.
func (w *Web) makeLinks(h *host) error {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(h.index)))
	var err error
	addLink := func(from, to *page, follow bool) {
		href := w.spell(rng, from, to)
		if err == nil {
			err = checkHref(from, to, href)
		}
		from.links = append(from.links, link{href: href, to: to, follow: follow})
	}
	home := h.pages[0]
	parents := []*page{home}
	children := 0
	for _, p := range h.pages {
		if !inLinkTree(p) {
			continue
		}
		par := parents[min(children/3, len(parents)-1)]
		children++
		addLink(par, p, true)
		if p.kind == kindPDF {
			addLink(par, h.byTarget[p.target+"?page=2"], true)
		}
		h.linked = append(h.linked, p)
		if p.isParent() {
			parents = append(parents, p)
		}
	}
	nofollowTarget := func(p *page) *page {
		return h.byTarget["/nf/"+strconv.Itoa(p.k+1)]
	}
	for _, p := range h.pages {
		switch {
		case p.kind == kindPlain && p.metaNofollow:
			// The anchor itself is plain; only the page's meta robots makes
			// it unfollowable.
			if nf := nofollowTarget(p); nf != nil {
				addLink(p, nf, true)
			}
			addLink(p, home, true)
			continue
		case p.kind == kindPlain && p.k%20 == 6:
			if nf := nofollowTarget(p); nf != nil {
				addLink(p, nf, false)
			}
		case p.kind == kindPlain && p.k%10 == 2:
			addLink(p, h.byTarget[p.target+"?sort=asc"], true)
		case p.kind == kindSitemapOnly || p.kind == kindNofollowOnly || p.kind == kindLanding:
			addLink(p, home, true)
			addLink(p, h.linked[rng.IntN(len(h.linked))], true)
			continue
		}
		if !p.isParent() {
			continue
		}
		for range 2 + rng.IntN(3) {
			addLink(p, h.linked[rng.IntN(len(h.linked))], true)
		}
		if n := w.cfg.Hosts; n > 1 {
			// Among the hosts before the broken ones, which linkBroken
			// links to.
			other := w.hosts[(h.index+1+rng.IntN(n-1))%n]
			addLink(p, other.linked[rng.IntN(len(other.linked))], true)
		}
	}
	if t := h.byTarget[trapEntry]; t != nil {
		addLink(home, t, true)
	}
	return err
}

// linkBroken adds the links that lead a crawler to the broken hosts and to
// the host whose robots.txt answers 503: every healthy host's home page
// links to their first pages (home and, for those that have them, two
// more), so a crawl meets several URLs of each and has to settle every one.
// A broken host's own pages link to each other. It runs once every link
// tree is built, with a random source of its own, so the rest of the web is
// the same with the broken hosts as without them.
func (w *Web) linkBroken(h *host) error {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(h.index)|1<<32))
	var err error
	addLink := func(from, to *page) {
		href := w.spell(rng, from, to)
		if err == nil {
			err = checkHref(from, to, href)
		}
		from.links = append(from.links, link{href: href, to: to, follow: true})
	}
	home := h.pages[0]
	if h.index >= w.cfg.Hosts {
		for _, p := range h.linked[1:] {
			addLink(home, p)
			addLink(p, home)
		}
		return err
	}
	if !h.kind.healthy() {
		return nil
	}
	for _, b := range w.hosts {
		if b == h || !b.kind.Broken() {
			continue
		}
		for _, p := range b.linked[:min(len(b.linked), brokenTargets)] {
			addLink(home, p)
		}
	}
	return err
}

func inLinkTree(p *page) bool {
	switch p.kind {
	case kindPlain, kindQuery, kindOpen, kindPDF, kindRedirect:
		return true
	case kindPrivate:
		return !strings.HasPrefix(p.target, "/private/r") // redirect targets are reached only by redirect
	}
	return false
}

// spell writes an href for a link from one page to another, choosing among
// the spellings a crawler must treat as the same URL.
func (w *Web) spell(rng *rand.Rand, from, to *page) string {
	abs := to.host.url(to.target)
	if from.host != to.host {
		switch rng.IntN(4) {
		case 0:
			return abs
		case 1:
			return abs + "#from-" + strconv.Itoa(from.host.index)
		case 2:
			return "http://" + strings.ToUpper(to.host.authority) + to.target
		default:
			return "//" + to.host.authority + to.target
		}
	}
	if to.kind != kindPlain && to.kind != kindQuery && to.kind != kindHome {
		switch rng.IntN(3) {
		case 0:
			return to.target
		case 1:
			return abs
		default:
			return relativeHref(from, to)
		}
	}
	switch rng.IntN(8) {
	case 0:
		return to.target
	case 1:
		return abs
	case 2:
		return to.target + "#sec" + strconv.Itoa(rng.IntN(9))
	case 3:
		// Percent-encode the last digit: "/p/17" → "/p/1%37".
		if n := len(to.target); n > 1 && to.target[n-1] >= '0' && to.target[n-1] <= '9' {
			return to.target[:n-1] + "%3" + to.target[n-1:]
		}
		return to.target + "?"
	case 4:
		if !strings.Contains(to.target, "?") {
			return to.target + "?"
		}
		return swapQuery(to.target)
	case 5:
		if strings.Contains(to.target, "?") {
			return swapQuery(to.target)
		}
		return relativeHref(from, to)
	case 6:
		return relativeHref(from, to)
	default:
		return "http://" + strings.ToUpper(to.host.authority) + to.target
	}
}

// swapQuery reverses the order of the query parameters.
func swapQuery(target string) string {
	path, query, _ := strings.Cut(target, "?")
	params := strings.Split(query, "&")
	for i, j := 0, len(params)-1; i < j; i, j = i+1, j-1 {
		params[i], params[j] = params[j], params[i]
	}
	return path + "?" + strings.Join(params, "&")
}

// relativeHref is a path-relative href from the page's base (its <base href>
// when it has one) to the target.
func relativeHref(from, to *page) string {
	base := from.target
	if from.base != "" {
		base = from.base
	}
	base, _, _ = strings.Cut(base, "?")
	dir := base[:strings.LastIndex(base, "/")+1]
	if rest, ok := strings.CutPrefix(to.target, dir); ok && rest != "" && !strings.Contains(rest, "/") && rest[0] != '?' && !strings.Contains(rest, ":") {
		return rest
	}
	rel := strings.Repeat("../", strings.Count(dir, "/")-1) + to.target[1:]
	if rel == "" || strings.HasPrefix(rel, "?") {
		rel = "./" + rel
	}
	return rel
}

// checkHref verifies that href, resolved as a browser would, names the
// target, so the web's ground truth matches its HTML.
func checkHref(from, to *page, href string) error {
	got, err := resolveHref(from, href)
	if err != nil {
		return err
	}
	want := to.host.url(to.target)
	if got != want {
		return fmt.Errorf("testweb: internal error: href %q on %s resolves to %s, want %s", href, from.host.url(from.target), got, want)
	}
	return nil
}

// resolveHref resolves href against the page (and its <base href>) and
// returns the canonical result.
func resolveHref(from *page, href string) (string, error) {
	base, err := url.Parse(from.host.url(from.target))
	if err != nil {
		return "", err
	}
	if from.base != "" {
		b, err := url.Parse(from.base)
		if err != nil {
			return "", err
		}
		base = base.ResolveReference(b)
	}
	ref, err := url.Parse(href)
	if err != nil {
		return "", err
	}
	return Canonical(base.ResolveReference(ref).String())
}

func makeSitemaps(h *host) error {
	var gz, txt []*page
	for _, p := range h.pages {
		if p.kind != kindSitemapOnly {
			continue
		}
		if p.k%20 == 3 {
			gz = append(gz, p)
		} else {
			txt = append(txt, p)
		}
	}
	// A linked page and a disallowed page are listed too: a crawler must
	// not fetch the first twice nor the second at all.
	gz = append(gz, h.pages[0])
	if priv := h.byTarget["/private/5"]; priv != nil {
		txt = append(txt, priv)
	}
	h.sitemap = append(append(h.sitemap, gz...), txt...)

	var xml bytes.Buffer
	xml.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	xml.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for _, p := range gz {
		xml.WriteString("  <url><loc>" + h.url(p.target) + "</loc></url>\n")
	}
	xml.WriteString("</urlset>\n")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(xml.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	h.smGzip = buf.Bytes()

	var text bytes.Buffer
	for _, p := range txt {
		text.WriteString(h.url(p.target) + "\n")
	}
	h.smText = text.Bytes()

	h.smIndex = []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n" +
		"  <sitemap><loc>" + h.url(sitemapGzipPath) + "</loc></sitemap>\n" +
		"  <sitemap><loc>" + h.url(sitemapTextPath) + "</loc></sitemap>\n" +
		"</sitemapindex>\n")
	return nil
}

func makeFiller(n int) string {
	words := []string{"polite", "crawler", "robots", "delay", "host", "queue", "sitemap", "link", "page", "fetch", "budget", "server"}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[(i*7+i/5)%len(words)])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// Config returns the configuration the web was made from.
func (w *Web) Config() Config { return w.cfg }

// Hosts returns the web's hosts in order.
func (w *Web) Hosts() []Host {
	out := make([]Host, len(w.hosts))
	for i, h := range w.hosts {
		out[i] = h.public()
	}
	return out
}

// Host returns the host with the given authority.
func (w *Web) Host(authority string) (Host, bool) {
	h := w.byAuthority[strings.ToLower(authority)]
	if h == nil {
		return Host{}, false
	}
	return h.public(), true
}

// HostOfKind returns the first host of the given kind; webs with fewer than
// four hosts have only HostNormal hosts, and only webs with broken hosts
// (see Config.TotalHosts) have the broken kinds.
func (w *Web) HostOfKind(kind HostKind) (Host, bool) {
	for _, h := range w.hosts {
		if h.kind == kind {
			return h.public(), true
		}
	}
	return Host{}, false
}

func (h *host) public() Host {
	return Host{Authority: h.authority, Kind: h.kind, CrawlDelay: h.delay, Sitemaps: h.hasSitemaps(), RetryAfter: h.retryAfter()}
}

// retryAfter is how long the host's Retry-After asks a crawler to wait.
func (h *host) retryAfter() time.Duration {
	switch h.kind {
	case HostRobotsUnavailable, HostRobotsRetryDate:
		return UnavailableRetryAfter
	case HostRateLimited:
		return RateLimitedRetryAfter
	}
	return 0
}

// Seeds returns the home page of every host, the usual seed list, broken
// hosts included.
func (w *Web) Seeds() []string {
	out := make([]string, len(w.hosts))
	for i, h := range w.hosts {
		out[i] = h.url("/")
	}
	return out
}

// Robots returns what the host answers for /robots.txt: the status and, for
// 200, the body. For HostRobotsRedirect it is 301 and the body served at the
// redirect's target; for HostRobotsHang and HostRefused, which never
// answer, the status is 0.
func (w *Web) Robots(authority string) (status int, body string, ok bool) {
	h := w.byAuthority[strings.ToLower(authority)]
	if h == nil {
		return 0, "", false
	}
	switch h.kind {
	case HostRobotsUnavailable, HostRobotsRetryDate:
		return 503, "", true
	case HostRobotsHang, HostRefused:
		return 0, "", true
	case HostRobotsNotFound:
		return 404, "", true
	case HostRobotsRedirect:
		return 301, h.robots, true
	}
	return 200, h.robots, true
}

// Disallowed reports whether the robots.txt of the URL's host forbids it to
// a crawler of any agent but "otherbot" (for which everything is disallowed).
// URLs of the hosts whose robots.txt is unreachable (HostKind.
// RobotsUnreachable) are all disallowed; URLs outside the web and robots.txt
// files themselves are not.
func (w *Web) Disallowed(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	c, err := Canonical(rawURL)
	if err != nil {
		return false
	}
	h := w.byAuthority[strings.ToLower(strings.TrimSuffix(u.Host, ":80"))]
	if h == nil {
		return false
	}
	target := c[len("http://")+len(h.authority):]
	return w.disallowedTarget(h, target)
}

func (w *Web) disallowedTarget(h *host, target string) bool {
	if target == robotsPath || h.kind == HostRobotsRedirect && target == robotsMovedPath {
		return false
	}
	return !allowed(h.rules, target)
}
