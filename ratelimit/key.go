package ratelimit

import (
	"container/list"
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// KeyMode selects what requests share one politeness budget.
type KeyMode uint8

// Politeness key modes.
const (
	// KeyHost keys by host name, lower-cased and in punycode, without the
	// port: http://a and https://a:8443 share one budget (one server).
	KeyHost KeyMode = iota
	// KeyDomain keys by registrable domain (eTLD+1 from the public suffix
	// list): a.example.com and b.example.com share one budget, while
	// a.github.io and b.github.io do not. IP addresses and hosts that are
	// public suffixes themselves fall back to the host.
	KeyDomain
	// KeyIP keys by the host's resolved IP address, so virtual hosts on one
	// server share one budget. Resolutions are cached for ResolveTTL.
	KeyIP
)

// String returns the mode's name.
func (m KeyMode) String() string {
	switch m {
	case KeyHost:
		return "host"
	case KeyDomain:
		return "domain"
	case KeyIP:
		return "ip"
	}
	return fmt.Sprintf("KeyMode(%d)", uint8(m))
}

// Resolver resolves host names for KeyIP. *net.Resolver satisfies it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// resolveCacheSize bounds the KeyIP cache; least recently used names go
// first, so it holds the hosts being crawled.
const resolveCacheSize = 4096

type keyer struct {
	mode     KeyMode
	resolver Resolver
	ttl      time.Duration
	clock    Clock

	mu  sync.Mutex
	ips map[string]*list.Element // of *resolved
	lru list.List
}

type resolved struct {
	host, ip string
	expires  time.Time
}

func newKeyer(mode KeyMode, r Resolver, ttl time.Duration, clock Clock) (*keyer, error) {
	if mode > KeyIP {
		return nil, fmt.Errorf("%w: unknown %v", ErrInvalidConfig, mode)
	}
	if r == nil {
		r = net.DefaultResolver
	}
	return &keyer{mode: mode, resolver: r, ttl: ttl, clock: clock}, nil
}

// Key returns the politeness key of u under the configured KeyMode. It fails
// with ErrNoHost for a URL without a host and, in KeyIP mode, with the
// resolver's error (wrapped) when the host cannot be resolved; only KeyIP
// mode blocks, and only on a cache miss.
func (l *HostLimiter) Key(ctx context.Context, u *url.URL) (string, error) {
	host := hostKey(u.Hostname())
	if host == "" {
		return "", fmt.Errorf("%w: %q", ErrNoHost, u.Redacted())
	}
	switch l.keys.mode {
	case KeyDomain:
		if net.ParseIP(host) != nil {
			return host, nil
		}
		if d, err := publicsuffix.EffectiveTLDPlusOne(strings.TrimSuffix(host, ".")); err == nil {
			return d, nil
		}
		return host, nil
	case KeyIP:
		return l.keys.resolve(ctx, host)
	}
	return host, nil
}

// hostKey lower-cases host and folds an internationalised name to punycode,
// so that every spelling of one host is one key.
func hostKey(host string) string {
	host = strings.ToLower(host)
	for i := range len(host) {
		if host[i] >= 0x80 {
			if a, err := idna.Lookup.ToASCII(host); err == nil {
				return a
			}
			return host
		}
	}
	return host
}

func (k *keyer) resolve(ctx context.Context, host string) (string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip.String(), nil
	}
	now := k.clock.Now()
	k.mu.Lock()
	if e, ok := k.ips[host]; ok {
		r := e.Value.(*resolved)
		if now.Before(r.expires) {
			k.lru.MoveToFront(e)
			k.mu.Unlock()
			return r.ip, nil
		}
	}
	k.mu.Unlock()

	// Resolve without the lock: a slow DNS server must not stall every
	// other key. Two concurrent misses for one host resolve twice, which is
	// harmless.
	addrs, err := k.resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return "", fmt.Errorf("ratelimit: resolve %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("ratelimit: resolve %q: no addresses", host)
	}
	// The resolver orders addresses by preference (RFC 6724); the first is
	// the one a dialer tries first.
	ip := addrs[0].IP.String()

	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ips == nil {
		k.ips = make(map[string]*list.Element)
	}
	if e, ok := k.ips[host]; ok {
		r := e.Value.(*resolved)
		r.ip, r.expires = ip, now.Add(k.ttl)
		k.lru.MoveToFront(e)
		return ip, nil
	}
	k.ips[host] = k.lru.PushFront(&resolved{host: host, ip: ip, expires: now.Add(k.ttl)})
	for len(k.ips) > resolveCacheSize {
		e := k.lru.Back()
		k.lru.Remove(e)
		delete(k.ips, e.Value.(*resolved).host)
	}
	return ip, nil
}
