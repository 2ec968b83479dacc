package fetch

import (
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// TestLinkResolverMatchesURLParse holds the string-joining fast path to
// resolveLink's answers (url.Parse, ResolveReference, String) for hrefs
// built from the characters and shapes that matter.
func TestLinkResolverMatchesURLParse(t *testing.T) {
	bases := []string{
		"http://example.com/dir/page.html", "https://Example.COM:8443/a/b/", "http://example.com",
		"http://example.com/x?q=1", "http://example.com/a/./b/c", "http://example.com/%7Euser/p(1)",
		"http://user@example.com/p", "http://[::1]:8080/p/", "https://example.com/a%20b/c",
	}
	prefixes := []string{"", "/", "//", "./", "../", "?", "#", "http://", "HTTPS://", "http://h.example", "https://h.example:81", "http://h_x.example", "http://h.example:", "a:", "mailto:", " ", "\t/"}
	const alphabet = "ab/.:?#%2eF @(!~+;=&\\[]x\t\n'*,$-_é"
	rng := rand.New(rand.NewPCG(1, 2))
	runes := []rune(alphabet)
	fast := 0
	for _, rawBase := range bases {
		base, err := url.Parse(rawBase)
		if err != nil {
			t.Fatal(err)
		}
		r := newLinkResolver(base)
		for range 20000 {
			href := prefixes[rng.IntN(len(prefixes))]
			for range rng.IntN(12) {
				href += string(runes[rng.IntN(len(runes))])
			}
			want, wantOK := resolveLink(base, href)
			got, gotOK := r.resolve([]byte(href))
			if got != want || gotOK != wantOK {
				t.Fatalf("base %s, href %q: fast path %q %v, url.Parse %q %v", rawBase, href, got, gotOK, want, wantOK)
			}
			h, _, _ := strings.Cut(strings.Trim(href, " \t\n\f\r"), "#")
			if _, ok := r.join([]byte(h)); ok && r.origin != "" {
				fast++
			}
		}
	}
	if fast < 10000 {
		t.Errorf("only %d hrefs took the fast path: the test proves little", fast)
	}
}

func FuzzLinkResolver(f *testing.F) {
	for _, s := range []string{"/a/b?c=d#e", "rel/x", "HTTPS://h.example:80/p", "//h/p", "../up", "a:b", "/%zz", "#f", "/p#%"} {
		f.Add("http://example.com/dir/page", s)
	}
	f.Fuzz(func(t *testing.T, rawBase, href string) {
		base, err := url.Parse(rawBase)
		if err != nil {
			return
		}
		want, wantOK := resolveLink(base, href)
		got, gotOK := newLinkResolver(base).resolve([]byte(href))
		if got != want || gotOK != wantOK {
			t.Fatalf("base %q, href %q: fast path %q %v, url.Parse %q %v", rawBase, href, got, gotOK, want, wantOK)
		}
	})
}
