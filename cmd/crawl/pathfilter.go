package main

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"regexp/syntax"
	"strings"
)

// pathPatterns is the value of -include or -exclude, given any number of
// times: each a path prefix ("/library/") or, beginning with ^, a regular
// expression (RE2, as package regexp reads it), matched against a URL's
// path and query as the URL spells them (percent-encoded), "/a/b?q=1".
type pathPatterns []pathPattern

// pathPattern is one -include or -exclude value.
type pathPattern struct {
	text   string
	prefix string         // set for a prefix
	re     *regexp.Regexp // set for a regular expression
}

func (p *pathPatterns) String() string {
	texts := make([]string, len(*p))
	for i, pat := range *p {
		texts[i] = pat.text
	}
	return strings.Join(texts, ", ")
}

func (p *pathPatterns) Set(s string) error {
	switch {
	case strings.HasPrefix(s, "^"):
		re, err := regexp.Compile(s)
		if err != nil {
			var serr *syntax.Error
			if errors.As(err, &serr) {
				return fmt.Errorf("not a regular expression: %s: %s", serr.Code, serr.Expr)
			}
			return err
		}
		*p = append(*p, pathPattern{text: s, re: re})
	case strings.HasPrefix(s, "/"):
		*p = append(*p, pathPattern{text: s, prefix: s})
	default:
		return errors.New("want a path prefix beginning with /, or a regular expression beginning with ^")
	}
	return nil
}

// match reports whether one of p matches target, a path and query.
func (p pathPatterns) match(target string) bool {
	for _, pat := range p {
		if pat.re != nil && pat.re.MatchString(target) || pat.re == nil && strings.HasPrefix(target, pat.prefix) {
			return true
		}
	}
	return false
}

// pathFilter is the crawler Filter of -include and -exclude: a link is
// followed when its path and query match one of include (if any is given)
// and none of exclude. It returns nil when neither is given.
func pathFilter(include, exclude pathPatterns) func(u, from *url.URL, depth int) bool {
	if len(include) == 0 && len(exclude) == 0 {
		return nil
	}
	return func(u, _ *url.URL, _ int) bool {
		target := u.RequestURI()
		return (len(include) == 0 || include.match(target)) && !exclude.match(target)
	}
}
