package frontier

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// AddSeed schedules rawURL at depth 0 and adds its host (or registrable
// domain, with ScopeSeedDomains) to the crawl's scope. Seeds bypass the
// scope check and MaxDepth but not deduplication or page limits; the scope
// grows even if the seed itself is rejected as a duplicate.
func (f *Frontier) AddSeed(ctx context.Context, rawURL string) error {
	errs, err := f.AddSeeds(ctx, []string{rawURL})
	if err != nil {
		return err
	}
	return errs[0]
}

// AddSeeds adds seeds as AddSeed does, with one Store call for all of them.
// errs[i] says why seeds[i] was not scheduled (nil if it was); err is a
// Store failure, wrapping ErrStore, in which case nothing was scheduled.
func (f *Frontier) AddSeeds(ctx context.Context, seeds []string) (errs []error, err error) {
	items := make([]Item, len(seeds))
	for i, s := range seeds {
		items[i] = Item{URL: s}
	}
	return f.add(ctx, items, true)
}

// AddSeedItems is AddSeeds for seeds given as items, with their Meta: each
// is scheduled at depth 0, whatever its Depth says.
func (f *Frontier) AddSeedItems(ctx context.Context, seeds []Item) (errs []error, err error) {
	items := make([]Item, len(seeds))
	for i, s := range seeds {
		items[i] = Item{URL: s.URL, Meta: s.Meta}
	}
	return f.add(ctx, items, true)
}

// Add schedules it. it.URL may be any absolute URL; Add canonicalises it
// and sets it.Key. Depth, Referrer, Kind, Priority, Lastmod and the item's
// history are kept as given, and so are Due and Visit (a zero Due is
// stamped with the Frontier's clock: see Item.Due). Checks run in this order, the first failing
// one giving the error: depth, canonical form (ErrRelative, ErrScheme,
// ErrHost, ErrPort, ErrTooLong), pathological path, scope, then in the
// Store: given-up host, page and sitemap limits, duplicates (ErrSeen). A
// nil error means the item is queued and will be handed out by Next once;
// one that is ErrReported (a page limit's, for a URL not seen before)
// that it is queued only to be reported, and handed out once with
// Item.Refused set.
// A Store failure wraps ErrStore. ctx is checked before any work is done.
func (f *Frontier) Add(ctx context.Context, it Item) error {
	errs, err := f.add(ctx, []Item{it}, false)
	if err != nil {
		return err
	}
	return errs[0]
}

// AddAll adds items as Add does, with one Store call for all of them (a
// page's links): errs[i] says why items[i] was refused; err is a Store
// failure, wrapping ErrStore, in which case none was scheduled.
func (f *Frontier) AddAll(ctx context.Context, items []Item) (errs []error, err error) {
	return f.add(ctx, slices.Clone(items), false)
}

// add checks items (modified in place), stamps their Due, widens the scope
// by the seeds, and hands the rest to the Store in one batch.
func (f *Frontier) add(ctx context.Context, items []Item, seed bool) ([]error, error) {
	errs, batch, at, err := f.prepare(ctx, items, seed)
	if err != nil || len(batch) == 0 {
		return errs, err
	}
	refused, err := f.store.Add(ctx, batch, f.limits)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	f.added(errs, batch, at, refused)
	return errs, nil
}

// prepare checks items (modified in place), stamps their Due and widens
// the scope by the seeds. It returns each item's error so far, and the
// batch for the Store: the items that passed, batch[j] being items[at[j]]
// — or, when every item passed, items itself and a nil at.
func (f *Frontier) prepare(ctx context.Context, items []Item, seed bool) (errs []error, batch []Item, at []int, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	errs = make([]error, len(items))
	names := make([]string, len(items)) // what the scope set holds for each
	for i := range items {
		errs[i], names[i] = f.check(&items[i], seed)
	}
	if !seed && f.poll > 0 && f.unknownScope(items, errs, names) {
		f.refreshScope(ctx) // another process may have widened it
	}
	f.mu.Lock()
	var added []string
	for i := range items {
		if errs[i] != nil || names[i] == "" {
			continue
		}
		if _, ok := f.scopeNames[names[i]]; ok {
			continue
		}
		if !seed {
			errs[i] = ErrScope
			continue
		}
		name := strings.Clone(names[i])
		f.scopeNames[name] = struct{}{}
		added = append(added, name)
	}
	f.mu.Unlock()
	if len(added) > 0 {
		if err := f.saveScope(ctx, added); err != nil {
			return nil, nil, nil, err
		}
	}
	var now time.Time
	passed := 0
	for i := range items {
		if errs[i] != nil {
			continue
		}
		passed++
		if items[i].Due.IsZero() {
			if now.IsZero() {
				now = f.clock.Now()
			}
			items[i].Due = now // admitted now: ordered with the revisits due then
		}
	}
	if passed == len(items) {
		return errs, items, nil, nil // no copy: the common case of a seed or a link
	}
	batch = make([]Item, 0, passed)
	at = make([]int, 0, passed)
	for i := range items {
		if errs[i] == nil {
			batch = append(batch, items[i])
			at = append(at, i)
		}
	}
	return errs, batch, at, nil
}

// added takes the Store's answers for a batch prepare made into errs, and
// wakes the waiters if anything was queued.
func (f *Frontier) added(errs []error, batch []Item, at []int, refused []error) {
	queued := false
	for j := range refused {
		i := j
		if at != nil {
			i = at[j]
		}
		errs[i] = refused[j]
		switch {
		case refused[j] == nil:
			queued = queued || !batch[j].SeenOnly
		case errors.Is(refused[j], ErrLimit):
			f.limitHit.Store(true)
		}
		queued = queued || errors.Is(refused[j], ErrReported)
	}
	if queued {
		f.nudgeOne()
	}
}

// Identify sets it.URL to its canonical form and it.Key to its politeness
// key, as Add does, or returns the error Add would refuse it with before
// asking the Store (its scope and depth aside): what the Store knows the
// URL by, for a caller that speaks of a URL the Store holds
// (Frontier.EditQueued).
func (f *Frontier) Identify(it *Item) error {
	err, _ := f.check(it, true)
	return err
}

// check runs the checks that need no Store on it, canonicalising its URL
// and setting its key, and returns what the scope set must hold for it
// ("" when the scope does not depend on it).
func (f *Frontier) check(it *Item, seed bool) (err error, name string) {
	if it.Depth < 0 || it.Depth > maxStoredDepth || !seed && f.maxDepth > 0 && it.Depth > f.maxDepth {
		return ErrDepth, ""
	}
	canon, sp, err := f.canon.canonical(it.URL)
	if err != nil {
		return err, ""
	}
	if pathological(canon[sp.end:], f.maxSegs, f.maxRepeats) {
		return ErrPathological, ""
	}
	var u *url.URL
	if f.keyFunc != nil || f.inScope != nil {
		if u, err = url.Parse(canon); err != nil {
			return fmt.Errorf("frontier: canonical URL does not parse: %w", err), ""
		}
	}
	key := canon[sp.start:sp.end]
	if f.keyFunc != nil {
		if key = f.keyFunc(u); key == "" {
			return fmt.Errorf("%w: empty politeness key for %q", ErrHost, canon), ""
		}
	}
	switch {
	case f.inScope != nil:
		if !seed && !f.inScope(u) {
			return ErrScope, ""
		}
	case f.scope == ScopeAny:
	case f.scope == ScopeSeedDomains:
		name = registrableDomain(canon[sp.start:sp.nameEnd])
	default: // ScopeSeedHosts, and values this version does not know
		name = canon[sp.start:sp.nameEnd]
	}
	it.URL, it.Key = canon, key
	it.Refused = NotRefused // the Store's to set
	return nil, name
}

// pathological reports whether path (a canonical URL's path and query)
// has more than maxSegs segments or a run of one to maxSegs/… segments
// repeated more than maxRepeats times in a row. Negative limits turn
// their check off.
func pathological(path string, maxSegs, maxRepeats int) bool {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if maxSegs < 0 && maxRepeats < 0 || len(path) < 2 {
		return false
	}
	segs := strings.Split(strings.TrimSuffix(path[1:], "/"), "/")
	if maxSegs >= 0 && len(segs) > maxSegs {
		return true
	}
	if maxRepeats < 0 {
		return false
	}
	// A run of n segments starting at i repeated r times in a row: compare
	// each segment with the one n places before it.
	for n := 1; n*(maxRepeats+1) <= len(segs); n++ {
		same := 0 // segments equal to the one n before, in a row
		for i := n; i < len(segs); i++ {
			if segs[i] == segs[i-n] {
				same++
				if same >= n*maxRepeats {
					return true
				}
			} else {
				same = 0
			}
		}
	}
	return false
}
