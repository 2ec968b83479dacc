package fetch

import (
	"bytes"
	"net/url"
	"strings"
)

// linkResolver resolves the hrefs of one page against its base URL. The
// common shapes (an absolute path, a plain relative path, an absolute
// http(s) URL) made of characters that url.Parse and URL.String leave as
// they are, are joined as strings, with one allocation; everything else
// goes through resolveLink. TestLinkResolverMatchesURLParse holds the two
// to the same answers.
type linkResolver struct {
	base   *url.URL
	origin string // "scheme://host" as URL.String writes it, or "" for no fast path
	dir    string // base's escaped path up to its last '/', or "" for no relative fast path
}

func newLinkResolver(base *url.URL) *linkResolver {
	r := &linkResolver{base: base}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.User != nil || base.Opaque != "" {
		return r
	}
	r.origin = (&url.URL{Scheme: base.Scheme, Host: base.Host}).String()
	p := base.EscapedPath()
	dir := p[:strings.LastIndexByte(p, '/')+1]
	if dir == "" {
		dir = "/"
	}
	if dir[0] == '/' && plainPath([]byte(dir)) {
		r.dir = dir
	}
	return r
}

// resolve is resolveLink for an href as the markup has it.
func (r *linkResolver) resolve(href []byte) (string, bool) {
	h := bytes.Trim(href, " \t\n\f\r")
	if len(h) == 0 || h[0] == '#' {
		return "", false
	}
	if r.origin != "" {
		if i := bytes.IndexByte(h, '#'); i < 0 {
			if u, ok := r.join(h); ok {
				return u, true
			}
		} else if plainFragment(h[i+1:]) {
			if u, ok := r.join(h[:i]); ok {
				return u, true
			}
		}
	}
	return resolveLink(r.base, string(bytes.Trim(href, " \t\n\f\r")))
}

// join builds the URL for the shapes the fast path knows, or reports
// false for resolveLink to decide.
func (r *linkResolver) join(h []byte) (string, bool) {
	var b strings.Builder
	switch {
	case len(h) == 0 || (len(h) >= 2 && h[0] == '/' && h[1] == '/'):
		return "", false
	case h[0] == '/':
		if !plainPath(h) {
			return "", false
		}
		b.Grow(len(r.origin) + len(h))
		b.WriteString(r.origin)
	case hasPrefixFold(h, "http://") || hasPrefixFold(h, "https://"):
		scheme := "http"
		if h[4] == 's' || h[4] == 'S' {
			scheme = "https"
		}
		rest := h[len(scheme)+3:]
		end := bytes.IndexAny(rest, "/?")
		if end < 0 {
			end = len(rest)
		}
		host, tail := rest[:end], rest[end:]
		if !plainHost(host) || (len(tail) > 0 && !plainPath(tail)) {
			return "", false
		}
		b.Grow(len(scheme) + 3 + len(rest))
		b.WriteString(scheme)
		b.WriteString("://")
		b.Write(host)
		h = tail
	default:
		// A colon in the first segment would make it a scheme.
		first := bytes.IndexAny(h, "/?")
		if first < 0 {
			first = len(h)
		}
		if r.dir == "" || h[0] == '?' || bytes.IndexByte(h[:first], ':') >= 0 || !plainPath(h) {
			return "", false
		}
		b.Grow(len(r.origin) + len(r.dir) + len(h))
		b.WriteString(r.origin)
		b.WriteString(r.dir)
	}
	b.Write(h)
	return b.String(), true
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

// plainHost reports whether host is a name or IPv4 address with an
// optional port, which url.Parse keeps as it is.
func plainHost(host []byte) bool {
	name, port, _ := bytes.Cut(host, []byte(":"))
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainPath reports whether p, a path with an optional query, is made of
// characters that URL parsing and printing keep as they are, and has no
// dot segment for resolution to remove.
func plainPath(p []byte) bool {
	query := false
	segStart := 0
	for i := 0; i <= len(p); i++ {
		if !query && (i == len(p) || p[i] == '/' || p[i] == '?') {
			if seg := p[segStart:i]; string(seg) == "." || string(seg) == ".." {
				return false
			}
			segStart = i + 1
		}
		if i == len(p) {
			break
		}
		switch c := p[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0:
		case c == '?':
			query = true
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

// plainFragment reports whether a fragment parses (url.Parse checks it even
// though the link drops it): no control characters, valid escapes.
func plainFragment(f []byte) bool {
	for i := 0; i < len(f); i++ {
		switch c := f[i]; {
		case c < 0x20 || c == 0x7f:
			return false
		case c == '%':
			if i+2 >= len(f) || !isHex(f[i+1]) || !isHex(f[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
