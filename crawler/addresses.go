package crawler

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
)

// seedLookupTimeout bounds the lookup of one seed host's addresses, and
// seedLookups how many run at once.
const (
	seedLookupTimeout = 5 * time.Second
	seedLookups       = 16
)

// addressMeta is the Store metadata under which a crawl keeps the address
// classes its seeds allowed, so that a resumed crawl — which may be given
// no seeds — reaches what the first run could.
const addressMeta = "crawler/address-classes"

// crawlAddresses returns the address policy of a crawl from seeds on
// store: the classes the seeds allow, and those an earlier run on the same
// store allowed.
func (c *Crawler) crawlAddresses(ctx context.Context, store frontier.Store, seeds []string) (*fetch.AddressPolicy, error) {
	p := c.addressPolicy(ctx, seeds)
	if p.AllowAll {
		return p, nil
	}
	kept, err := store.Meta(ctx, addressMeta)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", frontier.ErrStore, err)
	}
	changed := false
	for _, b := range kept {
		if cl := fetch.AddressClass(b); !slices.Contains(p.Allow, cl) {
			p.Allow = append(p.Allow, cl)
		}
	}
	for _, cl := range p.Allow {
		if !slices.Contains(kept, byte(cl)) {
			kept, changed = append(kept, byte(cl)), true
		}
	}
	if changed {
		if err := store.SetMeta(ctx, addressMeta, kept); err != nil {
			return nil, fmt.Errorf("%w: %w", frontier.ErrStore, err)
		}
	}
	return p, nil
}

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
	// Names as the resolver is asked them (u.Hostname), not hostid's
	// politeness identity: what matters here is the addresses a name
	// leads to, and a name's spelling only as DNS takes it.
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
