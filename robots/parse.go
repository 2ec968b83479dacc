package robots

import (
	"bytes"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	p.arena = make([]byte, 0, len(s)+16) // patterns grow only when %-encoded
	p.rules = make([]rule, 0, len(s)/32)
	lines := lineSplitter{lf: -2, cr: -2}
	line := 0
	for {
		end := lines.next(s)
		line++
		p.parseLine(s[:end], line)
		if end == len(s) {
			break
		}
		if s[end] == '\r' && end+1 < len(s) && s[end+1] == '\n' {
			end++
		}
		s = s[end+1:]
		lines.advance(end + 1)
	}
	return p.finish()
}

// lineSplitter finds line ends (LF or CR) in time linear in the input: it
// remembers where the next LF and the next CR are, relative to the current
// line, so a file with only CR line ends is not rescanned for LF per line.
type lineSplitter struct {
	lf, cr int // offsets of the next LF and CR; -1 none left, -2 unknown
}

// next returns the length of the first line of s, the rest of the input.
func (ls *lineSplitter) next(s string) int {
	if ls.lf == -2 {
		ls.lf = strings.IndexByte(s, '\n')
	}
	if ls.cr == -2 {
		ls.cr = strings.IndexByte(s, '\r')
	}
	switch {
	case ls.lf < 0 && ls.cr < 0:
		return len(s)
	case ls.lf < 0:
		return ls.cr
	case ls.cr < 0:
		return ls.lf
	}
	return min(ls.lf, ls.cr)
}

// advance moves past the first n bytes.
func (ls *lineSplitter) advance(n int) {
	for _, p := range []*int{&ls.lf, &ls.cr} {
		switch {
		case *p >= n:
			*p -= n
		case *p >= 0:
			*p = -2
		}
	}
}

// ref locates a string in the parser's arena until the arena becomes the
// Robots' single backing string.
type ref struct{ off, n uint32 }

// agentRef is one product token of a User-agent line.
type agentRef struct {
	name, key ref // as written, and lower case ("*" for the global agent)
}

type rawGroup struct {
	agents    int // p.agents[agents:agentsEnd] are the group's
	agentsEnd int
	rules     int // p.rules[rules:rulesEnd] are the group's
	rulesEnd  int
	line      int
	delay     time.Duration
	hasDelay  bool
}

type parser struct {
	arena   []byte // every kept string, concatenated
	rules   []rule
	agents  []agentRef
	groups  []rawGroup
	inGroup bool // a User-agent line has been seen
	// sawRule is set when an Allow or Disallow line follows the last
	// User-agent line: the next User-agent line then starts a new group.
	// Nothing else ends a run of User-agent lines: RFC 9309's grammar has
	// no other group member, and Google's reference lets Crawl-delay,
	// Sitemap and unknown records sit between them
	// (ID_LineSyntax_Groups_OtherRules), so "User-agent: *", "Crawl-delay:
	// 10", "User-agent: BadBot", "Disallow: /" binds every crawler.
	sawRule  bool
	sitemaps []ref
	host     ref
	hasHost  bool
}

func (p *parser) keep(s string) ref {
	off := len(p.arena)
	p.arena = append(p.arena, s...)
	return ref{uint32(off), uint32(len(s))}
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
		// It belongs to the group of the User-agent lines above it, and so
		// to any more User-agent lines that follow it before a rule.
		if g := p.current(); g != nil {
			if !g.hasDelay {
				g.delay, g.hasDelay = parseDelay(value)
			}
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
		p.groups = append(p.groups, rawGroup{
			agents: len(p.agents), agentsEnd: len(p.agents),
			rules: len(p.rules), rulesEnd: len(p.rules),
			line: num,
		})
		p.inGroup, p.sawRule = true, false
	}
	g := &p.groups[len(p.groups)-1]
	// Like Google's reference, "* anything" is the global agent too.
	if value != "" && value[0] == '*' && (len(value) == 1 || isSpace(value[1])) {
		r := p.keep("*")
		p.agents = append(p.agents, agentRef{r, r})
		g.agentsEnd = len(p.agents)
		return
	}
	token := ProductToken(value)
	if token == "" {
		return // names no agent, but still opens a group
	}
	name := p.keep(token)
	key := name
	for i := 0; i < len(token); i++ {
		if 'A' <= token[i] && token[i] <= 'Z' {
			key = ref{uint32(len(p.arena)), uint32(len(token))}
			for j := 0; j < len(token); j++ {
				p.arena = append(p.arena, toLower(token[j]))
			}
			break
		}
	}
	p.agents = append(p.agents, agentRef{name, key})
	g.agentsEnd = len(p.agents)
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
	g.rulesEnd = len(p.rules)
}

// addRule adds the rule whose pattern is value+suffix; suffix is "" or the
// end anchor "$".
func (p *parser) addRule(allow bool, value, suffix string, num int) {
	off := len(p.arena)
	p.arena = appendEscapedPattern(p.arena, value)
	p.arena = append(p.arena, suffix...)
	pat := p.arena[off:]
	r := rule{
		off:  uint32(off),
		line: int32(num),
		n:    uint16(len(pat)),
		lit:  uint16(len(pat)),
	}
	if allow {
		r.flags |= flagAllow
	}
	if pat[len(pat)-1] == '$' {
		r.flags |= flagAnchor
		r.lit--
	} else {
		for r.lit > 0 && pat[r.lit-1] == '*' {
			r.lit--
		}
	}
	switch {
	case bytes.IndexByte(pat[:r.lit], '*') >= 0:
		r.kind = kindWild
	case r.flags&flagAnchor != 0:
		r.kind = kindExact
	default:
		r.kind = kindPrefix
	}
	p.rules = append(p.rules, r)
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

// finish builds the Robots: one backing string for every kept value, rules
// in precedence order and deduplicated per group, groups merged per product
// token.
func (p *parser) finish() *Robots {
	text := string(p.arena)
	str := func(r ref) string { return text[r.off : r.off+r.n] }

	robots := &Robots{}
	if len(p.groups) > 0 {
		buffers := &sync.Pool{New: func() any { b := make([]byte, 0, 4*stackPath); return &b }}
		rules := p.sortRules(text)
		groups := make([]Group, len(p.groups))
		sets := make([][]rule, len(p.groups))
		agents := make([]string, len(p.agents))
		for i, a := range p.agents {
			agents[i] = str(a.name)
		}
		robots.groups = make([]*Group, len(p.groups))
		for i := range p.groups {
			rg := &p.groups[i]
			sets[i] = rules[rg.rules:rg.rulesEnd:rg.rulesEnd]
			groups[i] = Group{
				text:     text,
				buffers:  buffers,
				agents:   agents[rg.agents:rg.agentsEnd:rg.agentsEnd],
				sets:     sets[i : i+1 : i+1],
				delay:    rg.delay,
				hasDelay: rg.hasDelay,
				line:     rg.line,
			}
			robots.groups[i] = &groups[i]
		}
		p.mergeGroups(robots, groups, text, buffers)
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

// sortRules puts each group's rules in precedence order, drops duplicates
// (same kind and pattern) and returns the rules, with each group's range
// in p.groups updated. Sorting packed keys rather than rules keeps this a
// small part of Parse.
func (p *parser) sortRules(text string) []rule {
	out := make([]rule, 0, len(p.rules))
	var keys, hashes []uint64
	var dups []bool
	var scratch sortScratch
	for gi := range p.groups {
		rg := &p.groups[gi]
		own := p.rules[rg.rules:rg.rulesEnd]
		start := len(out)
		keys = keys[:0]
		for i := range own {
			// Precedence first (longer, then Allow), then file order.
			k := uint64(math.MaxUint16-own[i].n)<<48 | uint64(i)
			if !own[i].allow() {
				k |= 1 << 47
			}
			keys = append(keys, k)
		}
		sortKeys(keys, &scratch)
		// Rules of equal precedence are adjacent: drop repeated patterns
		// among them, keeping the earliest line.
		for lo := 0; lo < len(keys); {
			hi := lo + 1
			for hi < len(keys) && keys[hi]>>47 == keys[lo]>>47 {
				hi++
			}
			run := keys[lo:hi]
			if len(run) <= 16 {
				runStart := len(out)
				for _, k := range run {
					r := own[k&(1<<47-1)]
					pat := text[r.off : r.off+uint32(r.n)]
					dup := false
					for j := runStart; j < len(out) && !dup; j++ {
						dup = text[out[j].off:out[j].off+uint32(out[j].n)] == pat
					}
					if !dup {
						out = append(out, r)
					}
				}
			} else {
				dups = markDuplicates(dups, run, own, text, &hashes)
				for j, k := range run {
					if !dups[j] {
						out = append(out, own[k&(1<<47-1)])
					}
				}
			}
			lo = hi
		}
		rg.rules, rg.rulesEnd = start, len(out)
	}
	return out
}

// sortScratch is memory reused by sortKeys.
type sortScratch struct {
	tmp    []uint64
	counts []int
}

// sortKeys sorts rule keys: precedence in the top 17 bits, the index of
// the rule below. Large groups, whose precedences span a small range, are
// counting-sorted in linear time; that sort is stable, so the order is the
// same.
func sortKeys(keys []uint64, sc *sortScratch) {
	if len(keys) <= 64 {
		slices.Sort(keys)
		return
	}
	lo, hi := keys[0]>>47, keys[0]>>47
	for _, k := range keys {
		lo, hi = min(lo, k>>47), max(hi, k>>47)
	}
	span := int(hi - lo + 1)
	if span > 8*len(keys) {
		slices.Sort(keys)
		return
	}
	counts := slices.Grow(sc.counts[:0], span+1)[:span+1]
	clear(counts)
	for _, k := range keys {
		counts[k>>47-lo+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	tmp := slices.Grow(sc.tmp[:0], len(keys))[:len(keys)]
	for _, k := range keys {
		tmp[counts[k>>47-lo]] = k
		counts[k>>47-lo]++
	}
	copy(keys, tmp)
	sc.tmp, sc.counts = tmp, counts
}

// markDuplicates sets dups[j] if the pattern of run[j] (keys into own)
// repeats that of an earlier element of run. It sorts hashes rather than
// filling a map: long runs of equal precedence are common in big files.
func markDuplicates(dups []bool, run []uint64, own []rule, text string, hashes *[]uint64) []bool {
	const idxBits = 20 // a run is shorter than MaxSize/8 rules
	pat := func(j uint64) string {
		r := &own[run[j]&(1<<47-1)]
		return text[r.off : r.off+uint32(r.n)]
	}
	hs := (*hashes)[:0]
	seed := maphash.MakeSeed() // equal patterns hash alike whatever the seed
	for j := range run {
		h := maphash.String(seed, pat(uint64(j)))
		hs = append(hs, h&^(1<<idxBits-1)|uint64(j))
	}
	slices.Sort(hs)
	dups = slices.Grow(dups[:0], len(run))[:len(run)]
	clear(dups)
	for a := 0; a < len(hs); {
		b := a + 1
		for b < len(hs) && hs[b]>>idxBits == hs[a]>>idxBits {
			b++
		}
		// hs[a:b] share a hash, in index order: mark repeats of earlier ones.
		for x := a + 1; x < b; x++ {
			jx := hs[x] & (1<<idxBits - 1)
			for y := a; y < x; y++ {
				jy := hs[y] & (1<<idxBits - 1)
				if !dups[jy] && pat(jx) == pat(jy) {
					dups[jx] = true
					break
				}
			}
		}
		a = b
	}
	*hashes = hs
	return dups
}

// mergeGroups fills robots.byAgent and robots.star: for each product token,
// its group, or the groups naming it merged into one. Memory stays linear in
// the input: a merged group refers to the rule lists of its groups.
func (p *parser) mergeGroups(robots *Robots, groups []Group, text string, buffers *sync.Pool) {
	type entry struct {
		key  string
		name int // index into p.agents
		g    int
	}
	entries := make([]entry, 0, len(p.agents))
	for gi := range p.groups {
		rg := &p.groups[gi]
		for ai := rg.agents; ai < rg.agentsEnd; ai++ {
			k := p.agents[ai].key
			entries = append(entries, entry{text[k.off : k.off+k.n], ai, gi})
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
		g := &groups[run[0].g]
		if run[n-1].g != run[0].g {
			name := p.agents[run[0].name].name
			g = &Group{text: text, buffers: buffers, agents: []string{text[name.off : name.off+name.n]}, line: g.line}
			for j, e := range run {
				if j > 0 && e.g == run[j-1].g {
					continue // the token appears twice in one group
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
}
