package ratelimit

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
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
	// KeyHost keys by host and port, as url.URL.Host spells them once
	// canonical: host name lower-cased and in punycode, the scheme's
	// default port dropped, IPv6 literals in brackets. It is the
	// frontier's default key, so the two agree even if only one is told.
	// http://a and https://a share one budget; http://a:8080 has its own.
	KeyHost KeyMode = iota
	// KeyDomain keys by registrable domain (eTLD+1 from the public suffix
	// list): a.example.com and b.example.com share one budget, while
	// a.github.io and b.github.io do not. IP addresses and hosts that are
	// public suffixes themselves fall back to the host name.
	KeyDomain
	// KeyIP keys by the host's resolved IP address, so virtual hosts on one
	// server share one budget. Resolutions, and failures, are cached for
	// ResolveTTL; a host that cannot be resolved is keyed by its name.
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
	timeout  time.Duration
	clock    Clock

	mu  sync.Mutex
	ips map[string]*list.Element // of *resolved
	lru list.List
}

type resolved struct {
	host, ip string
	expires  time.Time
}

func newKeyer(mode KeyMode, r Resolver, ttl, timeout time.Duration, clock Clock) (*keyer, error) {
	if mode > KeyIP {
		return nil, fmt.Errorf("%w: unknown %v", ErrInvalidConfig, mode)
	}
	if r == nil {
		r = net.DefaultResolver
	}
	return &keyer{mode: mode, resolver: r, ttl: ttl, timeout: timeout, clock: clock}, nil
}

// Key returns the politeness key of u under the configured KeyMode, or ""
// for a URL without a host. Its signature is the frontier's and the robots
// gate's key function, so a crawler passes lim.Key to both and every part
// paces under one key. Only KeyIP mode can block, on a cache miss, for at
// most ResolveTimeout.
func (l *HostLimiter) Key(u *url.URL) string {
	host := hostKey(u.Hostname())
	if host == "" {
		return ""
	}
	switch l.keys.mode {
	case KeyDomain:
		if net.ParseIP(host) != nil {
			return host
		}
		if d, err := publicsuffix.EffectiveTLDPlusOne(strings.TrimSuffix(host, ".")); err == nil {
			return d
		}
		return host
	case KeyIP:
		return l.keys.resolve(host, l.log)
	}
	port := u.Port()
	if port != "" {
		p, err := strconv.ParseUint(port, 10, 16)
		switch {
		case err != nil || p == 0:
			port = "" // not a port; the fetch will fail on it anyway
		case p == 80 && strings.EqualFold(u.Scheme, "http"), p == 443 && strings.EqualFold(u.Scheme, "https"):
			port = ""
		default:
			port = strconv.FormatUint(p, 10)
		}
	}
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	if port == "" {
		return host
	}
	return host + ":" + port
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

// resolve returns host's address, from the cache if it is fresh. A failed
// lookup is cached too, as the host name itself, so that a dead host does
// not cost a lookup per link.
func (k *keyer) resolve(host string, log *slog.Logger) string {
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	now := k.clock.Now()
	k.mu.Lock()
	if e, ok := k.ips[host]; ok {
		r := e.Value.(*resolved)
		if now.Before(r.expires) {
			k.lru.MoveToFront(e)
			k.mu.Unlock()
			return r.ip
		}
	}
	k.mu.Unlock()

	// Resolve without the lock: a slow DNS server must not stall every
	// other key. Concurrent misses for one host are merged by net.Resolver.
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	addrs, err := k.resolver.LookupIPAddr(ctx, host)
	cancel()
	key := host
	switch {
	case err != nil:
		log.Debug("ratelimit: resolving failed, keying by name", "host", host, "err", err)
	case len(addrs) == 0:
		log.Debug("ratelimit: no addresses, keying by name", "host", host)
	default:
		// The resolver orders addresses by preference (RFC 6724); the
		// first is the one a dialer tries first.
		key = addrs[0].IP.String()
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ips == nil {
		k.ips = make(map[string]*list.Element)
	}
	if e, ok := k.ips[host]; ok {
		r := e.Value.(*resolved)
		r.ip, r.expires = key, now.Add(k.ttl)
		k.lru.MoveToFront(e)
		return key
	}
	k.ips[host] = k.lru.PushFront(&resolved{host: host, ip: key, expires: now.Add(k.ttl)})
	for len(k.ips) > resolveCacheSize {
		e := k.lru.Back()
		k.lru.Remove(e)
		delete(k.ips, e.Value.(*resolved).host)
	}
	return key
}
