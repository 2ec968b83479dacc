package robots

// The gate's cache is an LRU list of entries keyed by authority, so that a
// crawl of a million hosts holds at most CacheSize parsed files. Expired
// entries stay until they are refetched or pushed out: their copy and
// failure history feed the next fetch (OutcomeStale, back-off).

// cachedLocked returns auth's entry, fresh or expired, and marks it used.
// g.mu must be held.
func (g *Gate) cachedLocked(auth string) *Entry {
	el := g.entries[auth]
	if el == nil {
		return nil
	}
	g.lru.MoveToFront(el)
	return el.Value.(*Entry)
}

// storeLocked caches e, replacing the authority's previous entry and
// evicting the least recently used ones beyond CacheSize. g.mu must be held.
func (g *Gate) storeLocked(e *Entry) {
	if el := g.entries[e.Authority]; el != nil {
		el.Value = e
		g.lru.MoveToFront(el)
		return
	}
	g.entries[e.Authority] = g.lru.PushFront(e)
	for len(g.entries) > g.cacheSize {
		el := g.lru.Back()
		g.lru.Remove(el)
		delete(g.entries, el.Value.(*Entry).Authority)
	}
}
