package frontier_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/hostid"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		// Already canonical: unchanged.
		{"http://example.com/", "http://example.com/"},
		{"https://example.com/a/b?x=1&y=2", "https://example.com/a/b?x=1&y=2"},
		// Scheme and host case.
		{"HTTP://Example.COM/Path", "http://example.com/Path"},
		{"hTtPs://WWW.example.com", "https://www.example.com/"},
		// Empty path.
		{"http://example.com", "http://example.com/"},
		{"http://example.com?q", "http://example.com/?q"},
		// Default and odd ports.
		{"http://example.com:80/", "http://example.com/"},
		{"https://example.com:443/", "https://example.com/"},
		{"http://example.com:443/", "http://example.com:443/"},
		{"https://example.com:80/", "https://example.com:80/"},
		{"http://example.com:8080/", "http://example.com:8080/"},
		{"http://example.com:/", "http://example.com/"},
		{"http://example.com:0080/", "http://example.com/"},
		{"http://example.com:08080/", "http://example.com:8080/"},
		// Fragment and empty query.
		{"http://example.com/a#frag", "http://example.com/a"},
		{"http://example.com/a?#frag", "http://example.com/a"},
		{"http://example.com/a?", "http://example.com/a"},
		{"http://example.com/a?b=1#c?d", "http://example.com/a?b=1"},
		{"http://example.com#", "http://example.com/"},
		// Dot segments (RFC 3986 §5.2.4 examples and edges).
		{"http://a/b/c/./../../g", "http://a/g"},
		{"http://a/mid/content=5/../6", "http://a/mid/6"},
		{"http://a/./", "http://a/"},
		{"http://a/.", "http://a/"},
		{"http://a/..", "http://a/"},
		{"http://a/../../x", "http://a/x"},
		{"http://a/b/..", "http://a/"},
		{"http://a/b/../", "http://a/"},
		{"http://a/b/.", "http://a/b/"},
		{"http://a/b/./c", "http://a/b/c"},
		{"http://a/b//../c", "http://a/b/c"},
		{"http://a/b/..c/.d/e.", "http://a/b/..c/.d/e."},
		{"http://a/b/%2E%2E/c", "http://a/c"},
		{"http://a/b/%2e/c", "http://a/b/c"},
		{"http://a/b/.%2E/c", "http://a/c"},
		{"http://a/b?x=/../y", "http://a/b?x=/../y"}, // not in the query
		{"http://a//b", "http://a//b"},               // empty segments kept
		// Percent-encoding.
		{"http://a/%7euser", "http://a/~user"},
		{"http://a/%7Euser", "http://a/~user"},
		{"http://a/%41%42%43%2d%5F%2E%30", "http://a/ABC-_.0"},
		{"http://a/%2f%3a%3F%23%25", "http://a/%2F%3A%3F%23%25"},
		{"http://a/%c3%a4", "http://a/%C3%A4"},
		{"http://a/ä", "http://a/%C3%A4"},
		{"http://a/a b", "http://a/a%20b"},
		{"http://a/%", "http://a/%25"},
		{"http://a/%zz", "http://a/%25zz"},
		{"http://a/%4", "http://a/%254"},
		{"http://a/100%25", "http://a/100%25"},
		{"http://a/{x}|^`\\\"<>", "http://a/%7Bx%7D%7C%5E%60%5C%22%3C%3E"},
		{"http://a/p?q=a b&r=%7e&s=%2b+&t=%3d", "http://a/p?q=a%20b&r=~&s=%2B+&t=%3D"},
		{"http://a/;p=1,2:@!$&'()*+", "http://a/;p=1,2:@!$&'()*+"},
		{"http://a/\x00\x7f", "http://a/%00%7F"},
		// Whitespace around and inside, as in hrefs.
		{"  http://a/b  ", "http://a/b"},
		{"\thttp://a/b\n", "http://a/b"},
		{"http://a/b\n/c\t", "http://a/b/c"},
		// Userinfo.
		{"http://user:pw@a/", "http://user:pw@a/"},
		{"http://@a/", "http://a/"},
		{"http://us%65r@a/", "http://user@a/"},
		{"http://a@b@c/", "http://a%40b@c/"},
		// IDN.
		{"http://bücher.example/", "http://xn--bcher-kva.example/"},
		{"http://BÜCHER.example/", "http://xn--bcher-kva.example/"},
		{"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"},
		{"http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/"},
		{"http://日本.jp/", "http://xn--wgv71a.jp/"},
		{"http://ｅｘａｍｐｌｅ.com/", "http://example.com/"},
		{"http://faß.de/", "http://xn--fa-hia.de/"},
		{"http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"},
		// Real-world names IDNA's strict profiles refuse.
		{"http://r3---sn-x.googlevideo.com/", "http://r3---sn-x.googlevideo.com/"},
		{"http://my_host.example/", "http://my_host.example/"},
		// IP literals.
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/"},
		{"http://[::1]/", "http://[::1]/"},
		{"http://[0:0:0:0:0:0:0:1]:80/", "http://[::1]/"},
		{"http://[2001:DB8::1]:8080/x", "http://[2001:db8::1]:8080/x"},
		// Trailing dots dropped: one host, however spelled.
		{"http://example.com./", "http://example.com/"},
		{"http://A.example.:80/", "http://a.example/"},
		{"http://a.example..:0080/", "http://a.example/"},
		{"https://bücher.example.:443/", "https://xn--bcher-kva.example/"},
		{"http://127.0.0.1.:8080/", "http://127.0.0.1:8080/"},
	}
	for _, tt := range tests {
		got, err := frontier.Canonical(tt.in)
		if err != nil {
			t.Errorf("Canonical(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Canonical(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again, err := frontier.Canonical(got); err != nil || again != got {
			t.Errorf("Canonical(%q) = %q, %v: not idempotent", got, again, err)
		}
		if _, err := url.Parse(got); err != nil {
			t.Errorf("net/url cannot parse canonical %q: %v", got, err)
		}
	}
}

func TestCanonicalRejects(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"", frontier.ErrRelative},
		{"/path", frontier.ErrRelative},
		{"//example.com/", frontier.ErrRelative},
		{"example.com/a", frontier.ErrRelative},
		{"mailto:a@example.com", frontier.ErrScheme},
		{"javascript:void(0)", frontier.ErrScheme},
		{"ftp://example.com/", frontier.ErrScheme},
		{"data:text/html,hi", frontier.ErrScheme},
		{"httpx://example.com/", frontier.ErrScheme},
		{"http:example.com", frontier.ErrHost},
		{"http:/example.com", frontier.ErrHost},
		{"http:///path", frontier.ErrHost},
		{"http://:80/", frontier.ErrHost},
		{"http://user@/", frontier.ErrHost},
		{"http://exa mple.com/", frontier.ErrHost},
		{"http://a*b.com/", frontier.ErrHost},
		{"http://a<b/", frontier.ErrHost},
		{"http://a:b:80/", frontier.ErrHost},
		{"http://[::1/", frontier.ErrHost},
		{"http://[::1]x/", frontier.ErrHost},
		{"http://[1.2.3.4]/", frontier.ErrHost},
		{"http://[fe80::1%25eth0]/", frontier.ErrHost},
		{"http://xn--a.example/", frontier.ErrHost},   // invalid punycode
		{"http://xn--abc.example/", frontier.ErrHost}, // ASCII-only punycode
		{"http://%zz.example/", frontier.ErrHost},
		{"http://0\xbc0/", frontier.ErrHost}, // not UTF-8
		{"http://%C3.example/", frontier.ErrHost},
		{"http://example.com:http/", frontier.ErrPort},
		{"http://example.com:-1/", frontier.ErrPort},
		{"http://example.com:65536/", frontier.ErrPort},
		{"http://example.com:123456/", frontier.ErrPort},
		{"http://example.com:0/", frontier.ErrPort},
		{"http://example.com:00/", frontier.ErrPort},
		{"http://./", frontier.ErrHost},
		{"http://..:80/", frontier.ErrHost},
		{"http://example.com/" + strings.Repeat("a", frontier.DefaultMaxLength), frontier.ErrTooLong},
	}
	for _, tt := range tests {
		got, err := frontier.Canonical(tt.in)
		if !errors.Is(err, tt.want) {
			t.Errorf("Canonical(%q) = %q, %v; want error %v", tt.in, got, err, tt.want)
		}
	}
}

func TestCanonicalMaxLength(t *testing.T) {
	long := "http://example.com/" + strings.Repeat("a", 100)
	c := frontier.Canonicalizer{MaxLength: 50}
	if _, err := c.Canonical(long); !errors.Is(err, frontier.ErrTooLong) {
		t.Errorf("MaxLength 50: err = %v, want ErrTooLong", err)
	}
	// Escaping can push a URL over the limit.
	if _, err := c.Canonical("http://example.com/" + strings.Repeat("ä", 10)); !errors.Is(err, frontier.ErrTooLong) {
		t.Errorf("MaxLength 50 after escaping: err = %v, want ErrTooLong", err)
	}
	c.MaxLength = -1
	huge := "http://example.com/" + strings.Repeat("a", 2*frontier.DefaultMaxLength)
	if got, err := c.Canonical(huge); err != nil || got != huge {
		t.Errorf("MaxLength -1: err = %v, changed = %v", err, got != huge)
	}
}

func TestCanonicalizerQueryOptions(t *testing.T) {
	tests := []struct {
		c        frontier.Canonicalizer
		in, want string
	}{
		{frontier.Canonicalizer{KeepQueryOrder: true}, "http://a/?b=2&a=1&utm_source=x", "http://a/?b=2&a=1&utm_source=x"},
		{frontier.Canonicalizer{KeepQueryOrder: true}, "http://a/?b&&a=&", "http://a/?b&&a=&"},
		// The zero Canonicalizer sorts: the default needs no field.
		{frontier.Canonicalizer{}, "http://a/?b=2&a=1&c", "http://a/?a=1&b=2&c"},
		{frontier.Canonicalizer{}, "http://a/?a=2&b=1&a=1", "http://a/?a=2&a=1&b=1"},
		{frontier.Canonicalizer{}, "http://a/?b&&a=&", "http://a/?a=&b"},
		{frontier.Canonicalizer{}, "http://a/?a&b&", "http://a/?a&b"},
		{frontier.Canonicalizer{}, "http://a/?a&&b", "http://a/?a&b"},
		{frontier.Canonicalizer{}, "http://a/?&&", "http://a/"},
		{frontier.Canonicalizer{}, "http://a/?%62=1&a=2", "http://a/?a=2&b=1"},
		{frontier.Canonicalizer{}, "http://a/?a=1&a=0&b", "http://a/?a=1&a=0&b"},
		{frontier.Canonicalizer{StripParam: frontier.TrackingParam, KeepQueryOrder: true},
			"http://a/?id=7&utm_source=x&UTM_Medium=y&gclid=z&fbclid=w&page=2",
			"http://a/?id=7&page=2"},
		{frontier.Canonicalizer{StripParam: frontier.TrackingParam}, "http://a/p?utm_campaign=x#f", "http://a/p"},
		{frontier.Canonicalizer{StripParam: frontier.TrackingParam}, "http://a/?utm%5Fsource=x&q", "http://a/?q"},
		{frontier.Canonicalizer{StripParam: frontier.TrackingParam},
			"http://a/?z=1&msclkid=2&b=3", "http://a/?b=3&z=1"},
		{frontier.Canonicalizer{StripParam: frontier.TrackingParam, KeepQueryOrder: true},
			"http://a/?z=1&msclkid=2&b=3", "http://a/?z=1&b=3"},
	}
	for _, tt := range tests {
		got, err := tt.c.Canonical(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%+v.Canonical(%q) = %q, %v; want %q", tt.c, tt.in, got, err, tt.want)
		}
	}
	// Many parameters: beyond the stack buffers.
	var q []string
	for i := 99; i >= 0; i-- {
		q = append(q, "p"+strings.Repeat("x", i)+"=1")
	}
	var c frontier.Canonicalizer
	got, err := c.Canonical("http://a/?" + strings.Join(q, "&"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "http://a/?p=1&px=1&pxx=1&") || len(got) != len("http://a/?")+len(strings.Join(q, "&")) {
		t.Errorf("sorted 100 parameters: got %.60q...", got)
	}
}

func TestTrackingParam(t *testing.T) {
	for _, name := range []string{"utm_source", "utm_", "UTM_TERM", "gclid", "FBCLID", "msclkid", "_ga", "mc_eid"} {
		if !frontier.TrackingParam(name) {
			t.Errorf("TrackingParam(%q) = false", name)
		}
	}
	for _, name := range []string{"", "id", "utm", "gclidx", "page", "q", "source", "a_very_long_parameter_name"} {
		if frontier.TrackingParam(name) {
			t.Errorf("TrackingParam(%q) = true", name)
		}
	}
}

func TestCanonicalRef(t *testing.T) {
	base, _ := url.Parse("http://a/b/c/d;p?q#f")
	tests := []struct{ ref, want string }{
		// RFC 3986 §5.4.1 normal examples (canonicalised).
		{"g", "http://a/b/c/g"},
		{"./g", "http://a/b/c/g"},
		{"g/", "http://a/b/c/g/"},
		{"/g", "http://a/g"},
		{"//g", "http://g/"},
		{"?y", "http://a/b/c/d;p?y"},
		{"g?y", "http://a/b/c/g?y"},
		{"#s", "http://a/b/c/d;p?q"},
		{"g#s", "http://a/b/c/g"},
		{";x", "http://a/b/c/;x"},
		{"", "http://a/b/c/d;p?q"},
		{".", "http://a/b/c/"},
		{"./", "http://a/b/c/"},
		{"..", "http://a/b/"},
		{"../g", "http://a/b/g"},
		{"../..", "http://a/"},
		{"../../../g", "http://a/g"},
		// Absolute refs and other schemes.
		{"HTTPS://Other.example:443/x", "https://other.example/x"},
		{"  /g?a b  ", "http://a/g?a%20b"},
		{"/g\n/h", "http://a/g/h"},
	}
	for _, tt := range tests {
		got, err := frontier.CanonicalRef(base, tt.ref)
		if err != nil || got != tt.want {
			t.Errorf("CanonicalRef(%q) = %q, %v; want %q", tt.ref, got, err, tt.want)
		}
	}
	if _, err := frontier.CanonicalRef(base, "mailto:x@a"); !errors.Is(err, frontier.ErrScheme) {
		t.Errorf("mailto ref: err = %v, want ErrScheme", err)
	}
	if _, err := frontier.CanonicalRef(nil, "/g"); !errors.Is(err, frontier.ErrRelative) {
		t.Errorf("nil base, relative ref: err = %v, want ErrRelative", err)
	}
	if _, err := frontier.CanonicalRef(&url.URL{Path: "/x"}, "g"); !errors.Is(err, frontier.ErrRelative) {
		t.Errorf("relative base: err = %v, want ErrRelative", err)
	}
	withUser, _ := url.Parse("https://u:p@h:8443")
	if got, err := frontier.CanonicalRef(withUser, "x"); err != nil || got != "https://u:p@h:8443/x" {
		t.Errorf("base with userinfo and empty path: %q, %v", got, err)
	}
}

// Different spellings of one URL canonicalise to one string.
func TestCanonicalSpellings(t *testing.T) {
	spellings := []string{
		"http://bücher.example/a/b/../%7Ec?x=%2f#top",
		"HTTP://BÜCHER.EXAMPLE:80/a/./~c?x=%2F",
		"http://xn--bcher-kva.example/a/%7ec?x=%2f",
		" http://Xn--Bcher-Kva.Example:0080/a/b/c/../../%7E%63?x=%2F# ",
		"http://bücher.example.:80/a/%7Ec?x=%2F",
		"http://b%C3%BCcher.example./a/~c?x=%2F",
	}
	want := "http://xn--bcher-kva.example/a/~c?x=%2F"
	for _, s := range spellings {
		if got, err := frontier.Canonical(s); err != nil || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
}

func TestCanonicalAllocs(t *testing.T) {
	canonical := "https://www.example.com/articles/2024/some-article-title?page=2&sort=asc"
	if n := testing.AllocsPerRun(100, func() {
		if _, err := frontier.Canonical(canonical); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Canonical of a canonical URL: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := frontier.Canonical("HTTPS://WWW.Example.com:443/articles/./2024/%7euser#x"); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("Canonical of a non-canonical URL: %v allocs, want 1", n)
	}
	c := frontier.Canonicalizer{StripParam: frontier.TrackingParam}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := c.Canonical("https://a.example/?z=1&utm_source=x&a=2"); err != nil {
			t.Fatal(err)
		}
	}); n != 2 {
		t.Errorf("Canonical with StripParam: %v allocs, want 2 (query copy, result)", n)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "HTTP://A:80/./b/../c?d#e", "http://bücher.example/%7e",
		"https://[::1]:443/a%2fb?c=%zz", "http://a/..%2E/%2e./x", "http://u@v@w:0/",
	} {
		f.Add(s)
	}
	var kept = frontier.Canonicalizer{KeepQueryOrder: true}
	var stripped = frontier.Canonicalizer{StripParam: frontier.TrackingParam}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, c := range []*frontier.Canonicalizer{{}, &kept, &stripped} {
			got, err := c.Canonical(raw)
			if err != nil {
				return
			}
			again, err := c.Canonical(got)
			if err != nil || again != got {
				t.Fatalf("not idempotent: %q → %q → %q, %v", raw, got, again, err)
			}
			u, err := url.Parse(got)
			if err != nil {
				t.Fatalf("canonical %q of %q does not parse: %v", got, raw, err)
			}
			if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Fragment != "" {
				t.Fatalf("canonical %q of %q parsed as %#v", got, raw, u)
			}
			// The canonical URL's host is the one every other part of
			// heed keys on.
			if h, err := hostid.Host(u); err != nil || h != u.Host {
				t.Fatalf("canonical %q of %q has host %q, hostid says %q, %v", got, raw, u.Host, h, err)
			}
		}
	})
}
