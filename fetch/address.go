package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrForbiddenAddress is wrapped by the errors of requests refused because
// of Fetcher.Addresses; errors.As with an *AddressError tells which address
// and class.
var ErrForbiddenAddress = errors.New("fetch: address not allowed")

// AddressClass is the kind of network an IP address belongs to: the public
// internet or one of the places a link on a web page must not be able to
// send a crawler (cloud metadata services, the crawler's own machine, the
// network it runs in).
type AddressClass uint8

// The address classes. IPv4-mapped IPv6 addresses (::ffff:10.0.0.1) and
// NAT64 ones (64:ff9b::a9fe:a9fe) are classified by the IPv4 address they
// carry.
const (
	// ClassPublic: globally routable unicast.
	ClassPublic AddressClass = iota
	// ClassLoopback: 127.0.0.0/8 and ::1, and the names localhost and
	// *.localhost.
	ClassLoopback
	// ClassPrivate: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, the shared
	// address space 100.64.0.0/10 (carrier-grade NAT, and some clouds'
	// metadata services), unique local fc00::/7 and site-local fec0::/10.
	ClassPrivate
	// ClassLinkLocal: 169.254.0.0/16 (where most clouds serve instance
	// metadata and credentials) and fe80::/10.
	ClassLinkLocal
	// ClassUnspecified: 0.0.0.0/8 and ::. Connecting to 0.0.0.0 reaches
	// the local host on many systems.
	ClassUnspecified
	// ClassMulticast: 224.0.0.0/4 and ff00::/8.
	ClassMulticast
	// ClassReserved: other special-purpose ranges that are not on the
	// public internet: documentation, benchmarking (198.18.0.0/15, which
	// some proxies use for fake addresses), 192.0.0.0/24, 240.0.0.0/4 and
	// the broadcast address, 2001:db8::/32, the discard prefix 100::/64.
	ClassReserved

	numClasses
)

var classNames = [numClasses]string{"public", "loopback", "private", "link-local", "unspecified", "multicast", "reserved"}

// String returns the class name: "public", "loopback", "private",
// "link-local", "unspecified", "multicast" or "reserved".
func (c AddressClass) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("AddressClass(%d)", uint8(c))
}

var (
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	siteLocal   = netip.MustParsePrefix("fec0::/10")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	reserved    = []netip.Prefix{
		netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("240.0.0.0/4"),
		netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("100::/64"),
	}
)

// ClassOf returns the class of a. An invalid Addr is ClassUnspecified.
func ClassOf(a netip.Addr) AddressClass {
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case !a.IsValid() || a.IsUnspecified() || thisNetwork.Contains(a):
		return ClassUnspecified
	case a.IsLoopback():
		return ClassLoopback
	case a.IsPrivate() || sharedSpace.Contains(a) || siteLocal.Contains(a):
		return ClassPrivate
	case a.IsLinkLocalUnicast():
		return ClassLinkLocal
	case a.IsMulticast():
		return ClassMulticast
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return ClassReserved
		}
	}
	return ClassPublic
}

// isLocalhostName reports whether host is a name RFC 6761 reserves for
// the loopback interface, which is refused without a lookup.
func isLocalhostName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// AddressPolicy says which addresses a Fetcher may connect to: public ones
// always, the others if their class is allowed. The zero value allows
// public addresses only.
type AddressPolicy struct {
	// Allow lists the classes besides ClassPublic that may be connected
	// to, typically those of the crawl's seeds. ClassUnspecified cannot be
	// allowed this way: 0.0.0.0 reaches the local host on many systems,
	// and names blocked by DNS filters resolve to it.
	Allow []AddressClass
	// AllowAll allows every address, for crawls of a private network.
	AllowAll bool
}

// Allows reports whether addresses of class c may be connected to. A nil
// policy allows everything.
func (p *AddressPolicy) Allows(c AddressClass) bool {
	if p == nil || p.AllowAll || c == ClassPublic {
		return true
	}
	if c == ClassUnspecified {
		return false
	}
	for _, a := range p.Allow {
		if a == c {
			return true
		}
	}
	return false
}

// Check returns nil if a may be connected to, or an *AddressError that
// wraps ErrForbiddenAddress.
func (p *AddressPolicy) Check(a netip.Addr) error {
	return p.checkAddr("", a)
}

func (p *AddressPolicy) checkAddr(host string, a netip.Addr) error {
	if c := ClassOf(a); !p.Allows(c) {
		return &AddressError{Host: host, Addr: a, Class: c}
	}
	return nil
}

// checkHost refuses a URL host that is an IP literal or a localhost name
// of a refused class; other names are left to the dialer.
func (p *AddressPolicy) checkHost(host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		return p.checkAddr("", a)
	}
	if isLocalhostName(host) && !p.Allows(ClassLoopback) {
		return &AddressError{Host: host, Class: ClassLoopback}
	}
	return nil
}

// AddressError is the error of a connection refused by an AddressPolicy.
// It wraps ErrForbiddenAddress.
type AddressError struct {
	// Host is the name that was looked up, or empty if the URL held the
	// address itself.
	Host string
	// Addr is the refused address; it is the zero Addr for a localhost
	// name refused without a lookup.
	Addr netip.Addr
	// Class is Addr's class.
	Class AddressClass
}

func (e *AddressError) Error() string {
	switch {
	case !e.Addr.IsValid():
		return fmt.Sprintf("%v: %s is %s", ErrForbiddenAddress, e.Host, e.Class)
	case e.Host != "":
		return fmt.Sprintf("%v: %s resolves to %s (%s)", ErrForbiddenAddress, e.Host, e.Addr, e.Class)
	}
	return fmt.Sprintf("%v: %s (%s)", ErrForbiddenAddress, e.Addr, e.Class)
}

// Unwrap returns ErrForbiddenAddress.
func (e *AddressError) Unwrap() error { return ErrForbiddenAddress }

// Resolver looks up the IP addresses of a host name; *net.Resolver is one.
// network is "ip", "ip4" or "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

func (f *Fetcher) resolver() Resolver {
	if f.Resolver != nil {
		return f.Resolver
	}
	return net.DefaultResolver
}

// HostClasses returns the classes of the addresses host has: of the
// address itself for an IP literal, ClassLoopback for localhost names, and
// otherwise of every address Resolver returns, each class once. A crawler
// calls it for its seeds and allows their classes, so that a crawl started
// on an intranet or on the loopback interface may stay there. Names are
// looked up whatever Transport or Client the Fetcher uses.
func (f *Fetcher) HostClasses(ctx context.Context, host string) ([]AddressClass, error) {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(host); err == nil {
		return []AddressClass{ClassOf(a)}, nil
	}
	if isLocalhostName(host) {
		return []AddressClass{ClassLoopback}, nil
	}
	addrs, err := f.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("fetch: looking up %s: %w", host, err)
	}
	var out []AddressClass
	for _, a := range addrs {
		if c := ClassOf(a); !containsClass(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func containsClass(cs []AddressClass, c AddressClass) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// dialFunc is the shape of net.Dialer.DialContext.
type dialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// fallbackDelay is how long the first address family gets before the
// other one is tried alongside it, as net.Dialer does (RFC 8305).
const fallbackDelay = 300 * time.Millisecond

// guardedDialer resolves names itself and connects only to addresses the
// policy allows. The address checked is the address dialled, so a DNS
// answer that changes between a check and the connection (rebinding) has
// nothing to exploit; the dialer's Control checks each connection once more
// just before connect, so no path reaches a refused address with a packet.
type guardedDialer struct {
	policy   *AddressPolicy
	resolver Resolver
	timeout  time.Duration
	dial     dialFunc // connects to an IP:port the policy allowed
	direct   dialFunc // connects to a proxy, which the operator chose
	proxies  sync.Map // "host:port" of proxies in use → struct{}
}

func newGuardedDialer(f *Fetcher, timeout time.Duration) *guardedDialer {
	policy := f.Addresses
	guarded := &net.Dialer{
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			return checkDialled(policy, address)
		},
	}
	direct := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	d := &guardedDialer{
		policy:   policy,
		resolver: f.resolver(),
		timeout:  timeout,
		dial:     guarded.DialContext,
		direct:   direct.DialContext,
	}
	if f.wrapDial != nil {
		d.dial, d.direct = f.wrapDial(d.dial), f.wrapDial(d.direct)
	}
	return d
}

// checkDialled is the last check, on the "ip:port" a socket is about to
// connect to.
func checkDialled(p *AddressPolicy, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check %q: %w", ErrForbiddenAddress, address, err)
	}
	return p.Check(ap.Addr())
}

// proxy wraps a transport's Proxy function to remember the proxies it
// chooses: connections to them are the operator's choice and are not
// checked. The target's name is resolved by the proxy, out of our sight;
// targets given as IP literals are still refused before the request.
func (d *guardedDialer) proxy(next func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(r *http.Request) (*url.URL, error) {
		u, err := next(r)
		if u != nil && err == nil {
			port := u.Port()
			if port == "" {
				port = map[string]string{"https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
				if port == "" {
					port = "80"
				}
			}
			d.proxies.Store(net.JoinHostPort(strings.ToLower(u.Hostname()), port), struct{}{})
		}
		return u, err
	}
}

// DialContext is the transport's dial function.
func (d *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if _, ok := d.proxies.Load(strings.ToLower(host) + ":" + port); ok {
		return d.direct(ctx, network, address)
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
		host = ""
	} else {
		ipNet := "ip"
		switch network {
		case "tcp4":
			ipNet = "ip4"
		case "tcp6":
			ipNet = "ip6"
		}
		if ips, err = d.resolver.LookupNetIP(ctx, ipNet, host); err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
	}
	var allowed []netip.Addr
	var refused error
	for _, ip := range ips {
		if err := d.policy.checkAddr(host, ip); err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		allowed = append(allowed, ip.Unmap())
	}
	if len(allowed) == 0 {
		if refused == nil {
			refused = &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: refused}
	}
	// Like net.Dialer: the first address's family first, the other family
	// raced against it after fallbackDelay.
	var primaries, fallbacks []string
	for _, ip := range allowed {
		a := net.JoinHostPort(ip.String(), port)
		if ip.Is4() == allowed[0].Is4() {
			primaries = append(primaries, a)
		} else {
			fallbacks = append(fallbacks, a)
		}
	}
	if len(fallbacks) == 0 {
		return d.dialSerial(ctx, network, primaries)
	}
	return d.dialParallel(ctx, network, primaries, fallbacks)
}

// dialSerial tries addrs in order, giving each a share of the time left
// (at least 2 s, or all of it), as net.Dialer does.
func (d *guardedDialer) dialSerial(ctx context.Context, network string, addrs []string) (net.Conn, error) {
	var firstErr error
	for i, a := range addrs {
		actx := ctx
		if deadline, ok := ctx.Deadline(); ok && i < len(addrs)-1 {
			share := time.Until(deadline) / time.Duration(len(addrs)-i)
			share = max(share, 2*time.Second)
			var cancel context.CancelFunc
			actx, cancel = context.WithTimeout(ctx, share)
			defer cancel()
		}
		c, err := d.dial(actx, network, a)
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// dialParallel races the two address families, the fallbacks starting
// after fallbackDelay or as soon as the primaries fail.
func (d *guardedDialer) dialParallel(ctx context.Context, network string, primaries, fallbacks []string) (net.Conn, error) {
	type result struct {
		c       net.Conn
		err     error
		primary bool
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, 2)
	start := func(addrs []string, primary bool) {
		go func() {
			c, err := d.dialSerial(ctx, network, addrs)
			results <- result{c, err, primary}
		}()
	}
	start(primaries, true)
	timer := time.NewTimer(fallbackDelay)
	defer timer.Stop()
	pending, fallbackStarted := 1, false
	var primaryErr, fallbackErr error
	for {
		select {
		case <-timer.C:
			if !fallbackStarted {
				start(fallbacks, false)
				fallbackStarted, pending = true, pending+1
			}
		case r := <-results:
			pending--
			if r.err == nil {
				if pending > 0 {
					// The loser is cancelled; close it should it
					// connect anyway.
					go func() {
						if r := <-results; r.c != nil {
							r.c.Close()
						}
					}()
				}
				return r.c, nil
			}
			if r.primary {
				primaryErr = r.err
			} else {
				fallbackErr = r.err
			}
			if !fallbackStarted {
				start(fallbacks, false)
				fallbackStarted, pending = true, pending+1
			}
			if pending == 0 {
				if primaryErr != nil {
					return nil, primaryErr
				}
				return nil, fallbackErr
			}
		}
	}
}
