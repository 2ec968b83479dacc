package crawler

import (
	"context"
	"fmt"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
)

// Element is an HTML element an OnHTML selector matched: its tag,
// attributes and text, the page it is on, and the goquery selection for
// anything else.
type Element struct {
	// Name is the element's tag name, lower-case ("a", "div").
	Name string
	// Text is the element's text content with white space collapsed.
	Text string
	// Index is the element's position among the selector's matches on the
	// page.
	Index int
	// Page is the page the element is on.
	Page *Page
	// Selection is the element as a goquery selection.
	Selection *goquery.Selection
}

// Attr returns the value of the element's attribute name, or "".
func (e *Element) Attr(name string) string {
	v, _ := e.Selection.Attr(name)
	return v
}

// AbsURL resolves ref, a URL as written in the element (an href, a src),
// against the page's base URL, as a browser would; it returns "" if ref
// does not parse.
func (e *Element) AbsURL(ref string) string {
	u, err := e.Page.BaseURL().Parse(strings.TrimSpace(ref))
	if err != nil {
		return ""
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// Follow schedules ref, resolved against the page's base URL, as a link
// found on the page (see Page.Follow).
func (e *Element) Follow(ctx context.Context, ref string, meta map[string]string) error {
	return e.Page.Follow(ctx, ref, meta)
}

// Selector is a compiled CSS selector, for OnHTML. Make one with
// CompileSelector: a selector that does not compile is an error there,
// not an empty result later. The zero Selector matches no element.
type Selector struct {
	css   string
	match cascadia.Selector
}

// CompileSelector compiles css, a CSS selector group ("a.next",
// "h1, h2", "div#main > p"), for OnHTML. The error wraps the parser's.
func CompileSelector(css string) (Selector, error) {
	m, err := cascadia.Compile(css)
	if err != nil {
		return Selector{}, fmt.Errorf("crawler: CSS selector %q: %w", css, err)
	}
	return Selector{css: css, match: m}, nil
}

// String returns the selector as it was written.
func (s Selector) String() string { return s.css }

// htmlHandler is a callback of OnHTML with its selector.
type htmlHandler struct {
	sel Selector
	f   func(ctx context.Context, e *Element)
}

// OnHTML registers f to be called for every element of an HTML page that
// sel matches, in document order, after the OnPage handlers of the page:
// the colly-style way to scrape, for instance
//
//	next, err := crawler.CompileSelector("a.next")
//	if err != nil { ... }
//	c.OnHTML(next, func(ctx context.Context, e *crawler.Element) {
//		e.Follow(ctx, e.Attr("href"), nil)
//	})
//
// It is called for responses with a 2xx status only. A page nested too
// deeply for an HTML tree (over 512 open elements) has no elements to
// match; its links are still extracted. Handlers run like OnPage's: see
// there for concurrency and panics.
func (c *Crawler) OnHTML(sel Selector, f func(ctx context.Context, e *Element)) {
	c.register(func(h *hooks) { h.onHTML = append(h.onHTML, htmlHandler{sel: sel, f: f}) })
}

// OnScraped registers f to be called once for every page OnPage handlers
// get (any status), after all of them and every OnHTML callback of the
// page have returned: the place to act on what the page's OnHTML callbacks
// gathered, element by element — a count per page, a record made whole.
// Handlers run like OnPage's, on the same goroutine as the page's OnPage
// and OnHTML handlers: see there for concurrency and panics. (For a figure
// one query gives, OnPage with p.Document().Find(...) is enough.)
func (c *Crawler) OnScraped(f func(ctx context.Context, p *Page)) {
	c.register(func(h *hooks) { h.onScraped = append(h.onScraped, f) })
}

// runHTML calls the OnHTML handlers for page.
func (r *crawl) runHTML(ctx context.Context, page *Page) {
	handlers := r.hooks().onHTML
	if len(handlers) == 0 || !page.IsHTML() || page.Status < 200 || page.Status > 299 {
		return
	}
	doc, err := page.Document()
	if err != nil {
		r.log.Debug("crawler: no HTML tree for OnHTML", "url", page.URL.String(), "err", err)
		return
	}
	for _, h := range handlers {
		if h.sel.match == nil {
			continue // the zero Selector
		}
		doc.FindMatcher(h.sel.match).Each(func(i int, sel *goquery.Selection) {
			e := &Element{Index: i, Page: page, Selection: sel, Text: strings.Join(strings.Fields(sel.Text()), " ")}
			if n := sel.Get(0); n != nil && n.Type == html.ElementNode {
				e.Name = n.Data
			}
			r.safely(ctx, page.URL.String(), func() { h.f(ctx, e) })
		})
	}
}

// Follow schedules ref, found on p, from inside a running crawl: ref is
// resolved against p's base URL as a link on the page would be, gets one
// more depth than p and p as referrer, and goes through canonicalisation,
// dedup, scope, filters and robots.txt like any other link. meta, if not
// nil, travels with the URL to its Page.Meta — through a resumed crawl
// too.
func (p *Page) Follow(ctx context.Context, ref string, meta map[string]string) error {
	if p.run == nil {
		return ErrNotRunning
	}
	u, err := p.BaseURL().Parse(strings.TrimSpace(ref))
	if err != nil {
		p.run.stats.skipped(SkippedInvalid)
		return fmt.Errorf("crawler: following %q: %w", ref, err)
	}
	it := p.item.Child(u.String())
	it.Meta = meta
	return p.run.add(ctx, it, p.URL, true)
}
