// Package hostid says what a host is. Every part of heed that groups
// requests by host (the frontier's queues and scope, the rate limiter's
// keys, the robots gate's cache, redirect loop detection, the crawler's
// reports) takes its answer from here, so that every spelling of one host
// ("H.Example:80", "h.example.", "bücher.example" and its punycode) is one
// host with one politeness budget.
//
// The canonical host of a URL is "name" or "name:port":
//
//   - the name is lower-cased; an internationalised name is converted to
//     punycode by IDNA UTS #46, non-transitional, without STD3 or hyphen
//     checks, as browsers do (WHATWG URL "domain to ASCII"); names the
//     profile maps to something unstable are refused;
//   - trailing dots are dropped: "a.example." is the fully qualified
//     spelling of "a.example", and one server answers both;
//   - an IPv6 literal is kept in brackets in RFC 5952 form; a zone is
//     refused, since it names a local interface, not a host;
//   - the port is dropped when empty or the scheme's default (80 for http,
//     443 for https), written without leading zeros otherwise; a port that
//     is not a decimal number in 1–65535 is refused (port 0 cannot be
//     connected to).
package hostid

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// Reasons a host has no canonical form. Errors of this package are *Error
// values wrapping one of these; test with errors.Is.
var (
	// ErrHost: the host is empty or not a valid host name or IP literal,
	// including IDNA (UTS #46) failures.
	ErrHost = errors.New("hostid: invalid host")
	// ErrPort: the port is not a decimal number in 1–65535.
	ErrPort = errors.New("hostid: invalid port")
	// ErrScheme: Authority was given a URL whose scheme is not http or
	// https.
	ErrScheme = errors.New("hostid: scheme is not http or https")
)

// Error reports a host, port or scheme that has no canonical form. It keeps
// the offending value and the reason apart so that callers with their own
// sentinel errors (the frontier's, the robots gate's) can restate it without
// repeating themselves.
type Error struct {
	// Err is ErrHost, ErrPort or ErrScheme.
	Err error
	// Value is the host, port or scheme as given.
	Value string
	// Reason says what is wrong with Value, when there is more to say.
	Reason string
}

// Error returns `hostid: invalid host "value": reason`.
func (e *Error) Error() string {
	s := e.Err.Error() + " " + strconv.Quote(e.Value)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Unwrap returns e.Err, so errors.Is(err, ErrHost) and friends work.
func (e *Error) Unwrap() error { return e.Err }

func hostError(value, reason string) error {
	return &Error{Err: ErrHost, Value: value, Reason: reason}
}

func portError(value, reason string) error {
	return &Error{Err: ErrPort, Value: value, Reason: reason}
}

// Host returns the canonical host of u, "name" or "name:port" as described
// in the package documentation: the key every politeness budget, queue and
// cache is keyed by. Default ports are known for http and https only; other
// schemes keep theirs. A u.Host already in canonical form is returned as is,
// without allocating. Errors are *Error values wrapping ErrHost or ErrPort.
func Host(u *url.URL) (string, error) {
	var arr [128]byte
	buf, _, err := appendHostPort(arr[:0], u.Scheme, u.Host)
	if err != nil {
		return "", err
	}
	if string(buf) == u.Host {
		return u.Host, nil
	}
	return string(buf), nil
}

// Key is Host for callers that take a func(*url.URL) string (the robots
// gate's gate.Config.Host, the frontier's Config.Key): the canonical host of
// u, or "" if it has none.
func Key(u *url.URL) string {
	h, err := Host(u)
	if err != nil {
		return ""
	}
	return h
}

// Name returns the canonical name of u's host: Host without the port. An
// IPv6 literal keeps its brackets.
func Name(u *url.URL) (string, error) {
	var arr [128]byte
	buf, nameEnd, err := appendHostPort(arr[:0], u.Scheme, u.Host)
	if err != nil {
		return "", err
	}
	if nameEnd <= len(u.Host) && string(buf[:nameEnd]) == u.Host[:nameEnd] {
		return u.Host[:nameEnd], nil
	}
	return string(buf[:nameEnd]), nil
}

// Authority returns "scheme://" + Host(u), the origin of u without its
// userinfo: what robots.txt applies to (RFC 9309 §2.3: one robots.txt per
// scheme, host and port). The scheme is lower-cased; only http and https
// URLs have one, other schemes give an *Error wrapping ErrScheme.
func Authority(u *url.URL) (string, error) {
	var scheme string
	switch {
	case strings.EqualFold(u.Scheme, "http"):
		scheme = "http://"
	case strings.EqualFold(u.Scheme, "https"):
		scheme = "https://"
	default:
		return "", &Error{Err: ErrScheme, Value: u.Scheme}
	}
	var arr [128]byte
	buf := append(arr[:0], scheme...)
	buf, _, err := appendHostPort(buf, u.Scheme, u.Host)
	if err != nil {
		return "", err
	}
	return string(buf), nil
}

// appendHostPort appends the canonical form of hostport, a url.URL.Host
// (escapes already decoded), and returns where the name ends in buf.
func appendHostPort(buf []byte, scheme, hostport string) ([]byte, int, error) {
	host, port, err := SplitHostPort(hostport)
	if err != nil {
		return buf, 0, err
	}
	if buf, err = appendName(buf, host, false); err != nil {
		return buf, 0, err
	}
	nameEnd := len(buf)
	buf, err = AppendPort(buf, scheme, port)
	return buf, nameEnd, err
}

// SplitHostPort splits the host[:port] part of a URL's authority (userinfo
// already removed) at the port's colon: the last colon, or the one right
// after an IPv6 literal's closing bracket. The host keeps its brackets; the
// port is empty when absent. Nothing is validated beyond the brackets; an
// unclosed bracket or text after one is an *Error wrapping ErrHost.
func SplitHostPort(hostport string) (host, port string, err error) {
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", "", hostError(hostport, "unclosed IPv6 literal")
		}
		host, rest := hostport[:end+1], hostport[end+1:]
		switch {
		case rest == "":
			return host, "", nil
		case rest[0] == ':':
			return host, rest[1:], nil
		}
		return "", "", hostError(hostport, "text after IPv6 literal")
	}
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		return hostport[:i], hostport[i+1:], nil
	}
	return hostport, "", nil
}

// AppendName appends to buf the canonical form of host, a host name or
// bracketed IPv6 literal as written in a URL (percent-escapes allowed, as
// in a raw href), and returns the extended buffer. Errors are *Error values
// wrapping ErrHost.
func AppendName(buf []byte, host string) ([]byte, error) {
	return appendName(buf, host, true)
}

// lookupProfile is UTS #46 as browsers apply it (WHATWG URL "domain to
// ASCII"): non-transitional, Bidi and joiner checks on, STD3 rules and
// hyphen checks off, so real-world names such as "r3---sn-x.example" and
// "a_b.example" pass. idna.Lookup would reject both, and a second profile
// anywhere else would split one host in two.
var lookupProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
)

// appendName is AppendName; escaped says whether host may hold
// percent-escapes (a raw URL) or has had them decoded (url.URL.Host, where
// a '%' left over is a literal one and decoding again would be wrong).
func appendName(buf []byte, host string, escaped bool) ([]byte, error) {
	if host == "" {
		return buf, hostError(host, "empty host")
	}
	if host[0] == '[' {
		if host[len(host)-1] != ']' {
			return buf, hostError(host, "bad IPv6 literal")
		}
		addr, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return buf, hostError(host, "bad IPv6 literal")
		}
		buf = append(buf, '[')
		buf = addr.AppendTo(buf)
		return append(buf, ']'), nil
	}
	if asciiHost(host) {
		start := len(buf)
		for i := 0; i < len(host); i++ {
			b := host[i]
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			buf = append(buf, b)
		}
		return trimDots(buf, start, host)
	}
	h := host
	if escaped && strings.IndexByte(h, '%') >= 0 {
		u, err := url.PathUnescape(h)
		if err != nil {
			return buf, hostError(host, "bad escape")
		}
		h = u
	}
	if !utf8.ValidString(h) {
		return buf, hostError(host, "not UTF-8")
	}
	a, err := lookupProfile.ToASCII(h)
	if err != nil {
		return buf, hostError(host, err.Error())
	}
	a = strings.TrimRight(a, ".")
	if !validHostName(a) {
		return buf, hostError(host, "forbidden character or empty name")
	}
	// The result must be its own canonical form, or a URL would dedup
	// differently the second time round; UTS #46 has corner cases.
	if again, err := lookupProfile.ToASCII(a); err != nil || again != a {
		return buf, hostError(host, "no stable ASCII form")
	}
	return append(buf, a...), nil
}

// trimDots drops the trailing dots of the name written to buf[start:]. All
// of them, not one: "a.." less one dot is "a.", whose canonical form would
// be "a", and a canonical form must be its own.
func trimDots(buf []byte, start int, host string) ([]byte, error) {
	end := len(buf)
	for end > start && buf[end-1] == '.' {
		end--
	}
	if end == start {
		return buf[:start], hostError(host, "empty name")
	}
	return buf[:end], nil
}

// asciiHost reports whether host consists of letters, digits, '-', '.' and
// '_' only and has no punycode ("xn--") label, so that lower-casing it is
// all UTS #46 would do.
func asciiHost(host string) bool {
	labelStart := true
	for i := 0; i < len(host); i++ {
		b := host[i]
		switch {
		case 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_':
			if labelStart && (b == 'x' || b == 'X') && len(host)-i >= 4 &&
				(host[i+1] == 'n' || host[i+1] == 'N') && host[i+2] == '-' && host[i+3] == '-' {
				return false // punycode label: needs validation
			}
			labelStart = false
		case b == '.':
			labelStart = true
		default:
			return false
		}
	}
	return true
}

// validHostName reports whether the ASCII form of a host name uses only
// the characters hosts may use in URLs (forbidden code points such as '*'
// or '!' pass UTS #46 once STD3 rules are off).
func validHostName(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		b := h[i]
		if !('a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '.' || b == '_') {
			return false
		}
	}
	return true
}

// AppendPort appends ":port" to buf unless port is empty or the default of
// scheme (80 for http, 443 for https, compared case-insensitively), without
// leading zeros. Errors are *Error values wrapping ErrPort.
func AppendPort(buf []byte, scheme, port string) ([]byte, error) {
	if port == "" {
		return buf, nil
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return buf, portError(port, "not a number")
		}
	}
	digits := port
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) > 5 {
		return buf, portError(port, "out of range")
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		n = n*10 + int(digits[i]-'0')
	}
	switch {
	case n == 0 || n > 65535:
		return buf, portError(port, "out of range")
	case n == 80 && strings.EqualFold(scheme, "http"), n == 443 && strings.EqualFold(scheme, "https"):
		return buf, nil
	}
	buf = append(buf, ':')
	return append(buf, digits...), nil
}

// RegistrableDomain returns the registrable domain of the canonical host
// name (as Name returns it): its eTLD+1 by the public suffix list, so
// a.example.com and b.example.com share "example.com" while a.github.io and
// b.github.io stay apart. IP literals, and names with no registrable part
// (localhost, co.uk), are returned as they are.
func RegistrableDomain(name string) string {
	if name == "" || name[0] == '[' {
		return name
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return name
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(name)
	if err != nil {
		return name
	}
	return d
}
