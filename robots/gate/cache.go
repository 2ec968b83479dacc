package gate

// The gate's cache is an LRU list of entries keyed by authority, so that a
// crawl of a million hosts holds at most CacheSize parsed files and about
// CacheBytes of rules: the count alone would let 100,000 files of 500 KiB
// each take 50 GB. Expired entries stay until they are refetched or pushed
// out: their copy and failure history feed the next fetch (OutcomeStale,
// back-off).

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

// peekLocked returns auth's entry, fresh or expired, leaving its place in
// the LRU list: a look that is not a use (Disallows). g.mu must be held.
func (g *Gate) peekLocked(auth string) *Entry {
	if el := g.entries[auth]; el != nil {
		return el.Value.(*Entry)
	}
	return nil
}

// storeLocked caches e, replacing the authority's previous entry and
// evicting the least recently used ones beyond CacheSize or CacheBytes;
// e itself always stays, however large. g.mu must be held.
func (g *Gate) storeLocked(e *Entry) {
	if el := g.entries[e.Authority]; el != nil {
		g.bytes -= el.Value.(*Entry).size
		el.Value = e
		g.lru.MoveToFront(el)
	} else {
		g.entries[e.Authority] = g.lru.PushFront(e)
	}
	g.bytes += e.size
	for len(g.entries) > 1 && (len(g.entries) > g.cacheSize || g.bytes > g.cacheBytes) {
		el := g.lru.Back()
		old := el.Value.(*Entry)
		g.lru.Remove(el)
		delete(g.entries, old.Authority)
		g.bytes -= old.size
	}
}
