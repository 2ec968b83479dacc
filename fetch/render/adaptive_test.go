package render_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
)

func htmlPage(body string) *fetch.Page {
	return htmlPageAt("http://example.com/", body)
}

func htmlPageAt(rawURL, body string) *fetch.Page {
	u, _ := url.Parse(rawURL)
	return &fetch.Page{URL: u, Status: 200, ContentType: "text/html", Body: []byte(body)}
}

const (
	shellHTML   = `<nav><a href="/">Home</a><a href="/app/">App</a></nav><div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript><script src="/bundle.js"></script>`
	articleHTML = `<h1>A post</h1><p>` + "Words the server wrote. " + `</p><a href="/">home</a><a href="/blog/">blog</a><a href="/blog/post-1">next</a><script async src="/analytics.js"></script>`
	widgetHTML  = articleHTML + `<div id="related"></div><script src="/related.js"></script>`
)

func TestMeasureTellsShellsFromStaticPages(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		shell      bool
	}{
		{"mount point and bundle", shellHTML, true},
		{"empty mount point under a long menu", `<nav>` + menu(30) + `</nav><div id="__next"></div><script src="/_next/main.js"></script>`, true},
		{"loading placeholder and script", `<div id="app">Loading…</div><script src="/app.js"></script>`, true},
		{"noscript asking for JavaScript", `<div class="x"></div><noscript>Please enable JavaScript.</noscript><script src="/a.js"></script>`, true},
		{"article with analytics", strings.Repeat(articleHTML, 20), false},
		{"no script at all", `<div id="root"></div>`, false},
	} {
		if got := render.Measure(htmlPage(tc.body)).ShellLike(); got != tc.shell {
			t.Errorf("%s: ShellLike %v, want %v", tc.name, got, tc.shell)
		}
	}
	m := render.Measure(htmlPageAt("http://example.com/blog/x", widgetHTML+`<script type="application/ld+json">{}</script><script>var x</script>`))
	if want := []string{"example.com/analytics.js", "example.com/related.js", "inline"}; strings.Join(m.Scripts, ",") != strings.Join(want, ",") {
		t.Errorf("scripts %v, want %v", m.Scripts, want)
	}
}

// menu is n links, each to a page of its own.
func menu(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `<a href="/section/%d">a section of the site, %d</a> `, i, i)
	}
	return b.String()
}

// choices drives an Adaptive through pages of one key: each page's choice,
// and, when rendered, its outcome.
type choices struct {
	t *testing.T
	a *render.Adaptive
}

// page asks for the choice for rawURL whose static HTML is body; when it
// is rendered, rendering adds the links in gain.
func (c choices) page(rawURL, body string, want render.Choice, gain ...string) {
	c.t.Helper()
	p := htmlPageAt(rawURL, body)
	static := render.Measure(p)
	got := c.a.Choose("example.com", p.URL, static)
	if got != want {
		c.t.Fatalf("%s: %v, want %v", rawURL, got, want)
	}
	if got == render.Skip {
		return
	}
	rendered := render.Measure(p)
	for _, l := range gain {
		rendered.Links[l] = true
	}
	c.a.Observe("example.com", p.URL, got, static, rendered)
}

func TestAdaptivePredictsPageByPage(t *testing.T) {
	a := &render.Adaptive{Probes: 2, Recheck: 4}
	c := choices{t, a}
	const R, S, C = render.Render, render.Skip, render.Check

	// A page without scripts: nothing could change it.
	c.page("http://example.com/about", `<p>about</p><a href="/">home</a>`, S)

	// A shell's listing builds links: rendered from its first page on.
	c.page("http://example.com/app/", shellHTML, R, "/app/item/1")
	c.page("http://example.com/app/", shellHTML, R, "/app/item/2")

	// A shell's detail pages build text only: rendered for the probes,
	// then skipped, every fourth skip checked.
	c.page("http://example.com/app/item/1", shellHTML, R)
	c.page("http://example.com/app/item/2", shellHTML, R)
	c.page("http://example.com/app/item/3", shellHTML, S)
	c.page("http://example.com/app/item/4", shellHTML, S)
	c.page("http://example.com/app/item/5", shellHTML, S)
	c.page("http://example.com/app/item/6", shellHTML, C)

	// Articles with analytics: the first checked, then skipped.
	c.page("http://example.com/blog/post-1", articleHTML, C)
	c.page("http://example.com/blog/post-2", articleHTML, S)
	// The same look and scripts under another path: the key's two
	// comparisons of such pages gained nothing, so it is skipped unseen.
	c.page("http://example.com/blog/post-3", articleHTML, S)
	c.page("http://example.com/news/today", articleHTML, C)
	c.page("http://example.com/docs/intro", articleHTML, S)

	// An article that loads a widget is a kind of its own: checked, and
	// once it gained, rendered.
	c.page("http://example.com/blog/post-4", widgetHTML, C, "/blog/post-4/comments")
	c.page("http://example.com/blog/post-5", widgetHTML, R, "/blog/post-5/comments")

	// A recheck that gains turns a kind back to rendering.
	c.page("http://example.com/blog/post-6", articleHTML, S)
	c.page("http://example.com/blog/post-7", articleHTML, C, "/new")
	c.page("http://example.com/blog/post-8", articleHTML, R)

	st := a.Stats()
	if st.Missed != 2 || st.Checked != 5 {
		t.Errorf("stats %+v: want 5 checks, 2 of them missed", st)
	}
}

func TestAdaptiveCountsTextOnlyWhenAsked(t *testing.T) {
	static := render.Measure(htmlPage(shellHTML))
	built := render.Measure(htmlPage(shellHTML + "<p>" + strings.Repeat("text ", 100) + "</p>"))
	if built.Adds(static, false) {
		t.Error("text counted as a gain while only links count")
	}
	if !built.Adds(static, true) {
		t.Error("500 characters of text not counted as a gain with text counting")
	}
}
