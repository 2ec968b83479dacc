package render

import (
	"container/list"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/fetch"
)

// DefaultCacheBytes bounds a Cache whose MaxBytes is zero.
const DefaultCacheBytes = 64 << 20

// maxHeuristicFreshness caps the freshness a response without an explicit
// lifetime gets from its Last-Modified (RFC 9111 §4.2.2).
const maxHeuristicFreshness = 24 * time.Hour

// Cache holds the resources rendered pages fetched — a site's scripts,
// stylesheets, API answers that allow it — keyed by URL and bounded in
// memory, so that the pages of a crawl share them as a browser's cache
// would: a fresh copy is served without a request, a stale one with
// validators is revalidated by a conditional request. Only complete 200
// answers to GET that RFC 9111 lets a private cache store are kept;
// answers that set cookies or vary on anything but the encoding are not.
//
// The zero Cache is ready to use and holds DefaultCacheBytes. A Cache is
// safe for concurrent use.
type Cache struct {
	// MaxBytes bounds the bodies and headers held; the least recently
	// used entries go first. Zero means DefaultCacheBytes; negative, no
	// caching at all.
	MaxBytes int64

	mu       sync.Mutex
	lru      *list.List               // of *entry, most recently used first
	entries  map[string]*list.Element // by URL
	bytes    int64
	inflight map[string]*flight // fetches under way, by URL, that others wait for
}

type entry struct {
	url     string
	page    *fetch.Page
	expires time.Time
	size    int64
}

// flight is a fetch of a URL under way: requests for the URL made
// meanwhile wait for it instead of asking the site again.
type flight struct {
	done chan struct{}
	page *fetch.Page // nil when the fetch failed
}

// Outcome says how the Cache answered a request.
type Outcome uint8

const (
	// Missed: the answer was fetched.
	Missed Outcome = iota
	// Hit: served from the cache without a request.
	Hit
	// Revalidated: a conditional request found the cached copy current.
	Revalidated
)

// Fetch answers req from the cache, or fetches it with pol — one fetch at a
// time per URL, the others waiting for it — and keeps the answer when it
// may be kept.
func (c *Cache) Fetch(ctx context.Context, req Request, pol Policy) (*fetch.Page, Outcome, error) {
	if c.MaxBytes < 0 {
		p, err := pol.Fetch(ctx, req)
		return p, Missed, err
	}
	key := req.URL.String()
	for {
		c.mu.Lock()
		if e := c.lookupLocked(key); e != nil && time.Now().Before(e.expires) {
			c.mu.Unlock()
			return e.page, Hit, nil
		}
		f := c.inflight[key]
		if f == nil {
			f = &flight{done: make(chan struct{})}
			if c.inflight == nil {
				c.inflight = make(map[string]*flight)
			}
			c.inflight[key] = f
			c.mu.Unlock()
			return c.fill(ctx, key, req, pol, f)
		}
		c.mu.Unlock()
		select {
		case <-f.done:
			if f.page != nil {
				return f.page, Hit, nil
			}
			// It failed for its own page's reasons (a budget, a
			// cancelled render): ask again.
		case <-ctx.Done():
			return nil, Missed, ctx.Err()
		}
	}
}

// fill fetches key for the cache as flight f, revalidating a stale copy.
func (c *Cache) fill(ctx context.Context, key string, req Request, pol Policy, f *flight) (*fetch.Page, Outcome, error) {
	c.mu.Lock()
	stale := c.lookupLocked(key)
	c.mu.Unlock()
	how := Missed
	if stale != nil {
		v := stale.page.Validators()
		req.Header = req.Header.Clone()
		if req.Header == nil {
			req.Header = make(http.Header)
		}
		for k, vs := range v.Header() {
			req.Header[k] = vs
		}
	}
	p, err := pol.Fetch(ctx, req)
	if err == nil && stale != nil && p.NotModified() {
		p, how = stale.page, Revalidated
	}
	c.mu.Lock()
	if err == nil && c.storeLocked(key, p) {
		f.page = p // only what a cache may serve is shared with waiters
	}
	delete(c.inflight, key)
	c.mu.Unlock()
	close(f.done)
	return p, how, err
}

// lookupLocked returns key's entry, fresh or stale, marking it used.
func (c *Cache) lookupLocked(key string) *entry {
	el := c.entries[key]
	if el == nil {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*entry)
}

// storeLocked keeps p under key if it may be kept, replacing what was
// there, and evicts the least recently used entries past MaxBytes. It
// reports whether it kept p.
func (c *Cache) storeLocked(key string, p *fetch.Page) bool {
	life, ok := storable(p, time.Now())
	if !ok {
		return false
	}
	e := &entry{url: key, page: p, expires: time.Now().Add(life), size: int64(len(p.Body)) + headerSize(p.Header) + int64(len(key))}
	limit := c.MaxBytes
	if limit == 0 {
		limit = DefaultCacheBytes
	}
	if e.size > limit/4 {
		return false // one resource must not flush the rest
	}
	if c.entries == nil {
		c.entries = make(map[string]*list.Element)
		c.lru = list.New()
	}
	if el := c.entries[key]; el != nil {
		c.bytes -= el.Value.(*entry).size
		c.lru.Remove(el)
	}
	c.entries[key] = c.lru.PushFront(e)
	c.bytes += e.size
	for c.bytes > limit {
		old := c.lru.Back()
		o := old.Value.(*entry)
		c.lru.Remove(old)
		delete(c.entries, o.url)
		c.bytes -= o.size
	}
	return true
}

// Len reports how many resources the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// storable reports whether p may be kept and for how long it is fresh
// (zero: revalidate before each use, which needs validators).
func storable(p *fetch.Page, now time.Time) (time.Duration, bool) {
	if p.Status != http.StatusOK || p.Truncated || p.Redirect != nil || len(p.Header.Values("Set-Cookie")) > 0 {
		return 0, false
	}
	for _, v := range p.Header.Values("Vary") {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" && !strings.EqualFold(f, "Accept-Encoding") {
				return 0, false
			}
		}
	}
	life, explicit := freshness(p.Header, now)
	if life < 0 {
		return 0, false // no-store
	}
	if !explicit {
		if lm, err := http.ParseTime(p.Header.Get("Last-Modified")); err == nil && lm.Before(now) {
			life = min(now.Sub(lm)/10, maxHeuristicFreshness)
		}
	}
	if life == 0 && p.Validators().IsZero() {
		return 0, false
	}
	return life, true
}

// freshness reads a response's lifetime from Cache-Control and Expires:
// negative for no-store, zero for no-cache; explicit says the response
// gave one.
func freshness(h http.Header, now time.Time) (life time.Duration, explicit bool) {
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(name) {
			case "no-store":
				return -1, true
			case "no-cache":
				return 0, true
			case "max-age":
				if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 {
					life, explicit = time.Duration(min(n, 1<<31))*time.Second, true
				}
			}
		}
	}
	if explicit {
		return life, true
	}
	if exp := h.Get("Expires"); exp != "" {
		t, err := http.ParseTime(exp)
		if err != nil || !t.After(now) {
			return 0, true // an invalid Expires means already expired
		}
		return t.Sub(now), true
	}
	return 0, false
}

func headerSize(h http.Header) int64 {
	var n int64
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}
