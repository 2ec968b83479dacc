package testweb

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// ErrNotAbsolute is returned by Canonical for a URL without scheme or host.
var ErrNotAbsolute = errors.New("testweb: URL is not absolute")

// Canonical returns the form of an absolute http(s) URL under which this web
// serves one page: scheme and host lower-cased, the default port dropped,
// percent-encodings of unreserved characters decoded ("%31" → "1") and the
// others upper-cased, dot segments removed, an empty path made "/", the
// fragment and an empty query ("?") dropped, and the query's parameters sorted.
//
// It is the judge's notion of "the same URL": the server serves identical
// content for every spelling with the same canonical form, so two requests
// with the same canonical form are a duplicate fetch.
func Canonical(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("testweb: canonical form of %q: %w", raw, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("testweb: canonical form of %q: %w", raw, ErrNotAbsolute)
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Host)
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	}
	target := canonicalTarget(u.EscapedPath(), u.RawQuery)
	return scheme + "://" + host + target, nil
}

// canonicalTarget is the canonical path and query of a request target, given
// its escaped path and raw query.
func canonicalTarget(escapedPath, rawQuery string) string {
	p := removeDotSegments(normalizeEscapes(escapedPath))
	if p == "" {
		p = "/"
	}
	if rawQuery == "" {
		return p
	}
	params := strings.Split(rawQuery, "&")
	for i, s := range params {
		params[i] = normalizeEscapes(s)
	}
	slices.Sort(params)
	return p + "?" + strings.Join(params, "&")
}

// normalizeEscapes decodes percent-encoded unreserved characters and
// upper-cases the hex digits of the remaining escapes (RFC 3986 §6.2.2).
func normalizeEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' || i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			b.WriteByte(c)
			continue
		}
		v := unhex(s[i+1])<<4 | unhex(s[i+2])
		if isUnreserved(v) {
			b.WriteByte(v)
		} else {
			b.WriteByte('%')
			b.WriteString(strings.ToUpper(s[i+1 : i+3]))
		}
		i += 2
	}
	return b.String()
}

// removeDotSegments implements RFC 3986 §5.2.4 for an absolute path.
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	r := strings.Join(out, "/")
	if !strings.HasPrefix(r, "/") {
		r = "/" + r
	}
	return r
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
