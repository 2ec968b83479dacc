package frontier

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/heedcrawl/heed/internal/hostid"
)

// Reasons Canonical rejects a URL. Errors returned by Canonical, CanonicalRef
// and Frontier.Add wrap one of these; test with errors.Is.
var (
	// ErrRelative: the URL has no scheme (or a base URL is not absolute).
	ErrRelative = errors.New("frontier: URL is not absolute")
	// ErrScheme: the scheme is not http or https (mailto:, javascript:, ftp:...).
	ErrScheme = errors.New("frontier: scheme is not http or https")
	// ErrHost: the host is missing or not a valid host name or IP literal,
	// including IDNA (UTS #46) failures.
	ErrHost = errors.New("frontier: invalid host")
	// ErrPort: the port is not a decimal number in 1–65535.
	ErrPort = errors.New("frontier: invalid port")
	// ErrTooLong: the URL, before or after canonicalisation, is longer than
	// the Canonicalizer's MaxLength.
	ErrTooLong = errors.New("frontier: URL too long")
)

// DefaultMaxLength is the longest URL, in bytes, a zero Canonicalizer
// accepts. Longer URLs are almost always session-id or calendar traps.
const DefaultMaxLength = 8 << 10

// Canonicalizer turns URLs into the canonical form the Frontier deduplicates
// on. The zero value applies the default rules listed on Canonical, query
// sorting included; each field departs from them. A Canonicalizer is safe
// for concurrent use as long as its fields are not modified.
type Canonicalizer struct {
	// KeepQueryOrder keeps query parameters in the order they came, and
	// empty ones ("a&&b"), instead of the default stable sort by name.
	// Servers that give "?a=1&b=2" and "?b=2&a=1" different content are
	// rare, and fetching both is the commonest duplicate; keep the order
	// for a site whose server does.
	KeepQueryOrder bool

	// StripParam, if non-nil, reports whether the query parameter with the
	// given name (percent-encoding already normalised, case preserved) is
	// removed. TrackingParam is a ready-made choice.
	StripParam func(name string) bool

	// MaxLength is the longest URL accepted, in bytes, both as given and
	// once canonical. Zero means DefaultMaxLength; negative means no limit.
	MaxLength int
}

// Canonical returns the canonical form of the absolute URL raw using the
// default rules (a zero Canonicalizer):
//
//   - leading and trailing spaces and control characters are trimmed, and
//     tabs and newlines removed, as browsers do with href attributes;
//   - only http and https are accepted, the scheme is lower-cased;
//   - the host is lower-cased, an internationalised host is converted to
//     punycode (IDNA UTS #46 non-transitional, without STD3 or hyphen checks,
//     like browsers), trailing dots are dropped, IPv6 literals are put in
//     RFC 5952 form;
//   - the default port (80 for http, 443 for https) and an empty port are
//     dropped, leading zeros of the port removed; port 0 is refused;
//   - percent-encoding is normalised: escapes of unreserved characters
//     (A–Z a–z 0–9 - . _ ~) are decoded, other escapes get upper-case hex,
//     and bytes that cannot appear in a URL (spaces, controls, non-ASCII,
//     " < > \ ^ ` { | } and a % not starting an escape) are escaped;
//     nothing else is decoded, so %2F stays %2F and %26 stays %26;
//   - dot segments are resolved (RFC 3986 §5.2.4), an empty path becomes "/";
//   - the fragment and an empty query ("?" alone) are dropped;
//   - query parameters are sorted by name, stably, so that repeated
//     parameters keep their relative order (a=2&a=1 stays distinct from
//     a=1&a=2, as servers may treat it), and empty ones ("a&&b") dropped.
//
// The host is the one every part of heed keys on (the rate limiter, the
// robots gate, redirect loop detection): "http://A.example.:80/" and
// "http://a.example/" are one URL, on one host with one politeness budget.
//
// Empty userinfo ("http://@host/") is dropped; other userinfo is kept,
// percent-normalised.
//
// Errors wrap ErrRelative, ErrScheme, ErrHost, ErrPort or ErrTooLong.
// A URL already in canonical form is returned as is, without allocating.
func Canonical(raw string) (string, error) {
	var c Canonicalizer
	return c.Canonical(raw)
}

// CanonicalRef resolves ref against base (RFC 3986 §5.2) and returns the
// canonical form of the result, like Canonicalizer.CanonicalRef with the
// default rules.
func CanonicalRef(base *url.URL, ref string) (string, error) {
	var c Canonicalizer
	return c.CanonicalRef(base, ref)
}

// Canonical returns the canonical form of the absolute URL raw: the rules
// of the package-level Canonical plus the ones c's fields enable.
func (c *Canonicalizer) Canonical(raw string) (string, error) {
	s, _, err := c.canonical(raw)
	return s, err
}

// CanonicalRef resolves the reference ref (as found in an href) against
// base, the URL of the document it was found in, and returns the canonical
// form of the result. An absolute ref is canonicalised as is; a nil base
// makes CanonicalRef equivalent to Canonical. base must be absolute and
// hierarchical (have a scheme and a host) for a relative ref to resolve;
// otherwise the error wraps ErrRelative.
func (c *Canonicalizer) CanonicalRef(base *url.URL, ref string) (string, error) {
	ref = trimControlSpace(ref)
	if hasTabNewline(ref) {
		ref = removeTabNewline(ref)
	}
	if base == nil || schemeEnd(ref) >= 0 {
		return c.Canonical(ref)
	}
	if base.Scheme == "" || base.Host == "" || base.Opaque != "" {
		return "", fmt.Errorf("%w: base %q cannot resolve a relative reference", ErrRelative, base.Redacted())
	}
	if strings.HasPrefix(ref, "//") {
		return c.Canonical(base.Scheme + ":" + ref)
	}
	origin := base.Scheme + "://" + base.Host
	if base.User != nil {
		origin = base.Scheme + "://" + base.User.String() + "@" + base.Host
	}
	path := base.EscapedPath()
	switch {
	case strings.HasPrefix(ref, "/"):
		return c.Canonical(origin + ref)
	case ref == "" || ref[0] == '#':
		if base.RawQuery != "" {
			return c.Canonical(origin + path + "?" + base.RawQuery)
		}
		return c.Canonical(origin + path)
	case ref[0] == '?':
		return c.Canonical(origin + path + ref)
	default:
		// Merge (RFC 3986 §5.2.3): everything up to the last slash of the
		// base path, or "/" when the base path is empty.
		dir := "/"
		if i := strings.LastIndexByte(path, '/'); i >= 0 {
			dir = path[:i+1]
		}
		return c.Canonical(origin + dir + ref)
	}
}

// hostSpan locates the authority's host within a canonical URL, so the
// Frontier can take the politeness key and the scope host as substrings
// without parsing again.
type hostSpan struct {
	start   int // first byte of the host (after "scheme://" and userinfo)
	nameEnd int // end of the host name, before ":port"
	end     int // end of host[:port]
}

func (c *Canonicalizer) maxLength() int {
	switch {
	case c.MaxLength == 0:
		return DefaultMaxLength
	case c.MaxLength < 0:
		return int(^uint(0) >> 1)
	}
	return c.MaxLength
}

// canonical builds the canonical form into a stack buffer and returns raw
// itself when nothing changed, so already-canonical URLs (the common case
// for links a resolver produced) cost no allocation. (It is the hot path of
// every link a crawl finds: its steps are calls only where a call costs
// nothing measurable, BenchmarkCanonical.)
func (c *Canonicalizer) canonical(raw string) (string, hostSpan, error) {
	var sp hostSpan
	max := c.maxLength()
	raw = trimControlSpace(raw)
	if len(raw) > max {
		return "", sp, fmt.Errorf("%w: %d bytes", ErrTooLong, len(raw))
	}
	if hasTabNewline(raw) {
		raw = removeTabNewline(raw)
	}
	https, auth, rest, err := splitAuthority(raw)
	if err != nil {
		return "", sp, err
	}

	var arr [256]byte
	buf := arr[:0]
	scheme := "http"
	if https {
		scheme = "https"
		buf = append(buf, "https://"...)
	} else {
		buf = append(buf, "http://"...)
	}
	// Userinfo ends at the last '@': earlier ones belong to it (and get
	// escaped).
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		if at > 0 {
			buf = appendEscaped(buf, auth[:at], userinfoMode)
			buf = append(buf, '@')
		}
		auth = auth[at+1:]
	}
	host, port, err := hostid.SplitHostPort(auth)
	if err != nil {
		return "", sp, hostError(err)
	}
	sp.start = len(buf)
	if buf, err = hostid.AppendName(buf, host); err != nil {
		return "", sp, hostError(err)
	}
	sp.nameEnd = len(buf)
	if buf, err = hostid.AppendPort(buf, scheme, port); err != nil {
		return "", sp, hostError(err)
	}
	sp.end = len(buf)

	buf = c.appendPathQuery(buf, rest)
	if len(buf) > max {
		return "", sp, fmt.Errorf("%w: %d bytes once canonical", ErrTooLong, len(buf))
	}
	if string(buf) == raw {
		return raw, sp, nil
	}
	return string(buf), sp, nil
}

// splitAuthority checks raw's scheme (http or https, in any case) and
// that an authority follows it, and returns the authority and what comes
// after it (the path, query and fragment).
func splitAuthority(raw string) (https bool, auth, rest string, err error) {
	i := schemeEnd(raw)
	if i < 0 {
		return false, "", "", ErrRelative
	}
	switch scheme := raw[:i]; {
	case strings.EqualFold(scheme, "http"):
	case strings.EqualFold(scheme, "https"):
		https = true
	default:
		return false, "", "", fmt.Errorf("%w: %q", ErrScheme, strings.ToLower(scheme))
	}
	rest = raw[i+1:]
	if !strings.HasPrefix(rest, "//") {
		return false, "", "", fmt.Errorf("%w: no authority (want %s://host/...)", ErrHost, raw[:i])
	}
	rest = rest[2:]
	authEnd := 0
	for authEnd < len(rest) && rest[authEnd] != '/' && rest[authEnd] != '?' && rest[authEnd] != '#' {
		authEnd++
	}
	return https, rest[:authEnd], rest[authEnd:], nil
}

// appendPathQuery appends the canonical form of rest, what follows a URL's
// authority, to buf: its path escaped, its dot segments removed ("/" when
// empty), then "?" and its query, escaped, sorted and stripped as c says
// (nothing if no parameter is left); the fragment is dropped.
func (c *Canonicalizer) appendPathQuery(buf []byte, rest string) []byte {
	path, query, hasQuery := rest, "", false
	for j := 0; j < len(rest); j++ {
		if c := rest[j]; c == '?' || c == '#' {
			path = rest[:j]
			if c == '?' {
				query, hasQuery = rest[j+1:], true
				if k := strings.IndexByte(query, '#'); k >= 0 {
					query = query[:k]
				}
			}
			break
		}
	}

	pathStart := len(buf)
	if path == "" {
		buf = append(buf, '/')
	} else {
		buf = appendEscaped(buf, path, pathMode)
		if hasDotSegment(buf[pathStart:]) {
			buf = buf[:pathStart+len(removeDotSegments(buf[pathStart:]))]
		}
	}

	if hasQuery && query != "" {
		q := len(buf)
		buf = append(buf, '?')
		buf = appendEscaped(buf, query, queryMode)
		if !c.KeepQueryOrder || c.StripParam != nil {
			buf = c.rewriteQuery(buf, q+1)
		}
		if len(buf) == q+1 {
			buf = buf[:q]
		}
	}
	return buf
}

// schemeEnd returns the index of the colon ending s's scheme
// (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"), or -1 if s
// has none and is therefore a relative reference.
func schemeEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z':
		case '0' <= b && b <= '9' || b == '+' || b == '-' || b == '.':
			if i == 0 {
				return -1
			}
		case b == ':':
			if i == 0 {
				return -1
			}
			return i
		default:
			return -1
		}
	}
	return -1
}

// trimControlSpace removes leading and trailing C0 controls and spaces,
// as the WHATWG URL parser does.
func trimControlSpace(s string) string {
	for len(s) > 0 && s[0] <= ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] <= ' ' {
		s = s[:len(s)-1]
	}
	return s
}

func hasTabNewline(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\t' || c == '\n' || c == '\r' {
			return true
		}
	}
	return false
}

// removeTabNewline drops tabs, CRs and LFs anywhere in s: an href split
// over lines means the URL without the line breaks.
func removeTabNewline(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
}

// hostError restates an error of hostid under the frontier's sentinels.
func hostError(err error) error {
	var e *hostid.Error
	if !errors.As(err, &e) {
		return fmt.Errorf("%w: %w", ErrHost, err)
	}
	kind := ErrHost
	if e.Err == hostid.ErrPort {
		kind = ErrPort
	}
	if e.Reason == "" {
		return fmt.Errorf("%w: %q", kind, e.Value)
	}
	return fmt.Errorf("%w: %q: %s", kind, e.Value, e.Reason)
}

type escapeMode uint8

const (
	pathMode escapeMode = iota
	queryMode
	userinfoMode
)

// Classes of bytes in paths, queries and userinfo.
const (
	bytePlain   = iota // kept as written
	bytePercent        // '%': an escape to normalise, or a stray '%'
	byteEscape         // escaped wherever it appears
)

// byteClass classifies every byte. Escaped are the bytes no URL may
// contain (RFC 3986 §2) that browsers send escaped: controls, space,
// non-ASCII and " < > \ ^ ` { | }. Anything else is kept as written,
// because servers may distinguish, say, "a=1;b" from "a=1%3Bb". It is a
// read-only table.
var byteClass = func() (t [256]uint8) {
	for b := range 256 {
		if b <= ' ' || b >= 0x7F || strings.IndexByte(`"<>\^`+"`{|}", byte(b)) >= 0 {
			t[b] = byteEscape
		}
	}
	t['%'] = bytePercent
	return t
}()

func unreserved(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '-' || b == '.' || b == '_' || b == '~'
}

func unhex(b byte) (byte, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}

const upperHex = "0123456789ABCDEF"

// appendEscaped appends s to buf with percent-encoding normalised. Runs
// of plain bytes are copied whole.
func appendEscaped(buf []byte, s string, mode escapeMode) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		class := byteClass[b]
		if class == bytePlain && (b != '@' || mode != userinfoMode) {
			continue
		}
		buf = append(buf, s[start:i]...)
		start = i + 1
		if class == bytePercent {
			if i+2 < len(s) {
				hi, ok1 := unhex(s[i+1])
				lo, ok2 := unhex(s[i+2])
				if ok1 && ok2 {
					if v := hi<<4 | lo; unreserved(v) {
						buf = append(buf, v)
					} else {
						buf = append(buf, '%', upperHex[hi], upperHex[lo])
					}
					i += 2
					start = i + 1
					continue
				}
			}
			buf = append(buf, "%25"...)
			continue
		}
		buf = append(buf, '%', upperHex[b>>4], upperHex[b&15])
	}
	return append(buf, s[start:]...)
}

// hasDotSegment reports whether path has a "." or ".." segment.
func hasDotSegment(path []byte) bool {
	for i := 0; i < len(path); i++ {
		if path[i] != '.' || i > 0 && path[i-1] != '/' {
			continue
		}
		j := i + 1
		if j < len(path) && path[j] == '.' {
			j++
		}
		if j == len(path) || path[j] == '/' {
			return true
		}
	}
	return false
}

// removeDotSegments implements RFC 3986 §5.2.4 in place on path, which
// starts with '/', and returns the shortened path.
func removeDotSegments(path []byte) []byte {
	w := 0 // path[:w] is the output so far
	for r := 0; r < len(path); {
		next := r + 1
		for next < len(path) && path[next] != '/' {
			next++
		}
		seg := path[r+1 : next]
		last := next == len(path)
		switch {
		case len(seg) == 1 && seg[0] == '.':
			if last {
				path[w] = '/'
				w++
			}
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			for w > 0 && path[w-1] != '/' {
				w--
			}
			if w > 0 {
				w-- // the slash before the removed segment
			}
			if last {
				path[w] = '/'
				w++
			}
		default:
			w += copy(path[w:], path[r:next])
		}
		r = next
	}
	if w == 0 {
		path[0] = '/'
		w = 1
	}
	return path[:w]
}

// rewriteQuery drops stripped and empty parameters from buf[start:] and
// sorts the rest unless KeepQueryOrder. The query is copied to a string
// first: sorted parameters cannot be rearranged in place, and StripParam
// gets its names as substrings of that one copy instead of one allocation
// each. A query already in order is left as it is, without the copy.
func (c *Canonicalizer) rewriteQuery(buf []byte, start int) []byte {
	if c.StripParam == nil && !c.KeepQueryOrder && sortedQuery(buf[start:]) {
		return buf
	}
	q := string(buf[start:])
	type param struct{ all, name string }
	var parr [32]param
	ps := parr[:0]
	for rest := q; rest != ""; {
		p := rest
		if i := strings.IndexByte(rest, '&'); i >= 0 {
			p, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if p == "" {
			continue
		}
		name := p
		if i := strings.IndexByte(p, '='); i >= 0 {
			name = p[:i]
		}
		if c.StripParam == nil || !c.StripParam(name) {
			ps = append(ps, param{p, name})
		}
	}
	if !c.KeepQueryOrder {
		slices.SortStableFunc(ps, func(a, b param) int { return strings.Compare(a.name, b.name) })
	}
	buf = buf[:start]
	for i, p := range ps {
		if i > 0 {
			buf = append(buf, '&')
		}
		buf = append(buf, p.all...)
	}
	return buf
}

// sortedQuery reports whether the query q has no empty parameter and its
// parameters' names are in order, as rewriteQuery would leave them.
func sortedQuery(q []byte) bool {
	var prev []byte
	for len(q) > 0 {
		p := q
		if i := bytes.IndexByte(q, '&'); i >= 0 {
			p, q = q[:i], q[i+1:]
			if len(q) == 0 {
				return false // a trailing '&': an empty parameter
			}
		} else {
			q = nil
		}
		if len(p) == 0 {
			return false
		}
		name := p
		if i := bytes.IndexByte(p, '='); i >= 0 {
			name = p[:i]
		}
		if bytes.Compare(prev, name) > 0 {
			return false
		}
		prev = name
	}
	return true
}

// TrackingParam reports whether name is a well-known click-tracking query
// parameter (utm_*, gclid, fbclid, msclkid, mc_cid, _ga, ...), compared
// case-insensitively. It is meant for Canonicalizer.StripParam.
func TrackingParam(name string) bool {
	if len(name) >= 4 && strings.EqualFold(name[:4], "utm_") {
		return true
	}
	var arr [16]byte
	if len(name) > len(arr) {
		return false
	}
	low := arr[:len(name)]
	for i := 0; i < len(name); i++ {
		b := name[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		low[i] = b
	}
	switch string(low) {
	case "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid",
		"yclid", "twclid", "ttclid", "igshid", "li_fat_id", "mc_cid", "mc_eid",
		"_ga", "_gl", "_hsenc", "_hsmi", "mkt_tok", "oly_anon_id", "oly_enc_id",
		"rb_clickid", "s_cid", "vero_id", "wickedid":
		return true
	}
	return false
}
