// Package robots parses robots.txt files (RFC 9309) and answers whether an
// agent may fetch a URL.
//
// PLACEHOLDER: the API below is fixed; the implementation is being written.
package robots

import "time"

// Robots is a parsed robots.txt file. A nil *Robots allows everything.
type Robots struct {
	allowAll, disallowAll bool
}

// Group is the merged set of rules that apply to one agent. A nil *Group
// allows everything.
type Group struct {
	disallowAll bool
}

// Parse parses a robots.txt body. It never fails.
func Parse(body []byte) *Robots { return &Robots{allowAll: true} }

// AllowAll returns a Robots that allows every URL.
func AllowAll() *Robots { return &Robots{allowAll: true} }

// DisallowAll returns a Robots that disallows every URL but /robots.txt.
func DisallowAll() *Robots { return &Robots{disallowAll: true} }

// Allowed reports whether agent may fetch url.
func (r *Robots) Allowed(agent, url string) bool { return r.Group(agent).Allowed(url) }

// Group returns the rules that apply to agent.
func (r *Robots) Group(agent string) *Group {
	if r == nil {
		return nil
	}
	return &Group{disallowAll: r.disallowAll}
}

// Allowed reports whether pathQuery may be fetched.
func (g *Group) Allowed(pathQuery string) bool {
	return g == nil || !g.disallowAll || pathQuery == "/robots.txt"
}

// CrawlDelay returns the Crawl-delay for agent.
func (r *Robots) CrawlDelay(agent string) (time.Duration, bool) { return 0, false }

// Sitemaps returns the Sitemap URLs.
func (r *Robots) Sitemaps() []string { return nil }
