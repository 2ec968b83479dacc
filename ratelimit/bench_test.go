package ratelimit_test

import (
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
)

const benchHosts = 10000

func benchKeys() []string {
	keys := make([]string, benchHosts)
	for i := range keys {
		keys[i] = "h" + strconv.Itoa(i) + ".example"
	}
	return keys
}

// BenchmarkPolicyObserve is the Policy's cost per request in a crawler:
// SetCrawlDelay with the value the host already has (the common case) and
// Observe of a 200, over 10,000 hosts' states visited round-robin.
func BenchmarkPolicyObserve(b *testing.B) {
	pol, err := ratelimit.NewPolicy(ratelimit.Config{Jitter: -1})
	if err != nil {
		b.Fatal(err)
	}
	keys := benchKeys()
	states := make([]ratelimit.HostState, benchHosts)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i % benchHosts
		if k == 0 {
			now = now.Add(time.Second)
		}
		pol.SetCrawlDelay(keys[k], &states[k], 2*time.Second, true)
		if rest := pol.Observe(keys[k], &states[k], now, ratelimit.Answer{RTT: 50 * time.Millisecond}); rest != 2*time.Second {
			b.Fatalf("rest %v, want the 2s Crawl-delay", rest)
		}
		i++
	}
}

// BenchmarkKeys is the cost of a politeness key per URL, by host and by
// registrable domain.
func BenchmarkKeys(b *testing.B) {
	urls := make([]*url.URL, benchHosts)
	for i := range urls {
		urls[i] = &url.URL{Scheme: "https", Host: "www.h" + strconv.Itoa(i) + ".example.co.uk", Path: "/a"}
	}
	for _, mode := range []ratelimit.KeyMode{ratelimit.KeyHost, ratelimit.KeyDomain} {
		b.Run(mode.String(), func(b *testing.B) {
			ks, err := ratelimit.NewKeys(mode, nil, 0, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if ks.Key(urls[i%benchHosts]) == "" {
					b.Fatal("no key")
				}
				i++
			}
		})
	}
}
