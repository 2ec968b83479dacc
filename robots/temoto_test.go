package robots

// Differential test against github.com/temoto/robotstxt.
//
// Every disagreement between heed and temoto must be explained by a known
// way in which temoto departs from RFC 9309 (and Google's reference where
// the RFC is silent). A disagreement is explained by repairs: rewrites of
// the robots.txt (and, consistently, of the URL and agent) that remove one
// known temoto weakness and leave heed's verdict unchanged (the test checks
// that it does). The repairs are applied one after another; the first after
// which temoto agrees with heed names the departure. What is left after the
// last repair is the matching of one group's rules, where each rule is
// matched alone by both libraries and a rule-level difference is classified.
// A disagreement that no step explains fails the test: it is a heed bug, or
// a temoto departure this test does not know yet.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	temoto "github.com/temoto/robotstxt"
)

// departure is a known behaviour in which temoto departs from RFC 9309.
type departure string

// The departures, in the order the classifier tries them. README.md has a
// table of them with an example each; TestDepartureExamples checks those.
const (
	depRejects    departure = "rejects the whole file"
	depBOM        departure = "partial byte order mark"
	depLimits     departure = "no size or line limits"
	depKeys       departure = "misspelt keys ignored"
	depTokenizer  departure = "whitespace tokenizer"
	depUserAgent  departure = "user-agent prefix matching"
	depCrawlDelay departure = "Crawl-delay ends the User-agent lines"
	depEmptyGroup departure = "rule-less group not a group"
	depRobotsTxt  departure = "/robots.txt not implied"
	depIndexHTML  departure = "no index.html rule"
	depEncoding   departure = "no percent-encoding normalisation"
	depWildcards  departure = "wildcards as unanchored regexps"
	depPrecedence departure = "first longest rule wins"
)

var departureOrder = []departure{
	depRejects, depBOM, depLimits, depKeys, depTokenizer, depUserAgent, depCrawlDelay, depEmptyGroup,
	depRobotsTxt, depIndexHTML, depEncoding, depWildcards, depPrecedence,
}

// wsCodes stands in for whitespace inside values, which temoto's tokenizer
// splits on: one control byte per whitespace byte, same length, so heed's
// verdicts do not change when both the file and the URL are rewritten.
var wsCodes = strings.NewReplacer(" ", "\x01", "\t", "\x02", "\v", "\x03")

// probe is one check under some repairs.
type probe struct {
	body, agent, url string
	ws               bool // whitespace in the URL stands in as wsCodes
}

func (p probe) path() string {
	pq, slash := p.url, false
	if len(p.url) == 0 || p.url[0] != '/' {
		pq, slash = splitPathQuery(p.url)
	} else if i := strings.IndexByte(pq, '#'); i >= 0 {
		pq = pq[:i]
	}
	if slash {
		pq = "/" + pq
	}
	if p.ws {
		pq = wsCodes.Replace(pq)
	}
	return pq
}

func (p probe) heed() bool {
	return Parse([]byte(p.body)).Group(p.agent).Allowed(p.path())
}

// temoto answers; ok is false if temoto rejects the file.
func (p probe) temoto() (allowed, ok bool) {
	r, err := temoto.FromBytes([]byte(p.body))
	if err != nil {
		return false, false
	}
	return r.TestAgent(p.path(), p.agent), true
}

// repair is one step of the classifier.
type repair struct {
	dep departure
	fix func(p probe) probe
}

var repairs = []repair{
	{depBOM, func(p probe) probe {
		for _, b := range []byte("\xEF\xBB\xBF") {
			if p.body == "" || p.body[0] != b {
				break
			}
			p.body = p.body[1:]
		}
		return p
	}},
	{depLimits, func(p probe) probe {
		body := []byte(p.body)
		if len(body) > MaxSize {
			cut := MaxSize
			if c := body[cut]; c != '\n' && c != '\r' {
				for cut > 0 && body[cut-1] != '\n' && body[cut-1] != '\r' {
					cut--
				}
			}
			body = body[:cut]
		}
		lines := splitLines(string(body))
		for i, l := range lines {
			if len(l) > maxLineLen {
				lines[i] = l[:maxLineLen]
			}
		}
		p.body = strings.Join(lines, "\n")
		return p
	}},
	{depKeys, func(p probe) probe {
		p.body = rewriteLines(p.body, func(line, key, value string, kind int, inGroup bool) (string, bool) {
			lk := strings.ToLower(key)
			switch kind {
			case keyUserAgent:
				if lk != "user-agent" && lk != "useragent" {
					return "User-agent: " + value, true
				}
			case keyAllow, keyDisallow:
				if !inGroup {
					return "", false // heed ignores it; spelt right, temoto would reject the file
				}
				if lk != "allow" && lk != "disallow" {
					return map[int]string{keyAllow: "Allow: ", keyDisallow: "Disallow: "}[kind] + value, true
				}
			case keySitemap:
				if lk != "sitemap" {
					return "Sitemap: " + value, true
				}
			case keyCrawlDelay:
				if !inGroup {
					return "", false
				}
				if lk != "crawl-delay" && lk != "crawldelay" {
					if _, ok := parseDelay(value); ok {
						return "Crawl-delay: " + value, true
					}
					return "X: 1", true
				}
			}
			return line, true
		})
		return p
	}},
	{depTokenizer, func(p probe) probe {
		p.body = rewriteLines(p.body, func(line, key, value string, kind int, inGroup bool) (string, bool) {
			switch kind {
			case keyUserAgent:
				if f := strings.Fields(value); len(f) > 0 {
					return "User-agent: " + f[0], true
				}
				return "User-agent:", true
			case keyAllow, keyDisallow:
				if !inGroup {
					return "", false
				}
				return map[int]string{keyAllow: "Allow: ", keyDisallow: "Disallow: "}[kind] + wsCodes.Replace(value), true
			case keyCrawlDelay:
				if !inGroup {
					return "", false
				}
				if _, ok := parseDelay(value); ok {
					return "Crawl-delay: " + value, true
				}
				return "X: 1", true
			case keySitemap, keyHost:
				return "", false // never part of a group, for heed nor temoto
			}
			if !inGroup {
				return "", false
			}
			return "X: 1", true
		})
		p.ws = true
		return p
	}},
	{depUserAgent, func(p probe) probe {
		// Rename every product token to a code of fixed length: no code
		// is a prefix of another, so prefix matching finds exact matches.
		codes := map[string]string{}
		code := func(token string) string {
			token = strings.ToLower(token)
			c, ok := codes[token]
			if !ok {
				n := len(codes)
				c = fmt.Sprintf("ua%c%c%c%c", 'a'+n/17576%26, 'a'+n/676%26, 'a'+n/26%26, 'a'+n%26)
				codes[token] = c
			}
			return c
		}
		p.body = rewriteLines(p.body, func(line, key, value string, kind int, inGroup bool) (string, bool) {
			if kind != keyUserAgent {
				return line, true
			}
			if value != "" && value[0] == '*' && (len(value) == 1 || isSpace(value[1])) {
				return "User-agent: *", true
			}
			if t := ProductToken(value); t != "" {
				return "User-agent: " + code(t), true
			}
			return "User-agent: 0", true // names nobody
		})
		if c, ok := codes[strings.ToLower(ProductToken(p.agent))]; ok && ProductToken(p.agent) != "" {
			p.agent = c
		} else {
			p.agent = "uazzzz" // names no group
		}
		return p
	}},
	{depCrawlDelay, func(p probe) probe {
		// temoto ends a run of User-agent lines at a Crawl-delay line, heed
		// only at a rule. A Crawl-delay followed by more User-agent lines
		// before any rule becomes an unknown record, which neither library
		// reads as the end of the run and which heed's verdicts never
		// depend on. (The lines are in the repaired form: "Allow: ",
		// "Disallow: ", "Crawl-delay: ", "User-agent: ", "X: 1".)
		lines := splitLines(p.body)
		var delays []int // Crawl-delay lines of the open run of User-agent lines
		inRun := false
		for i, l := range lines {
			switch {
			case strings.HasPrefix(l, "User-agent:"):
				for _, d := range delays {
					lines[d] = "X: 1"
				}
				delays, inRun = delays[:0], true
			case strings.HasPrefix(l, "Allow:"), strings.HasPrefix(l, "Disallow:"):
				delays, inRun = delays[:0], false
			case strings.HasPrefix(l, "Crawl-delay:") && inRun:
				delays = append(delays, i)
			}
		}
		p.body = strings.Join(lines, "\n")
		return p
	}},
	{depEmptyGroup, func(p probe) probe {
		// A group whose lines hold no rule and no Crawl-delay is not in
		// temoto's map: give it an empty Disallow, which heed ignores. Only
		// the last group can be one, because a User-agent line after a
		// group without rules joins that group.
		lines := slices.DeleteFunc(splitLines(p.body), func(l string) bool { return l == "" })
		inGroup, sawRule, hasMember := false, false, false
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "User-agent:"):
				if !inGroup || sawRule {
					sawRule, hasMember = false, false
				}
				inGroup = true
			case strings.HasPrefix(l, "Allow:"), strings.HasPrefix(l, "Disallow:"):
				sawRule, hasMember = true, true
			case strings.HasPrefix(l, "Crawl-delay:"):
				hasMember = true
			}
		}
		if inGroup && !hasMember {
			lines = append(lines, "Disallow:")
		}
		p.body = strings.Join(lines, "\n") + "\n"
		return p
	}},
	{"", func(p probe) probe {
		// Not a departure: only the group heed chose, with its rules as
		// written, for the rule-by-rule comparison.
		g := Parse([]byte(p.body)).Group(p.agent)
		p.body = "User-agent: *\n" + strings.Join(rawRules(p.body, g), "\n") + "\n"
		if len(g.Rules()) == 0 {
			p.body += "Disallow:\n"
		}
		p.agent = "uazzzz"
		return p
	}},
}

// rawRules returns the rule lines of g as written in body, in file order,
// without the rules heed adds for index.html.
func rawRules(body string, g *Group) []string {
	lines := splitLines(body)
	var nums []int
	for _, r := range g.Rules() {
		nums = append(nums, r.Line)
	}
	slices.Sort(nums)
	var out []string
	for _, n := range slices.Compact(nums) {
		key, value, _ := splitLine(lines[n-1])
		out = append(out, map[int]string{keyAllow: "Allow: ", keyDisallow: "Disallow: "}[classifyKey(key)]+value)
	}
	return out
}

// splitLines splits as Parse does (LF, CR or CRLF).
func splitLines(s string) []string {
	return strings.Split(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), "\n")
}

// rewriteLines maps each line heed can split into key and value; lines
// it cannot split are dropped. inGroup tells whether a User-agent line came
// before (rules before it are ignored by heed, fatal for temoto).
func rewriteLines(body string, f func(line, key, value string, kind int, inGroup bool) (string, bool)) string {
	var out []string
	inGroup := false
	for _, line := range splitLines(body) {
		key, value, ok := splitLine(line)
		if !ok {
			continue
		}
		kind := classifyKey(key)
		if kind == keyUserAgent {
			inGroup = true
		}
		if l, keep := f(line, key, value, kind, inGroup); keep {
			out = append(out, l)
		}
	}
	// A final newline: temoto drops a last line "Disallow:" without one.
	return strings.Join(out, "\n") + "\n"
}

// stage is a probe with both libraries' parses, for many URLs.
type stage struct {
	dep    departure // the repair that made it; "" for the original
	p      probe     // url unset
	heed   *Group
	temoto *temoto.RobotsData // nil if temoto rejects the file
}

func newStage(dep departure, p probe) stage {
	s := stage{dep: dep, p: p, heed: Parse([]byte(p.body)).Group(p.agent)}
	if r, err := temoto.FromBytes([]byte(p.body)); err == nil {
		s.temoto = r
	}
	return s
}

func (s *stage) verdicts(url string) (heed, tem bool, temOK bool) {
	p := s.p
	p.url = url
	path := p.path()
	heed = s.heed.Allowed(path)
	if s.temoto == nil {
		return heed, false, false
	}
	return heed, s.temoto.TestAgent(path, p.agent), true
}

// explainer holds the repaired versions of one file for one agent, made as
// they are needed.
type explainer struct{ stages []stage }

func newExplainer(body, agent string) *explainer {
	return &explainer{stages: []stage{newStage("", probe{body: body, agent: agent})}}
}

func (e *explainer) stage(i int) *stage {
	for len(e.stages) <= i {
		n := len(e.stages)
		r := repairs[n-1]
		e.stages = append(e.stages, newStage(r.dep, r.fix(e.stages[n-1].p)))
	}
	return &e.stages[i]
}

// classify explains why heed and temoto disagree on url. It returns "" and
// a description when nothing explains it.
func (e *explainer) classify(url string) (departure, string) {
	want, _, ok := e.stages[0].verdicts(url)
	if !ok {
		return depRejects, ""
	}
	for i := 1; i <= len(repairs); i++ {
		s := e.stage(i)
		h, t, ok := s.verdicts(url)
		if h != want {
			return "", fmt.Sprintf("repair %q changed heed's verdict to %v:\n%s", s.dep, h, clip(s.p.body))
		}
		if ok && t == want {
			if s.dep == "" {
				return "", "temoto agrees once heed's group is the only one:\n" + clip(s.p.body)
			}
			return s.dep, ""
		}
	}
	last := e.stage(len(repairs)).p
	last.url = url
	return classifyRules(last, want)
}

func classify(p probe) (departure, string) {
	return newExplainer(p.body, p.agent).classify(p.url)
}

// clip shortens a robots.txt for messages.
func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// classifyRules compares, rule by rule, whether heed and temoto match the
// URL. p holds one group, "*", with rules as written.
func classifyRules(p probe, want bool) (departure, string) {
	r := Parse([]byte(p.body))
	g := r.Group(p.agent)
	path := p.path()
	// Heed's verdict must be the one of the plain reference matcher before
	// temoto's departures are looked for.
	if ref := referenceDecision(g, path); ref != want {
		return "", fmt.Sprintf("heed says %v, the reference matcher %v", want, ref)
	}
	if isRobotsTxt(string(appendEscapedPath(nil, path))) {
		return depRobotsTxt, ""
	}
	lines := splitLines(p.body)
	matched := 0
	for _, rule := range g.Rules() {
		_, raw, _ := splitLine(lines[rule.Line-1])
		// An absolute URL: a path like "//a" would read as "//host".
		single := probe{body: "User-agent: *\nDisallow: " + raw, agent: "x", url: "http://h.example" + path}
		h := !single.heed()
		t, ok := single.temoto()
		if !ok {
			return "", fmt.Sprintf("temoto rejects the single rule %q", raw)
		}
		if h {
			matched++
		}
		if string(appendEscapedPattern(nil, raw)) != rule.Pattern {
			// Heed's rule for the directory of an Allowed index.html.
			single.body = "User-agent: *\nDisallow: " + rule.Pattern
			if !single.heed() {
				return depIndexHTML, ""
			}
			continue
		}
		if h == !t {
			continue
		}
		// Does temoto agree once pattern and path are normalised?
		norm := probe{body: "User-agent: *\nDisallow: " + rule.Pattern, agent: "x", url: "http://h.example" + string(appendEscapedPath(nil, path))}
		if t, _ := norm.temoto(); !t == h {
			return depEncoding, ""
		}
		if strings.ContainsAny(rule.Pattern, "*$") || !strings.HasPrefix(rule.Pattern, "/") {
			return depWildcards, ""
		}
		return "", fmt.Sprintf("rule %q: heed matches %v, temoto %v", raw, h, !t)
	}
	if matched >= 2 {
		return depPrecedence, ""
	}
	return "", fmt.Sprintf("every rule matches alike (%d match), yet heed says %v", matched, want)
}

// tally counts classified disagreements, keeping the shortest example of
// each.
type tally struct {
	checks, agree int
	count         map[departure]int
	example       map[departure]string
	exampleLen    map[departure]int
}

// add checks url against e's file and agent; e's repairs are made as
// disagreements need them.
func (ty *tally) add(t *testing.T, name string, e *explainer, url string) {
	t.Helper()
	ty.checks++
	h, tv, ok := e.stages[0].verdicts(url)
	if ok && tv == h {
		ty.agree++
		return
	}
	dep, why := e.classify(url)
	body, agent := e.stages[0].p.body, e.stages[0].p.agent
	if dep == "" {
		t.Errorf("%s: unexplained disagreement (heed says %v): %s\nagent %q url %q\nrobots.txt:\n%s", name, h, why, agent, url, clip(body))
		return
	}
	if ty.count == nil {
		ty.count, ty.example, ty.exampleLen = map[departure]int{}, map[departure]string{}, map[departure]int{}
	}
	ty.count[dep]++
	if n, ok := ty.exampleLen[dep]; !ok || len(body)+len(url) < n {
		ty.exampleLen[dep] = len(body) + len(url)
		ty.example[dep] = fmt.Sprintf("%s: agent %q url %q robots.txt %q", name, agent, url, clip(body))
	}
}

func (ty *tally) report(t *testing.T) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%d checks, %d agree, %d disagree:\n", ty.checks, ty.agree, ty.checks-ty.agree)
	for _, d := range departureOrder {
		if n := ty.count[d]; n > 0 {
			fmt.Fprintf(&b, "  %-36s %6d  e.g. %s\n", d, n, ty.example[d])
		}
	}
	t.Log(b.String())
}

// gen makes random robots.txt files, agents and URLs from pieces that hit
// the places where parsers differ.
type gen struct{ rng *rand.Rand }

func (g gen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }

func (g gen) chance(p float64) bool { return g.rng.Float64() < p }

func (g gen) path(wild bool) string {
	var b strings.Builder
	if !g.chance(0.05) {
		b.WriteByte('/')
	}
	for range g.rng.IntN(5) {
		pieces := []string{"a", "b", "ab", "/", "/a", "x/", "?", "=", "&", ".html", "index.html", ";", "~", "-", "_",
			"%41", "%61", "%2F", "%2f", "%2A", "%24", "%e3%83%84", "%E3%83%84", "ツ", "\xe9", "%7E", "%zz", "%"}
		if wild {
			pieces = append(pieces, "*", "*", "$", "*a", "a$")
		} else {
			pieces = append(pieces, "*", "$", "#f", " ")
		}
		b.WriteString(g.pick(pieces...))
	}
	return b.String()
}

func (g gen) key(canonical string, typos ...string) string {
	k := canonical
	if g.chance(0.15) && len(typos) > 0 {
		k = g.pick(typos...)
	}
	switch g.rng.IntN(4) {
	case 0:
		k = strings.ToLower(k)
	case 1:
		k = strings.ToUpper(k)
	}
	return k
}

func (g gen) sep() string {
	if g.chance(0.85) {
		return g.pick(": ", ":", ":\t", " : ")
	}
	return " "
}

func (g gen) line() string {
	var l string
	switch n := g.rng.IntN(100); {
	case n < 25:
		l = g.key("User-agent", "useragent", "user agent", "User-Agents") + g.sep() +
			g.pick("*", "*", "FooBot", "foobot", "Foo", "FooBot-News", "FooBot/2.1", "BarBot", "* extra", "Foo Bar", "", "*bot", "foo_bot", "Baz")
	case n < 50:
		l = g.key("Disallow", "dissallow", "disalow", "Disallowed", "disallaw") + g.sep() + g.path(true)
		if g.chance(0.05) {
			l = "Disallow:"
		}
	case n < 72:
		l = g.key("Allow", "allowed") + g.sep() + g.path(true)
		if g.chance(0.05) {
			l = "Allow:"
		}
	case n < 78:
		l = g.key("Crawl-delay", "crawldelay", "crawl delay") + ": " + g.pick("1", "0.5", "10", "2", "1", "3", "7", "-1")
	case n < 82:
		l = g.key("Sitemap", "site-map") + ": " + g.pick("https://h.example/s.xml", "/s.xml")
	case n < 86:
		l = g.pick("Noindex: /a", "Request-rate: 1/5", "Host: h.example", "Clean-param: a")
	case n < 91:
		l = g.pick("", "", "# comment", "#Disallow: /")
	default:
		l = g.pick("garbage", "<html>", "Disallow", "foo bar baz", ": /a")
	}
	if g.chance(0.08) {
		l += g.pick(" # c", "#x", "  ")
	}
	if g.chance(0.05) {
		l = g.pick(" ", "\t") + l
	}
	return l
}

func (g gen) body() string {
	var b strings.Builder
	switch n := g.rng.IntN(100); {
	case n < 4:
		b.WriteString("\xEF\xBB\xBF")
	case n < 6:
		b.WriteString(g.pick("\xEF", "\xEF\xBB"))
	}
	eol := g.pick("\n", "\n", "\n", "\r\n", "\r")
	if g.chance(0.97) {
		b.WriteString("User-agent: " + g.pick("*", "FooBot", "foobot/1.0") + eol)
	}
	for range 1 + g.rng.IntN(10) {
		b.WriteString(g.line())
		if g.chance(0.05) {
			b.WriteString(g.pick("\n", "\r\n", "\r"))
		} else {
			b.WriteString(eol)
		}
	}
	return b.String()
}

func (g gen) agent() string {
	return g.pick("FooBot", "foobot/1.2", "FooBot-News", "Foo", "BarBot", "bazbot", "Baz", "", "Unknown")
}

func (g gen) url() string {
	u := g.path(false)
	if u == "" || u[0] != '/' {
		u = "/" + u
	}
	if g.chance(0.03) {
		u = "/robots.txt"
	}
	if g.chance(0.3) {
		u = "https://h.example" + u
	}
	return u
}

// TestDifferentialRandom compares heed and temoto on 10,000 random files,
// 4 URLs each (2 under the race detector, which adds nothing here).
func TestDifferentialRandom(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(2024, 9309))}
	perFile := 4
	if raceEnabled {
		perFile = 2
	}
	var ty tally
	for i := range 10000 {
		body := g.body()
		h := Parse([]byte(body))
		tr, err := temoto.FromBytes([]byte(body))
		if err != nil {
			tr = nil
		}
		for range perFile {
			agent := g.agent()
			e := &explainer{stages: []stage{{p: probe{body: body, agent: agent}, heed: h.Group(agent), temoto: tr}}}
			ty.add(t, fmt.Sprintf("file %d", i), e, g.url())
		}
		if t.Failed() && ty.checks-ty.agree > 20 {
			break
		}
	}
	ty.report(t)
	if ty.agree < ty.checks/2 {
		t.Errorf("only %d of %d checks agree: the generator produces mostly broken files", ty.agree, ty.checks)
	}
}

// TestDifferentialCorpus compares heed and temoto on every corpus file and
// its URLs, for a crawler with a name of its own and for Googlebot. Under
// the race detector, which slows temoto's regexps tenfold and adds nothing
// to this single-threaded test, it checks every file for Googlebot with
// every other URL.
func TestDifferentialCorpus(t *testing.T) {
	files := loadCorpus(t)
	agents, step := []string{"heedbot", "Googlebot"}, 1
	if raceEnabled {
		agents, step = agents[1:], 2
	}
	var ty tally
	for _, f := range files {
		body := string(f.body)
		h := Parse(f.body)
		tr, err := temoto.FromBytes(f.body)
		if err != nil {
			tr = nil
		}
		for _, agent := range agents {
			e := &explainer{stages: []stage{{p: probe{body: body, agent: agent}, heed: h.Group(agent), temoto: tr}}}
			for i := 0; i < len(f.urls); i += step {
				ty.add(t, f.host, e, f.urls[i])
			}
		}
	}
	ty.report(t)
}

// departureExamples are the examples of README.md's table: heed's verdict
// and temoto's differ, and the classifier names the departure.
type departureExample struct {
	dep              departure
	body, agent, url string
	heed             bool
}

var departureExamples = []departureExample{
	{depRejects, "Disallow: /tmp\nUser-agent: *\nDisallow: /private\n", "heedbot", "/private", false},
	{depBOM, "\xEF\xBBUser-agent: *\nUser-agent: FooBot\nDisallow: /\n", "heedbot", "/a", false},
	{depLimits, "User-agent: *\nDisallow: /a\n#" + strings.Repeat("-", MaxSize) + "\nAllow: /a/b\n", "heedbot", "/a/b", false},
	{depKeys, "User-agent: *\nDissallow: /a\n", "heedbot", "/a", false},
	{depTokenizer, "User-agent: *\nDisallow: /a#comment\n", "heedbot", "/a", false},
	{depUserAgent, "User-agent: FooBot\nDisallow: /\n", "FooBot-News", "/a", true},
	{depCrawlDelay, "User-agent: *\nCrawl-delay: 10\n\nUser-agent: BadBot\nDisallow: /\n", "heedbot", "/a", false},
	{depEmptyGroup, "User-agent: *\nDisallow: /\n\nUser-agent: FooBot\n", "FooBot", "/a", true},
	{depEmptyGroup, "User-agent: *\nDisallow: /\n\nUser-agent: FooBot\nNoindex: /x\nUser-agent: BarBot\n", "FooBot", "/a", true},
	{depRobotsTxt, "User-agent: *\nDisallow: /\n", "heedbot", "/robots.txt", true},
	{depIndexHTML, "User-agent: *\nDisallow: /\nAllow: /a/index.html\n", "heedbot", "/a/", true},
	{depEncoding, "User-agent: *\nDisallow: /caf\u00e9\n", "heedbot", "/caf%C3%A9", false},
	{depWildcards, "User-agent: *\nDisallow: /a*b\n", "heedbot", "/x/a/b", true},
	{depPrecedence, "User-agent: *\nDisallow: /a\nAllow: /a\n", "heedbot", "/a", true},
	{depPrecedence, "User-agent: *\nDisallow: /caf\u00e9\nAllow: /caf*/x\n", "heedbot", "/caf\u00e9/x", false},
}

func TestDepartureExamples(t *testing.T) {
	for _, e := range departureExamples {
		p := probe{body: e.body, agent: e.agent, url: e.url}
		if got := p.heed(); got != e.heed {
			t.Errorf("%s: heed says %v, want %v", e.dep, got, e.heed)
		}
		if tv, ok := p.temoto(); ok && tv == e.heed {
			t.Errorf("%s: temoto agrees with heed", e.dep)
			continue
		}
		if got, why := classify(p); got != e.dep {
			t.Errorf("%s: classified as %q %s", e.dep, got, why)
		}
	}
	for _, d := range departureOrder {
		if !slices.ContainsFunc(departureExamples, func(e departureExample) bool { return e.dep == d }) {
			t.Errorf("no example of %q", d)
		}
	}
}
