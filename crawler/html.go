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

// htmlHandler is a callback of OnHTML with its compiled selector.
type htmlHandler struct {
	match cascadia.Selector
	f     func(ctx context.Context, e *Element)
}

// OnHTML registers f to be called for every element of an HTML page that
// the CSS selector matches, in document order, after the OnPage handlers
// of the page: the colly-style way to scrape, for instance
//
//	c.OnHTML("a.next", func(ctx context.Context, e *crawler.Element) {
//		e.Follow(ctx, e.Attr("href"), nil)
//	})
//
// It is called for responses with a 2xx status only. A selector that does
// not compile is an error here, not an empty result later. A page nested
// too deeply for an HTML tree (over 512 open elements) has no elements to
// match; its links are still extracted. Handlers run like OnPage's: see
// there for concurrency and panics.
func (c *Crawler) OnHTML(selector string, f func(ctx context.Context, e *Element)) error {
	m, err := cascadia.Compile(selector)
	if err != nil {
		return fmt.Errorf("%w: OnHTML selector %q: %w", ErrInvalidOption, selector, err)
	}
	c.mu.Lock()
	c.onHTML = append(c.onHTML, htmlHandler{match: m, f: f})
	c.mu.Unlock()
	return nil
}

// runHTML calls the OnHTML handlers for page.
func (r *crawl) runHTML(ctx context.Context, page *Page) {
	if len(r.onHTML) == 0 || !page.IsHTML() || page.Status < 200 || page.Status > 299 {
		return
	}
	doc, err := page.Document()
	if err != nil {
		r.log.Debug("crawler: no HTML tree for OnHTML", "url", page.URL.String(), "err", err)
		return
	}
	for _, h := range r.onHTML {
		doc.FindMatcher(h.match).Each(func(i int, sel *goquery.Selection) {
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
