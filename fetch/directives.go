package fetch

import (
	"strings"

	"github.com/heedcrawl/heed/robots"
	"golang.org/x/net/html"
)

// DirectivePolicy says which page-level robots directives heed honours. The
// zero value honours all of them for the agent names "heed" and "heedbot";
// each switch turns one source off.
type DirectivePolicy struct {
	// Agents are the names that agent-scoped directives must carry to apply
	// to us, as in <meta name="heedbot"> or "X-Robots-Tag: heedbot: noindex".
	// Matching is case-insensitive. Nil means "heed" and "heedbot".
	Agents []string
	// IgnoreMeta disregards <meta name="robots"> and agent-named meta tags.
	IgnoreMeta bool
	// IgnoreHeader disregards X-Robots-Tag response headers.
	IgnoreHeader bool
	// IgnoreRel follows links marked rel="nofollow", "ugc" or "sponsored".
	IgnoreRel bool
	// ReturnNofollow makes Registry.Extract return links that must not be
	// followed, with Link.Nofollow set, instead of dropping them. Useful to
	// record the link graph without crawling it.
	ReturnNofollow bool
}

// agents returns the product tokens of Agents, lower-cased, so that a full
// User-Agent string ("MyBot/1.0 (+https://...)") names its crawler.
func (p DirectivePolicy) agents() []string {
	if p.Agents == nil {
		return []string{"heed", "heedbot"}
	}
	out := make([]string, 0, len(p.Agents))
	for _, a := range p.Agents {
		if t := robots.ProductToken(strings.TrimSpace(a)); t != "" {
			out = append(out, strings.ToLower(t))
		}
	}
	return out
}

// Directives are the page-level robots directives in force for a page.
type Directives struct {
	// Noindex: the page must not be indexed (stored or reported as
	// content). A crawler may still follow its links unless Nofollow.
	Noindex bool
	// Nofollow: no link on the page may be followed.
	Nofollow bool
}

func (d Directives) merge(o Directives) Directives {
	return Directives{Noindex: d.Noindex || o.Noindex, Nofollow: d.Nofollow || o.Nofollow}
}

// apply records one directive token; unknown ones ("all", "noarchive",
// "max-snippet: 3", ...) change nothing.
func (d *Directives) apply(token string) {
	switch strings.ToLower(strings.TrimSpace(token)) {
	case "noindex":
		d.Noindex = true
	case "nofollow":
		d.Nofollow = true
	case "none":
		d.Noindex, d.Nofollow = true, true
	}
}

// valueDirectives are directives written "name: value"; their colon does not
// introduce an agent scope.
func isValueDirective(name string) bool {
	switch name {
	case "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview":
		return true
	}
	return false
}

// isAgentToken reports whether s can scope directives: a product token as
// robots.txt defines it, or "*" for every crawler. It tells
// "heedbot: nofollow" from the colon inside a date.
func isAgentToken(s string) bool {
	return s == "*" || robots.ValidProductToken(s)
}

// parseXRobotsTag reads X-Robots-Tag header values. Each value is a comma
// list of directives; "agent: directive" scopes it and the directives after
// it in the same value to that agent, as Google does. Directives for other
// agents are ignored, unscoped ones apply to everyone.
func parseXRobotsTag(values []string, agents []string) Directives {
	var d Directives
	for _, v := range values {
		scope := ""
		for tok := range strings.SplitSeq(v, ",") {
			tok = strings.TrimSpace(tok)
			if name, rest, ok := strings.Cut(tok, ":"); ok {
				name = strings.ToLower(strings.TrimSpace(name))
				if isValueDirective(name) {
					continue
				}
				if !isAgentToken(name) {
					continue // e.g. the tail of an unavailable_after date
				}
				scope, tok = name, rest
			}
			if scope == "" || scope == "*" || containsFold(agents, scope) {
				d.apply(tok)
			}
		}
	}
	return d
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// walkElements calls fn for every element node under n, in document order.
// It follows the tree's sibling and parent pointers instead of recursing or
// keeping a stack, so hostile nesting depth costs neither stack nor memory.
// The content of <template> elements is inert in a browser and is skipped.
func walkElements(n *html.Node, fn func(*html.Node)) {
	for c := n; c != nil; {
		descend := true
		if c.Type == html.ElementNode {
			fn(c)
			descend = c.Data != "template"
		}
		c = nextNode(c, n, descend)
	}
}

// nextNode returns the node after c in a walk of root's subtree in
// document order, c's children first if descend, or nil at the walk's
// end: the step of walkElements and nodeText.
func nextNode(c, root *html.Node, descend bool) *html.Node {
	if descend && c.FirstChild != nil {
		return c.FirstChild
	}
	for c != root && c.NextSibling == nil {
		c = c.Parent
	}
	if c == root {
		return nil
	}
	return c.NextSibling
}
