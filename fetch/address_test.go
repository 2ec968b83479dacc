package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/heedcrawl/heed/fetch"
)

func TestClassOf(t *testing.T) {
	for addr, want := range map[string]fetch.AddressClass{
		"93.184.216.34":          fetch.ClassPublic,
		"172.32.0.1":             fetch.ClassPublic,
		"100.128.0.1":            fetch.ClassPublic,
		"2606:4700::1111":        fetch.ClassPublic,
		"127.0.0.1":              fetch.ClassLoopback,
		"127.9.8.7":              fetch.ClassLoopback,
		"::1":                    fetch.ClassLoopback,
		"::ffff:127.0.0.1":       fetch.ClassLoopback,
		"10.0.0.1":               fetch.ClassPrivate,
		"172.16.5.4":             fetch.ClassPrivate,
		"192.168.1.1":            fetch.ClassPrivate,
		"100.64.0.1":             fetch.ClassPrivate,
		"100.100.100.200":        fetch.ClassPrivate, // a cloud metadata service in the shared space
		"fd12:3456::1":           fetch.ClassPrivate,
		"fec0::1":                fetch.ClassPrivate,
		"::ffff:10.0.0.1":        fetch.ClassPrivate,
		"169.254.169.254":        fetch.ClassLinkLocal,
		"::ffff:169.254.169.254": fetch.ClassLinkLocal,
		"64:ff9b::a9fe:a9fe":     fetch.ClassLinkLocal, // NAT64 of 169.254.169.254
		"fe80::1":                fetch.ClassLinkLocal,
		"fe80::1%eth0":           fetch.ClassLinkLocal,
		"0.0.0.0":                fetch.ClassUnspecified,
		"0.1.2.3":                fetch.ClassUnspecified,
		"::":                     fetch.ClassUnspecified,
		"::ffff:0.0.0.0":         fetch.ClassUnspecified,
		"224.0.0.1":              fetch.ClassMulticast,
		"ff02::1":                fetch.ClassMulticast,
		"255.255.255.255":        fetch.ClassReserved,
		"192.0.2.7":              fetch.ClassReserved,
		"198.18.0.1":             fetch.ClassReserved,
		"2001:db8::1":            fetch.ClassReserved,
	} {
		if got := fetch.ClassOf(netip.MustParseAddr(addr)); got != want {
			t.Errorf("ClassOf(%s) = %v, want %v", addr, got, want)
		}
	}
	if got := fetch.ClassOf(netip.Addr{}); got != fetch.ClassUnspecified {
		t.Errorf("ClassOf(invalid) = %v", got)
	}
}

func TestAddressPolicy(t *testing.T) {
	var zero fetch.AddressPolicy
	for c := fetch.ClassPublic; c <= fetch.ClassReserved; c++ {
		if got := zero.Allows(c); got != (c == fetch.ClassPublic) {
			t.Errorf("zero policy allows %v: %v", c, got)
		}
	}
	p := fetch.AddressPolicy{Allow: []fetch.AddressClass{fetch.ClassLoopback, fetch.ClassUnspecified}}
	if !p.Allows(fetch.ClassLoopback) || p.Allows(fetch.ClassPrivate) {
		t.Errorf("Allow loopback: loopback %v, private %v", p.Allows(fetch.ClassLoopback), p.Allows(fetch.ClassPrivate))
	}
	if p.Allows(fetch.ClassUnspecified) {
		t.Error("ClassUnspecified allowed by listing it")
	}
	all := fetch.AddressPolicy{AllowAll: true}
	if !all.Allows(fetch.ClassUnspecified) || !all.Allows(fetch.ClassLinkLocal) {
		t.Error("AllowAll refuses something")
	}
	var none *fetch.AddressPolicy
	if err := none.Check(netip.MustParseAddr("169.254.169.254")); err != nil {
		t.Errorf("nil policy: %v", err)
	}
	err := zero.Check(netip.MustParseAddr("169.254.169.254"))
	var ae *fetch.AddressError
	if !errors.Is(err, fetch.ErrForbiddenAddress) || !errors.As(err, &ae) || ae.Class != fetch.ClassLinkLocal {
		t.Errorf("Check(169.254.169.254) = %v", err)
	}
	if got := fetch.ClassLinkLocal.String(); got != "link-local" {
		t.Errorf("String() = %q", got)
	}
}

// fakeResolver answers lookups from a table and never touches the network.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	addrs, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		if network == "ip" || (network == "ip4") == a.Unmap().Is4() {
			out = append(out, a)
		}
	}
	return out, nil
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// loopbackOnly makes f's default transport fail the test, without
// connecting, if anything but a loopback address reaches the real dial,
// and records what does.
func loopbackOnly(t *testing.T, f *fetch.Fetcher) *[]string {
	t.Helper()
	var mu sync.Mutex
	dialled := &[]string{}
	fetch.SetDialWrapper(f, func(next fetch.DialFunc) fetch.DialFunc {
		return func(ctx context.Context, network, address string) (net.Conn, error) {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !ap.Addr().Unmap().IsLoopback() {
				t.Errorf("dial of %s %q reached the network", network, address)
				return nil, errors.New("test safety net: not a loopback address")
			}
			mu.Lock()
			*dialled = append(*dialled, address)
			mu.Unlock()
			return next(ctx, network, address)
		}
	})
	return dialled
}

// unusedTransport fails the test if a request gets as far as a transport.
type unusedTransport struct{ t *testing.T }

func (u unusedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	u.t.Errorf("request for %s reached the transport", r.URL)
	return nil, errors.New("unused transport")
}

func TestForbiddenAddressLiteralRefusedBeforeRequest(t *testing.T) {
	f := &fetch.Fetcher{
		Transport: unusedTransport{t},
		Addresses: &fetch.AddressPolicy{Allow: []fetch.AddressClass{fetch.ClassPrivate}},
	}
	for u, class := range map[string]fetch.AddressClass{
		"http://169.254.169.254/latest/meta-data/": fetch.ClassLinkLocal,
		"http://[fe80::1%25eth0]/":                 fetch.ClassLinkLocal,
		"http://[::ffff:169.254.169.254]/":         fetch.ClassLinkLocal,
		"http://127.0.0.1:6379/":                   fetch.ClassLoopback,
		"http://[::1]/":                            fetch.ClassLoopback,
		"http://localhost:8080/":                   fetch.ClassLoopback,
		"http://admin.LOCALHOST./":                 fetch.ClassLoopback,
		"http://0.0.0.0:8080/":                     fetch.ClassUnspecified,
		"https://[::]/":                            fetch.ClassUnspecified,
	} {
		_, err := f.Fetch(context.Background(), fetch.Request{URL: u})
		var ae *fetch.AddressError
		if !errors.Is(err, fetch.ErrForbiddenAddress) || !errors.As(err, &ae) || ae.Class != class {
			t.Errorf("Fetch(%s) = %v, want a refused %v address", u, err, class)
		}
	}
	// Private is allowed here: the request goes on to the transport.
	strict := &fetch.Fetcher{Transport: unusedTransport{t}, Addresses: &fetch.AddressPolicy{}}
	for _, u := range []string{"http://10.0.0.1/", "http://192.168.1.1:8080/admin", "http://[fd00::1]/"} {
		if _, err := strict.Fetch(context.Background(), fetch.Request{URL: u}); !errors.Is(err, fetch.ErrForbiddenAddress) {
			t.Errorf("Fetch(%s) with the zero policy = %v", u, err)
		}
	}
}

func TestDialerRefusesNamesResolvingToForbiddenAddresses(t *testing.T) {
	f := &fetch.Fetcher{
		Addresses: &fetch.AddressPolicy{Allow: []fetch.AddressClass{fetch.ClassLoopback}},
		Resolver: fakeResolver{
			"metadata.test": addrs("169.254.169.254"),
			"intranet.test": addrs("10.0.0.1"),
			"router.test":   addrs("192.168.1.1", "fe80::1"),
			"sinkhole.test": addrs("0.0.0.0"),
		},
	}
	loopbackOnly(t, f)
	t.Cleanup(f.CloseIdleConnections)
	for host, want := range map[string]string{
		"metadata.test": "metadata.test resolves to 169.254.169.254 (link-local)",
		"intranet.test": "intranet.test resolves to 10.0.0.1 (private)",
		"router.test":   "router.test resolves to 192.168.1.1 (private)",
		"sinkhole.test": "sinkhole.test resolves to 0.0.0.0 (unspecified)",
	} {
		_, err := f.Fetch(context.Background(), fetch.Request{URL: "http://" + host + "/"})
		var ae *fetch.AddressError
		if !errors.Is(err, fetch.ErrForbiddenAddress) || !errors.As(err, &ae) {
			t.Errorf("%s: %v, want ErrForbiddenAddress", host, err)
			continue
		}
		if got := ae.Error(); got != "fetch: address not allowed: "+want {
			t.Errorf("%s: error %q, want it to say %q", host, got, want)
		}
	}
}

func TestDialerLoopbackByName(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "local")
	}))
	srvAddr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	u := fmt.Sprintf("http://rebind.test:%d/", srvAddr.Port())
	resolver := fakeResolver{"rebind.test": []netip.Addr{srvAddr.Addr()}}

	refusing := &fetch.Fetcher{Addresses: &fetch.AddressPolicy{}, Resolver: resolver}
	dialled := loopbackOnly(t, refusing)
	t.Cleanup(refusing.CloseIdleConnections)
	_, err := refusing.Fetch(context.Background(), fetch.Request{URL: u})
	var ae *fetch.AddressError
	if !errors.As(err, &ae) || ae.Class != fetch.ClassLoopback || ae.Addr != srvAddr.Addr() || ae.Host != "rebind.test" {
		t.Errorf("loopback not allowed: %v", err)
	}
	if len(*dialled) != 0 {
		t.Errorf("dialled %v although loopback is refused", *dialled)
	}

	allowing := &fetch.Fetcher{Addresses: &fetch.AddressPolicy{Allow: []fetch.AddressClass{fetch.ClassLoopback}}, Resolver: resolver}
	dialled = loopbackOnly(t, allowing)
	t.Cleanup(allowing.CloseIdleConnections)
	p := mustFetch(t, allowing, u)
	if string(p.Body) != "local" || !slices.Equal(*dialled, []string{srvAddr.String()}) {
		t.Errorf("loopback allowed: body %q, dialled %v", p.Body, *dialled)
	}
}

func TestDialerDialsOnlyAllowedAddresses(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srvAddr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	port := srvAddr.Port()
	other := "::1"
	if srvAddr.Addr().Is6() {
		other = "127.0.0.1"
	}
	f := &fetch.Fetcher{
		Addresses: &fetch.AddressPolicy{Allow: []fetch.AddressClass{fetch.ClassLoopback}},
		Resolver: fakeResolver{
			// Forbidden addresses first: skipped, never dialled.
			"mixed.test": append(addrs("10.0.0.1", "169.254.169.254"), srvAddr.Addr()),
			// The other family first, where nothing listens: the
			// server's family is tried after it fails.
			"dual.test": append(addrs(other), srvAddr.Addr()),
		},
	}
	dialled := loopbackOnly(t, f)
	t.Cleanup(f.CloseIdleConnections)
	for _, host := range []string{"mixed.test", "dual.test"} {
		*dialled = nil
		p := mustFetch(t, f, fmt.Sprintf("http://%s:%d/", host, port))
		if string(p.Body) != "ok" || !slices.Contains(*dialled, srvAddr.String()) {
			t.Errorf("%s: body %q, dialled %v", host, p.Body, *dialled)
		}
	}
}

// rebindingResolver answers with a loopback address once, then with the
// metadata service's: what a DNS rebinding attack does.
type rebindingResolver struct {
	first netip.Addr
	calls atomic.Int32
}

func (r *rebindingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if r.calls.Add(1) == 1 {
		return []netip.Addr{r.first}, nil
	}
	return addrs("169.254.169.254"), nil
}

func TestDialerChecksEachConnection(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srvAddr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	f := &fetch.Fetcher{
		Addresses: &fetch.AddressPolicy{Allow: []fetch.AddressClass{fetch.ClassLoopback}},
		Resolver:  &rebindingResolver{first: srvAddr.Addr()},
	}
	loopbackOnly(t, f)
	u := fmt.Sprintf("http://rebinding.test:%d/", srvAddr.Port())
	mustFetch(t, f, u)
	f.CloseIdleConnections() // the next fetch must connect anew
	if _, err := f.Fetch(context.Background(), fetch.Request{URL: u}); !errors.Is(err, fetch.ErrForbiddenAddress) {
		t.Errorf("after rebinding: %v, want ErrForbiddenAddress", err)
	}
}

func TestRedirectToMetadataServiceRefused(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", http.StatusFound)
	}))
	f := &fetch.Fetcher{Addresses: &fetch.AddressPolicy{Allow: []fetch.AddressClass{fetch.ClassLoopback}}}
	loopbackOnly(t, f)
	t.Cleanup(f.CloseIdleConnections)
	_, err := f.Follow(context.Background(), fetch.Request{URL: srv.URL + "/start"}, nil)
	var ae *fetch.AddressError
	if !errors.As(err, &ae) || ae.Addr != netip.MustParseAddr("169.254.169.254") {
		t.Errorf("Follow = %v, want the metadata address refused", err)
	}
}

func TestDialerControlRefusesBeforeConnect(t *testing.T) {
	var accepted atomic.Int32
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	// The name-level check is bypassed: this is the net.Dialer itself,
	// whose Control must refuse the loopback address the policy forbids.
	dial := fetch.GuardedDial(&fetch.Fetcher{Addresses: &fetch.AddressPolicy{}})
	c, err := dial(context.Background(), "tcp", srv.Listener.Addr().String())
	if c != nil {
		c.Close()
	}
	if !errors.Is(err, fetch.ErrForbiddenAddress) {
		t.Errorf("dial = %v, want ErrForbiddenAddress from Control", err)
	}
	// The server accepts in order and counts each connection before the
	// next accept, so once a later connection of our own is served, a
	// connection Control let through would have been counted too.
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if n := accepted.Load(); n != 1 {
		t.Errorf("server saw %d connections, want only the test's own", n)
	}
}

func TestHostClasses(t *testing.T) {
	f := &fetch.Fetcher{Resolver: fakeResolver{
		"intranet.test": addrs("10.1.2.3", "10.1.2.4", "fd00::1", "93.184.216.34"),
	}}
	for host, want := range map[string][]fetch.AddressClass{
		"intranet.test": {fetch.ClassPrivate, fetch.ClassPublic},
		"127.0.0.1":     {fetch.ClassLoopback},
		"[::1]":         {fetch.ClassLoopback},
		"localhost":     {fetch.ClassLoopback},
		"169.254.1.1":   {fetch.ClassLinkLocal},
	} {
		got, err := f.HostClasses(context.Background(), host)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("HostClasses(%s) = %v, %v; want %v", host, got, err, want)
		}
	}
	if _, err := f.HostClasses(context.Background(), "missing.test"); err == nil {
		t.Error("HostClasses of an unknown name: no error")
	}
}

// TestProxyExemptFromAddressPolicy runs a child test process with
// HTTP_PROXY set (net/http reads it once per process): the proxy is on
// loopback, which the policy refuses, and is still used, while a target
// given as a forbidden IP literal is refused before the request.
func TestProxyExemptFromAddressPolicy(t *testing.T) {
	if os.Getenv("HEED_PROXY_POLICY_CHILD") == "1" {
		f := &fetch.Fetcher{Addresses: &fetch.AddressPolicy{}}
		defer f.CloseIdleConnections()
		p, err := f.Fetch(context.Background(), fetch.Request{URL: "http://through-proxy.invalid/page"})
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Body) != "proxied http://through-proxy.invalid/page" {
			t.Fatalf("body %q", p.Body)
		}
		for _, u := range []string{"http://169.254.169.254/", "http://localhost/"} {
			if _, err := f.Fetch(context.Background(), fetch.Request{URL: u}); !errors.Is(err, fetch.ErrForbiddenAddress) {
				t.Fatalf("%s through the proxy: %v", u, err)
			}
		}
		return
	}
	var requests atomic.Int32
	proxy := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		io.WriteString(w, "proxied "+r.URL.String())
	}))
	cmd := exec.Command(os.Args[0], "-test.run=^TestProxyExemptFromAddressPolicy$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HEED_PROXY_POLICY_CHILD=1", "HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("proxy saw %d requests, want 1", n)
	}
}
