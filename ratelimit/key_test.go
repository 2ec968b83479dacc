package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

func newKeys(t *testing.T, mode ratelimit.KeyMode, r ratelimit.Resolver) *ratelimit.Keys {
	t.Helper()
	k, err := ratelimit.NewKeys(mode, r, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestHostAndDomainKeys(t *testing.T) {
	host := newKeys(t, ratelimit.KeyHost, nil)
	domain := newKeys(t, ratelimit.KeyDomain, nil)
	cases := []struct{ url, host, domain string }{
		{"https://WWW.Example.COM/a", "www.example.com", "example.com"},
		{"http://www.example.com:80/a", "www.example.com", "example.com"},
		{"https://www.example.com:443/a", "www.example.com", "example.com"},
		{"http://www.example.com:443/a", "www.example.com:443", "example.com"},
		{"http://www.example.com./a", "www.example.com", "example.com"},
		{"http://WWW.example.com.:80/a", "www.example.com", "example.com"},
		{"http://a.b.example.co.uk:8080/", "a.b.example.co.uk:8080", "example.co.uk"},
		{"http://a.b.example.co.uk:08080/", "a.b.example.co.uk:8080", "example.co.uk"},
		{"https://alice.github.io/", "alice.github.io", "alice.github.io"},
		{"http://bücher.example/", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"http://BÜCHER.example.:80/", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		// The frontier's IDNA profile: non-transitional, no STD3 rules.
		{"http://faß.de/", "xn--fa-hia.de", "xn--fa-hia.de"},
		{"http://my_host.example/", "my_host.example", "my_host.example"},
		{"http://127.0.0.1:8080/", "127.0.0.1:8080", "127.0.0.1"},
		{"http://[::1]:8080/", "[::1]:8080", "[::1]"},
		{"http://[::1]/", "[::1]", "[::1]"},
		{"http://localhost/", "localhost", "localhost"},
		{"http://github.io/", "github.io", "github.io"},
		// No host, or none the frontier would accept: no key.
		{"/relative", "", ""},
		{"http://a*b.example/", "", ""},
		{"http://a.example:0/", "", ""},
	}
	for _, tc := range cases {
		u := mustURL(t, tc.url)
		if got := host.Key(u); got != tc.host {
			t.Errorf("host Key(%s) = %q, want %q", tc.url, got, tc.host)
		}
		if got := domain.Key(u); got != tc.domain {
			t.Errorf("domain Key(%s) = %q, want %q", tc.url, got, tc.domain)
		}
	}
}

// TestHostKeyIsTheFrontiersKey checks the promise KeyHost makes: whatever
// the spelling, the key is the host of the frontier's canonical URL, which
// is the frontier's default key.
func TestHostKeyIsTheFrontiersKey(t *testing.T) {
	l := newKeys(t, ratelimit.KeyHost, nil)
	for _, raw := range []string{
		"http://example.com/", "https://example.com:8443/x", "http://[2001:db8::1]/",
		"http://[2001:DB8:0::1]:81/", "http://xn--bcher-kva.example/", "http://BÜCHER.example.:80/",
		"http://A.example.:80/", "http://a.example../", "https://a.example:0443/", "http://faß.de/",
		"http://ｅｘａｍｐｌｅ.com/", "http://b%C3%BCcher.example/",
	} {
		canon, err := frontier.Canonical(raw)
		if err != nil {
			t.Fatalf("Canonical(%q): %v", raw, err)
		}
		want := mustURL(t, canon).Host
		if got := l.Key(mustURL(t, canon)); got != want {
			t.Errorf("Key(%s) = %q, want the canonical host %q", canon, got, want)
		}
		if got := l.Key(mustURL(t, raw)); got != want {
			t.Errorf("Key(%s) = %q, want the canonical host %q", raw, got, want)
		}
	}
}

// fakeResolver answers from a table of addresses per name. With rotate set
// it answers round-robin, as DNS load balancing does: each lookup of a
// name starts its list one address further on; with single set as well, it
// answers that one address only, as load balancers that hand out one
// address per query do.
type fakeResolver struct {
	mu     sync.Mutex
	addrs  map[string][]string
	rotate bool
	single bool
	calls  map[string]int
}

func (r *fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	n := r.calls[host]
	r.calls[host]++
	ips, ok := r.addrs[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, len(ips))
	for i := range ips {
		j := i
		if r.rotate {
			j = (i + n) % len(ips)
		}
		out[i] = net.IPAddr{IP: net.ParseIP(ips[j])}
	}
	if r.single {
		out = out[:1]
	}
	return out, nil
}

func (r *fakeResolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

func (r *fakeResolver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		n += c
	}
	return n
}

func TestIPKeys(t *testing.T) {
	res := &fakeResolver{addrs: map[string][]string{
		"a.example": {"192.0.2.1"},
		"b.example": {"192.0.2.1"},
		"c.example": {"2001:db8::1"},
		// Dual-stack: the resolver prefers IPv6, the key is the IPv4
		// address the IPv4-only name d.example shares.
		"dual.example": {"2001:db8::7", "192.0.2.7"},
		"d.example":    {"192.0.2.7"},
	}}
	l := newKeys(t, ratelimit.KeyIP, res)
	if l.Mode() != ratelimit.KeyIP {
		t.Fatalf("Mode = %v", l.Mode())
	}
	key := func(s string) string { return l.Key(mustURL(t, s)) }
	if a, b := key("http://a.example/"), key("https://B.example.:8443/"); a != "192.0.2.1" || b != a {
		t.Fatalf("keys %q, %q; want both 192.0.2.1", a, b)
	}
	if c := key("http://c.example/"); c != "2001:db8::1" {
		t.Fatalf("key %q", c)
	}
	if d, e := key("http://dual.example/"), key("http://d.example/"); d != "192.0.2.7" || e != d {
		t.Fatalf("dual-stack keys %q, %q; want both 192.0.2.7", d, e)
	}
	key("http://a.example/x")
	key("http://A.EXAMPLE.:80/y")
	if n := res.lookups("a.example"); n != 1 {
		t.Fatalf("a.example looked up %d times, want 1", n)
	}
	before := res.total()
	for _, lit := range []struct{ url, key string }{
		{"http://192.0.2.9/", "192.0.2.9"},
		{"http://[2001:DB8::9]:8080/", "2001:db8::9"},
		{"http://[::ffff:192.0.2.9]/", "192.0.2.9"},
	} {
		if k := key(lit.url); k != lit.key {
			t.Errorf("IP literal %s: key %q, want %q", lit.url, k, lit.key)
		}
	}
	if res.total() != before {
		t.Errorf("IP literals were looked up")
	}
	// A host that does not resolve is keyed by name, and the failure is
	// remembered so that its links do not cost a lookup each.
	for range 3 {
		if k := key("http://Nowhere.example./"); k != "nowhere.example" {
			t.Fatalf("unresolvable host keyed %q", k)
		}
	}
	if n := res.lookups("nowhere.example"); n != 1 {
		t.Fatalf("nowhere.example looked up %d times, want 1", n)
	}
	if k := key("http://a*b/"); k != "" {
		t.Errorf("invalid host keyed %q, want none", k)
	}
}

// TestIPKeyRoundRobin is the bug KeyIP had: keys were taken when a URL
// was queued and taken again, re-resolved after a TTL, when it was
// fetched, so a host answering round-robin got a key per address and, with
// one request per host, several at once. Every lookup here answers in a
// new order, or with a different single address, and the key must not
// move, however many times it is asked.
func TestIPKeyRoundRobin(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("single=%v", single), func(t *testing.T) {
			res := &fakeResolver{rotate: true, single: single, addrs: map[string][]string{
				"rr.example": {"198.51.100.3", "198.51.100.1", "203.0.113.5", "198.51.100.2"},
			}}
			l := newKeys(t, ratelimit.KeyIP, res)
			first := l.Key(mustURL(t, "http://rr.example/"))
			want := "198.51.100.1" // the lowest of the answer
			if single {
				want = "198.51.100.3" // the one address of the first answer
			}
			if first != want {
				t.Fatalf("key %q, want %q", first, want)
			}
			for i := range 20 {
				k := l.Key(mustURL(t, fmt.Sprintf("http://RR.example.:80/%d", i)))
				if k != first {
					t.Fatalf("request %d: key %q, want %q as at first", i, k, first)
				}
			}
			if n := res.lookups("rr.example"); n != 1 {
				t.Errorf("rr.example looked up %d times, want 1", n)
			}
		})
	}
}

// TestIPKeyConcurrentFirstLookups: a name looked up by many goroutines at
// once, answered differently each time, still gets one key.
func TestIPKeyConcurrentFirstLookups(t *testing.T) {
	res := &fakeResolver{rotate: true, single: true, addrs: map[string][]string{
		"rr.example": {"198.51.100.3", "198.51.100.1", "198.51.100.2"},
	}}
	l := newKeys(t, ratelimit.KeyIP, res)
	keys := make([]string, 16)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i] = l.Key(&url.URL{Scheme: "http", Host: "rr.example", Path: "/"}) })
	}
	wg.Wait()
	for i, k := range keys {
		if k != keys[0] {
			t.Fatalf("goroutine %d got key %q, goroutine 0 %q", i, k, keys[0])
		}
	}
	if k := l.Key(mustURL(t, "http://rr.example/")); k != keys[0] {
		t.Fatalf("afterwards key %q, want %q", k, keys[0])
	}
}

func TestNewKeysRejectsBadConfig(t *testing.T) {
	if _, err := ratelimit.NewKeys(ratelimit.KeyMode(9), nil, 0, nil, nil); !errors.Is(err, ratelimit.ErrInvalidConfig) {
		t.Errorf("unknown mode: err = %v, want ErrInvalidConfig", err)
	}
	if _, err := ratelimit.NewKeys(ratelimit.KeyIP, nil, -time.Second, nil, nil); !errors.Is(err, ratelimit.ErrInvalidConfig) {
		t.Errorf("negative timeout: err = %v, want ErrInvalidConfig", err)
	}
	for m, want := range map[ratelimit.KeyMode]string{ratelimit.KeyHost: "host", ratelimit.KeyDomain: "domain", ratelimit.KeyIP: "ip", 9: "KeyMode(9)"} {
		if got := m.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", m, got, want)
		}
	}
}
