package robots

import (
	"encoding/binary"
	"strings"
	"unsafe"
)

// Kinds of pattern, so that the common ones skip the wildcard matcher.
const (
	kindPrefix = iota // no '*' (after dropping trailing ones) and no end anchor
	kindExact         // no '*', end anchor
	kindWild          // at least one inner '*', maybe an end anchor
)

// rule is the matcher's form of a Rule, kept small (16 bytes) because a
// file may hold tens of thousands. Its pattern is text[off:off+n] of the
// Robots' single backing string.
type rule struct {
	off  uint32
	line int32
	// n is the length of the normalised pattern, which is also its
	// precedence. A line is at most maxLineLen bytes, 3 times that escaped.
	n     uint16
	lit   uint16 // text[off:off+lit] is what the matcher compares: no trailing '*' or '$'
	kind  uint8
	flags uint8
}

// Rule flags.
const (
	flagAllow  = 1 << iota
	flagAnchor // the pattern ends with the '$' anchor
)

func (r *rule) allow() bool { return r.flags&flagAllow != 0 }

func (r *rule) export(text string) Rule {
	return Rule{Allow: r.allow(), Pattern: text[r.off : r.off+uint32(r.n)], Line: int(r.line)}
}

// beats reports whether r takes precedence over best: longer first, Allow
// first on a tie (RFC 9309 §2.2.2). Length is that of the normalised
// pattern, the one that is compared, so that two spellings of one rule
// ("/~a" and "/%7Ea", "/café" and "/caf%C3%A9") weigh the same, and
// equivalent Allow and Disallow rules tie, which Allow wins.
func beats(r, best *rule) bool {
	return r.n > best.n || r.n == best.n && r.allow() && !best.allow()
}

// match reports whether the normalised path p matches r.
func (r *rule) match(text, p string) bool {
	pat := text[r.off : r.off+uint32(r.lit)]
	switch r.kind {
	case kindPrefix:
		return len(p) >= len(pat) && p[:len(pat)] == pat
	case kindExact:
		return p == pat
	}
	return matchWild(p, pat, r.flags&flagAnchor != 0)
}

// matchWild matches p against pat, which holds at least one '*'. Matching
// each '*'-separated segment at its leftmost occurrence after the previous
// one is optimal (a later occurrence never leaves more room for the rest),
// so the cost is linear in len(p) however many wildcards pat holds, unlike
// the position-set matcher of Google's reference.
func matchWild(p, pat string, anchor bool) bool {
	i := strings.IndexByte(pat, '*')
	if len(p) < i || p[:i] != pat[:i] {
		return false
	}
	pos := i
	pat = pat[i+1:]
	for {
		j := strings.IndexByte(pat, '*')
		if j < 0 {
			break
		}
		seg := pat[:j]
		pat = pat[j+1:]
		if seg == "" {
			continue
		}
		k := strings.Index(p[pos:], seg)
		if k < 0 {
			return false
		}
		pos += k + len(seg)
	}
	if anchor {
		return len(p)-pos >= len(pat) && p[len(p)-len(pat):] == pat
	}
	return pat == "" || strings.Contains(p[pos:], pat)
}

// stackPath is how long a normalised path may be to be built on the stack;
// longer ones borrow a buffer from the Robots' pool.
const stackPath = 2048

// decide returns the rule that decides pathQuery, or nil if none matches
// (or pathQuery is /robots.txt).
func (g *Group) decide(pathQuery string) *rule {
	pq := pathQuery
	slash := false
	if len(pq) == 0 || pq[0] != '/' {
		pq, slash = splitPathQuery(pq) // an absolute URL, or a bare query
	}
	if !slash && !needsEscape(pq) {
		return g.best(pq)
	}
	// Normalise: at most 3 bytes per input byte, and a leading '/'.
	if 3*len(pq)+1 <= stackPath || g.buffers == nil {
		var buf [stackPath]byte
		b := buf[:0]
		if slash {
			b = append(b, '/')
		}
		b = appendEscapedPath(b, pq)
		// b is on the stack unless it outgrew buf; the string does not
		// outlive this call.
		return g.best(unsafe.String(unsafe.SliceData(b), len(b)))
	}
	pb := g.buffers.Get().(*[]byte)
	b := (*pb)[:0]
	if slash {
		b = append(b, '/')
	}
	b = appendEscapedPath(b, pq)
	r := g.best(unsafe.String(unsafe.SliceData(b), len(b)))
	*pb = b[:0]
	g.buffers.Put(pb)
	return r
}

// best returns the rule that decides the normalised path p.
func (g *Group) best(p string) *rule {
	if isRobotsTxt(p) {
		return nil
	}
	var best *rule
	for _, set := range g.sets {
		for i := range set {
			r := &set[i]
			if best != nil && !beats(r, best) {
				break // the rest of set comes later in precedence
			}
			if r.match(g.text, p) {
				best = r
				break
			}
		}
	}
	return best
}

func isRobotsTxt(p string) bool {
	const name = "/robots.txt"
	return strings.HasPrefix(p, name) && (len(p) == len(name) || p[len(name)] == '?')
}

// splitPathQuery returns the path, parameters and query of url, which
// does not begin with '/', as Google's reference does (GetPathParamsQuery):
// scheme, authority and fragment removed. If slash is true, the result must
// be read with a '/' before it (url had a query but no path); for a URL
// without path or query it returns "/". Unlike Google's, it is never given
// "//host/path": a string that begins with '/' is a path, because a path
// like "//a" (from https://example.com//a) is far more common in a crawler
// than a network-path reference.
func splitPathQuery(url string) (pq string, slash bool) {
	const start = 0
	early := indexPathStart(url, start)
	from := start
	if proto := strings.Index(url[start:], "://"); proto >= 0 {
		proto += start
		if early < 0 || early > proto {
			from = proto + 3
		}
	}
	ps := indexPathStart(url, from)
	if ps < 0 {
		return "/", false
	}
	end := len(url)
	if h := strings.IndexByte(url[start:], '#'); h >= 0 {
		h += start
		if h < ps {
			return "/", false
		}
		end = h
	}
	return url[ps:end], url[ps] != '/'
}

func indexPathStart(s string, from int) int {
	for i := from; i < len(s); i++ {
		if c := s[i]; c == '/' || c == '?' || c == ';' {
			return i
		}
	}
	return -1
}

// Byte classes for escaping.
const (
	escURL     = 1 << iota // byte that URL normalisation may change
	unreserved             // RFC 3986 unreserved
	hexDigit
)

var class = func() (t [256]uint8) {
	for c := 0x80; c < 0x100; c++ {
		t[c] |= escURL
	}
	for _, c := range "%*$#" {
		t[c] |= escURL
	}
	for c := 0; c < 0x80; c++ {
		b := byte(c)
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '.' || b == '_' || b == '~' {
			t[c] |= unreserved
		}
		if '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F' {
			t[c] |= hexDigit
		}
	}
	return t
}()

const upperHex = "0123456789ABCDEF"

// plainASCII reports whether s holds no '%', no '$' and no octet outside
// ASCII, so that it is its own normal form as a pattern. It checks eight
// bytes at a time, and the two characters with vectorised searches.
func plainASCII(s string) bool {
	if strings.IndexByte(s, '%') >= 0 || strings.IndexByte(s, '$') >= 0 {
		return false
	}
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if binary.LittleEndian.Uint64([]byte(s[i:i+8]))&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if class[s[i]]&escURL != 0 {
			return true
		}
	}
	return false
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// appendEscapedPath appends the normalised form of the URL path s up to any
// fragment: octets outside ASCII %-encoded, %-encoded unreserved characters
// decoded, other escapes upper-cased, and '*' and '$' %-encoded so that a
// rule's %2A and %24 match them.
func appendEscapedPath(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if class[c]&escURL == 0 {
			dst = append(dst, c)
			continue
		}
		switch {
		case c == '#':
			return dst
		case c == '*':
			dst = append(dst, "%2A"...)
		case c == '$':
			dst = append(dst, "%24"...)
		case c == '%':
			dst, i = appendEscape(dst, s, i)
		default:
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return dst
}

// appendEscape handles the '%' at s[i] and returns the index of the last
// byte consumed.
func appendEscape(dst []byte, s string, i int) ([]byte, int) {
	if i+2 >= len(s) || class[s[i+1]]&hexDigit == 0 || class[s[i+2]]&hexDigit == 0 {
		return append(dst, '%'), i
	}
	v := unhex(s[i+1])<<4 | unhex(s[i+2])
	if class[v]&unreserved != 0 {
		return append(dst, v), i + 2
	}
	return append(dst, '%', upperHex[v>>4], upperHex[v&15]), i + 2
}

// appendEscapedPattern appends the normalised form of a rule's pattern:
// as appendEscapedPath, but '*' stays a wildcard and a final '$' the end
// anchor; any other '$' is a literal and becomes %24.
func appendEscapedPattern(dst []byte, s string) []byte {
	if plainASCII(s) {
		return append(dst, s...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case class[c]&escURL == 0 || c == '*' || c == '#':
			dst = append(dst, c)
		case c == '$':
			if i == len(s)-1 {
				dst = append(dst, '$')
			} else {
				dst = append(dst, "%24"...)
			}
		case c == '%':
			dst, i = appendEscape(dst, s, i)
		default:
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return dst
}

func toLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
