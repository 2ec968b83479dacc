package frontier

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/heedcrawl/heed/internal/hostid"
)

// scopeMeta is the Store metadata under which the Frontier keeps its scope
// names, so that a crawl resumed from a Store keeps its seeds' scope.
const scopeMeta = "frontier/scope"

// Resume loads the scope a Store kept from an earlier run (the seeds'
// hosts or domains and the hosts they redirected to), so that a crawl
// resumed from it follows the same links. A Store without one is fine.
func (f *Frontier) Resume(ctx context.Context) error {
	names, err := f.storedScope(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		f.scopeNames[name] = struct{}{}
	}
	f.scopeRead = f.clock.Now()
	return nil
}

// A ScopeStore is a Store shared by several processes that keeps the
// crawl's scope as a set each process adds to: the seed hosts (or domains)
// of every process, and the hosts their seeds redirected to. A process that
// finds a link to a host outside its own view of the scope asks the Store
// again (at most once per Config.Poll) before refusing it.
type ScopeStore interface {
	AddScope(ctx context.Context, names []string) error
	Scope(ctx context.Context) ([]string, error)
}

// storedScope returns the scope names the Store keeps.
func (f *Frontier) storedScope(ctx context.Context) ([]string, error) {
	if ss, ok := f.store.(ScopeStore); ok {
		names, err := ss.Scope(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		return names, nil
	}
	v, err := f.store.Meta(ctx, scopeMeta)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	var names []string
	for name := range strings.SplitSeq(string(v), "\n") {
		if name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// refreshScope reads a shared Store's scope again, if it was not read
// within the poll interval, and reports whether it did.
func (f *Frontier) refreshScope(ctx context.Context) bool {
	if _, ok := f.store.(ScopeStore); !ok || f.poll <= 0 {
		return false
	}
	f.mu.Lock()
	due := f.clock.Now().Sub(f.scopeRead) >= f.poll
	if due {
		f.scopeRead = f.clock.Now()
	}
	f.mu.Unlock()
	return due && f.Resume(ctx) == nil
}

// saveScope stores the scope names, so that Resume finds them.
func (f *Frontier) saveScope(ctx context.Context, added []string) error {
	if ss, ok := f.store.(ScopeStore); ok {
		if err := ss.AddScope(ctx, added); err != nil {
			return fmt.Errorf("%w: %w", ErrStore, err)
		}
		return nil
	}
	// One write at a time, each of a snapshot taken under saveMu: a write
	// of an older snapshot can then never land after a newer one.
	f.saveMu.Lock()
	defer f.saveMu.Unlock()
	f.mu.Lock()
	names := slices.Sorted(maps.Keys(f.scopeNames))
	f.mu.Unlock()
	if err := f.store.SetMeta(ctx, scopeMeta, []byte(strings.Join(names, "\n"))); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}

// registrableDomain returns the eTLD+1 of a canonical host name, or the
// name itself for IP literals and names without one (localhost, co.uk).
// hostid decides, so that ScopeSeedDomains and ratelimit.KeyDomain agree.
func registrableDomain(name string) string {
	return hostid.RegistrableDomain(name)
}

// AddScope widens the crawl's scope by rawURL's host (or registrable
// domain, with ScopeSeedDomains) as AddSeed does, without scheduling
// anything: for a seed's redirect target, which should be crawled like the
// seed it stands for (http://example.com → https://www.example.com/).
func (f *Frontier) AddScope(ctx context.Context, rawURL string) error {
	if f.inScope != nil || f.scope == ScopeAny {
		return nil
	}
	canon, sp, err := f.canon.canonical(rawURL)
	if err != nil {
		return err
	}
	name := canon[sp.start:sp.nameEnd]
	if f.scope == ScopeSeedDomains {
		name = registrableDomain(name)
	}
	f.mu.Lock()
	_, ok := f.scopeNames[name]
	if !ok {
		f.scopeNames[strings.Clone(name)] = struct{}{}
	}
	f.mu.Unlock()
	if ok {
		return nil
	}
	return f.saveScope(ctx, []string{name})
}

// unknownScope reports whether an item that passed its checks has a scope
// name the Frontier does not know.
func (f *Frontier) unknownScope(items []Item, errs []error, names []string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range items {
		if errs[i] == nil && names[i] != "" {
			if _, ok := f.scopeNames[names[i]]; !ok {
				return true
			}
		}
	}
	return false
}
