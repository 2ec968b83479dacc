package robots

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// verdict is one expected answer of Allowed.
type verdict struct {
	agent, url string
	allowed    bool
}

func checkVerdicts(t *testing.T, body string, cases []verdict) {
	t.Helper()
	r := Parse([]byte(body))
	for _, c := range cases {
		if got := r.Allowed(c.agent, c.url); got != c.allowed {
			t.Errorf("Allowed(%q, %q) = %v, want %v\nrobots.txt:\n%s", c.agent, c.url, got, c.allowed, body)
		}
	}
}

// RFC 9309 §5.1.
func TestRFCSimpleExample(t *testing.T) {
	const body = `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
`
	checkVerdicts(t, body, []verdict{
		{"otherbot", "https://example.com/publications/x", true},
		{"otherbot", "https://example.com/example/x", false},
		{"otherbot", "https://example.com/a/b.gif", false},
		{"otherbot", "https://example.com/a/b.gif?x", true},
		{"otherbot", "https://example.com/a/b.png", true},
		{"foobot", "https://example.com/", false},
		{"foobot", "https://example.com/example/page.html", true},
		{"foobot", "https://example.com/example/allowed.gif", true},
		{"foobot", "https://example.com/example/other.html", false},
		{"barbot", "https://example.com/example/page.html", false},
		{"bazbot", "https://example.com/example/page.html", false},
		{"bazbot", "https://example.com/example/other.html", true},
		{"bazbot", "https://example.com/a.gif", true},
		{"quxbot", "https://example.com/example/page.html", true},
		{"quxbot", "https://example.com/a.gif", true},
	})
}

// RFC 9309 §5.2.
func TestRFCLongestMatchExample(t *testing.T) {
	checkVerdicts(t, "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n", []verdict{
		{"foobot", "https://example.com/example/page/disallowed.gif", false},
		{"foobot", "https://example.com/example/page/allowed.gif", true},
	})
}

// The examples of the specifications in ../shared/seeds.
func TestSeedExamples(t *testing.T) {
	t.Run("merge groups of one token (RFC figure 2)", func(t *testing.T) {
		checkVerdicts(t, "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n", []verdict{
			{"ExampleBot", "/foo", false}, {"ExampleBot", "/bar", false}, {"ExampleBot", "/baz", false}, {"ExampleBot", "/qux", true},
		})
	})
	t.Run("star group when none matches (RFC figure 3)", func(t *testing.T) {
		checkVerdicts(t, "user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n", []verdict{
			{"ExampleBot", "/foo", false}, {"ExampleBot", "/bar", false}, {"ExampleBot", "/baz", true},
			{"BazBot", "/foo", true}, {"BazBot", "/baz", false},
		})
	})
	t.Run("product token of a User-Agent header (RFC figure 1)", func(t *testing.T) {
		checkVerdicts(t, "user-agent: ExampleBot\ndisallow: /\n", []verdict{
			{"ExampleBot/0.1", "/x", false}, {"examplebot", "/x", false}, {"OtherBot", "/x", true},
		})
	})
	t.Run("Crawl-delay example of the syntax reference", func(t *testing.T) {
		// Meant as two groups, but RFC 9309 §2.2.4 forbids other records to
		// end a group: Bingbot and * share one, and its first Crawl-delay.
		r := Parse([]byte("User-agent: Bingbot\nCrawl-delay: 10\nUser-agent: *\nCrawl-delay: 5\n"))
		for _, agent := range []string{"Bingbot", "otherbot"} {
			if d, ok := r.CrawlDelay(agent); !ok || d != 10*time.Second {
				t.Errorf("CrawlDelay(%q) = %v, %v; want 10s", agent, d, ok)
			}
		}
	})
	t.Run("Google order of precedence for user-agents", func(t *testing.T) {
		const body = "user-agent: googlebot-news\ndisallow: /1\n\nuser-agent: *\ndisallow: /2\n\nuser-agent: googlebot\ndisallow: /3\n"
		checkVerdicts(t, body, []verdict{
			{"Googlebot-News", "/1", false}, {"Googlebot-News", "/3", true}, {"Googlebot-News", "/2", true},
			{"Googlebot", "/3", false}, {"Googlebot", "/1", true},
			// No prefix matching: Googlebot-Image is not googlebot.
			{"Googlebot-Image", "/2", false}, {"Googlebot-Image", "/3", true},
			{"Otherbot", "/2", false}, {"Otherbot", "/1", true},
		})
	})
	t.Run("Google precedence of rules", func(t *testing.T) {
		checkVerdicts(t, "user-agent: a\nallow: /p\ndisallow: /\n", []verdict{{"a", "/page", true}})
		checkVerdicts(t, "user-agent: a\nallow: /folder\ndisallow: /folder\n", []verdict{{"a", "/folder/page", true}})
		checkVerdicts(t, "user-agent: a\nallow: /page\ndisallow: /*.htm\n", []verdict{{"a", "/page.htm", false}})
		checkVerdicts(t, "user-agent: a\nallow: /$\ndisallow: /\n", []verdict{{"a", "/", true}, {"a", "/page.html", false}})
	})
	t.Run("syntax reference precedence", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /\nAllow: /public/\nDisallow: /public/drafts/\nAllow: /public/drafts/preview/\n", []verdict{
			{"x", "/public/drafts/preview/page.html", true}, {"x", "/public/drafts/x", false}, {"x", "/public/x", true}, {"x", "/x", false},
		})
		checkVerdicts(t, "User-agent: *\nDisallow: /docs/\nAllow: /docs/public/\nDisallow: /docs/public/drafts/\n", []verdict{
			{"x", "/docs/", false}, {"x", "/docs/public/", true}, {"x", "/docs/public/guide.html", true}, {"x", "/docs/public/drafts/", false},
		})
		checkVerdicts(t, "User-agent: *\nDisallow: /*.json\nDisallow: /*.pdf$\nDisallow: /about$\nDisallow: /*&format=rss$\n", []verdict{
			{"x", "/data.json.bak", false}, {"x", "/document.pdf", false}, {"x", "/pdf-guide/", true}, {"x", "/document.pdf.html", true},
			{"x", "/about", false}, {"x", "/about-us", true}, {"x", "/feed?a=1&format=rss", false}, {"x", "/feed?format=rss&a=1", true},
		})
		checkVerdicts(t, "User-agent: *\nDisallow: /\n\nUser-agent: Googlebot\nDisallow:\n", []verdict{
			{"Googlebot", "/x", true}, {"Bingbot", "/x", false},
		})
	})
}

// Ported from Google's robots_test.cc where RFC 9309 agrees.
func TestGoogleReferenceCases(t *testing.T) {
	t.Run("system", func(t *testing.T) {
		checkVerdicts(t, "", []verdict{{"FooBot", "", true}})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /\n", []verdict{{"", "", true}, {"FooBot", "", false}})
	})
	t.Run("line syntax", func(t *testing.T) {
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /\n", []verdict{{"FooBot", "http://foo.bar/x/y", false}})
		checkVerdicts(t, "foo: FooBot\nbar: /\n", []verdict{{"FooBot", "http://foo.bar/x/y", true}})
		checkVerdicts(t, "user-agent FooBot\ndisallow /\n", []verdict{{"FooBot", "http://foo.bar/x/y", false}})
	})
	t.Run("groups", func(t *testing.T) {
		const body = "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n"
		checkVerdicts(t, body, []verdict{
			{"FooBot", "http://foo.bar/x/b", true}, {"FooBot", "http://foo.bar/z/d", true}, {"FooBot", "http://foo.bar/y/c", false},
			{"BarBot", "http://foo.bar/y/c", true}, {"BarBot", "http://foo.bar/w/a", true}, {"BarBot", "http://foo.bar/z/d", false},
			{"BazBot", "http://foo.bar/z/d", true},
			{"FooBot", "http://foo.bar/foo/bar/", false}, {"BarBot", "http://foo.bar/foo/bar/", false}, {"BazBot", "http://foo.bar/foo/bar/", false},
		})
	})
	t.Run("groups are not closed by other records", func(t *testing.T) {
		// ID_LineSyntax_Groups_OtherRules.
		checkVerdicts(t, "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n", []verdict{
			{"FooBot", "http://foo.bar/", false}, {"BarBot", "http://foo.bar/", false},
		})
		checkVerdicts(t, "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n", []verdict{
			{"FooBot", "http://foo.bar/", false}, {"BarBot", "http://foo.bar/", false},
		})
	})
	t.Run("key and value case", func(t *testing.T) {
		for _, body := range []string{"USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n", "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n"} {
			checkVerdicts(t, body, []verdict{{"FooBot", "http://foo.bar/x/y", true}, {"FooBot", "http://foo.bar/a/b", false}})
		}
		for _, body := range []string{"User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n", "User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n"} {
			checkVerdicts(t, body, []verdict{
				{"Foo", "http://foo.bar/x/y", true}, {"foo", "http://foo.bar/a/b", false},
			})
		}
		checkVerdicts(t, "User-agent: FooBot\ndisallow: /X/\n", []verdict{{"FooBot", "http://foo.bar/x/y", true}})
	})
	t.Run("user-agent up to first space", func(t *testing.T) {
		checkVerdicts(t, "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n", []verdict{
			{"Foo", "http://foo.bar/x/y", true}, {"Foo Bar", "http://foo.bar/x/y", true},
		})
	})
	t.Run("global groups", func(t *testing.T) {
		checkVerdicts(t, "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n", []verdict{
			{"FooBot", "http://foo.bar/x/y", false}, {"BarBot", "http://foo.bar/x/y", true},
		})
		checkVerdicts(t, "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n", []verdict{
			{"QuxBot", "http://foo.bar/x/y", true},
		})
	})
	t.Run("longest match", func(t *testing.T) {
		const u = "http://foo.bar/x/page.html"
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n", []verdict{{"FooBot", u, false}})
		checkVerdicts(t, "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n", []verdict{{"FooBot", u, true}, {"FooBot", "http://foo.bar/x/", false}})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: \nallow: \n", []verdict{{"FooBot", u, true}})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /\nallow: /\n", []verdict{{"FooBot", u, true}})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", []verdict{{"FooBot", "http://foo.bar/x", false}, {"FooBot", "http://foo.bar/x/", true}})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n", []verdict{{"FooBot", u, true}})
		checkVerdicts(t, "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", []verdict{{"FooBot", "http://foo.bar/page.html", false}, {"FooBot", "http://foo.bar/page", true}})
		checkVerdicts(t, "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n", []verdict{{"FooBot", u, true}, {"FooBot", "http://foo.bar/x/y.html", false}})
		checkVerdicts(t, "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n", []verdict{{"FooBot", "http://foo.bar/x/page", true}, {"FooBot", "http://foo.bar/y/page", false}})
	})
	t.Run("special characters", func(t *testing.T) {
		checkVerdicts(t, "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n", []verdict{
			{"FooBot", "http://foo.bar/foo/bar/quz", false}, {"FooBot", "http://foo.bar/foo/quz", true},
			{"FooBot", "http://foo.bar/foo//quz", true}, {"FooBot", "http://foo.bar/foo/bax/quz", true},
		})
		checkVerdicts(t, "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n", []verdict{
			{"FooBot", "http://foo.bar/foo/bar", false}, {"FooBot", "http://foo.bar/foo/bar/qux", true},
			{"FooBot", "http://foo.bar/foo/bar/", true}, {"FooBot", "http://foo.bar/foo/bar/baz", true},
		})
		checkVerdicts(t, "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", []verdict{
			{"FooBot", "http://foo.bar/foo/bar", true}, {"FooBot", "http://foo.bar/foo/quz", false},
		})
	})
	t.Run("index.html is its directory", func(t *testing.T) {
		checkVerdicts(t, "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", []verdict{
			{"foobot", "http://foo.com/allowed-slash/", true},
			{"foobot", "http://foo.com/allowed-slash/index.htm", false},
			{"foobot", "http://foo.com/allowed-slash/index.html", true},
			{"foobot", "http://foo.com/allowed-slash/x", false},
			{"foobot", "http://foo.com/anyother-url", false},
		})
		checkVerdicts(t, "User-Agent: *\nAllow: /a/index.htm\nDisallow: /a/\n", []verdict{{"x", "/a/", true}, {"x", "/a/b", false}})
	})
	t.Run("documentation checks", func(t *testing.T) {
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /\nallow: /fish\n", []verdict{
			{"FooBot", "/bar", false}, {"FooBot", "/fish", true}, {"FooBot", "/fish.html", true},
			{"FooBot", "/fish/salmon.html", true}, {"FooBot", "/fishheads", true}, {"FooBot", "/fishheads/yummy.html", true},
			{"FooBot", "/fish.html?id=anything", true}, {"FooBot", "/Fish.asp", false}, {"FooBot", "/catfish", false}, {"FooBot", "/?id=fish", false},
		})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /\nallow: /fish*\n", []verdict{
			{"FooBot", "/bar", false}, {"FooBot", "/fish", true}, {"FooBot", "/fishheads/yummy.html", true}, {"FooBot", "/Fish.bar", false}, {"FooBot", "/catfish", false},
		})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /\nallow: /fish/\n", []verdict{
			{"FooBot", "/fish/", true}, {"FooBot", "/fish/?salmon", true}, {"FooBot", "/fish", false}, {"FooBot", "/fish.html", false}, {"FooBot", "/Fish/Salmon.html", false},
		})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /\nallow: /*.php\n", []verdict{
			{"FooBot", "/bar", false}, {"FooBot", "/filename.php", true}, {"FooBot", "/folder/filename.php?parameters", true},
			{"FooBot", "http://foo.bar//folder/any.php.file.html", true}, {"FooBot", "/filename.php/", true},
			{"FooBot", "/index?f=filename.php/", true}, {"FooBot", "/php/", false}, {"FooBot", "/index?php", false}, {"FooBot", "/windows.PHP", false},
		})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n", []verdict{
			{"FooBot", "/filename.php", true}, {"FooBot", "/folder/filename.php", true},
			{"FooBot", "/filename.php?parameters", false}, {"FooBot", "/filename.php/", false}, {"FooBot", "/filename.php5", false},
			{"FooBot", "/php/", false}, {"FooBot", "/filename?php", false}, {"FooBot", "/aaaphpaaa", false}, {"FooBot", "//windows.PHP", false},
		})
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n", []verdict{
			{"FooBot", "/bar", false}, {"FooBot", "/fish.php", true}, {"FooBot", "/fishheads/catfish.php?parameters", true}, {"FooBot", "/Fish.PHP", false},
		})
	})
}

// A run of User-agent lines ends only at an Allow or Disallow line (RFC
// 9309 §2.2's grammar has no other group member; Google's reference agrees,
// ID_LineSyntax_Groups_OtherRules), so a Crawl-delay, Sitemap or unknown
// line between User-agent lines leaves them one group, whose Crawl-delay
// they all share.
func TestGroupBoundaries(t *testing.T) {
	type delay struct {
		agent string
		d     time.Duration
		ok    bool
	}
	for _, c := range []struct {
		name   string
		body   string
		groups [][]string // Agents of each group of Groups()
		want   []verdict
		delays []delay
	}{
		{
			name:   "Crawl-delay between User-agent lines (issue 11)",
			body:   "User-agent: *\nCrawl-delay: 10\n\nUser-agent: BadBot\nDisallow: /\n",
			groups: [][]string{{"*", "BadBot"}},
			want:   []verdict{{"heedbot", "/a", false}, {"BadBot", "/a", false}, {"Googlebot", "/", false}},
			delays: []delay{{"heedbot", 10 * time.Second, true}, {"BadBot", 10 * time.Second, true}},
		},
		{
			name:   "Google: Sitemap between User-agent lines",
			body:   "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
			groups: [][]string{{"BarBot", "*"}},
			want:   []verdict{{"FooBot", "http://foo.bar/", false}, {"BarBot", "http://foo.bar/", false}},
		},
		{
			name:   "Google: unknown line between User-agent lines",
			body:   "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
			groups: [][]string{{"FooBot", "*"}},
			want:   []verdict{{"FooBot", "http://foo.bar/", false}, {"BarBot", "http://foo.bar/", false}},
		},
		{
			name:   "a Crawl-delay after the rules stays with their group",
			body:   "User-agent: a\nDisallow: /x\nCrawl-delay: 3\nUser-agent: b\nDisallow: /y\n",
			groups: [][]string{{"a"}, {"b"}},
			want:   []verdict{{"a", "/x", false}, {"a", "/y", true}, {"b", "/x", true}, {"b", "/y", false}},
			delays: []delay{{"a", 3 * time.Second, true}, {"b", 0, false}},
		},
		{
			name:   "a rule-less trailing group shares nothing with the one before",
			body:   "User-agent: *\nDisallow: /\n\nUser-agent: a\nCrawl-delay: 2\n",
			groups: [][]string{{"*"}, {"a"}},
			want:   []verdict{{"a", "/x", true}, {"b", "/x", false}},
			delays: []delay{{"a", 2 * time.Second, true}, {"b", 0, false}},
		},
		{
			name:   "an empty Disallow is a rule and ends the run",
			body:   "User-agent: a\nDisallow:\nUser-agent: b\nCrawl-delay: 1\nDisallow: /x\n",
			groups: [][]string{{"a"}, {"b"}},
			want:   []verdict{{"a", "/x", true}, {"b", "/x", false}},
			delays: []delay{{"a", 0, false}, {"b", time.Second, true}},
		},
		{
			name:   "first valid Crawl-delay of the shared group",
			body:   "User-agent: a\nCrawl-delay: soon\nUser-agent: b\nCrawl-delay: 4\nUser-agent: c\nCrawl-delay: 5\nAllow: /\n",
			groups: [][]string{{"a", "b", "c"}},
			delays: []delay{{"a", 4 * time.Second, true}, {"b", 4 * time.Second, true}, {"c", 4 * time.Second, true}, {"d", 0, false}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Parse([]byte(c.body))
			var got [][]string
			for _, g := range r.Groups() {
				got = append(got, g.Agents())
			}
			if !slices.EqualFunc(got, c.groups, slices.Equal) {
				t.Errorf("groups %q, want %q", got, c.groups)
			}
			checkVerdicts(t, c.body, c.want)
			for _, d := range c.delays {
				if got, ok := r.CrawlDelay(d.agent); got != d.d || ok != d.ok {
					t.Errorf("CrawlDelay(%q) = %v, %v; want %v, %v", d.agent, got, ok, d.d, d.ok)
				}
			}
		})
	}
}

func TestLineEndingsAndBOM(t *testing.T) {
	want := []verdict{{"foo", "/some/path", true}, {"foo", "/other", false}, {"bar", "/x", false}}
	for name, body := range map[string]string{
		"LF":               "User-Agent: foo\nAllow: /some/path\nDisallow: /\nUser-Agent: bar\n\n\nDisallow: /\n",
		"CRLF":             "User-Agent: foo\r\nAllow: /some/path\r\nDisallow: /\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n",
		"CR":               "User-Agent: foo\rAllow: /some/path\rDisallow: /\rUser-Agent: bar\r\r\rDisallow: /\r",
		"mixed":            "User-Agent: foo\nAllow: /some/path\r\nDisallow: /\rUser-Agent: bar\n\r\n\nDisallow: /",
		"BOM":              "\xEF\xBB\xBFUser-Agent: foo\nAllow: /some/path\nDisallow: /\nUser-Agent: bar\nDisallow: /\n",
		"partial BOM (2)":  "\xEF\xBBUser-Agent: foo\nAllow: /some/path\nDisallow: /\nUser-Agent: bar\nDisallow: /\n",
		"partial BOM (1)":  "\xEFUser-Agent: foo\nAllow: /some/path\nDisallow: /\nUser-Agent: bar\nDisallow: /\n",
		"no final newline": "User-Agent: foo\nAllow: /some/path\nDisallow: /\nUser-Agent: bar\nDisallow: /",
	} {
		t.Run(name, func(t *testing.T) { checkVerdicts(t, body, want) })
	}
	// A broken BOM makes the first line garbage, as does a BOM after it.
	checkVerdicts(t, "\xEF\x11\xBFUser-Agent: foo\nDisallow: /\n", []verdict{{"foo", "/x", true}})
	checkVerdicts(t, "User-Agent: foo\n\xEF\xBB\xBFDisallow: /\n", []verdict{{"foo", "/x", true}})
}

func TestLineNumbers(t *testing.T) {
	for _, body := range []string{
		"User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n",
		"User-Agent: foo\r\nAllow: /some/path\r\nUser-Agent: bar\r\n\r\n\r\nDisallow: /\r\n",
		"User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r",
		"User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /",
	} {
		r := Parse([]byte(body))
		if rule, ok := r.Group("bar").Match("/x"); !ok || rule.Line != 6 || rule.Allow {
			t.Errorf("%q: Match = %+v, %v; want Disallow on line 6", body, rule, ok)
		}
		if g := r.Groups(); len(g) != 2 || g[0].Line() != 1 || g[1].Line() != 3 {
			t.Errorf("%q: groups at wrong lines", body)
		}
	}
}

func TestKeys(t *testing.T) {
	disallowed := []string{
		"Disallow: /x", "disallow:/x", "DISALLOW :/x", "Disallow\t:\t/x", "  Disallow: /x  ",
		"dissallow: /x", "dissalow: /x", "disalow: /x", "diasllow: /x", "disallaw: /x",
		"Disallowed: /x", "Disallow /x", "Disallow\t/x", "Disallow: /x # comment", "Disallow: /x#comment",
	}
	for _, line := range disallowed {
		checkVerdicts(t, "User-agent: a\n"+line+"\n", []verdict{{"a", "/x", false}, {"a", "/y", true}})
	}
	ignored := []string{"Disallow / x", "# Disallow: /x", "Dis allow: /x", ": /x", "Disallow", "Deny: /x", "Disallow /x extra"}
	for _, line := range ignored {
		checkVerdicts(t, "User-agent: a\n"+line+"\n", []verdict{{"a", "/x", true}})
	}
	for _, line := range []string{"User-agent: a", "useragent: a", "user agent: a", "User-Agent:a", "user-agents: a", "User-agent a"} {
		checkVerdicts(t, line+"\nDisallow: /x\n", []verdict{{"a", "/x", false}, {"b", "/x", true}})
	}
	for _, line := range []string{"Allow: /x", "allowed: /x", "ALLOW /x"} {
		checkVerdicts(t, "User-agent: a\nDisallow: /\n"+line+"\n", []verdict{{"a", "/x", true}, {"a", "/y", false}})
	}
	for _, line := range []string{"Sitemap: https://a.example/s.xml", "site-map: https://a.example/s.xml", "SITEMAPS: https://a.example/s.xml"} {
		if got := Parse([]byte(line)).Sitemaps(); !slices.Equal(got, []string{"https://a.example/s.xml"}) {
			t.Errorf("%q: Sitemaps() = %q", line, got)
		}
	}
}

func TestLongLines(t *testing.T) {
	const maxLen = 2083 * 8 // Google's kMaxLineLen: 16663 bytes of a line are kept
	t.Run("disallow cut", func(t *testing.T) {
		long := "/x/" + strings.Repeat("a", maxLen-len("/x/")-len("disallow: ")+1)
		body := "user-agent: FooBot\ndisallow: " + long + "/qux\n"
		checkVerdicts(t, body, []verdict{
			{"FooBot", "http://foo.bar/fux", true},
			{"FooBot", "http://foo.bar" + long + "/fux", false},
		})
	})
	t.Run("allow cut", func(t *testing.T) {
		a := "/x/" + strings.Repeat("a", maxLen-len("/x/")-len("allow: ")+1)
		b := "/x/" + strings.Repeat("b", maxLen-len("/x/")-len("allow: ")+1)
		body := "user-agent: FooBot\ndisallow: /\nallow: " + a + "/qux\nallow: " + b + "/qux\n"
		checkVerdicts(t, body, []verdict{
			{"FooBot", "http://foo.bar/", false},
			{"FooBot", "http://foo.bar" + a + "/qux", true},
			{"FooBot", "http://foo.bar" + b + "/fux", true},
		})
	})
	t.Run("comment beyond the cut", func(t *testing.T) {
		pad := strings.Repeat("a", maxLen)
		checkVerdicts(t, "user-agent: FooBot\ndisallow: /"+pad+"#x\n", []verdict{{"FooBot", "/" + pad + "#x", false}})
	})
}

func TestGroups(t *testing.T) {
	t.Run("no line but User-agent ends a group", func(t *testing.T) {
		for _, mid := range []string{"Foo: bar", "Sitemap: https://a.example/s.xml", "Crawl-delay: 3", "Host: a.example", "garbage", "# comment", ""} {
			checkVerdicts(t, "User-agent: a\nDisallow: /x\n"+mid+"\nDisallow: /y\n", []verdict{
				{"a", "/x", false}, {"a", "/y", false}, {"c", "/x", true},
			})
		}
	})
	t.Run("only a rule ends a run of User-agent lines", func(t *testing.T) {
		for _, mid := range []string{
			"Sitemap: https://a.example/s.xml", "Host: a.example", "garbage", "# comment", "",
			"Crawl-delay: 1", "Crawl-delay: bad", "crawl delay: 1", "Request-rate: 1/5", "Noindex: /y", "Invalid-Unknown-Line: unknown",
		} {
			checkVerdicts(t, "User-agent: a\n"+mid+"\n\nUser-agent: b\nDisallow: /x\n", []verdict{
				{"a", "/x", false}, {"b", "/x", false}, {"c", "/x", true},
			})
		}
	})
	t.Run("a rule ends the run of User-agent lines", func(t *testing.T) {
		checkVerdicts(t, "User-agent: a\nDisallow:\nUser-agent: b\nDisallow: /x\n", []verdict{{"a", "/x", true}, {"b", "/x", false}})
	})
	t.Run("exact tokens, no prefix matching", func(t *testing.T) {
		const body = "User-agent: Googlebot\nDisallow: /g\n\nUser-agent: *\nDisallow: /s\n"
		checkVerdicts(t, body, []verdict{
			{"Googlebot", "/g", false}, {"googlebot", "/g", false}, {"GOOGLEBOT/2.1", "/g", false}, {"Googlebot", "/s", true},
			{"Googlebot-News", "/g", true}, {"Googlebot-News", "/s", false},
			{"Google", "/g", true}, {"Googlebotx", "/g", true},
			{"Mozilla/5.0 (compatible; Googlebot/2.1)", "/g", true},
		})
	})
	t.Run("value product token", func(t *testing.T) {
		checkVerdicts(t, "User-agent: FooBot/2.1\nDisallow: /\n", []verdict{{"FooBot", "/x", false}, {"foobot/9", "/x", false}})
		checkVerdicts(t, "User-agent: Foo_Bar-Baz\nDisallow: /\n", []verdict{{"foo_bar-baz", "/x", false}, {"foo", "/x", true}})
		checkVerdicts(t, "User-agent: FooBot*\nDisallow: /\n", []verdict{{"FooBot", "/x", false}})
	})
	t.Run("star variants", func(t *testing.T) {
		checkVerdicts(t, "User-agent: * # all\nDisallow: /\n", []verdict{{"x", "/a", false}})
		checkVerdicts(t, "User-agent: * anybot\nDisallow: /\n", []verdict{{"x", "/a", false}})
		checkVerdicts(t, "User-agent: *bot\nDisallow: /\n", []verdict{{"x", "/a", true}})
		checkVerdicts(t, "User-agent:\nDisallow: /\n", []verdict{{"x", "/a", true}, {"", "/a", true}})
		checkVerdicts(t, "User-agent: *\nDisallow: /a\nUser-agent: b\nDisallow: /b\nUser-agent: *\nDisallow: /c\n", []verdict{
			{"x", "/a", false}, {"x", "/c", false}, {"x", "/b", true}, {"b", "/a", true}, {"b", "/b", false},
		})
	})
	t.Run("empty named group allows all", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /\nUser-agent: a\n", []verdict{{"a", "/x", true}, {"b", "/x", false}})
		checkVerdicts(t, "User-agent: *\nDisallow: /\nUser-agent: a\nDisallow:\n", []verdict{{"a", "/x", true}})
	})
	t.Run("no group at all", func(t *testing.T) {
		r := Parse([]byte("User-agent: a\nDisallow: /\n"))
		if g := r.Group("b"); g != nil {
			t.Errorf("Group(b) = %v, want nil", g)
		}
		checkVerdicts(t, "Disallow: /\nAllow: /x\n", []verdict{{"a", "/y", true}})
	})
	t.Run("rules before the first User-agent are ignored", func(t *testing.T) {
		checkVerdicts(t, "Disallow: /a\nCrawl-delay: 4\nUser-agent: *\nDisallow: /b\n", []verdict{{"x", "/a", true}, {"x", "/b", false}})
		if d, ok := Parse([]byte("Crawl-delay: 4\nUser-agent: *\n")).CrawlDelay("x"); ok {
			t.Errorf("CrawlDelay = %v, want none", d)
		}
	})
	t.Run("merged group", func(t *testing.T) {
		r := Parse([]byte("User-agent: a\nUser-agent: b\nDisallow: /1\n\nUser-agent: A\nAllow: /1/x\nDisallow: /2\n"))
		g := r.Group("a")
		if got := g.Agents(); !slices.Equal(got, []string{"a"}) {
			t.Errorf("Agents() = %q", got)
		}
		want := []Rule{{true, "/1/x", 6}, {false, "/1", 3}, {false, "/2", 7}}
		if got := g.Rules(); !slices.Equal(got, want) {
			t.Errorf("Rules() = %+v, want %+v", got, want)
		}
		if got := r.Group("b").Agents(); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("b: Agents() = %q", got)
		}
		if len(r.Groups()) != 2 {
			t.Errorf("Groups() = %d groups, want 2", len(r.Groups()))
		}
	})
}

func TestMatching(t *testing.T) {
	t.Run("URL parts", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /a?b\nDisallow: /p;x\nDisallow: /$\n", []verdict{
			{"x", "https://h.example/a?b=1", false},
			{"x", "https://h.example/a#?b", true},
			{"x", "https://h.example:8080/a?b#frag", false},
			{"x", "/a?b", false},
			{"x", "/p;x=1", false},
			{"x", "https://h.example", false}, // path "/"
			{"x", "https://h.example/#x", false},
			{"x", "https://h.example?q", true}, // "/?q"
			{"x", "//h.example/a?b", true},     // a path, not a network-path reference
			{"x", "https://h.example//a?b", true},
			{"x", "", false},
		})
	})
	t.Run("anchored at the first octet", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /b\nDisallow: c\n", []verdict{{"x", "/a/b", true}, {"x", "/b/a", false}, {"x", "/c", true}})
	})
	t.Run("wildcards", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /*/print/\nDisallow: /a*b*c$\nDisallow: *.pdf\nDisallow: /q?*&x=\n", []verdict{
			{"x", "/p/print/", false}, {"x", "/print/", true}, {"x", "/a/b/print/x", false},
			{"x", "/abc", false}, {"x", "/a-b-c", false}, {"x", "/a-b-c-", true}, {"x", "/acb", true}, {"x", "/abcbc", false}, {"x", "/abcd", true},
			{"x", "/x.pdf", false}, {"x", "/x.pd", true},
			{"x", "/q?a=1&x=2", false}, {"x", "/q?x=2", true},
		})
		checkVerdicts(t, "User-agent: *\nDisallow: /*\n", []verdict{{"x", "/", false}, {"x", "/anything", false}})
		checkVerdicts(t, "User-agent: *\nDisallow: *\n", []verdict{{"x", "/", false}})
		checkVerdicts(t, "User-agent: *\nDisallow: /**a$\n", []verdict{{"x", "/bba", false}, {"x", "/ab", true}})
		checkVerdicts(t, "User-agent: *\nDisallow: /**a**$\n", []verdict{{"x", "/bab", false}, {"x", "/bb", true}})
	})
	t.Run("dollar only at the end anchors", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /a$b\nDisallow: /c$$\nDisallow: /$x$\n", []verdict{
			{"x", "/a", true}, {"x", "/a$b", false}, {"x", "/a%24b", false}, {"x", "/a$bc", false},
			{"x", "/c$", false}, {"x", "/c$d", true}, {"x", "/c", true},
			{"x", "/$x", false}, {"x", "/$xy", true},
		})
	})
	t.Run("longest normalised pattern wins, ties go to Allow", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /a*\nAllow: /ab\n", []verdict{{"x", "/abc", true}}) // 3 vs 3: Allow
		checkVerdicts(t, "User-agent: *\nDisallow: /a**\nAllow: /ab\n", []verdict{{"x", "/abc", false}})
		checkVerdicts(t, "User-agent: *\nDisallow: /ab$\nAllow: /ab\n", []verdict{{"x", "/ab", false}})
		checkVerdicts(t, "User-agent: *\nAllow: /%61\nDisallow: /ab\n", []verdict{{"x", "/ab", false}}) // "/a" vs "/ab"
		checkVerdicts(t, "User-agent: *\nDisallow: /\nAllow: /\n", []verdict{{"x", "/x", true}})
	})
	t.Run("empty patterns match nothing", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow:\nDisallow: /x\n", []verdict{{"x", "/y", true}, {"x", "/x", false}})
		checkVerdicts(t, "User-agent: *\nDisallow: /\nAllow:\n", []verdict{{"x", "/y", false}})
	})
	t.Run("robots.txt is always allowed", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /\nDisallow: /robots.txt$\n", []verdict{
			{"x", "/robots.txt", true}, {"x", "https://h.example/robots.txt", true}, {"x", "/robots.txt?x", true},
			{"x", "/robots%2Etxt", true}, {"x", "/robots.txt/x", false}, {"x", "/robots.txt2", false},
		})
		if !DisallowAll().Allowed("x", "https://h.example/robots.txt") {
			t.Error("DisallowAll forbids /robots.txt")
		}
	})
}

// RFC 9309 §2.2.2 and §2.2.3.
func TestPercentEncoding(t *testing.T) {
	checkVerdicts(t, "User-agent: *\nDisallow: /\nAllow: /foo/bar?baz=quz\nAllow: /foo/bar/ツ\nAllow: /a/%E3%83%84\nAllow: /b/%62%61%7A\nAllow: /c/baz\n", []verdict{
		{"x", "/foo/bar?baz=quz", true},
		{"x", "https://h.example/foo/bar/%E3%83%84", true},
		{"x", "https://h.example/foo/bar/ツ", true},
		{"x", "https://h.example/foo/bar/%e3%83%84", true},
		{"x", "https://h.example/a/ツ", true},
		{"x", "https://h.example/a/%e3%83%84", true},
		{"x", "https://h.example/b/baz", true},
		{"x", "https://h.example/b/%62%61%7a", true},
		{"x", "https://h.example/c/%62%61%7A", true},
		{"x", "https://h.example/c/ba%7A", true},
		{"x", "https://h.example/b/bar", false},
	})
	t.Run("encoded special characters match literals", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /path/file-with-a-%2A.html\nDisallow: /path/foo-%24\n", []verdict{
			{"x", "https://www.example.com/path/file-with-a-*.html", false},
			{"x", "https://www.example.com/path/file-with-a-%2a.html", false},
			{"x", "https://www.example.com/path/file-with-a-x.html", true},
			{"x", "https://www.example.com/path/foo-$", false},
			{"x", "https://www.example.com/path/foo-%24", false},
			{"x", "https://www.example.com/path/foo-", true},
		})
	})
	t.Run("reserved characters stay encoded", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /a%2Fb\nDisallow: /q?u=https%3A%2F%2F\n", []verdict{
			{"x", "/a%2fb", false}, {"x", "/a/b", true},
			{"x", "/q?u=https%3a%2f%2fx", false}, {"x", "/q?u=https://x", true},
		})
		checkVerdicts(t, "User-agent: *\nDisallow: /a/b\n", []verdict{{"x", "/a%2Fb", true}})
	})
	t.Run("unreserved characters are decoded", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /%7Euser/%41-%5f.%2e\n", []verdict{{"x", "/~user/A-_..", false}, {"x", "/%7euser/A%2D_..", false}})
	})
	t.Run("invalid escapes compare as written", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /%zz\nDisallow: /b%\nDisallow: /c%4\n", []verdict{
			{"x", "/%zz", false}, {"x", "/b%", false}, {"x", "/c%4", false}, {"x", "/c%41", true}, {"x", "/%z", true},
		})
	})
	t.Run("non-UTF-8 octets", func(t *testing.T) {
		checkVerdicts(t, "User-agent: *\nDisallow: /\xe9t\xe9\n", []verdict{{"x", "/%E9t%E9", false}, {"x", "/\xe9t\xe9", false}, {"x", "/%C3%A9t%C3%A9", true}})
	})
	t.Run("Rule.Pattern is normalised", func(t *testing.T) {
		r := Parse([]byte("User-agent: *\nDisallow: /ツ/%7e/%2f/$x$\n"))
		want := []Rule{{false, "/%E3%83%84/~/%2F/%24x$", 2}}
		if got := r.Group("x").Rules(); !slices.Equal(got, want) {
			t.Errorf("Rules() = %+v, want %+v", got, want)
		}
	})
}

// Precedence is the length of the pattern that is compared, the normalised
// one (Rule.Pattern), so that two spellings of one rule weigh the same: a
// raw non-ASCII octet counts as its three-octet escape, an escaped
// unreserved character as one octet.
func TestPrecedenceNormalisedLength(t *testing.T) {
	for _, c := range []struct {
		name  string
		body  string
		url   string
		rule  Rule   // the one Match reports
		rules []Rule // Rules(), in precedence order
	}{
		{
			name:  "raw UTF-8 counts as escaped",
			body:  "Disallow: /caf\u00e9\nAllow: /caf*/x\n",
			url:   "/caf%C3%A9/x",
			rule:  Rule{false, "/caf%C3%A9", 2},
			rules: []Rule{{false, "/caf%C3%A9", 2}, {true, "/caf*/x", 3}},
		},
		{
			name: "raw UTF-8 in the URL too",
			body: "Disallow: /caf\u00e9\nAllow: /caf*/x\n",
			url:  "https://h.example/caf\u00e9/x",
			rule: Rule{false, "/caf%C3%A9", 2},
		},
		{
			name:  "the escaped spelling weighs the same",
			body:  "Disallow: /caf%C3%A9\nAllow: /caf*/x\n",
			url:   "/caf%C3%A9/x",
			rule:  Rule{false, "/caf%C3%A9", 2},
			rules: []Rule{{false, "/caf%C3%A9", 2}, {true, "/caf*/x", 3}},
		},
		{
			name:  "equivalent rules: Allow wins",
			body:  "Allow: /~a\nDisallow: /%7Ea\n",
			url:   "/~a",
			rule:  Rule{true, "/~a", 2},
			rules: []Rule{{true, "/~a", 2}, {false, "/~a", 3}},
		},
		{
			name:  "equivalent rules the other way round: Allow wins",
			body:  "Disallow: /~a\nAllow: /%7ea\n",
			url:   "/%7Ea",
			rule:  Rule{true, "/~a", 3},
			rules: []Rule{{true, "/~a", 3}, {false, "/~a", 2}},
		},
		{
			name:  "two spellings of one rule are one rule",
			body:  "Disallow: /%7Ea\nDisallow: /~a\n",
			url:   "/~a",
			rule:  Rule{false, "/~a", 2},
			rules: []Rule{{false, "/~a", 2}},
		},
		{
			name:  "an escaped unreserved character counts once",
			body:  "Allow: /a%62\nDisallow: /abcd\n",
			url:   "/abcd",
			rule:  Rule{false, "/abcd", 3},
			rules: []Rule{{false, "/abcd", 3}, {true, "/ab", 2}},
		},
		{
			name: "an escaped unreserved character counts once, shorter URL",
			body: "Allow: /a%62\nDisallow: /abcd\n",
			url:  "/abc",
			rule: Rule{true, "/ab", 2},
		},
		{
			name:  "a literal $ counts as %24",
			body:  "Disallow: /a$b\nAllow: /a%24\n",
			url:   "/a$b",
			rule:  Rule{false, "/a%24b", 2},
			rules: []Rule{{false, "/a%24b", 2}, {true, "/a%24", 3}},
		},
		{
			name:  "the directory rule of index.html is measured escaped",
			body:  "Allow: /\u30c4/index.html\nDisallow: /%E3%83%84/\n",
			url:   "/%E3%83%84/",
			rule:  Rule{true, "/%E3%83%84/$", 2},
			rules: []Rule{{true, "/%E3%83%84/index.html", 2}, {true, "/%E3%83%84/$", 2}, {false, "/%E3%83%84/", 3}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := Parse([]byte("User-agent: *\n" + c.body)).Group("x")
			if rule, ok := g.Match(c.url); !ok || rule != c.rule {
				t.Errorf("Match(%q) = %+v, %v; want %+v", c.url, rule, ok, c.rule)
			}
			if g.Allowed(c.url) != c.rule.Allow {
				t.Errorf("Allowed(%q) = %v, want %v", c.url, !c.rule.Allow, c.rule.Allow)
			}
			if c.rules != nil {
				if got := g.Rules(); !slices.Equal(got, c.rules) {
					t.Errorf("Rules() = %+v\nwant %+v", got, c.rules)
				}
			}
			// Match must report the first rule of Rules() that matches.
			for _, r := range g.Rules() {
				if single := Parse([]byte("User-agent: *\nDisallow: " + r.Pattern + "\n")); !single.Allowed("x", c.url) {
					if r != c.rule {
						t.Errorf("first matching rule of Rules() is %+v, Match says %+v", r, c.rule)
					}
					break
				}
			}
		})
	}
}

func TestCrawlDelay(t *testing.T) {
	for _, c := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"10", 10 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{".25", 250 * time.Millisecond, true},
		{"2.", 2 * time.Second, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"+Inf", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"ten", 0, false},
		{"10 seconds", 0, false},
		{"", 0, false},
		{"1.2.3", 0, false},
		{"99999999999999999999", time.Duration(1<<63 - 1), true},
	} {
		r := Parse([]byte("User-agent: *\nCrawl-delay: " + c.value + "\n"))
		if got, ok := r.CrawlDelay("x"); got != c.want || ok != c.ok {
			t.Errorf("Crawl-delay: %q → %v, %v; want %v, %v", c.value, got, ok, c.want, c.ok)
		}
	}
	const body = "User-agent: a\nDisallow: /a\nCrawl-delay: 1\n\nUser-agent: *\nCrawl-delay: 2\nDisallow: /x\n\nUser-agent: b\nDisallow: /\ncrawl-delay: bad\nCrawl-delay: 3\nCrawl-delay: 4\n\nUser-agent: b\nCrawl-delay: 5\n\nUser-agent: c\nDisallow: /c\n"
	r := Parse([]byte(body))
	for agent, want := range map[string]time.Duration{"a": time.Second, "x": 2 * time.Second, "b": 3 * time.Second} {
		if got, ok := r.CrawlDelay(agent); !ok || got != want {
			t.Errorf("CrawlDelay(%q) = %v, %v; want %v", agent, got, ok, want)
		}
	}
	// "User-agent: c" joins the second b group, Crawl-delay and all.
	if got, ok := r.CrawlDelay("c"); !ok || got != 5*time.Second {
		t.Errorf("CrawlDelay(c) = %v, %v; want 5s (its group shares b's)", got, ok)
	}
	if got, ok := Parse([]byte("User-agent: a\nDisallow: /\nUser-agent: b\nAllow: /\nCrawl-delay: 1\n")).CrawlDelay("a"); ok {
		t.Errorf("CrawlDelay(a) = %v; want none (its group has none)", got)
	}
	if got, ok := Parse([]byte("User-agent: a\nCrawl-delay: 1\n")).CrawlDelay("b"); ok {
		t.Errorf("CrawlDelay(b) = %v; want none (no group applies)", got)
	}
	for _, key := range []string{"crawl-delay", "Crawl-Delay", "crawldelay", "crawl delay", "crawl_delay"} {
		if got, ok := Parse([]byte("User-agent: *\n" + key + ": 7\n")).CrawlDelay("x"); !ok || got != 7*time.Second {
			t.Errorf("%s: CrawlDelay = %v, %v", key, got, ok)
		}
	}
}

func TestSitemapsAndHost(t *testing.T) {
	const body = `Sitemap: https://a.example/1.xml
User-agent: *
Sitemap: /relative.xml
Disallow: /x
Sitemap:
sitemap: HTTP://b.example/2.xml # comment
Sitemap: https:///nohost
Sitemap: ftp://c.example/3.xml
Sitemap: https://a.example/1.xml
Host: mirror.example
Host: second.example
Disallow: /y
`
	r := Parse([]byte(body))
	want := []string{"https://a.example/1.xml", "HTTP://b.example/2.xml", "ftp://c.example/3.xml", "https://a.example/1.xml"}
	if got := r.Sitemaps(); !slices.Equal(got, want) {
		t.Errorf("Sitemaps() = %q, want %q", got, want)
	}
	if got := r.Host(); got != "mirror.example" {
		t.Errorf("Host() = %q", got)
	}
	checkVerdicts(t, body, []verdict{{"x", "/y", false}})
}

func TestSizeLimit(t *testing.T) {
	head := "User-agent: *\nDisallow: /a\n"
	pad := "# " + strings.Repeat("p", MaxSize-len(head)-len("# ")-len("\n")) + "\n"
	body := head + pad
	if len(body) != MaxSize {
		t.Fatalf("bad test: %d bytes", len(body))
	}
	checkVerdicts(t, body+"Disallow: /b\n", []verdict{{"x", "/a", false}, {"x", "/b", true}})
	// A line cut by the limit is dropped, not read as a shorter rule.
	checkVerdicts(t, body[:MaxSize-10]+"\nDisallow: /cut-here-and-more\n", []verdict{{"x", "/cut", true}, {"x", "/cut-here-and-more", true}})
	// A line ending exactly at the limit is kept.
	exact := head + "# " + strings.Repeat("p", MaxSize-len(head)-len("# \nDisallow: /d")) + "\nDisallow: /d"
	if len(exact) != MaxSize {
		t.Fatalf("bad test: %d bytes", len(exact))
	}
	checkVerdicts(t, exact+"\nDisallow: /e\n", []verdict{{"x", "/d", false}, {"x", "/e", true}})
	checkVerdicts(t, exact+"\r\nDisallow: /e\n", []verdict{{"x", "/d", false}, {"x", "/e", true}})
}

func TestNilAndFixedOutcomes(t *testing.T) {
	var r *Robots
	var g *Group
	if !r.Allowed("x", "/a") || !g.Allowed("/a") || r.Group("x") != nil || r.Sitemaps() != nil || r.Host() != "" || r.Groups() != nil {
		t.Error("nil *Robots or *Group does not allow everything")
	}
	if _, ok := r.CrawlDelay("x"); ok {
		t.Error("nil *Robots has a crawl delay")
	}
	if _, ok := g.Match("/a"); ok || g.Rules() != nil || g.Agents() != nil || g.Line() != 0 {
		t.Error("nil *Group has rules")
	}
	if !AllowAll().Allowed("x", "/a") || AllowAll().Group("x") != nil {
		t.Error("AllowAll forbids")
	}
	d := DisallowAll()
	if d.Allowed("x", "/a") || d.Allowed("x", "/") || d.Allowed("FooBot", "https://h.example") {
		t.Error("DisallowAll allows")
	}
	if rule, ok := d.Group("x").Match("/a"); !ok || rule != (Rule{Allow: false, Pattern: "/"}) {
		t.Errorf("DisallowAll: Match = %+v, %v", rule, ok)
	}
}

func TestRulesAndMatch(t *testing.T) {
	r := Parse([]byte("User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /a\nallow: /a/b\nDisallow: /a/b\nAllow: /x/index.html\n"))
	g := r.Group("x")
	// Longest first; on equal length Allow first; then file order.
	want := []Rule{{true, "/x/index.html", 7}, {true, "/a/b", 3}, {true, "/x/$", 7}, {false, "/a/b", 6}, {false, "/a", 2}}
	if got := g.Rules(); !slices.Equal(got, want) {
		t.Errorf("Rules() = %+v\nwant %+v", got, want)
	}
	for _, c := range []struct {
		path string
		rule Rule
		ok   bool
	}{
		{"/a/b/c", Rule{true, "/a/b", 3}, true},
		{"/a/c", Rule{false, "/a", 2}, true},
		{"/x/", Rule{true, "/x/$", 7}, true},
		{"/b", Rule{}, false},
		{"/robots.txt", Rule{}, false},
	} {
		if rule, ok := g.Match(c.path); rule != c.rule || ok != c.ok {
			t.Errorf("Match(%q) = %+v, %v; want %+v, %v", c.path, rule, ok, c.rule, c.ok)
		}
	}
}

func TestSplitPathQuery(t *testing.T) {
	for url, want := range map[string]string{
		"":                          "/",
		"http://www.example.com":    "/",
		"http://www.example.com/":   "/",
		"http://www.example.com/a":  "/a",
		"http://www.example.com/a/": "/a/",
		"http://www.example.com/a/b?c=http://d.e/":    "/a/b?c=http://d.e/",
		"http://www.example.com/a/b?c=d&e=f#fragment": "/a/b?c=d&e=f",
		"example.com":                      "/",
		"example.com/":                     "/",
		"example.com/a":                    "/a",
		"example.com/a/b?c=d&e=f#fragment": "/a/b?c=d&e=f",
		"a":                                "/",
		"a/":                               "/",
		"/a":                               "/a",
		"a/b":                              "/b",
		"example.com?a":                    "/?a",
		"example.com/a;b#c":                "/a;b",
		"http://h.example#x/y":             "/",
		"https://h.example:443?q#f":        "/?q",
	} {
		pq, slash := splitPathQuery(url)
		if slash {
			pq = "/" + pq
		}
		if pq != want {
			t.Errorf("splitPathQuery(%q) = %q, want %q", url, pq, want)
		}
	}
}

// naiveMatch is the obvious exponential matcher, the reference for the
// linear one.
func naiveMatch(p, pat string, anchor bool) bool {
	if pat == "" {
		return !anchor || p == ""
	}
	if pat[0] == '*' {
		for i := 0; i <= len(p); i++ {
			if naiveMatch(p[i:], pat[1:], anchor) {
				return true
			}
		}
		return false
	}
	return p != "" && p[0] == pat[0] && naiveMatch(p[1:], pat[1:], anchor)
}

func TestMatchWildAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	word := func(alphabet string, n int) string {
		b := make([]byte, rng.IntN(n+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 200000 {
		pat := "/" + word("ab*", 7)
		if !strings.Contains(pat, "*") {
			pat += "*" + word("ab", 2)
		}
		p := "/" + word("ab", 9)
		anchor := rng.IntN(2) == 0
		if got, want := matchWild(p, pat, anchor), naiveMatch(p, pat, anchor); got != want {
			t.Fatalf("matchWild(%q, %q, %v) = %v, want %v", p, pat, anchor, got, want)
		}
	}
}

// Merging must not copy rule lists per token: a group naming many agents,
// each also named by a group of its own, would otherwise cost
// agents × rules.
func TestMergeStaysLinear(t *testing.T) {
	var sb strings.Builder
	const k = 2000
	for i := range k {
		fmt.Fprintf(&sb, "User-agent: bot%s\n", tokenName(i))
	}
	for i := range k {
		fmt.Fprintf(&sb, "Disallow: /r%d\n", i)
	}
	for i := range k {
		fmt.Fprintf(&sb, "User-agent: bot%s\nAllow: /r1\n", tokenName(i))
	}
	r := Parse([]byte(sb.String()))
	refs := 0
	for _, g := range r.byAgent {
		refs += len(g.sets)
	}
	if refs > 2*k {
		t.Errorf("merged groups refer to %d rule lists for %d User-agent lines", refs, 2*k)
	}
	if r.Allowed("bot"+tokenName(5), "/r1") != true || r.Allowed("bot"+tokenName(5), "/r2") != false {
		t.Error("wrong verdicts")
	}
}

func tokenName(i int) string {
	b := []byte{}
	for {
		b = append(b, byte('a'+i%26))
		i /= 26
		if i == 0 {
			return string(b)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	r := Parse([]byte("User-agent: *\nDisallow: /a\nAllow: /a/b\n\nUser-agent: FooBot\nDisallow: /\n"))
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 1000 {
				agent := []string{"FooBot", "other"}[(i+j)%2]
				want := agent == "other"
				if got := r.Allowed(agent, "/a/b/c"); got != want {
					errs <- fmt.Sprintf("Allowed(%q) = %v", agent, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// Long runs of rules of one length are deduplicated by hashing, short ones
// pairwise; both keep the earliest line.
func TestDuplicateRules(t *testing.T) {
	for _, n := range []int{5, 40, 300} {
		var sb strings.Builder
		sb.WriteString("User-agent: *\n")
		for i := range n {
			fmt.Fprintf(&sb, "Disallow: /%03d\n", i%(n/2+1)) // every pattern twice, but the last
			fmt.Fprintf(&sb, "Allow: /%03d\n", i%3)
		}
		r := Parse([]byte(sb.String()))
		rules := r.Group("x").Rules()
		seen := map[Rule]bool{}
		disallows := 0
		for _, rule := range rules {
			k := Rule{Allow: rule.Allow, Pattern: rule.Pattern}
			if seen[k] {
				t.Errorf("n=%d: duplicate %+v", n, rule)
			}
			seen[k] = true
			if !rule.Allow {
				disallows++
				var want int
				fmt.Sscanf(rule.Pattern, "/%d", &want)
				if rule.Line != 2+2*want {
					t.Errorf("n=%d: %+v kept, want the first, on line %d", n, rule, 2+2*want)
				}
			}
		}
		if disallows != n/2+1 {
			t.Errorf("n=%d: %d Disallow rules left, want %d", n, disallows, n/2+1)
		}
		if len(rules)-disallows != 3 {
			t.Errorf("n=%d: %d Allow rules left, want 3", n, len(rules)-disallows)
		}
	}
}

// Rules of very different lengths take the comparison sort, rules of few
// lengths the counting sort; both give precedence order.
func TestRuleOrderManyRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, maxLen := range []int{8, 5000} {
		var sb strings.Builder
		sb.WriteString("User-agent: *\n")
		for range 200 {
			kind := []string{"Allow", "Disallow"}[rng.IntN(2)]
			fmt.Fprintf(&sb, "%s: /%s\n", kind, strings.Repeat("a", rng.IntN(maxLen)))
		}
		rules := Parse([]byte(sb.String())).Group("x").Rules()
		for i := 1; i < len(rules); i++ {
			a, b := rules[i-1], rules[i]
			if len(a.Pattern) < len(b.Pattern) || len(a.Pattern) == len(b.Pattern) && (!a.Allow && b.Allow || a.Allow == b.Allow && a.Line > b.Line) {
				t.Fatalf("maxLen %d: %+v before %+v", maxLen, a, b)
			}
		}
	}
}

func TestProductToken(t *testing.T) {
	for agent, want := range map[string]string{
		"FooBot":                                  "FooBot",
		"FooBot/1.2 (+https://foo.example/bot)":   "FooBot",
		"Foo_Bar-Baz qux":                         "Foo_Bar-Baz",
		"Googlebot-Image/1.0":                     "Googlebot-Image",
		"Mozilla/5.0 (compatible; Googlebot/2.1)": "Mozilla",
		"bot2":      "bot",
		"FooBot*":   "FooBot",
		"":          "",
		"*":         "",
		" FooBot":   "",
		"\u30c4bot": "",
		"2bot":      "",
	} {
		if got := ProductToken(agent); got != want {
			t.Errorf("ProductToken(%q) = %q, want %q", agent, got, want)
		}
	}
	// Google's ID_VerifyValidUserAgentsToObey, and more.
	for s, want := range map[string]bool{
		"Foobot": true, "Foobot-Bar": true, "Foo_Bar": true, "a": true, "-": true,
		"": false, "\u30c4": false, "Foobot*": false, " Foobot ": false, "Foobot/2.1": false, "Foobot Bar": false,
		"*": false, "bot2": false, "Foobot\n": false,
	} {
		if got := ValidProductToken(s); got != want {
			t.Errorf("ValidProductToken(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestLongAgentToken(t *testing.T) {
	long := strings.Repeat("VeryLongBot", 10)
	r := Parse([]byte("User-agent: " + long + "\nDisallow: /\n"))
	if r.Allowed(long+"/1.0", "/x") || r.Allowed(strings.ToLower(long), "/x") || !r.Allowed("VeryLongBot", "/x") {
		t.Error("long product tokens are not matched exactly and case-insensitively")
	}
}
