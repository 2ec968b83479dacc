package fetch

import (
	"bytes"
	"strings"
)

// DefaultMaxLinks bounds the links one page yields when Registry.MaxLinks
// (or HTMLExtractor.MaxLinks, for an extractor used on its own) is zero. A
// page of 400,000 links would otherwise cost hundreds of megabytes to
// extract and flood the frontier.
const DefaultMaxLinks = 10_000

// linkSet gathers the links of one page: each URL once, in order of first
// appearance, followable if any occurrence was, at most max of them.
type linkSet struct {
	max          int  // negative: no limit
	keepNofollow bool // keep links that must not be followed, marked
	links        []Link
	index        map[string]int // URL → position in links
	dropped      int            // links refused because the set was full
}

func newLinkSet(max int, keepNofollow bool) *linkSet {
	return &linkSet{max: max, keepNofollow: keepNofollow}
}

func (s *linkSet) full() bool { return s.max >= 0 && len(s.links) >= s.max }

// has reports whether url is in the set already and would not be changed
// by an occurrence that is followable or not as nofollow says.
func (s *linkSet) has(url string, nofollow bool) bool {
	i, ok := s.index[url]
	return ok && (nofollow || !s.links[i].Nofollow)
}

// add puts l (absolute, marked) into the set and reports whether it is a
// new URL there. A followable occurrence of a URL kept as nofollow takes
// its place, so that its rel does not mark the merged link again.
func (s *linkSet) add(l Link) bool {
	if l.Nofollow && !s.keepNofollow {
		return false
	}
	if i, ok := s.index[l.URL]; ok {
		if s.links[i].Nofollow && !l.Nofollow {
			s.links[i] = l
		}
		return false
	}
	if s.full() {
		s.dropped++
		return false
	}
	if s.index == nil {
		s.index = make(map[string]int)
	}
	s.index[l.URL] = len(s.links)
	s.links = append(s.links, l)
	return true
}

// dropPastCap counts a link met once the set is full, without resolving
// it (no allocation): hrefs that cannot lead anywhere (empty, fragment,
// another scheme) and absolute ones spelled like a kept URL are not
// dropped links. A relative repeat of a kept link is counted, so the count
// can be a little high.
func (s *linkSet) dropPastCap(href []byte) {
	href = bytes.Trim(href, " \t\n\f\r")
	if !plausibleHref(href) {
		return
	}
	if _, ok := s.index[string(href)]; ok {
		return
	}
	s.dropped++
}

// plausibleHref reports whether href may resolve to an http(s) URL: it is
// not empty, not a fragment and has no scheme or an http(s) one.
func plausibleHref(href []byte) bool {
	if len(href) == 0 || href[0] == '#' {
		return false
	}
	for i, c := range href {
		switch {
		case c == ':':
			scheme := href[:i]
			return bytes.EqualFold(scheme, []byte("http")) || bytes.EqualFold(scheme, []byte("https"))
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return true // no scheme: a relative reference
		}
	}
	return true
}

// relForbidsFollow reports whether a rel attribute says not to follow.
func relForbidsFollow(rel string) bool {
	if rel == "" {
		return false
	}
	for tok := range strings.FieldsSeq(rel) {
		switch strings.ToLower(tok) {
		case "nofollow", "ugc", "sponsored":
			return true
		}
	}
	return false
}

// relBytesForbidFollow is relForbidsFollow for the markup's bytes.
func relBytesForbidFollow(rel []byte) bool {
	for tok := range bytes.FieldsSeq(rel) {
		if bytes.EqualFold(tok, []byte("nofollow")) || bytes.EqualFold(tok, []byte("ugc")) || bytes.EqualFold(tok, []byte("sponsored")) {
			return true
		}
	}
	return false
}
