package robots

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// fuzzSeeds are robots.txt bodies that reach every branch of the parser;
// more live in testdata/fuzz.
var fuzzSeeds = []string{
	"",
	"User-agent: *\nDisallow: /\n",
	"\xEF\xBB\xBFUser-Agent: FooBot/1.2 # c\r\nDisallow: /a*b$\r\nAllow: /a/index.html\r\n\r\nUser-agent: *\rDisallow: /%7e%2F%E3%83ツ\r",
	"user agent barbot\ndissallow /x\nCrawl-delay: 0.5\nSitemap: https://s.example/s.xml\nHost: h.example\nUser-agent: barbot\nAllow: /x$y$\n",
	"Disallow: /before\nuser-agent: * bot\nnoindex: /z\nuser-agent: b\ndisallow: *\n",
	"User-agent: *\nCrawl-delay: 10\nUser-agent: b\nDisallow: /caf\u00e9\nAllow: /caf*/x\nAllow: /~a\nDisallow: /%7Ea\nAllow: /a%62\nDisallow: /abcd\n",
}

// dump renders everything a Robots exposes, to compare two parses.
func dump(r *Robots) string {
	var b strings.Builder
	for _, g := range r.Groups() {
		d, ok := g.CrawlDelay()
		fmt.Fprintf(&b, "group@%d %q delay=%v,%v\n", g.Line(), g.Agents(), d, ok)
		for _, rule := range g.Rules() {
			fmt.Fprintf(&b, "  %+v\n", rule)
		}
	}
	fmt.Fprintf(&b, "sitemaps=%q host=%q\n", r.Sitemaps(), r.Host())
	return b.String()
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		r := Parse(body)
		if !bytes.Equal(body, orig) {
			t.Fatal("Parse modified its input")
		}
		d := dump(r)
		if d2 := dump(Parse(orig)); d2 != d {
			t.Fatalf("Parse is not deterministic:\n%s\nvs\n%s", d, d2)
		}
		lines := bytes.Count(body, []byte("\n")) + bytes.Count(body, []byte("\r")) + 1
		for _, g := range r.Groups() {
			if g.Line() < 1 || g.Line() > lines {
				t.Fatalf("group at line %d of %d", g.Line(), lines)
			}
			for _, rule := range g.Rules() {
				if rule.Line < g.Line() || rule.Line > lines || rule.Pattern == "" {
					t.Fatalf("bad rule %+v in group at line %d", rule, g.Line())
				}
			}
		}
		for _, s := range r.Sitemaps() {
			if !isAbsoluteURL(s) {
				t.Fatalf("relative sitemap %q", s)
			}
		}
		for _, agent := range append(r.Groups()[:0:0], r.Groups()...) {
			for _, a := range agent.Agents() {
				if !r.Allowed(a, "/robots.txt") {
					t.Fatalf("agent %q may not fetch /robots.txt", a)
				}
			}
		}
	})
}

// dpMatch is a quadratic dynamic-programming matcher, the reference for
// the greedy one on fuzzed input (naiveMatch would be exponential).
func dpMatch(p, pat string, anchor bool) bool {
	// ok[j]: pat[:i] matches p[:j].
	ok := make([]bool, len(p)+1)
	ok[0] = true
	for i := 0; i < len(pat); i++ {
		next := make([]bool, len(p)+1)
		if pat[i] == '*' {
			seen := false
			for j := 0; j <= len(p); j++ {
				seen = seen || ok[j]
				next[j] = seen
			}
		} else {
			for j := 1; j <= len(p); j++ {
				next[j] = ok[j-1] && p[j-1] == pat[i]
			}
		}
		ok = next
	}
	if anchor {
		return ok[len(p)]
	}
	for _, v := range ok {
		if v {
			return true
		}
	}
	return false
}

// referenceRule returns the rule that decides url by RFC 9309's
// precedence, worked out here rather than taken from the matcher: every
// rule of g evaluated with dpMatch, the longest Pattern winning (a
// Pattern is normalised, so this is the length that is compared), Allow
// winning ties, and the first in Rules() order winning among equals.
func referenceRule(g *Group, url string) (best Rule, ok bool) {
	pq, slash := url, false
	if len(url) == 0 || url[0] != '/' {
		pq, slash = splitPathQuery(url)
	}
	var buf []byte
	if slash {
		buf = append(buf, '/')
	}
	p := string(appendEscapedPath(buf, pq))
	if isRobotsTxt(p) {
		return Rule{}, false
	}
	for _, r := range g.Rules() {
		pat, anchor := strings.CutSuffix(r.Pattern, "$") // any other '$' is %24
		if !dpMatch(p, pat, anchor) {
			continue
		}
		if !ok || len(r.Pattern) > len(best.Pattern) || len(r.Pattern) == len(best.Pattern) && r.Allow && !best.Allow {
			best, ok = r, true
		}
	}
	return best, ok
}

// referenceDecision is the verdict of referenceRule.
func referenceDecision(g *Group, url string) (allowed bool) {
	r, ok := referenceRule(g, url)
	return !ok || r.Allow
}

func FuzzAllowed(f *testing.F) {
	urls := []string{"/", "https://h.example/a/b?c#d", "/a%2fb*c$", "//h/x", "?q", "/ツ/%e3%83%84", ""}
	agents := []string{"*", "FooBot/1.2", "barbot", "", "b"}
	for i, s := range fuzzSeeds {
		f.Add([]byte(s), agents[i%len(agents)], urls[i%len(urls)])
		f.Add([]byte(s), agents[(i+2)%len(agents)], urls[(i+3)%len(urls)])
	}
	f.Fuzz(func(t *testing.T, body []byte, agent, url string) {
		r := Parse(body)
		allowed := r.Allowed(agent, url)
		if again := Parse(body).Allowed(agent, url); again != allowed {
			t.Fatalf("Allowed is not deterministic: %v then %v", allowed, again)
		}
		g := r.Group(agent)
		pq, slash := url, false
		if len(url) == 0 || url[0] != '/' {
			pq, slash = splitPathQuery(url)
		}
		if slash {
			pq = "/" + pq
		}
		if got := g.Allowed(pq); got != allowed {
			t.Fatalf("Group(%q).Allowed(%q) = %v, Allowed(%q, %q) = %v", agent, pq, got, agent, url, allowed)
		}
		if got := g.Allowed(url); got != allowed {
			t.Fatalf("Group(%q).Allowed(%q) = %v, Allowed = %v", agent, url, got, allowed)
		}
		rule, ok := g.Match(url)
		if ok == (rule == Rule{}) || allowed != (!ok || rule.Allow) {
			t.Fatalf("Match(%q) = %+v, %v but Allowed = %v", url, rule, ok, allowed)
		}
		if g != nil && len(url) <= 1024 {
			want, wantOK := referenceRule(g, url)
			if wantOK != ok || want != rule {
				t.Fatalf("Match(%q) = %+v, %v; reference matcher says %+v, %v", url, rule, ok, want, wantOK)
			}
			if allowed != (!wantOK || want.Allow) {
				t.Fatalf("Allowed(%q, %q) = %v, reference matcher says %v", agent, url, allowed, !wantOK || want.Allow)
			}
		}
	})
}
