package frontier

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
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

// maxStoredDepth is the largest Item.Depth MemoryStore can hold (24 bits);
// the Frontier rejects deeper items with ErrDepth.
const maxStoredDepth = 1<<24 - 1

// MemoryStore is a Store in memory. The zero value is ready to use; set
// ExactSeen before first use.
//
// Memory: a queued item costs a 48-byte record plus ring-buffer slack
// (capacity grows by 1.5×) on top of its URL string; the referrer string is
// shared with the parent item's URL. A seen URL costs one 8-byte hash in a
// Go map (about 10–20 bytes with the map's slack), and the string is not
// kept once the item is popped. BenchmarkMemoryPerURL measures the total.
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
	hashes map[uint64]struct{}
	exact  map[string]struct{}
	queues map[string]*ring
}

// record is a queued Item without its Key (the queue's name), with time
// and small fields packed: 48 bytes.
type record struct {
	url, ref  string
	lastmod   int64 // Lastmod as Unix nanoseconds; 0 when zero
	priority  float32
	depthKind uint32 // depth<<8 | kind
}

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
		s.hashes = make(map[uint64]struct{})
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
	h := maphash.String(s.seed, url)
	if _, ok := s.hashes[h]; ok {
		return false, nil
	}
	s.hashes[h] = struct{}{}
	return true, nil
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
		URL:      r.url,
		Key:      key,
		Referrer: r.ref,
		Depth:    int(r.depthKind >> 8),
		Kind:     Kind(r.depthKind & 0xff),
		Priority: r.priority,
	}
	if r.lastmod != 0 {
		it.Lastmod = time.Unix(0, r.lastmod).UTC()
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

// unixNanoRange is the span of times UnixNano represents (years 1678–2262).
var (
	minNanoTime = time.Unix(0, math.MinInt64)
	maxNanoTime = time.Unix(0, math.MaxInt64)
)

func (s *MemoryStore) toRecord(it Item) (record, error) {
	if it.Depth < 0 || it.Depth > maxStoredDepth {
		return record{}, fmt.Errorf("frontier: memory store: depth %d out of range", it.Depth)
	}
	r := record{
		url:       it.URL,
		ref:       it.Referrer,
		priority:  it.Priority,
		depthKind: uint32(it.Depth)<<8 | uint32(it.Kind),
	}
	// Sitemap dates outside 1678–2262 are nonsense; they are dropped
	// rather than stored wrong.
	if !it.Lastmod.IsZero() && it.Lastmod.After(minNanoTime) && it.Lastmod.Before(maxNanoTime) {
		r.lastmod = it.Lastmod.UnixNano()
	}
	return r, nil
}

// ring is a FIFO queue with cheap PushFront. Capacity grows by 1.5× so the
// slack of a large queue stays near a third of its records.
type ring struct {
	buf     []record
	head, n int32
}

func (q *ring) grow() {
	c := len(q.buf)
	switch {
	case c == 0:
		c = 1
	case c < 4:
		c *= 2
	default:
		c += c / 2
	}
	q.resize(c)
}

func (q *ring) resize(c int) {
	buf := make([]record, c)
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
