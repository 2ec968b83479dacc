package crawler

import (
	"context"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/heedcrawl/heed/fetch"
)

// seedLookupTimeout bounds the lookup of one seed host's addresses, and
// seedLookups how many run at once.
const (
	seedLookupTimeout = 5 * time.Second
	seedLookups       = 16
)

// addressPolicy returns the addresses the crawl may connect to: public ones,
// and those of the classes the seeds themselves are on (loopback for a
// local test site, private for an intranet), or all with WithAllowPrivate.
// A seed that cannot be looked up adds nothing; fetching it will fail and
// say why.
func (c *Crawler) addressPolicy(ctx context.Context, seeds []string) *fetch.AddressPolicy {
	if c.cfg.allowPrivate {
		return &fetch.AddressPolicy{AllowAll: true}
	}
	// A caller's own Transport or Client decides where a name connects
	// (a test's virtual web, a proxy): looking names up here would say
	// nothing about it, so only address literals count then.
	custom := c.cfg.client != nil || c.cfg.transport != nil
	hosts := map[string]bool{}
	for _, s := range seeds {
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" {
			continue
		}
		if _, err := netip.ParseAddr(u.Hostname()); custom && err != nil {
			continue
		}
		hosts[u.Hostname()] = true
	}
	var f fetch.Fetcher
	var (
		mu      sync.Mutex
		classes []fetch.AddressClass
		wg      sync.WaitGroup
	)
	sem := make(chan struct{}, seedLookups)
	for h := range hosts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			lctx, cancel := context.WithTimeout(ctx, seedLookupTimeout)
			defer cancel()
			cs, err := f.HostClasses(lctx, h)
			if err != nil {
				return
			}
			mu.Lock()
			for _, cl := range cs {
				if cl != fetch.ClassPublic && !slices.Contains(classes, cl) {
					classes = append(classes, cl)
				}
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return &fetch.AddressPolicy{Allow: classes}
}
