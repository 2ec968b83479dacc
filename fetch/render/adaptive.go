package render

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/PuerkitoBio/goquery"

	"github.com/heedcrawl/heed/fetch"
)

// Choice is what Adaptive says to do with a page.
type Choice uint8

const (
	// Render the page: pages of its kind gain from rendering, or its kind
	// is not known yet and it looks like an application shell.
	Render Choice = iota
	// Skip rendering: pages of its kind gain nothing from it.
	Skip
	// Check: render a page predicted static, to learn whether pages of its
	// kind gain from rendering — the first of a new kind, and one in
	// Recheck of those skipped.
	Check
)

// Defaults used by the zero Adaptive.
const (
	DefaultProbes  = 2
	DefaultRecheck = 10
	// DefaultMaxKinds is about 10 MB of kinds, their keys included.
	DefaultMaxKinds = 100_000
)

// recentOutcomes is how many of a kind's last comparisons count: a kind
// is rendered while one of them gained.
const recentOutcomes = 3

// Adaptive predicts, page by page, whether rendering a page will find what
// its static HTML lacks. Pages are grouped in kinds: the same politeness
// key, the same URL shape (path segments holding digits and the last one
// replaced by a wildcard, the query's names), the same scripts loaded, and
// whether the static HTML looks like an application shell (an empty mount
// point, a <noscript> asking for JavaScript, or scripts with hardly a link
// or any text). A page that loads no script is never rendered: nothing in
// it could change it. Every rendered page is compared with its static HTML, and
// the comparison is the kind's outcome. A kind is rendered while one of
// its last three outcomes gained. A kind never compared is rendered when
// it looks like a shell, and otherwise has its first page checked —
// unless the key's other pages of the same look and scripts have been
// compared and gained nothing, which are then skipped. A shell-looking
// kind is skipped only after Probes comparisons gained nothing. One in
// Recheck skipped pages of a kind is checked, so a prediction that went
// stale is noticed. What Adaptive cannot see is a page that gains while
// the pages of its kind checked did not: the lower bound of what it can
// miss, which only a crawl rendering everything measures.
//
// The zero value is ready to use. It is safe for concurrent use.
type Adaptive struct {
	// Probes is how many comparisons of a shell-looking kind must gain
	// nothing before it is skipped; zero means DefaultProbes.
	Probes int
	// Recheck: one in Recheck skipped pages of a kind is checked; zero
	// means DefaultRecheck.
	Recheck int
	// Text counts text as a gain (see Measures.Adds); otherwise only links
	// do — what a crawl follows.
	Text bool
	// MaxKinds bounds how many kinds are remembered; zero means
	// DefaultMaxKinds. Past it, a kind chosen at random is forgotten and
	// learned again if its pages come back: a crawl of millions of hosts
	// keeps bounded memory at the cost of a few more renders.
	MaxKinds int

	mu    sync.Mutex
	kinds map[string]*kind
	stats AdaptiveStats
}

// AdaptiveStats are what an Adaptive chose and learned.
type AdaptiveStats struct {
	Rendered, Skipped, Checked int64 // choices made
	// Missed counts checks that gained: pages predicted static that
	// rendering showed were not. Missed/Checked estimates the share of
	// skipped pages that would have gained.
	Missed int64
}

// kind is what is known of a kind of pages, or of all a key's pages of one
// look and scripts.
type kind struct {
	observed int   // comparisons
	recent   uint8 // the last outcomes, newest in the lowest bit: 1 gained
	skipped  int   // pages skipped
}

func (k *kind) gainedRecently() bool { return k.recent&(1<<recentOutcomes-1) != 0 }

func (k *kind) observe(gained bool) {
	k.observed++
	k.recent <<= 1
	if gained {
		k.recent |= 1
	}
}

// kindKeys names the kind of page u of key whose static HTML measured m,
// and the wider class of the key's pages of its look and scripts.
func kindKeys(key string, u *url.URL, m Measures) (kindKey, classKey string) {
	look := "static"
	if m.ShellLike() {
		look = "shell"
	}
	classKey = key + " " + look + " " + strings.Join(m.Scripts, " ")
	return classKey + " " + template(u), classKey
}

// Choose says what to do with page u of key (a politeness key), whose
// static HTML measured static.
func (a *Adaptive) Choose(key string, u *url.URL, static Measures) Choice {
	kk, ck := kindKeys(key, u, static)
	a.mu.Lock()
	defer a.mu.Unlock()
	k, class := a.kind(kk), a.kind(ck)
	c := a.decide(k, class, static.ShellLike(), len(static.Scripts) == 0)
	switch c {
	case Render:
		a.stats.Rendered++
	case Check:
		a.stats.Checked++
	case Skip:
		a.stats.Skipped++
	}
	return c
}

// decide is Choose's choice for a page of kind k in class, shell-looking
// or not, loading scripts or none; called with mu held.
func (a *Adaptive) decide(k, class *kind, shell, noScripts bool) Choice {
	switch {
	case noScripts:
		// Nothing in the page can change it.
		return Skip
	case k.gainedRecently():
		return Render
	case k.observed >= or(a.Probes, DefaultProbes), k.observed > 0 && !shell:
		return a.skip(k)
	case shell:
		return Render
	case class.observed >= or(a.Probes, DefaultProbes) && !class.gainedRecently():
		return a.skip(k)
	}
	return Check
}

// skip skips a page of k, or checks one in Recheck; called with mu held.
func (a *Adaptive) skip(k *kind) Choice {
	k.skipped++
	if k.skipped%or(a.Recheck, DefaultRecheck) == 0 {
		return Check
	}
	return Skip
}

func (a *Adaptive) kind(key string) *kind {
	if a.kinds == nil {
		a.kinds = make(map[string]*kind)
	}
	k := a.kinds[key]
	if k == nil {
		if len(a.kinds) >= or(a.MaxKinds, DefaultMaxKinds) {
			for old := range a.kinds { // a map's order is random: a random victim
				delete(a.kinds, old)
				break
			}
		}
		k = new(kind)
		a.kinds[key] = k
	}
	return k
}

// Observe reports the render of page u of key that Choose chose c for:
// what its static HTML and its rendered DOM held. It reports whether
// rendering gained.
func (a *Adaptive) Observe(key string, u *url.URL, c Choice, static, rendered Measures) bool {
	gained := rendered.Adds(static, a.Text)
	kk, ck := kindKeys(key, u, static)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kind(kk).observe(gained)
	a.kind(ck).observe(gained)
	if c == Check && gained {
		a.stats.Missed++
	}
	return gained
}

// Stats returns what a has chosen and learned.
func (a *Adaptive) Stats() AdaptiveStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// template is u's path with the segments that vary from page to page of a
// kind — those holding digits, and the last — replaced by "*", and the
// names of its query: /blog/2024/my-post and /blog/2023/other are both
// /blog/*/*, /app/ stays /app/.
func template(u *url.URL) string {
	segs := strings.Split(u.EscapedPath(), "/")
	for i, s := range segs {
		if s != "" && (i == len(segs)-1 || strings.ContainsAny(s, "0123456789")) {
			segs[i] = "*"
		}
	}
	t := strings.Join(segs, "/")
	if q := u.Query(); len(q) > 0 {
		names := make([]string, 0, len(q))
		for n := range q {
			names = append(names, n)
		}
		slices.Sort(names)
		t += "?" + strings.Join(names, "&")
	}
	return t
}

// Measures is what a version of a page holds that a crawl is after — its
// links and the length of its text — and what tells an application shell
// from a page its server built.
type Measures struct {
	Links map[string]bool
	Text  int
	// Scripts lists the scripts the page loads (host and path, sorted,
	// "inline" for scripts written in the page).
	Scripts []string
	// Mount reports an element named as an application's mount point
	// (#app, #root, #__next…) holding hardly any text.
	Mount bool
	// NoscriptJS reports a <noscript> that mentions JavaScript.
	NoscriptJS bool
}

// mountPoints are the ids frameworks mount their applications on.
var mountPoints = "#app,#root,#__next,#__nuxt,#___gatsby,#svelte,#main-app,[data-reactroot],[ng-app],[ng-version]"

// Measure reads p's links (the href of its anchors, as written), the
// length of its text and the signs of an application shell.
func Measure(p *fetch.Page) Measures {
	m := Measures{Links: make(map[string]bool)}
	// A document of its own: the page's may be handed to handlers, which
	// must see its scripts.
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(p.Body))
	if err != nil {
		return m
	}
	doc.Find("a[href]").Each(func(_ int, s *goquery.Selection) {
		if h, ok := s.Attr("href"); ok {
			m.Links[h] = true
		}
	})
	m.Scripts = scripts(doc, p.URL)
	doc.Find("noscript").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		m.NoscriptJS = strings.Contains(strings.ToLower(s.Text()), "javascript")
		return !m.NoscriptJS
	})
	doc.Find("script,style,noscript,template").Remove()
	doc.Find(mountPoints).EachWithBreak(func(_ int, s *goquery.Selection) bool {
		m.Mount = len(strings.TrimSpace(s.Text())) < 100
		return !m.Mount
	})
	m.Text = len(bytes.TrimSpace([]byte(doc.Text())))
	return m
}

// scripts lists the scripts doc loads: their host and path, resolved
// against base, and "inline" for any written in the page; data blocks
// (JSON and the like) are not scripts.
func scripts(doc *goquery.Document, base *url.URL) []string {
	var out []string
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		if t, ok := s.Attr("type"); ok && t != "" && t != "module" && !strings.Contains(t, "javascript") {
			return
		}
		src, ok := s.Attr("src")
		if !ok {
			out = append(out, "inline")
			return
		}
		if u, err := url.Parse(src); err == nil && base != nil {
			u = base.ResolveReference(u)
			out = append(out, u.Host+u.EscapedPath())
		}
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// ShellLike reports whether the static HTML m measured looks like an
// application shell: scripts, and an empty mount point, a <noscript>
// asking for JavaScript, or hardly a link or any text.
func (m Measures) ShellLike() bool {
	return len(m.Scripts) > 0 && (m.Mount || m.NoscriptJS || (len(m.Links) <= 2 && m.Text < 400))
}

// Adds reports whether m, a rendered version, holds what static lacks: a
// link, or — when text counts — a fifth more text (and at least 200
// characters more).
func (m Measures) Adds(static Measures, text bool) bool {
	for l := range m.Links {
		if !static.Links[l] {
			return true
		}
	}
	return text && m.Text-static.Text >= max(200, static.Text/5)
}
