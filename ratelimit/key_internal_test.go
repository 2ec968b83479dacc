package ratelimit

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
)

// movingResolver answers every lookup with a new address, the worst case
// for a key that must not move: any second lookup of a name shows.
type movingResolver struct {
	mu    sync.Mutex
	next  int
	calls map[string]int
}

func (r *movingResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[host]++
	r.next++
	return []net.IPAddr{{IP: net.IPv4(198, 51, byte(r.next>>8), byte(r.next))}}, nil
}

func (r *movingResolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// TestIPKeyMemoryBound checks the rule KeyIP documents: past the bound,
// idle names are forgotten, least recently keyed first; a name whose key
// is live keeps its key however cold it is; past twice the bound names go
// regardless.
func TestIPKeyMemoryBound(t *testing.T) {
	res := &movingResolver{}
	var mu sync.Mutex
	busy := map[string]bool{} // the keys in use
	live := func(key string) bool {
		mu.Lock()
		defer mu.Unlock()
		return busy[key]
	}
	use := func(key string) {
		mu.Lock()
		busy[key] = true
		mu.Unlock()
	}
	ks, err := NewKeys(KeyIP, res, 0, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	const bound = 16
	ks.k.max = bound
	key := func(name string) string {
		return ks.Key(&url.URL{Scheme: "http", Host: name, Path: "/"})
	}
	names := func() int {
		ks.k.mu.Lock()
		defer ks.k.mu.Unlock()
		return len(ks.k.names)
	}

	busyKey := key("busy.example")
	use(busyKey)
	idle := key("idle.example")
	for i := range 4 * bound {
		key(fmt.Sprintf("h%d.example", i))
		if n := names(); n > bound+1 {
			t.Fatalf("after %d names, %d remembered; bound %d", i+3, n, bound)
		}
	}
	if k := key("busy.example"); k != busyKey || res.lookups("busy.example") != 1 {
		t.Errorf("busy name: key %q (was %q), %d lookups; want it kept", k, busyKey, res.lookups("busy.example"))
	}
	key("idle.example")
	if n := res.lookups("idle.example"); n != 2 {
		t.Errorf("idle name looked up %d times, want 2: forgotten once past the bound", n)
	}
	if k := key("h0.example"); k == idle {
		t.Errorf("names share keys: the resolver should answer each lookup anew")
	}

	// Every remembered name busy: the map may grow to twice the bound,
	// and no further.
	for i := range 4 * bound {
		use(key(fmt.Sprintf("live%d.example", i)))
		if n := names(); n > 2*bound {
			t.Fatalf("%d names remembered, hard bound %d", n, 2*bound)
		}
	}
	if n := names(); n != 2*bound {
		t.Fatalf("%d names remembered with every one live, want the hard bound %d", n, 2*bound)
	}
}
