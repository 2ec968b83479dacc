package testweb

import (
	"strconv"
	"strings"
	"time"
)

// rule is one Allow or Disallow line of the "*" group this web writes.
type rule struct {
	allow   bool
	pattern string
}

// starRules are the rules of the "*" group of every readable robots.txt.
// They exercise a prefix, a longer Allow beating a shorter Disallow, "*"
// inside a pattern, and "$" anchoring the end.
var starRules = []rule{
	{allow: true, pattern: "/private/open/"},
	{allow: false, pattern: "/private/"},
	{allow: false, pattern: "/*.pdf$"},
	{allow: false, pattern: "/*?sort="},
}

// disallowEverything is the effective rule set of a host whose robots.txt is
// unreachable (5xx, a hang, a refused connection): RFC 9309 §2.3.1.4 says
// assume complete disallow.
var disallowEverything = []rule{{allow: false, pattern: "/"}}

// allowed reports whether target (canonical path and query) may be fetched
// under rules, the way RFC 9309 and Google's parser decide: the longest
// matching pattern wins, Allow wins a tie, no match allows.
func allowed(rules []rule, target string) bool {
	best, allow := -1, true
	for _, r := range rules {
		if !matchPattern(r.pattern, target) {
			continue
		}
		if n := len(r.pattern); n > best || n == best && r.allow {
			best, allow = n, r.allow
		}
	}
	return allow
}

// matchPattern reports whether a robots.txt path pattern, with "*" matching
// any run of characters and a trailing "$" anchoring the end, matches the
// start of target.
func matchPattern(pattern, target string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(target, parts[0]) {
		return false
	}
	rest := target[len(parts[0]):]
	if len(parts) == 1 {
		return !anchored || rest == ""
	}
	for i, part := range parts[1:] {
		last := i == len(parts)-2
		if last && anchored {
			return strings.HasSuffix(rest, part)
		}
		j := strings.Index(rest, part)
		if j < 0 {
			return false
		}
		rest = rest[j+len(part):]
	}
	return true
}

// robotsTxt renders the robots.txt of a host with readable rules. Hosts vary
// in line endings and directive case so parsers see more than one spelling.
func robotsTxt(h *host, delay time.Duration) string {
	var b strings.Builder
	key := func(k string) string {
		if h.index%3 == 2 {
			return strings.ToLower(k)
		}
		return k
	}
	line := func(s string) {
		b.WriteString(s)
		if h.index%3 == 1 {
			b.WriteString("\r\n")
		} else {
			b.WriteString("\n")
		}
	}
	line("# robots.txt of " + h.authority + " (heed testweb)")
	line(key("User-agent") + ": otherbot")
	line(key("Disallow") + ": /")
	line("")
	line(key("User-agent") + ": *")
	for _, r := range starRules {
		if r.allow {
			line(key("Allow") + ": " + r.pattern)
		} else {
			line(key("Disallow") + ": " + r.pattern)
		}
	}
	if delay > 0 {
		line(key("Crawl-delay") + ": " + strconv.FormatFloat(delay.Seconds(), 'f', -1, 64))
	}
	line("")
	line(key("Sitemap") + ": http://" + h.authority + sitemapIndexPath)
	return b.String()
}

// brokenRules are the rules of the readable robots.txt of the hosts whose
// pages fail once (HostRateLimited, HostResetting): they have no private
// pages, so the rule only shows the file is read.
var brokenRules = []rule{{allow: false, pattern: "/private/"}}

// brokenRobotsTxt renders the robots.txt of a host whose pages fail once:
// brokenRules, an optional Crawl-delay, and no sitemap.
func brokenRobotsTxt(h *host, delay time.Duration) string {
	var b strings.Builder
	b.WriteString("# robots.txt of " + h.authority + " (heed testweb)\n")
	b.WriteString("User-agent: *\n")
	for _, r := range brokenRules {
		b.WriteString("Disallow: " + r.pattern + "\n")
	}
	if delay > 0 {
		b.WriteString("Crawl-delay: " + strconv.FormatFloat(delay.Seconds(), 'f', -1, 64) + "\n")
	}
	return b.String()
}
