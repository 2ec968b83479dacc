package render

import (
	"bytes"
	"sync"

	"github.com/PuerkitoBio/goquery"

	"github.com/heedcrawl/heed/fetch"
)

// Choice is what Adaptive says to do with a host's next page.
type Choice uint8

const (
	// Always: render the page; the host's pages are worth it.
	Always Choice = iota
	// Skip: use the static HTML; rendering the host adds nothing.
	Skip
	// Compare: render the page and report both versions with Observe.
	Compare
)

// Defaults used by the zero Adaptive.
const (
	DefaultProbes  = 2
	DefaultRecheck = 20
)

// Adaptive decides per host whether its pages are worth rendering: it has
// the first Probes pages of a host rendered and compared with their static
// HTML; a host where rendering found links or text the static HTML lacks
// is rendered from then on, any other is not; either way every Recheck-th
// page is compared again, and the host's choice follows that comparison.
// The zero value is ready to use. It is safe for concurrent use.
type Adaptive struct {
	// Probes is how many pages of a host are compared before it is
	// decided; zero means DefaultProbes.
	Probes int
	// Recheck: one page in Recheck is compared again; zero means
	// DefaultRecheck.
	Recheck int

	mu    sync.Mutex
	hosts map[string]*hostChoice
}

type hostChoice struct {
	pages    int  // pages chosen for
	compared int  // comparisons observed
	render   bool // rendering found something, at the last comparison
}

// Choose says what to do with the next page of host (a politeness key).
func (a *Adaptive) Choose(host string) Choice {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hosts == nil {
		a.hosts = make(map[string]*hostChoice)
	}
	h := a.hosts[host]
	if h == nil {
		h = new(hostChoice)
		a.hosts[host] = h
	}
	h.pages++
	switch {
	case h.pages <= or(a.Probes, DefaultProbes) && !h.render:
		return Compare
	case h.pages%or(a.Recheck, DefaultRecheck) == 0:
		return Compare
	case h.render:
		return Always
	}
	return Skip
}

// Observe reports a comparison Choose asked for: what the static HTML and
// the rendered DOM of one of host's pages held.
func (a *Adaptive) Observe(host string, static, rendered Measures) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.hosts[host]
	if h == nil {
		return
	}
	h.compared++
	h.render = rendered.Adds(static)
}

// Measures is what a version of a page holds that a crawl is after: its
// links and the length of its text.
type Measures struct {
	Links map[string]bool
	Text  int
}

// Measure reads p's links (the href of its anchors, as written) and the
// length of its text.
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
	doc.Find("script,style,noscript,template").Remove()
	m.Text = len(bytes.TrimSpace([]byte(doc.Text())))
	return m
}

// Adds reports whether m, a rendered version, holds what static lacks: a
// link, or a fifth more text (and at least 200 characters more).
func (m Measures) Adds(static Measures) bool {
	for l := range m.Links {
		if !static.Links[l] {
			return true
		}
	}
	return m.Text-static.Text >= max(200, static.Text/5)
}
