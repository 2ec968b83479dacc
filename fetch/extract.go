package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
)

// DefaultMaxLinkText bounds Link.Text, in runes, when HTMLExtractor.MaxTextLen
// is zero.
const DefaultMaxLinkText = 256

// ErrExtractorPanic is wrapped by the error Registry.Extract returns when an
// extractor panicked. The error holds the panic value (wrapped, if it is an
// error) and the extractor's stack; the other extractors' links are still
// returned.
var ErrExtractorPanic = errors.New("fetch: extractor panicked")

// Link is a URL found on a page.
type Link struct {
	// URL is absolute, http or https, with the fragment removed, as
	// Registry.Extract returns it. An Extractor may return it relative:
	// Registry.Extract resolves it against the page's URL.
	URL string
	// Tag is the element the link came from: "a", "area", "link",
	// "iframe", "frame", or whatever a custom extractor reports.
	Tag string
	// Rel is the element's rel attribute, lower-cased, or empty.
	Rel string
	// Text is the anchor text (whitespace collapsed, bounded length), the
	// alt text of an <area> or of an image inside the anchor, or empty.
	Text string
	// Nofollow reports that robots directives forbid following the link:
	// rel="nofollow", "ugc" or "sponsored", or a page-level nofollow.
	Nofollow bool
}

// Extractor finds links in a fetched page. The crawler calls it for every
// page whose content type it is registered for, and enqueues the links.
// Links may be relative: Registry.Extract resolves them against the page's
// URL (not its <base href>, which only the markup's own extractors read;
// Page.BaseURL gives it), removes fragments and drops links that are not
// http or https.
type Extractor interface {
	Extract(ctx context.Context, p *Page) ([]Link, error)
}

// ExtractorFunc adapts a function to the Extractor interface.
type ExtractorFunc func(ctx context.Context, p *Page) ([]Link, error)

// Extract calls f(ctx, p).
func (f ExtractorFunc) Extract(ctx context.Context, p *Page) ([]Link, error) { return f(ctx, p) }

// Registry runs the extractors registered for a page's media type and merges
// their links. It is itself an Extractor, the one a crawler normally uses.
//
// The zero value has no extractors; NewRegistry has the default HTML one.
// A Registry is safe for concurrent use.
type Registry struct {
	// MaxLinks bounds the links Extract returns for one page, custom
	// extractors' included; links past it are dropped and counted (see
	// ExtractLimited). The built-in extractors stop collecting at the
	// bound, so a page of a million links costs little more than its
	// body. Zero means DefaultMaxLinks, negative means no bound. Set it
	// before first use.
	MaxLinks int

	mu     sync.RWMutex
	byType map[string][]Extractor
}

// NewRegistry returns a Registry with HTMLExtractor registered for
// text/html and application/xhtml+xml.
func NewRegistry() *Registry {
	r := &Registry{}
	r.Register("text/html", HTMLExtractor{})
	r.Register("application/xhtml+xml", HTMLExtractor{})
	return r
}

// Register adds e for mediaType, after any extractors already registered
// for it. mediaType is an exact type ("application/json"), a type with any
// subtype ("text/*") or "*/*" for every page.
func (r *Registry) Register(mediaType string, e Extractor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byType == nil {
		r.byType = make(map[string][]Extractor)
	}
	mt := strings.ToLower(strings.TrimSpace(mediaType))
	r.byType[mt] = append(r.byType[mt], e)
}

// Set replaces the extractors registered for mediaType (exactly that key)
// with es; with no es it removes them. Use it to replace the default HTML
// extractor.
func (r *Registry) Set(mediaType string, es ...Extractor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	mt := strings.ToLower(strings.TrimSpace(mediaType))
	if len(es) == 0 {
		delete(r.byType, mt)
		return
	}
	if r.byType == nil {
		r.byType = make(map[string][]Extractor)
	}
	r.byType[mt] = slices.Clone(es)
}

// Extractors returns the extractors that run for a page of mediaType: those
// registered for the exact type, then for "type/*", then for "*/*".
func (r *Registry) Extractors(mediaType string) []Extractor {
	r.mu.RLock()
	defer r.mu.RUnlock()
	mt := strings.ToLower(mediaType)
	typ, _, _ := strings.Cut(mt, "/")
	var out []Extractor
	out = append(out, r.byType[mt]...)
	if typ+"/*" != mt {
		out = append(out, r.byType[typ+"/*"]...)
	}
	if mt != "*/*" {
		out = append(out, r.byType["*/*"]...)
	}
	return out
}

// Extract runs every extractor for p's media type and returns their links
// merged: absolute http(s) URLs without fragment (relative ones resolved
// against the page URL, others dropped), each URL once, in order of first
// appearance, followable if any occurrence was, at most MaxLinks of them. Links that robots directives
// forbid following are dropped unless p.Policy.ReturnNofollow is set.
// Redirects and Filtered pages yield nothing.
//
// If some extractors fail, the links of the others are still returned,
// together with the errors joined.
func (r *Registry) Extract(ctx context.Context, p *Page) ([]Link, error) {
	links, _, err := r.ExtractLimited(ctx, p)
	return links, err
}

// ExtractLimited is Extract, also reporting how many links were dropped
// because the page had more than MaxLinks. Links met once the bound is
// reached are not resolved, so the count is close but not exact: a
// relative link repeating one already kept counts as dropped.
func (r *Registry) ExtractLimited(ctx context.Context, p *Page) (links []Link, dropped int, err error) {
	if p.Redirect != nil || p.Filtered {
		return nil, 0, nil
	}
	s := newLinkSet(limit(r.MaxLinks), p.Policy.ReturnNofollow)
	var errs []error
	for _, e := range r.Extractors(p.ContentType) {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := collect(ctx, e, p, s); err != nil {
			errs = append(errs, fmt.Errorf("fetch: extracting links from %s: %w", p.URL, err))
		}
	}
	return s.links, s.dropped, errors.Join(errs...)
}

// limit turns a MaxLinks field into a bound: zero is DefaultMaxLinks,
// negative is none (-1).
func limit(max int) int {
	switch {
	case max == 0:
		return DefaultMaxLinks
	case max < 0:
		return -1
	}
	return max
}

// linkCollector is an extractor that adds its links straight into a
// Registry's set, so that the bound limits its work and memory rather
// than trimming its result.
type linkCollector interface {
	collect(ctx context.Context, p *Page, s *linkSet) error
}

// collect runs e for p and adds its links to s. A panic in e becomes an
// error: extractors are user code run on hostile input, and one bad page
// must not end the crawl.
func collect(ctx context.Context, e Extractor, p *Page, s *linkSet) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if verr, ok := v.(error); ok {
				err = fmt.Errorf("%w: %w\n%s", ErrExtractorPanic, verr, debug.Stack())
			} else {
				err = fmt.Errorf("%w: %v\n%s", ErrExtractorPanic, v, debug.Stack())
			}
		}
	}()
	if c, ok := e.(linkCollector); ok {
		return c.collect(ctx, p, s)
	}
	links, err := e.Extract(ctx, p)
	if len(links) == 0 {
		return err
	}
	pageNofollow := p.Directives().Nofollow
	base := documentBase(p.URL, "")
	for _, l := range links {
		l.Nofollow = l.Nofollow || pageNofollow || (!p.Policy.IgnoreRel && relForbidsFollow(l.Rel))
		if s.full() && !s.has(l.URL, l.Nofollow) {
			if !l.Nofollow || s.keepNofollow {
				s.dropPastCap([]byte(l.URL))
			}
			continue
		}
		// Resolved here, where the page URL is known, so every caller gets
		// absolute http(s) URLs: a relative link may well contain "://"
		// in its query.
		u, ok := resolveLink(base, l.URL)
		if !ok {
			continue
		}
		l.URL = u
		s.add(l)
	}
	return err
}

// HTMLExtractor is the default extractor for HTML: it collects a[href],
// area[href], link[href] with rel alternate, next, prev or canonical,
// iframe[src] and frame[src], resolves them against <base href> and the
// page URL, and drops everything that is not http or https (javascript:,
// mailto:, tel:, data:, ...) as well as fragment-only links. Links are
// marked Nofollow according to the page's directives.
//
// It reads the markup's tokens, not a parse tree: there is no nesting
// limit (the tree parser drops a page nested deeper than 512 elements),
// and no tree is built unless someone asks for Page.Document. Elements
// inside <template> are inert and skipped; a <frame> counts only in a
// <frameset> the parser would accept.
//
// The zero value is ready to use.
type HTMLExtractor struct {
	// MaxTextLen bounds Link.Text in runes; zero means DefaultMaxLinkText.
	MaxTextLen int
	// MaxLinks bounds the links Extract returns; past it, links are not
	// even resolved. Zero means DefaultMaxLinks when Extract is called
	// directly and no bound of its own under a Registry, whose MaxLinks
	// applies; negative means no bound.
	MaxLinks int
}

// Extract implements Extractor. Links that must not be followed are
// returned too, marked Nofollow.
func (e HTMLExtractor) Extract(ctx context.Context, p *Page) ([]Link, error) {
	s := newLinkSet(limit(e.MaxLinks), true)
	err := e.collectOwn(ctx, p, s, -1)
	return s.links, err
}

func (e HTMLExtractor) collect(ctx context.Context, p *Page, s *linkSet) error {
	own := -1
	if e.MaxLinks > 0 {
		own = e.MaxLinks
	}
	return e.collectOwn(ctx, p, s, own)
}

// collectOwn adds the page's links to s, at most own new ones (negative:
// no bound but s's).
func (e HTMLExtractor) collectOwn(ctx context.Context, p *Page, s *linkSet, own int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	pageNofollow := p.Directives().Nofollow
	if pageNofollow && !s.keepNofollow {
		return nil
	}
	maxText := e.MaxTextLen
	if maxText <= 0 {
		maxText = DefaultMaxLinkText
	}
	ignoreRel := p.Policy.IgnoreRel
	base := newLinkResolver(documentBase(p.URL, p.outline().baseHref))
	added := 0
	scanLinks(p.Body, maxText, func(r *rawLink) bool {
		nofollow := pageNofollow || (!ignoreRel && relBytesForbidFollow(r.rel))
		if nofollow && !s.keepNofollow {
			return true
		}
		if s.full() || (own >= 0 && added >= own) {
			s.dropPastCap(r.href)
			return true
		}
		u, ok := base.resolve(r.href)
		if !ok || s.has(u, nofollow) {
			return true
		}
		l := Link{URL: u, Tag: r.tag, Rel: normRelBytes(r.rel), Nofollow: nofollow}
		if len(r.text) > 0 {
			l.Text = string(r.text)
		}
		if s.add(l) {
			added++
		}
		return true
	})
	return nil
}

// documentBase is the URL relative links resolve against: the first
// <base href>, itself resolved against the page URL, if it is usable.
func documentBase(pageURL *url.URL, baseHref string) *url.URL {
	if pageURL == nil {
		pageURL = &url.URL{}
	}
	if baseHref == "" {
		return pageURL
	}
	b, err := pageURL.Parse(cleanHref(baseHref))
	if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
		return pageURL
	}
	return b
}

// cleanHref does what browsers do to an attribute before URL parsing: strip
// leading and trailing ASCII whitespace and remove tabs and newlines.
func cleanHref(s string) string {
	s = strings.Trim(s, " \t\n\f\r")
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}
	return s
}

// resolveLink turns an href into an absolute http(s) URL without fragment,
// or reports that the link is not one a crawler can follow.
func resolveLink(base *url.URL, href string) (string, bool) {
	href = cleanHref(href)
	if href == "" || href[0] == '#' {
		return "", false
	}
	u, err := base.Parse(href)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), true
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val, true
		}
	}
	return "", false
}

func normRel(n *html.Node) string {
	rel, _ := attr(n, "rel")
	return normRelBytes([]byte(rel))
}

// normRelBytes lower-cases a rel attribute and collapses its whitespace.
func normRelBytes(rel []byte) string {
	if len(rel) == 0 {
		return ""
	}
	return strings.Join(strings.Fields(strings.ToLower(string(rel))), " ")
}

// followableLinkRel reports whether a <link> leads to another page worth
// crawling (an alternate version, the next or previous page of a series,
// the canonical URL) rather than to a resource such as a stylesheet.
func followableLinkRel(rel string) bool {
	ok := false
	for tok := range strings.FieldsSeq(rel) {
		switch tok {
		case "alternate", "next", "prev", "previous", "canonical":
			ok = true
		case "stylesheet", "icon":
			return false
		}
	}
	return ok
}

// nodeText collects an element's text with whitespace collapsed, stopping
// once max runes are gathered; script and style content is skipped. Without
// text it falls back to the alt text of an image inside.
func nodeText(n *html.Node, max int) string {
	// Most anchors hold one text node: no traversal, no builder.
	if c := n.FirstChild; c != nil && c.NextSibling == nil && c.Type == html.TextNode {
		return boundText(c.Data, max)
	}
	var b strings.Builder
	count := 0
	space := false
	alt := ""
	c := n.FirstChild
	for c != nil && count < max {
		descend := false
		switch c.Type {
		case html.TextNode:
			for _, r := range c.Data {
				if unicode.IsSpace(r) {
					space = true
					continue
				}
				if space && count > 0 {
					b.WriteByte(' ')
					if count++; count >= max {
						break
					}
				}
				space = false
				b.WriteRune(r)
				if count++; count >= max {
					break
				}
			}
		case html.ElementNode:
			switch c.Data {
			case "script", "style", "template":
			case "br", "p", "div", "li", "td", "th", "tr", "h1", "h2", "h3", "h4", "h5", "h6":
				space = true // block boundaries separate words when rendered
				descend = true
			case "img":
				if alt == "" {
					alt, _ = attr(c, "alt")
				}
			default:
				descend = true
			}
		}
		c = nextNode(c, n, descend)
	}
	if b.Len() == 0 {
		return boundText(alt, max)
	}
	return strings.TrimRight(b.String(), " ")
}

// boundText collapses whitespace and keeps at most max runes.
func boundText(s string, max int) string {
	if !cleanText(s) {
		s = strings.Join(strings.Fields(s), " ")
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	i := 0
	for n := 0; n < max; n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return strings.TrimSpace(s[:i])
}

// cleanText reports whether s is ASCII-spaced text without leading,
// trailing or repeated whitespace, so collapsing it would change nothing.
func cleanText(s string) bool {
	prevSpace := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			if prevSpace {
				return false
			}
			prevSpace = true
		case c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c >= 0x80:
			return false // may be whitespace; let strings.Fields decide
		default:
			prevSpace = false
		}
	}
	return !prevSpace || s == ""
}

// selectorExtractor is the Extractor SelectorExtractor builds.
type selectorExtractor struct {
	sel cascadia.Selector
}

// baseHrefSelector is compiled once; goquery's Find would compile it per page.
var baseHrefSelector = cascadia.MustCompile("base[href]")

// SelectorExtractor returns an Extractor that takes links from the elements
// matching a CSS selector, for instance "a.next, .product a" to follow only
// pagination and product links. For each matching element it uses its href
// (or src) attribute; an element with neither contributes the a[href] and
// area[href] inside it. Links are resolved and filtered like HTMLExtractor's.
// The selector is checked here, so a typo is an error, not an empty result.
func SelectorExtractor(selector string) (Extractor, error) {
	sel, err := cascadia.Compile(selector)
	if err != nil {
		return nil, fmt.Errorf("fetch: selector %q: %w", selector, err)
	}
	return selectorExtractor{sel: sel}, nil
}

// Extract implements Extractor. Links that must not be followed are
// returned too, marked Nofollow.
func (s selectorExtractor) Extract(ctx context.Context, p *Page) ([]Link, error) {
	set := newLinkSet(DefaultMaxLinks, true)
	err := s.collect(ctx, p, set)
	return set.links, err
}

func (s selectorExtractor) collect(ctx context.Context, p *Page, set *linkSet) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	pageNofollow := p.Directives().Nofollow
	if pageNofollow && !set.keepNofollow {
		return nil
	}
	doc, err := p.Document()
	if err != nil {
		return err
	}
	baseHref := ""
	if b := doc.FindMatcher(baseHrefSelector).First(); b.Length() > 0 {
		baseHref, _ = b.Attr("href")
	}
	base := documentBase(p.URL, baseHref)
	add := func(n *html.Node, href string) {
		rel := normRel(n)
		nofollow := pageNofollow || (!p.Policy.IgnoreRel && relForbidsFollow(rel))
		if nofollow && !set.keepNofollow {
			return
		}
		if set.full() {
			set.dropPastCap([]byte(href))
			return
		}
		if u, ok := resolveLink(base, href); ok && !set.has(u, nofollow) {
			l := Link{URL: u, Tag: n.Data, Rel: rel, Nofollow: nofollow}
			if n.Data == "a" {
				l.Text = nodeText(n, DefaultMaxLinkText)
			}
			set.add(l)
		}
	}
	for _, n := range doc.FindMatcher(s.sel).Nodes {
		if href, ok := attr(n, "href"); ok {
			add(n, href)
			continue
		}
		if src, ok := attr(n, "src"); ok {
			add(n, src)
			continue
		}
		walkElements(n, func(c *html.Node) {
			if c.Data == "a" || c.Data == "area" {
				if href, ok := attr(c, "href"); ok {
					add(c, href)
				}
			}
		})
	}
	return nil
}
