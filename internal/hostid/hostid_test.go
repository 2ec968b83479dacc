package hostid_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/heedcrawl/heed/internal/hostid"
)

func mustParse(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", raw, err)
	}
	return u
}

func TestHost(t *testing.T) {
	tests := []struct{ in, host, name string }{
		{"http://a.example/", "a.example", "a.example"},
		{"http://A.Example/", "a.example", "a.example"},
		{"http://a.example:80/", "a.example", "a.example"},
		{"http://A.EXAMPLE.:80/", "a.example", "a.example"},
		{"http://a.example./", "a.example", "a.example"},
		{"http://a.example../", "a.example", "a.example"},
		{"http://a.example:/", "a.example", "a.example"},
		{"http://a.example:0080/", "a.example", "a.example"},
		{"http://a.example:443/", "a.example:443", "a.example"},
		{"https://a.example:443/", "a.example", "a.example"},
		{"HTTPS://a.example:0443/", "a.example", "a.example"},
		{"https://a.example:80/", "a.example:80", "a.example"},
		{"http://a.example:08080/", "a.example:8080", "a.example"},
		{"http://a.example:00000000000000000000080/", "a.example", "a.example"},
		{"ftp://a.example:80/", "a.example:80", "a.example"}, // no default known
		{"http://bücher.example/", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"http://BÜCHER.example.:80/", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"http://XN--BCHER-KVA.example/", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"http://ｅｘａｍｐｌｅ.com/", "example.com", "example.com"},
		{"http://faß.de/", "xn--fa-hia.de", "xn--fa-hia.de"}, // non-transitional
		{"http://r3---sn-x.googlevideo.com/", "r3---sn-x.googlevideo.com", "r3---sn-x.googlevideo.com"},
		{"http://my_host.example/", "my_host.example", "my_host.example"},
		{"http://127.0.0.1:8080/", "127.0.0.1:8080", "127.0.0.1"},
		{"http://127.0.0.1.:80/", "127.0.0.1", "127.0.0.1"},
		{"http://[::1]/", "[::1]", "[::1]"},
		{"http://[0:0:0:0:0:0:0:1]:80/", "[::1]", "[::1]"},
		{"http://[2001:DB8::1]:8080/", "[2001:db8::1]:8080", "[2001:db8::1]"},
	}
	for _, tt := range tests {
		u := mustParse(t, tt.in)
		host, err := hostid.Host(u)
		if err != nil || host != tt.host {
			t.Errorf("Host(%q) = %q, %v; want %q", tt.in, host, err, tt.host)
			continue
		}
		if key := hostid.Key(u); key != tt.host {
			t.Errorf("Key(%q) = %q, want %q", tt.in, key, tt.host)
		}
		if name, err := hostid.Name(u); err != nil || name != tt.name {
			t.Errorf("Name(%q) = %q, %v; want %q", tt.in, name, err, tt.name)
		}
		// Canonical is a fixed point.
		again := *u
		again.Host = host
		if h, err := hostid.Host(&again); err != nil || h != host {
			t.Errorf("Host of canonical %q = %q, %v: not idempotent", host, h, err)
		}
	}
}

func TestHostRejects(t *testing.T) {
	tests := []struct {
		host string
		want error
	}{
		{"", hostid.ErrHost},
		{":80", hostid.ErrHost},
		{".", hostid.ErrHost},
		{"..:80", hostid.ErrHost},
		{"a*b.example", hostid.ErrHost},
		{"a b", hostid.ErrHost},
		{"a%b", hostid.ErrHost}, // a literal '%' once url.Parse has decoded
		{"[::1", hostid.ErrHost},
		{"[::1]x", hostid.ErrHost},
		{"[1.2.3.4]", hostid.ErrHost},
		{"[fe80::1%eth0]", hostid.ErrHost},
		{"xn--a.example", hostid.ErrHost},
		{"xn--abc.example", hostid.ErrHost},
		{"0\xbc0", hostid.ErrHost},
		{"a.example:http", hostid.ErrPort},
		{"a.example:-1", hostid.ErrPort},
		{"a.example:0", hostid.ErrPort},
		{"a.example:000", hostid.ErrPort},
		{"a.example:65536", hostid.ErrPort},
		{"a.example:123456", hostid.ErrPort},
	}
	for _, tt := range tests {
		u := &url.URL{Scheme: "http", Host: tt.host, Path: "/"}
		got, err := hostid.Host(u)
		if !errors.Is(err, tt.want) {
			t.Errorf("Host(%q) = %q, %v; want error %v", tt.host, got, err, tt.want)
		}
		var e *hostid.Error
		if !errors.As(err, &e) {
			t.Errorf("Host(%q): error %v is not a *hostid.Error", tt.host, err)
		}
		if key := hostid.Key(u); key != "" {
			t.Errorf("Key(%q) = %q, want \"\"", tt.host, key)
		}
		if _, err := hostid.Name(u); !errors.Is(err, tt.want) {
			t.Errorf("Name(%q): error %v, want %v", tt.host, err, tt.want)
		}
		if _, err := hostid.Authority(u); !errors.Is(err, tt.want) {
			t.Errorf("Authority(%q): error %v, want %v", tt.host, err, tt.want)
		}
	}
}

func TestAuthority(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://a.example/x", "http://a.example"},
		{"HTTP://A.example.:80/x", "http://a.example"},
		{"https://user:pw@a.example:443/", "https://a.example"},
		{"https://a.example:8443/", "https://a.example:8443"},
		{"http://bücher.example/", "http://xn--bcher-kva.example"},
		{"http://[::1]:8080/", "http://[::1]:8080"},
	}
	for _, tt := range tests {
		if got, err := hostid.Authority(mustParse(t, tt.in)); err != nil || got != tt.want {
			t.Errorf("Authority(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, raw := range []string{"ftp://a.example/", "mailto:a@a.example", "/relative"} {
		if got, err := hostid.Authority(mustParse(t, raw)); !errors.Is(err, hostid.ErrScheme) {
			t.Errorf("Authority(%q) = %q, %v; want ErrScheme", raw, got, err)
		}
	}
}

// TestAppendName checks the raw-URL entry point the frontier's
// canonicaliser uses agrees with Host, and decodes percent-escapes that
// url.Parse would have decoded.
func TestAppendName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"A.Example.", "a.example"},
		{"b%C3%BCcher.example", "xn--bcher-kva.example"},
		{"bücher.example.", "xn--bcher-kva.example"},
		{"[::FFFF:1.2.3.4]", "[::ffff:1.2.3.4]"},
	}
	for _, tt := range tests {
		got, err := hostid.AppendName([]byte("x:"), tt.in)
		if err != nil || string(got) != "x:"+tt.want {
			t.Errorf("AppendName(%q) = %q, %v; want %q", tt.in, got, err, "x:"+tt.want)
		}
	}
	for _, bad := range []string{"%zz.example", "%C3.example", "a%2A", ""} {
		if got, err := hostid.AppendName(nil, bad); !errors.Is(err, hostid.ErrHost) {
			t.Errorf("AppendName(%q) = %q, %v; want ErrHost", bad, got, err)
		}
	}
}

func TestSplitHostPort(t *testing.T) {
	tests := []struct{ in, host, port string }{
		{"a", "a", ""},
		{"a:", "a", ""},
		{"a:80", "a", "80"},
		{"a:b:80", "a:b", "80"},
		{"[::1]", "[::1]", ""},
		{"[::1]:8080", "[::1]", "8080"},
	}
	for _, tt := range tests {
		h, p, err := hostid.SplitHostPort(tt.in)
		if err != nil || h != tt.host || p != tt.port {
			t.Errorf("SplitHostPort(%q) = %q, %q, %v; want %q, %q", tt.in, h, p, err, tt.host, tt.port)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	_, err := hostid.Host(&url.URL{Scheme: "http", Host: "a.example:99999"})
	if got, want := err.Error(), `hostid: invalid port "99999": out of range`; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

func TestRegistrableDomain(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a.example.com", "example.com"},
		{"b.a.example.com", "example.com"},
		{"example.com", "example.com"},
		{"a.github.io", "a.github.io"},
		{"x.a.github.io", "a.github.io"},
		{"www.bbc.co.uk", "bbc.co.uk"},
		{"co.uk", "co.uk"},
		{"localhost", "localhost"},
		{"h.test", "h.test"},
		{"127.0.0.1", "127.0.0.1"},
		{"[::1]", "[::1]"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := hostid.RegistrableDomain(tt.in); got != tt.want {
			t.Errorf("RegistrableDomain(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestHostCanonicalAllocs guards the fast path: the limiter and the gate
// call Host for every URL, nearly always already canonical.
func TestHostCanonicalAllocs(t *testing.T) {
	u := mustParse(t, "http://www.example.com:8080/a")
	if n := testing.AllocsPerRun(100, func() {
		if h, err := hostid.Host(u); err != nil || h != "www.example.com:8080" {
			t.Fatalf("Host = %q, %v", h, err)
		}
		if h, err := hostid.Name(u); err != nil || h != "www.example.com" {
			t.Fatalf("Name = %q, %v", h, err)
		}
	}); n != 0 {
		t.Errorf("Host and Name of a canonical URL allocate %v times, want 0", n)
	}
}

// FuzzHost checks that whatever Host accepts, it accepts again unchanged.
func FuzzHost(f *testing.F) {
	for _, s := range []string{"a.example", "A.example.:80", "bücher.example", "[::1]:8080", "xn--bcher-kva.example.", "a..", "ｅｘａｍｐｌｅ。com。"} {
		f.Add("http", s)
	}
	f.Fuzz(func(t *testing.T, scheme, host string) {
		u := &url.URL{Scheme: scheme, Host: host}
		h, err := hostid.Host(u)
		if err != nil {
			return
		}
		u.Host = h
		again, err := hostid.Host(u)
		if err != nil || again != h {
			t.Fatalf("Host(%q) = %q, but Host(%q) = %q, %v", host, h, h, again, err)
		}
		if _, err := url.Parse("http://" + h + "/"); err != nil {
			t.Fatalf("Host(%q) = %q, which net/url cannot parse: %v", host, h, err)
		}
	})
}
