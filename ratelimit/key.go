package ratelimit

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/heedcrawl/heed/internal/hostid"
)

// KeyMode selects what requests share one politeness budget.
type KeyMode uint8

// Politeness key modes.
const (
	// KeyHost keys by host and port exactly as the frontier's canonical
	// URLs spell them (both take it from one function): host name
	// lower-cased and in punycode, trailing dots dropped, the scheme's
	// default port dropped, IPv6 literals in brackets. So the frontier, the
	// robots gate and the pacing agree even if only one is told, and
	// "H.example:80", "h.example." and "h.example" are one budget.
	// http://a and https://a share one budget; http://a:8080 has its own.
	KeyHost KeyMode = iota
	// KeyDomain keys by registrable domain (eTLD+1 from the public suffix
	// list), the same one the frontier's ScopeSeedDomains uses:
	// a.example.com and b.example.com share one budget, while a.github.io
	// and b.github.io do not. IP literals (IPv6 in brackets) and hosts that
	// are public suffixes themselves fall back to the host name.
	KeyDomain
	// KeyIP keys by the host's IP address, so virtual hosts on one server
	// share one budget. A host name is resolved once, the first time Key
	// sees it, and that answer is its key for the life of the Keys: a
	// name whose key changed under a crawl would have its queued URLs under
	// one key and new ones under another, two budgets for one host. Of
	// several addresses the lowest is taken (IPv4 before IPv6), so that
	// names answered in rotating order (round-robin DNS) or served by one
	// dual-stack machine agree. A name that does not resolve is keyed by
	// itself, for good as well. IP literals are their own key, without
	// brackets.
	//
	// Memory: up to 65,536 names are remembered. Beyond that the least
	// recently keyed name whose key is no longer in use (see NewKeys'
	// live) is forgotten, and resolved afresh if it comes back; a name
	// whose key is in use is not, unless names outnumber the bound twice
	// over.
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

// evictScan bounds the names examined per call when KeyIP forgets some,
// keeping it O(1).
const evictScan = 8

// pinnedNames is how many host names KeyIP remembers before it forgets
// idle ones. A name costs about 200 bytes, so the bound is about 13 MB,
// and it is far more hosts than a crawl keeps busy at once.
const pinnedNames = 1 << 16

type keyer struct {
	mode     KeyMode
	resolver Resolver
	timeout  time.Duration

	mu    sync.Mutex
	names map[string]*list.Element // of *pinned
	lru   list.List                // front is the most recently keyed name
	max   int                      // pinnedNames; tests lower it
}

// pinned is the key a host name was given the first time it was seen.
type pinned struct {
	name, key string
}

// newKeyer returns the keyer for mode. A name keeps its first key (see
// KeyIP).
func newKeyer(mode KeyMode, r Resolver, timeout time.Duration) (*keyer, error) {
	if mode > KeyIP {
		return nil, fmt.Errorf("%w: unknown %v", ErrInvalidConfig, mode)
	}
	if r == nil {
		r = net.DefaultResolver
	}
	return &keyer{mode: mode, resolver: r, timeout: timeout, max: pinnedNames}, nil
}

// Keys computes politeness keys under a KeyMode: what requests share one
// budget. A crawler passes its Key method to the frontier and to the robots
// gate, so every part paces under one key. It is safe for concurrent use.
type Keys struct {
	k    *keyer
	live func(key string) bool
	log  *slog.Logger
}

// NewKeys returns the Keys of mode. r resolves names for KeyIP (nil means
// net.DefaultResolver), each lookup bounded by timeout (zero means
// DefaultResolveTimeout). live, if not nil, reports whether a key is still
// in use, so that KeyIP does not forget the name behind it (see KeyIP);
// nil counts every key as in use. It fails, with ErrInvalidConfig, for an
// unknown mode or a negative timeout.
func NewKeys(mode KeyMode, r Resolver, timeout time.Duration, live func(key string) bool, log *slog.Logger) (*Keys, error) {
	if timeout < 0 {
		return nil, fmt.Errorf("%w: negative resolve timeout %v", ErrInvalidConfig, timeout)
	}
	k, err := newKeyer(mode, r, orDefault(timeout, DefaultResolveTimeout))
	if err != nil {
		return nil, err
	}
	if live == nil {
		live = func(string) bool { return true }
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keys{k: k, live: live, log: log}, nil
}

// Mode returns the KeyMode keys are computed under.
func (ks *Keys) Mode() KeyMode { return ks.k.mode }

// Key returns the politeness key of u, or "" for a URL without a valid
// host (one the frontier would refuse). Only KeyIP mode can block, the
// first time it sees a host name, for at most the resolve timeout.
func (ks *Keys) Key(u *url.URL) string {
	switch ks.k.mode {
	case KeyDomain:
		name, err := hostid.Name(u)
		if err != nil {
			return ""
		}
		return hostid.RegistrableDomain(name)
	case KeyIP:
		name, err := hostid.Name(u)
		if err != nil {
			return ""
		}
		return ks.k.key(name, ks.live, ks.log)
	}
	return hostid.Key(u)
}

// key returns the KeyIP key of the canonical host name: the address
// itself for an IP literal, else the name's first resolution.
func (k *keyer) key(name string, live func(string) bool, log *slog.Logger) string {
	if name[0] == '[' {
		name = name[1 : len(name)-1]
	}
	if addr, err := netip.ParseAddr(name); err == nil {
		return addr.Unmap().String() // as a resolved address would be
	}
	k.mu.Lock()
	if e, ok := k.names[name]; ok {
		k.lru.MoveToFront(e)
		key := e.Value.(*pinned).key
		k.mu.Unlock()
		return key
	}
	k.mu.Unlock()

	// Resolve without the lock: a slow DNS server must not stall every
	// other name. Concurrent first lookups of one name are merged by
	// net.Resolver; if they answer differently, the first one stored wins.
	key := k.lookup(name, log)

	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.names[name]; ok {
		k.lru.MoveToFront(e)
		return e.Value.(*pinned).key
	}
	if k.names == nil {
		k.names = make(map[string]*list.Element)
	}
	k.names[name] = k.lru.PushFront(&pinned{name: name, key: key})
	k.forget(live)
	return key
}

// lookup resolves name to its lowest address, or name itself if it has
// none.
func (k *keyer) lookup(name string, log *slog.Logger) string {
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	addrs, err := k.resolver.LookupIPAddr(ctx, name)
	cancel()
	var lowest netip.Addr
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		// The zone of a link-local answer names our interface, not the
		// server.
		ip = ip.Unmap().WithZone("")
		if !lowest.IsValid() || ip.Less(lowest) {
			lowest = ip
		}
	}
	switch {
	case err != nil:
		log.Debug("ratelimit: resolving failed, keying by name", "host", name, "err", err)
		return name
	case !lowest.IsValid():
		log.Debug("ratelimit: no addresses, keying by name", "host", name)
		return name
	}
	return lowest.String()
}

// forget drops names beyond k.max, least recently keyed first, skipping
// (and refreshing) names whose key is live (in use), so that a busy host is
// not resolved again mid-crawl. Past twice the bound, the coldest name goes
// regardless: one server with more names than that is better paced as
// several than allowed to exhaust memory. k.mu must be held; live must not
// call the keyer.
func (k *keyer) forget(live func(string) bool) {
	for scanned := 0; len(k.names) > k.max && scanned < evictScan; scanned++ {
		e := k.lru.Back()
		p := e.Value.(*pinned)
		if live(p.key) {
			k.lru.MoveToFront(e)
			continue
		}
		k.lru.Remove(e)
		delete(k.names, p.name)
	}
	for len(k.names) > 2*k.max {
		e := k.lru.Back()
		k.lru.Remove(e)
		delete(k.names, e.Value.(*pinned).name)
	}
}
