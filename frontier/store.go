package frontier

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"time"
)

// Store holds a crawl's seen-set and its per-host FIFO queues. The Frontier
// keeps the scheduling state (the ready-heap, in-flight counts, limits,
// timers) and asks the Store only to remember URLs and to queue items, so a
// store on disk (pebble) or in Redis can replace MemoryStore without
// changes to the scheduler.
//
// A Frontier calls its Store with its own lock held, never concurrently;
// methods should therefore be quick and must not call back into the
// Frontier. Errors are returned to the Frontier's caller wrapped in
// ErrStore.
type Store interface {
	// MarkSeen records url, a canonical URL, and reports whether it was
	// new. A URL is marked seen before it is pushed and stays seen for the
	// life of the store.
	MarkSeen(url string) (isNew bool, err error)
	// Push appends it to the end of the queue named it.Key.
	Push(it Item) error
	// PushFront puts it at the front of the queue named it.Key: the item
	// was handed out and is given back (Frontier.Defer).
	PushFront(it Item) error
	// Pop removes and returns the first item of the queue named key, with
	// Key set to key. ok is false if the queue is empty.
	Pop(key string) (it Item, ok bool, err error)
}

// ErrStore wraps an error returned by the Store.
var ErrStore = errors.New("frontier: store")

// maxStoredDepth is the largest Item.Depth MemoryStore can hold (19
// bits); the Frontier rejects deeper items with ErrDepth.
const maxStoredDepth = 1<<depthBits - 1

// MemoryStore is a Store in memory. The zero value is ready to use; set
// ExactSeen before first use.
//
// Memory: a queued item costs a 48-byte record plus ring-buffer slack
// (capacity grows by 1.25×) on top of its URL string; the
// referrer string is shared with the parent item's URL. To fit, the record
// keeps Lastmod to the second (dates before 1970 or after 2106 are
// dropped) and Priority to 0.001 within [0, 1], and holds depths up to
// 524,287 and two kinds. What an item has been through (Retries,
// Redirects, SitemapDepth, BlockedSince) is kept exactly, in a side record
// allocated only for the few items that have any of it. A seen URL costs one 8-byte hash in an
// open-addressing table (10–20 bytes with its slack); the string is not
// kept once the item is popped. A host with queued items costs about 100 bytes more.
// BenchmarkMemoryPerURL measures the totals.
//
// The seen-set holds 64-bit hashes (hash/maphash, with a seed chosen per
// store) rather than strings. Two distinct URLs collide with probability
// 2⁻⁶⁴ ≈ 5.4e-20 per pair, so a crawl of n URLs wrongly skips one with
// probability about n²/2⁶⁵: ≈ 3e-8 for a million URLs, ≈ 3e-4 for a
// billion. Set ExactSeen to store the strings instead, at the price of
// keeping every URL string for the life of the store.
//
// MemoryStore is not safe for concurrent use by itself; the Frontier
// serialises its calls.
type MemoryStore struct {
	// ExactSeen makes the seen-set store URL strings instead of hashes:
	// no false duplicates, more memory.
	ExactSeen bool

	init   bool
	seed   maphash.Seed
	hashes *hashSet
	exact  map[string]struct{}
	queues map[string]*ring
}

// record is a queued Item without its Key (the queue's name) and with its
// small fields packed into 8 bytes, 48 bytes in all.
type record struct {
	url, ref string
	lastmod  uint32 // Unix seconds; 0 when Lastmod is zero
	meta     uint32 // depth (19 bits) | kind (2 bits) | from sitemap (1 bit) | priority×1000 (10 bits)
	history  *history
}

// history is the part of an Item that records what it has been through;
// most items have none, and then no history is allocated.
type history struct {
	retries      int
	redirects    []string
	sitemapDepth int
	blockedSince time.Time
}

const (
	depthBits   = 19
	kindBits    = 2
	sitemapBit  = 1 << (depthBits + kindBits)
	prioritySft = depthBits + kindBits + 1
)

func (s *MemoryStore) lazyInit() {
	if s.init {
		return
	}
	s.init = true
	s.seed = maphash.MakeSeed()
	s.queues = make(map[string]*ring)
	if s.ExactSeen {
		s.exact = make(map[string]struct{})
	} else {
		s.hashes = new(hashSet)
	}
}

// MarkSeen implements Store.
func (s *MemoryStore) MarkSeen(url string) (bool, error) {
	s.lazyInit()
	if s.exact != nil {
		if _, ok := s.exact[url]; ok {
			return false, nil
		}
		s.exact[url] = struct{}{}
		return true, nil
	}
	return s.hashes.add(maphash.String(s.seed, url)), nil
}

// Push implements Store.
func (s *MemoryStore) Push(it Item) error {
	r, err := s.toRecord(it)
	if err != nil {
		return err
	}
	s.queue(it.Key).pushBack(r)
	return nil
}

// PushFront implements Store.
func (s *MemoryStore) PushFront(it Item) error {
	r, err := s.toRecord(it)
	if err != nil {
		return err
	}
	s.queue(it.Key).pushFront(r)
	return nil
}

// Pop implements Store. An emptied queue is deleted, so memory follows the
// hosts with queued work, not every host ever seen.
func (s *MemoryStore) Pop(key string) (Item, bool, error) {
	s.lazyInit()
	q := s.queues[key]
	if q == nil || q.n == 0 {
		return Item{}, false, nil
	}
	r := q.popFront()
	if q.n == 0 {
		delete(s.queues, key)
	}
	it := Item{
		URL:         r.url,
		Key:         key,
		Referrer:    r.ref,
		Depth:       int(r.meta & (1<<depthBits - 1)),
		Kind:        Kind(r.meta >> depthBits & (1<<kindBits - 1)),
		FromSitemap: r.meta&sitemapBit != 0,
		Priority:    float32(r.meta>>prioritySft) / 1000,
	}
	if r.lastmod != 0 {
		it.Lastmod = time.Unix(int64(r.lastmod), 0).UTC()
	}
	if h := r.history; h != nil {
		it.Retries, it.Redirects, it.SitemapDepth, it.BlockedSince = h.retries, h.redirects, h.sitemapDepth, h.blockedSince
	}
	return it, true, nil
}

// Len returns the number of items queued under key.
func (s *MemoryStore) Len(key string) int {
	if q := s.queues[key]; q != nil {
		return int(q.n)
	}
	return 0
}

func (s *MemoryStore) queue(key string) *ring {
	s.lazyInit()
	q := s.queues[key]
	if q == nil {
		q = new(ring)
		s.queues[key] = q
	}
	return q
}

func (s *MemoryStore) toRecord(it Item) (record, error) {
	if it.Depth < 0 || it.Depth > maxStoredDepth {
		return record{}, fmt.Errorf("frontier: memory store: depth %d out of range", it.Depth)
	}
	if it.Kind >= 1<<kindBits {
		return record{}, fmt.Errorf("frontier: memory store: cannot hold %v", it.Kind)
	}
	prio := math.Round(float64(it.Priority) * 1000)
	switch {
	case !(prio >= 0): // negative or NaN
		prio = 0
	case prio > 1000:
		prio = 1000
	}
	r := record{
		url:  it.URL,
		ref:  it.Referrer,
		meta: uint32(it.Depth) | uint32(it.Kind)<<depthBits | uint32(prio)<<prioritySft,
	}
	if it.FromSitemap {
		r.meta |= sitemapBit
	}
	if it.Retries != 0 || len(it.Redirects) > 0 || it.SitemapDepth != 0 || !it.BlockedSince.IsZero() {
		r.history = &history{retries: it.Retries, redirects: it.Redirects, sitemapDepth: it.SitemapDepth, blockedSince: it.BlockedSince}
	}
	if sec := it.Lastmod.Unix(); !it.Lastmod.IsZero() && sec > 0 && sec <= math.MaxUint32 {
		r.lastmod = uint32(sec)
	}
	return r, nil
}

// ring is a FIFO queue with cheap PushFront. Capacity grows by 1.25× (at
// least one record), so a queue's slack stays under a quarter of its
// records — most queues are short, and doubling would waste up to half.
// Buffers use their whole allocation size class.
type ring struct {
	buf     []record
	head, n int32
}

func (q *ring) grow() {
	c := len(q.buf)
	q.resize(c + max(c/4, 1))
}

func (q *ring) resize(c int) {
	buf := slices.Grow([]record(nil), c)
	buf = buf[:cap(buf)]
	for i := int32(0); i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)%int32(len(q.buf))]
	}
	q.buf, q.head = buf, 0
}

func (q *ring) pushBack(r record) {
	if int(q.n) == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%int32(len(q.buf))] = r
	q.n++
}

func (q *ring) pushFront(r record) {
	if int(q.n) == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1 + int32(len(q.buf))) % int32(len(q.buf))
	q.buf[q.head] = r
	q.n++
}

func (q *ring) popFront() record {
	r := q.buf[q.head]
	q.buf[q.head] = record{} // let the strings go
	q.head = (q.head + 1) % int32(len(q.buf))
	q.n--
	// A queue that drained from a burst gives most of its buffer back.
	if len(q.buf) > 64 && int(q.n) < len(q.buf)/4 {
		q.resize(2 * int(q.n))
	}
	return r
}
