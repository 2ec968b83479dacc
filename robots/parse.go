package robots

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// maxLineLen is where Google's reference cuts a line: it keeps 2083*8-1
// bytes (eight times the longest URL some browsers accept) and ignores the
// rest of the line.
const maxLineLen = 2083*8 - 1

// Parse parses a robots.txt body. It never fails: lines it cannot
// understand are ignored. Only the first MaxSize bytes are read; a line cut
// by that limit is dropped. Parse does not retain body.
func Parse(body []byte) *Robots {
	if len(body) > MaxSize {
		cut := MaxSize
		if c := body[cut]; c != '\n' && c != '\r' {
			// The last line is incomplete: a cut Allow could forbid less or
			// a cut Disallow forbid more than the site meant.
			for cut > 0 && body[cut-1] != '\n' && body[cut-1] != '\r' {
				cut--
			}
		}
		body = body[:cut]
	}
	// Read body as a string without copying it: nothing retains the view,
	// every kept value is copied into the parser's arena.
	s := unsafe.String(unsafe.SliceData(body), len(body))
	// Skip a UTF-8 byte order mark, or the part of one that is there.
	for _, b := range []byte("\xEF\xBB\xBF") {
		if len(s) == 0 || s[0] != b {
			break
		}
		s = s[1:]
	}
	var p parser
	p.arena = make([]byte, 0, len(s)/2+16)
	line := 0
	for {
		end := lineEnd(s)
		line++
		p.parseLine(s[:end], line)
		if end == len(s) {
			break
		}
		if s[end] == '\r' && end+1 < len(s) && s[end+1] == '\n' {
			end++
		}
		s = s[end+1:]
	}
	return p.finish()
}

func lineEnd(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\n' || c == '\r' {
			return i
		}
	}
	return len(s)
}

// ref locates a string in the parser's arena until the arena becomes the
// Robots' single backing string.
type ref struct{ off, n int32 }

type rawGroup struct {
	agents     []ref // product tokens as written; "*" for the global group
	keys       []ref // lower-case product tokens, "*" included
	start, end int   // its rules are parser.rules[start:end]
	line       int
	delay      time.Duration
	hasDelay   bool
}

type parser struct {
	arena    []byte // every kept string, concatenated
	rules    []rule // pat not yet set
	pats     []ref  // pattern of rules[i]
	groups   []rawGroup
	inGroup  bool // a User-agent line has been seen
	sawRule  bool // an Allow or Disallow line followed the last User-agent line
	sitemaps []ref
	host     ref
	hasHost  bool
}

func (p *parser) keep(s string) ref {
	off := len(p.arena)
	p.arena = append(p.arena, s...)
	return ref{int32(off), int32(len(s))}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// hasPrefixFold reports whether s begins with prefix, which is lower case,
// ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if toLower(s[i]) != prefix[i] {
			return false
		}
	}
	return true
}

// Keys of the lines Parse understands.
const (
	keyUnknown = iota
	keyUserAgent
	keyAllow
	keyDisallow
	keySitemap
	keyCrawlDelay
	keyHost
)

// classifyKey accepts what Google's reference accepts: any key that starts
// with a known name or one of its frequent misspellings ("Disallowed",
// "dissalow", "user agent"), in any case.
func classifyKey(k string) int {
	if len(k) == 0 {
		return keyUnknown
	}
	switch toLower(k[0]) {
	case 'u':
		if hasPrefixFold(k, "user-agent") || hasPrefixFold(k, "useragent") || hasPrefixFold(k, "user agent") {
			return keyUserAgent
		}
	case 'a':
		if hasPrefixFold(k, "allow") {
			return keyAllow
		}
	case 'd':
		for _, name := range [...]string{"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"} {
			if hasPrefixFold(k, name) {
				return keyDisallow
			}
		}
	case 's':
		if hasPrefixFold(k, "sitemap") || hasPrefixFold(k, "site-map") {
			return keySitemap
		}
	case 'c':
		for _, name := range [...]string{"crawl-delay", "crawldelay", "crawl delay", "crawl_delay"} {
			if hasPrefixFold(k, name) {
				return keyCrawlDelay
			}
		}
	case 'h':
		if len(k) == 4 && hasPrefixFold(k, "host") {
			return keyHost
		}
	}
	return keyUnknown
}

// splitLine splits a line into key and value as Google's reference does:
// comment removed, "key : value", or "key value" when the colon is missing
// and the line is exactly two words.
func splitLine(line string) (key, value string, ok bool) {
	if len(line) > maxLineLen {
		line = line[:maxLineLen]
	}
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	line = trimSpace(line)
	sep := strings.IndexByte(line, ':')
	if sep < 0 {
		sep = strings.IndexAny(line, " \t")
		if sep < 0 {
			return "", "", false
		}
		rest := strings.TrimLeft(line[sep:], " \t")
		if strings.ContainsAny(rest, " \t") {
			return "", "", false
		}
	}
	key = trimSpace(line[:sep])
	if key == "" {
		return "", "", false
	}
	return key, trimSpace(line[sep+1:]), true
}

func (p *parser) parseLine(line string, num int) {
	key, value, ok := splitLine(line)
	if !ok {
		return
	}
	switch classifyKey(key) {
	case keyUserAgent:
		p.userAgent(value, num)
	case keyAllow:
		p.rule(true, value, num)
	case keyDisallow:
		p.rule(false, value, num)
	case keySitemap:
		if isAbsoluteURL(value) {
			p.sitemaps = append(p.sitemaps, p.keep(value))
		}
	case keyCrawlDelay:
		if g := p.current(); g != nil && !g.hasDelay {
			g.delay, g.hasDelay = parseDelay(value)
		}
	case keyHost:
		if !p.hasHost && value != "" {
			p.host, p.hasHost = p.keep(value), true
		}
	}
}

func (p *parser) current() *rawGroup {
	if !p.inGroup {
		return nil
	}
	return &p.groups[len(p.groups)-1]
}

func (p *parser) userAgent(value string, num int) {
	if !p.inGroup || p.sawRule {
		p.groups = append(p.groups, rawGroup{start: len(p.rules), end: len(p.rules), line: num})
		p.inGroup, p.sawRule = true, false
	}
	g := &p.groups[len(p.groups)-1]
	// Like Google's reference, "* anything" is the global agent too.
	if value != "" && value[0] == '*' && (len(value) == 1 || isSpace(value[1])) {
		r := p.keep("*")
		g.agents = append(g.agents, r)
		g.keys = append(g.keys, r)
		return
	}
	token := productToken(value)
	if token == "" {
		return // names no agent, but still opens a group
	}
	r := p.keep(token)
	g.agents = append(g.agents, r)
	lower := r
	for i := 0; i < len(token); i++ {
		if 'A' <= token[i] && token[i] <= 'Z' {
			lower = ref{int32(len(p.arena)), int32(len(token))}
			for j := 0; j < len(token); j++ {
				p.arena = append(p.arena, toLower(token[j]))
			}
			break
		}
	}
	g.keys = append(g.keys, lower)
}

func (p *parser) rule(allow bool, value string, num int) {
	g := p.current()
	if g == nil {
		return // rules before the first User-agent line belong to no group
	}
	p.sawRule = true
	if value == "" {
		return // an empty pattern matches nothing
	}
	p.addRule(allow, value, "", num)
	if allow {
		// Google: an Allow of .../index.htm(l) also allows its directory.
		if i := strings.LastIndexByte(value, '/'); i >= 0 && strings.HasPrefix(value[i:], "/index.htm") {
			p.addRule(true, value[:i+1], "$", num)
		}
	}
	g.end = len(p.rules)
}

// addRule adds the rule whose pattern is value+suffix; suffix is "" or the
// end anchor "$".
func (p *parser) addRule(allow bool, value, suffix string, num int) {
	off := len(p.arena)
	p.arena = appendEscapedPattern(p.arena, value)
	p.arena = append(p.arena, suffix...)
	pat := p.arena[off:]
	r := rule{
		prio:  int32(len(value) + len(suffix)),
		line:  int32(num),
		lit:   int32(len(pat)),
		allow: allow,
	}
	if pat[len(pat)-1] == '$' {
		r.anchor = true
		r.lit--
	} else {
		for r.lit > 0 && pat[r.lit-1] == '*' {
			r.lit--
		}
	}
	switch {
	case slices.Contains(pat[:r.lit], '*'):
		r.kind = kindWild
	case r.anchor:
		r.kind = kindExact
	default:
		r.kind = kindPrefix
	}
	p.rules = append(p.rules, r)
	p.pats = append(p.pats, ref{int32(off), int32(len(pat))})
}

// parseDelay accepts a non-negative decimal number of seconds ("10",
// "0.5"); anything else (negative, exponent, NaN, Inf, words) is ignored.
func parseDelay(v string) (time.Duration, bool) {
	digits, dots := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case '0' <= c && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return 0, false
		}
	}
	if digits == 0 || dots > 1 {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, false
	}
	if d := f * float64(time.Second); d < math.MaxInt64 {
		return time.Duration(d), true
	}
	return time.Duration(math.MaxInt64), true
}

// isAbsoluteURL reports whether v is scheme://authority...
func isAbsoluteURL(v string) bool {
	i := strings.Index(v, "://")
	if i <= 0 || i+3 >= len(v) {
		return false
	}
	for j := 0; j < i; j++ {
		c := v[j]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (j == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	c := v[i+3]
	return c != '/' && c != '?' && c != '#' && !isSpace(c)
}

// compareRules orders rules by precedence, then so that duplicates are
// adjacent and the first of them is the earliest line.
func compareRules(a, b *rule) int {
	if c := precedes(a, b); c != 0 {
		return c
	}
	if c := strings.Compare(a.pat, b.pat); c != 0 {
		return c
	}
	return int(a.line - b.line)
}

// finish builds the Robots: one backing string for every kept value, rules
// sorted and deduplicated per group, groups merged per product token.
func (p *parser) finish() *Robots {
	text := string(p.arena)
	str := func(r ref) string { return text[r.off : r.off+r.n] }

	for i := range p.rules {
		p.rules[i].pat = str(p.pats[i])
	}
	rules := make([]rule, 0, len(p.rules))
	groups := make([]Group, len(p.groups))
	sets := make([][]rule, len(p.groups))
	robots := &Robots{groups: make([]*Group, len(p.groups))}
	type entry struct {
		key, agent string // lower-case and as written
		g          int
	}
	var entries []entry
	nagents := 0
	for i := range p.groups {
		nagents += len(p.groups[i].agents)
	}
	agents := make([]string, 0, nagents)
	for i := range p.groups {
		rg := &p.groups[i]
		own := p.rules[rg.start:rg.end]
		slices.SortFunc(own, func(a, b rule) int { return compareRules(&a, &b) })
		start := len(rules)
		for j := range own {
			if n := len(rules); n > start && rules[n-1].allow == own[j].allow && rules[n-1].pat == own[j].pat {
				continue
			}
			rules = append(rules, own[j])
		}
		sets[i] = rules[start:len(rules):len(rules)]
		first := len(agents)
		for _, a := range rg.agents {
			agents = append(agents, str(a))
		}
		g := &groups[i]
		*g = Group{
			agents:   agents[first:len(agents):len(agents)],
			sets:     sets[i : i+1 : i+1],
			delay:    rg.delay,
			hasDelay: rg.hasDelay,
			line:     rg.line,
		}
		robots.groups[i] = g
		for j, k := range rg.keys {
			entries = append(entries, entry{str(k), str(rg.agents[j]), i})
		}
	}

	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for len(entries) > 0 {
		n := 1
		for n < len(entries) && entries[n].key == entries[0].key {
			n++
		}
		run := entries[:n]
		entries = entries[n:]
		var g *Group
		if run[0].g == run[n-1].g {
			g = &groups[run[0].g] // every occurrence is in one group
		} else {
			g = &Group{agents: []string{run[0].agent}, line: groups[run[0].g].line}
			for j, e := range run {
				if j > 0 && e.g == run[j-1].g {
					continue
				}
				src := &groups[e.g]
				g.sets = append(g.sets, src.sets[0])
				if !g.hasDelay && src.hasDelay {
					g.delay, g.hasDelay = src.delay, true
				}
			}
		}
		if run[0].key == "*" {
			robots.star = g
			continue
		}
		if robots.byAgent == nil {
			robots.byAgent = make(map[string]*Group)
		}
		robots.byAgent[run[0].key] = g
	}

	if len(p.sitemaps) > 0 {
		robots.sitemaps = make([]string, len(p.sitemaps))
		for i, r := range p.sitemaps {
			robots.sitemaps[i] = str(r)
		}
	}
	if p.hasHost {
		robots.host = str(p.host)
	}
	return robots
}
