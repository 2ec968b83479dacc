package fetch

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Pages are read for their directives, title, base URL and links with
// html.Tokenizer rather than a parse tree. The tokenizer has no nesting
// limit (the tree parser gives up on a page nested deeper than 512
// elements, losing everything on it), allocates nothing per token, and
// is several times faster; Page.Document still builds the tree for those
// who ask.

// outline is what a page's markup says about the page itself.
type outline struct {
	title      string
	baseHref   string
	directives Directives // from robots <meta> tags, for the page's agents
}

// tagScanner walks the tags of an HTML body in document order, skipping
// the inert content of <template> elements as the tree walk does.
type tagScanner struct {
	z         *html.Tokenizer
	templates int      // depth of open <template>s
	foreign   int      // depth of open <svg> and <math>
	name      [16]byte // the current tag's lower-case name
}

func newTagScanner(body []byte) *tagScanner {
	return &tagScanner{z: html.NewTokenizer(bytes.NewReader(body))}
}

// next returns the next token outside templates and, for tags, the
// lower-case tag name (valid until the following call; empty for names
// longer than any this package looks for). A self-closing tag counts as a
// start tag, as the HTML parser treats it for all but void elements. It
// returns html.ErrorToken at the end.
func (s *tagScanner) next() (html.TokenType, []byte) {
	for {
		tt := s.z.Next()
		var name []byte
		switch tt {
		case html.ErrorToken:
			return tt, nil
		case html.StartTagToken, html.SelfClosingTagToken:
			name = s.tagName()
			if string(name) == "template" {
				s.templates++
				continue
			}
			s.enterForeign(name, tt == html.SelfClosingTagToken)
			tt = html.StartTagToken
		case html.EndTagToken:
			name = s.tagName()
			if string(name) == "template" && s.templates > 0 {
				s.templates--
				continue
			}
			if (string(name) == "svg" || string(name) == "math") && s.foreign > 0 {
				s.foreign--
			}
		}
		if s.templates > 0 {
			continue
		}
		return tt, name
	}
}

// enterForeign follows the parser in and out of SVG and MathML, where
// <title>, <style> and the like hold markup, not raw text, and where an
// HTML element such as <div> or <p> ends the foreign content.
func (s *tagScanner) enterForeign(name []byte, selfClosing bool) {
	if s.foreign > 0 {
		if breaksOutOfForeign(string(name)) {
			s.foreign = 0
			return
		}
		s.z.NextIsNotRawText()
	}
	if (string(name) == "svg" || string(name) == "math") && !selfClosing {
		s.foreign++
	}
}

// breaksOutOfForeign reports whether a start tag ends SVG or MathML content
// (the HTML standard's list, less <font>, which does only with attributes).
func breaksOutOfForeign(name string) bool {
	switch name {
	case "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt",
		"em", "embed", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li",
		"listing", "menu", "meta", "nobr", "ol", "p", "pre", "ruby", "s", "small", "span",
		"strong", "strike", "sub", "sup", "table", "tt", "u", "ul", "var":
		return true
	}
	return false
}

// tagName reads the current tag's name from its raw bytes, which, unlike
// Tokenizer.TagName, allocates nothing: most tags are of no interest.
func (s *tagScanner) tagName() []byte {
	raw := s.z.Raw()
	i := 1 // past '<'
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '/' || c == '>' {
			break
		}
		if n == len(s.name) {
			return nil
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		s.name[n] = c
		n++
	}
	return s.name[:n]
}

// attrs calls fn with each attribute of the current tag (lower-case key,
// unescaped value, both valid only during the call).
func (s *tagScanner) attrs(fn func(key, val []byte)) {
	for {
		k, v, more := s.z.TagAttr()
		if k == nil {
			return
		}
		fn(k, v)
		if !more {
			return
		}
	}
}

// scanOutline reads a page's title (the first <title>, whitespace
// collapsed), its first <base href>, and its robots <meta> tags: name
// "robots" or one of agents, anywhere in the document, as search engines
// accept them outside <head> too.
func scanOutline(body []byte, agents []string) outline {
	var (
		o                    outline
		haveTitle, haveBase  bool
		inTitle              bool
		title                textCollector
		metaName, metaContnt []byte
	)
	title.max = -1
	s := newTagScanner(body)
	for {
		tt, name := s.next()
		switch tt {
		case html.ErrorToken:
			if inTitle {
				o.title = title.String()
			}
			return o
		case html.TextToken:
			if inTitle {
				title.add(s.z.Text())
			}
		case html.EndTagToken:
			if inTitle && string(name) == "title" {
				inTitle, haveTitle = false, true
				o.title = title.String()
			}
		case html.StartTagToken:
			switch string(name) {
			case "title":
				// An SVG <title> names a drawing, not the page.
				inTitle = !haveTitle && s.foreign == 0
			case "base":
				if haveBase {
					break
				}
				s.attrs(func(k, v []byte) {
					if string(k) == "href" && !haveBase {
						o.baseHref, haveBase = string(v), true
					}
				})
			case "meta":
				metaName, metaContnt = metaName[:0], metaContnt[:0]
				s.attrs(func(k, v []byte) {
					switch string(k) {
					case "name":
						metaName = append(metaName[:0], bytes.TrimSpace(v)...)
					case "content":
						metaContnt = append(metaContnt[:0], v...)
					}
				})
				if bytes.EqualFold(metaName, []byte("robots")) || containsFold(agents, string(metaName)) {
					for tok := range strings.FieldsFuncSeq(string(metaContnt), func(r rune) bool {
						return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
					}) {
						o.directives.apply(tok)
					}
				}
			}
		}
	}
}

// rawLink is a link as the markup has it. Its slices are valid only
// during the scanLinks callback.
type rawLink struct {
	tag  string // "a", "area", "link", "iframe" or "frame"
	href []byte
	rel  []byte // as written; see normRelBytes
	text []byte // collapsed and bounded
}

// scanLinks calls yield with each link element HTMLExtractor collects, in
// document order of their ends: a[href] (with its text, or the alt text of
// an image inside), area[href] (with its alt text), link[href] with a
// followable rel, iframe[src] and frame[src]. Link text is at most maxText
// runes. It stops when yield returns false.
func scanLinks(body []byte, maxText int, yield func(*rawLink) bool) {
	ls := linkScanner{
		s:          newTagScanner(body),
		maxText:    maxText,
		text:       textCollector{max: maxText},
		framesetOK: true,
	}
	for {
		tt, name := ls.s.next()
		switch tt {
		case html.ErrorToken:
			if ls.open {
				ls.finish(yield)
			}
			return
		case html.TextToken:
			ls.textToken()
		case html.EndTagToken:
			if !ls.endTag(name, yield) {
				return
			}
		case html.StartTagToken:
			if !ls.startTag(name, yield) {
				return
			}
		}
	}
}

// linkScanner is scanLinks' state between tokens. Its methods that yield
// return false when yield does: the scan stops. (yield is passed to them,
// not kept here, so that it does not escape: the caller's closure stays on
// its stack.)
type linkScanner struct {
	s       *tagScanner
	maxText int
	anchor  rawLink
	open    bool // an <a href> is open
	text    textCollector
	alt     []byte
	skipRaw bool // the next text is the content of a script, style or title
	other   rawLink
	// A <frame> counts only inside a <frameset> the parser would
	// accept: one before any body content (the frameset-ok flag).
	framesetOK bool
	framesets  int
}

// finish yields the open anchor, with its text or else the alt text of an
// image inside it.
func (ls *linkScanner) finish(yield func(*rawLink) bool) bool {
	ls.open = false
	ls.anchor.text = ls.text.bytes()
	if len(ls.anchor.text) == 0 && len(ls.alt) > 0 {
		ls.text.reset()
		ls.text.add(ls.alt)
		ls.anchor.text = ls.text.bytes()
	}
	return yield(&ls.anchor)
}

// textToken collects the text of an open anchor; text that is not raw
// content ends the frameset-ok state.
func (ls *linkScanner) textToken() {
	if ls.skipRaw {
		ls.skipRaw = false
		return
	}
	t := ls.s.z.Text()
	if ls.open {
		ls.text.add(t)
	}
	if ls.framesetOK && len(bytes.TrimSpace(t)) > 0 {
		ls.framesetOK = false
	}
}

func (ls *linkScanner) endTag(name []byte, yield func(*rawLink) bool) bool {
	ls.skipRaw = false
	if string(name) == "frameset" && ls.framesets > 0 {
		ls.framesets--
	}
	if ls.open && string(name) == "a" {
		return ls.finish(yield)
	}
	return true
}

func (ls *linkScanner) startTag(name []byte, yield func(*rawLink) bool) bool {
	ls.skipRaw = false
	switch string(name) {
	case "html", "head", "meta", "base", "noscript", "noframes", "frame":
	case "title", "script", "style":
		ls.skipRaw = true
	case "link":
	case "frameset":
		if ls.framesetOK {
			ls.framesets++
		}
	default:
		ls.framesetOK = false
	}
	switch string(name) {
	case "a":
		return ls.openAnchor(yield)
	case "area", "link", "iframe", "frame":
		return ls.otherLink(name, yield)
	case "img":
		if ls.open && len(ls.alt) == 0 {
			ls.s.attrs(func(k, v []byte) {
				if string(k) == "alt" && len(ls.alt) == 0 {
					ls.alt = append(ls.alt, v...)
				}
			})
		}
	case "br", "p", "div", "li", "td", "th", "tr", "h1", "h2", "h3", "h4", "h5", "h6":
		ls.text.space = true // block boundaries separate words when rendered
	}
	return true
}

// openAnchor starts collecting an <a href>.
func (ls *linkScanner) openAnchor(yield func(*rawLink) bool) bool {
	// A new anchor closes an open one, as the parser's adoption agency
	// does.
	if ls.open && !ls.finish(yield) {
		return false
	}
	a := &ls.anchor
	a.href, a.rel = a.href[:0], a.rel[:0]
	ls.s.attrs(func(k, v []byte) {
		switch string(k) {
		case "href":
			if !ls.open {
				a.href = append(a.href, v...)
				ls.open = true
			}
		case "rel":
			a.rel = append(a.rel[:0], v...)
		}
	})
	if ls.open {
		a.tag = "a"
		ls.text.reset()
		ls.alt = ls.alt[:0]
	}
	return true
}

// otherLink yields an area, link, iframe or frame element that links.
func (ls *linkScanner) otherLink(name []byte, yield func(*rawLink) bool) bool {
	o := &ls.other
	o.tag = tagName(name)
	key := "href"
	if o.tag == "iframe" || o.tag == "frame" {
		key = "src"
	}
	found := false
	o.href, o.rel, o.text = o.href[:0], o.rel[:0], o.text[:0]
	var areaAlt []byte
	ls.s.attrs(func(k, v []byte) {
		switch string(k) {
		case key:
			if !found {
				o.href, found = append(o.href, v...), true
			}
		case "rel":
			o.rel = append(o.rel[:0], v...)
		case "alt":
			areaAlt = append(areaAlt[:0], v...)
		}
	})
	if !found || (o.tag == "link" && !followableLinkRel(strings.ToLower(string(o.rel)))) ||
		(o.tag == "frame" && ls.framesets == 0) {
		return true
	}
	if o.tag == "area" {
		var t textCollector
		t.max = ls.maxText
		t.add(areaAlt)
		o.text = t.bytes()
	}
	return yield(o)
}

// tagName returns the constant string for the link tags scanLinks knows,
// so that no string is allocated per link.
func tagName(b []byte) string {
	switch string(b) {
	case "area":
		return "area"
	case "link":
		return "link"
	case "iframe":
		return "iframe"
	case "frame":
		return "frame"
	}
	return string(b)
}

// textCollector gathers text with whitespace collapsed, keeping at most
// max runes (no limit if max is negative).
type textCollector struct {
	buf   []byte
	runes int
	max   int
	space bool
}

func (t *textCollector) reset() {
	t.buf, t.runes, t.space = t.buf[:0], 0, false
}

func (t *textCollector) full() bool { return t.max >= 0 && t.runes >= t.max }

func (t *textCollector) add(b []byte) {
	for len(b) > 0 && !t.full() {
		r, size := rune(b[0]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b)
		}
		b = b[size:]
		if unicode.IsSpace(r) {
			t.space = true
			continue
		}
		if t.space && t.runes > 0 {
			t.buf = append(t.buf, ' ')
			if t.runes++; t.full() {
				break
			}
		}
		t.space = false
		t.buf = utf8.AppendRune(t.buf, r)
		t.runes++
	}
}

// bytes returns the text without a trailing space.
func (t *textCollector) bytes() []byte { return bytes.TrimRight(t.buf, " ") }

func (t *textCollector) String() string { return string(t.bytes()) }
