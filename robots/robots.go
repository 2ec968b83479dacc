package robots

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxSize is the number of bytes of a robots.txt body that Parse reads
// (RFC 9309 §2.5 requires at least 500 KiB). Callers fetching robots.txt
// need not read more than this.
const MaxSize = 500 << 10

// Robots is a parsed robots.txt file. It is immutable and safe for
// concurrent use. A nil *Robots allows everything.
type Robots struct {
	groups   []*Group          // the file's groups, file order, unmerged
	byAgent  map[string]*Group // lower-case product token → merged group
	star     *Group            // merged "*" groups, or nil
	sitemaps []string
	host     string
}

// Group is the set of rules that applies to one agent: one group of the
// file, or several groups with the same product token merged. It is
// immutable and safe for concurrent use. A nil *Group allows everything.
type Group struct {
	text     string     // backs every rule's pattern
	buffers  *sync.Pool // of *[]byte, for normalising long paths; shared by a Robots' groups
	agents   []string
	sets     [][]rule // one rule list per merged group, each in precedence order
	delay    time.Duration
	hasDelay bool
	line     int
}

// A Rule is one Allow or Disallow line of a group.
type Rule struct {
	// Allow is true for an Allow line, false for a Disallow line.
	Allow bool
	// Pattern is the rule's path pattern after percent-encoding
	// normalisation (RFC 9309 §2.2.2): non-ASCII octets %-encoded,
	// %-encoded unreserved characters decoded, hex digits upper-case, and a
	// '$' that is not the end anchor written as %24. Its length is the
	// rule's precedence: the longest matching Pattern decides.
	Pattern string
	// Line is the 1-based line number of the rule in the file, 0 for the
	// rule of DisallowAll.
	Line int
}

// ProductToken returns the product token of agent: its leading run of
// ASCII letters, '-' and '_' (RFC 9309 §2.2.1), the part of a crawler's
// name that robots.txt groups are matched against, so
// "FooBot/1.2 (+https://foo.example/bot)" gives "FooBot". It is "" when
// agent begins with any other character. Case is kept: tokens compare
// case-insensitively. Parse reads User-agent values the same way, except
// "*", which names every crawler and is no product token.
//
// It is the one definition of a product token for heed: code that names a
// crawler or reads agent-scoped directives should use it, not a copy.
func ProductToken(agent string) string {
	for i := 0; i < len(agent); i++ {
		c := agent[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return agent[:i]
		}
	}
	return agent
}

// ValidProductToken reports whether s is a product token a crawler may
// name itself by: not empty, and ASCII letters, '-' and '_' only, so that
// ProductToken(s) == s (RFC 9309 §2.2.1; Google's IsValidUserAgentToObey).
// "*" is not one: it names every crawler in a robots.txt, but no crawler.
func ValidProductToken(s string) bool {
	return s != "" && ProductToken(s) == s
}

// AllowAll returns a Robots that allows every URL to every agent: the
// outcome of a robots.txt fetch that ends in a 4xx status (RFC 9309
// §2.3.1.3).
func AllowAll() *Robots { return &Robots{} }

// DisallowAll returns a Robots that disallows every URL but /robots.txt to
// every agent: the outcome of a robots.txt fetch that ends in a 5xx status
// or a network error (RFC 9309 §2.3.1.4).
func DisallowAll() *Robots {
	g := &Group{
		text:   "/",
		agents: []string{"*"},
		sets:   [][]rule{{{n: 1, lit: 1, kind: kindPrefix}}},
	}
	return &Robots{groups: []*Group{g}, star: g}
}

// Allowed reports whether agent may fetch url. Only agent's ProductToken
// counts, so "FooBot/1.2" is "FooBot". Url is an absolute URL or
// a path with optional query ("/path?query"); its fragment is ignored. A
// url that begins with '/' is a path, even "//a/b".
// It is Group(agent).Allowed applied to the path and query of url.
func (r *Robots) Allowed(agent, url string) bool {
	return r.Group(agent).Allowed(url)
}

// Group returns the rules that apply to agent: the groups naming agent's
// product token (compared case-insensitively and exactly, without prefix
// matching) merged into one; if there are none, the "*" groups merged; if
// there are none either, nil, which allows everything.
func (r *Robots) Group(agent string) *Group {
	if r == nil {
		return nil
	}
	token := ProductToken(agent)
	if token != "" && len(r.byAgent) > 0 {
		if g := r.byAgent[token]; g != nil { // token is usually lower case already
			return g
		}
		var buf [64]byte
		if len(token) <= len(buf) {
			lower := buf[:len(token)]
			for i := 0; i < len(token); i++ {
				lower[i] = toLower(token[i])
			}
			// The compiler does not allocate for a map index by string(bytes).
			if g := r.byAgent[string(lower)]; g != nil {
				return g
			}
		} else if g := r.byAgent[strings.ToLower(token)]; g != nil {
			return g
		}
	}
	return r.star
}

// CrawlDelay returns the Crawl-delay of the group that applies to agent
// (chosen as by Group), and whether it has one.
func (r *Robots) CrawlDelay(agent string) (time.Duration, bool) {
	return r.Group(agent).CrawlDelay()
}

// Sitemaps returns the absolute URLs of every Sitemap line, in file order.
// Relative or empty values are dropped.
func (r *Robots) Sitemaps() []string {
	if r == nil {
		return nil
	}
	return r.sitemaps
}

// Host returns the value of the first Host line (a Yandex extension naming
// the preferred mirror), or "".
func (r *Robots) Host() string {
	if r == nil {
		return ""
	}
	return r.host
}

// Groups returns every group of the file in file order, unmerged, each with
// the agents of its User-agent lines. It is meant for linters and
// diagnostics; Group selects and merges them for an agent.
func (r *Robots) Groups() []*Group {
	if r == nil {
		return nil
	}
	return append([]*Group(nil), r.groups...)
}

// Agents returns the product tokens of the group's User-agent lines ("*"
// for the global group), in file order. For a Group of Robots.Group that
// merges several groups of the file, it is the one token they share, as
// first written.
func (g *Group) Agents() []string {
	if g == nil {
		return nil
	}
	return g.agents
}

// Line returns the line number of the group's first User-agent line.
func (g *Group) Line() int {
	if g == nil {
		return 0
	}
	return g.line
}

// CrawlDelay returns the group's Crawl-delay and whether it has one. Of
// merged groups, the first that has a valid Crawl-delay line wins.
func (g *Group) CrawlDelay() (time.Duration, bool) {
	if g == nil {
		return 0, false
	}
	return g.delay, g.hasDelay
}

// Rules returns the group's rules in precedence order: longest Pattern
// first (its normalised form, so a raw non-ASCII octet counts as the three
// of its %-encoding and "%7E" as the one of "~"), Allow before Disallow of
// the same length, then file order. Duplicates and
// empty patterns, which match nothing, are left out; an Allow ending in
// /index.htm or /index.html brings an extra Allow of its directory
// ("/dir/$").
func (g *Group) Rules() []Rule {
	if g == nil {
		return nil
	}
	var all []rule
	for _, set := range g.sets {
		all = append(all, set...)
	}
	if len(g.sets) > 1 {
		// Each set is in precedence order; merge them stably.
		slices.SortStableFunc(all, func(a, b rule) int {
			if beats(&a, &b) {
				return -1
			}
			if beats(&b, &a) {
				return 1
			}
			return 0
		})
	}
	out := make([]Rule, len(all))
	for i := range all {
		out[i] = all[i].export(g.text)
	}
	return out
}

// Allowed reports whether pathQuery may be fetched. PathQuery is the path,
// parameters and query of a URL ("/a/b;p?q"); a fragment is ignored, and
// an absolute URL is reduced to its path and query. Allowed does not allocate unless pathQuery needs
// percent-encoding normalisation and is longer than 2 KiB.
func (g *Group) Allowed(pathQuery string) bool {
	if g == nil {
		return true
	}
	r := g.decide(pathQuery)
	return r == nil || r.allow()
}

// Match reports the rule that decides pathQuery (as for Allowed): ok is
// false if no rule matches, in which case pathQuery is allowed; otherwise
// pathQuery is allowed if and only if rule.Allow.
func (g *Group) Match(pathQuery string) (rule Rule, ok bool) {
	if g == nil {
		return Rule{}, false
	}
	r := g.decide(pathQuery)
	if r == nil {
		return Rule{}, false
	}
	return r.export(g.text), true
}
