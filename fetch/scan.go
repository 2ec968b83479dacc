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
	var (
		s       = newTagScanner(body)
		anchor  rawLink
		open    bool // an <a href> is open
		text    = textCollector{max: maxText}
		alt     []byte
		skipRaw bool // the next text is the content of a script, style or title
		other   rawLink
		// A <frame> counts only inside a <frameset> the parser would
		// accept: one before any body content (the frameset-ok flag).
		framesetOK = true
		framesets  int
	)
	finish := func() bool {
		open = false
		anchor.text = text.bytes()
		if len(anchor.text) == 0 && len(alt) > 0 {
			text.reset()
			text.add(alt)
			anchor.text = text.bytes()
		}
		return yield(&anchor)
	}
	for {
		tt, name := s.next()
		switch tt {
		case html.ErrorToken:
			if open {
				finish()
			}
			return
		case html.TextToken:
			if skipRaw {
				skipRaw = false
				break
			}
			t := s.z.Text()
			if open {
				text.add(t)
			}
			if framesetOK && len(bytes.TrimSpace(t)) > 0 {
				framesetOK = false
			}
		case html.EndTagToken:
			skipRaw = false
			if string(name) == "frameset" && framesets > 0 {
				framesets--
			}
			if open && string(name) == "a" && !finish() {
				return
			}
		case html.StartTagToken:
			skipRaw = false
			switch string(name) {
			case "html", "head", "meta", "base", "noscript", "noframes", "frame":
			case "title", "script", "style":
				skipRaw = true
			case "link":
			case "frameset":
				if framesetOK {
					framesets++
				}
			default:
				framesetOK = false
			}
			switch string(name) {
			case "a":
				// A new anchor closes an open one, as the parser's
				// adoption agency does.
				if open && !finish() {
					return
				}
				anchor.href, anchor.rel = anchor.href[:0], anchor.rel[:0]
				s.attrs(func(k, v []byte) {
					switch string(k) {
					case "href":
						if !open {
							anchor.href = append(anchor.href, v...)
							open = true
						}
					case "rel":
						anchor.rel = append(anchor.rel[:0], v...)
					}
				})
				if open {
					anchor.tag = "a"
					text.reset()
					alt = alt[:0]
				}
			case "area", "link", "iframe", "frame":
				other.tag = tagName(name)
				key := "href"
				if other.tag == "iframe" || other.tag == "frame" {
					key = "src"
				}
				found := false
				other.href, other.rel, other.text = other.href[:0], other.rel[:0], other.text[:0]
				var areaAlt []byte
				s.attrs(func(k, v []byte) {
					switch string(k) {
					case key:
						if !found {
							other.href, found = append(other.href, v...), true
						}
					case "rel":
						other.rel = append(other.rel[:0], v...)
					case "alt":
						areaAlt = append(areaAlt[:0], v...)
					}
				})
				if !found || (other.tag == "link" && !followableLinkRel(strings.ToLower(string(other.rel)))) ||
					(other.tag == "frame" && framesets == 0) {
					break
				}
				if other.tag == "area" {
					var t textCollector
					t.max = maxText
					t.add(areaAlt)
					other.text = t.bytes()
				}
				if !yield(&other) {
					return
				}
			case "img":
				if open && len(alt) == 0 {
					s.attrs(func(k, v []byte) {
						if string(k) == "alt" && len(alt) == 0 {
							alt = append(alt, v...)
						}
					})
				}
			case "br", "p", "div", "li", "td", "th", "tr", "h1", "h2", "h3", "h4", "h5", "h6":
				text.space = true // block boundaries separate words when rendered
			}
		}
	}
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
