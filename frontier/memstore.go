package frontier

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
)

// maxStoredDepth is the largest Item.Depth MemoryStore can hold (19
// bits); the Frontier rejects deeper items with ErrDepth.
const maxStoredDepth = 1<<depthBits - 1

// MemoryStore is a Store in memory: the default, for crawls that need not
// survive their process. The zero value is ready to use; set ExactSeen
// before first use.
//
// Memory: a queued item costs a 48-byte record plus ring-buffer slack
// (capacity grows by 1.25×) on top of its URL string; the
// referrer string is shared with the parent item's URL. To fit, the record
// keeps Lastmod to the second (dates before 1970 or after 2106 are
// dropped) and Priority to 0.001 within [0, 1], and holds depths up to
// 524,287 and two kinds. What an item has been through (Retries,
// Redirects, SitemapDepth) is kept exactly, in a side record
// allocated only for the few items that have any of it. A seen URL costs one 8-byte hash in an
// open-addressing table (10–20 bytes with its slack); the string is not
// kept once the item is popped. A host with queued items costs about 100 bytes more,
// and once it has been paced 224 more: its ratelimit.HostState (144) and its
// token bucket (80; measured over 100,000 keys each claimed and done with a
// rest).
// BenchmarkMemoryPerURL measures the totals.
//
// The seen-set holds 64-bit hashes (hash/maphash, with a seed chosen per
// store) rather than strings. Two distinct URLs collide with probability
// 2⁻⁶⁴ ≈ 5.4e-20 per pair, so a crawl of n URLs wrongly skips one with
// probability about n²/2⁶⁵: ≈ 3e-8 for a million URLs, ≈ 3e-4 for a
// billion. Set ExactSeen to store the strings instead, at the price of
// keeping every URL string for the life of the store.
//
// Leases live as long as the store: Claim's lease duration is ignored, and
// a MemoryStore is safe for concurrent use.
type MemoryStore struct {
	// ExactSeen makes the seen-set store URL strings instead of hashes:
	// no false duplicates, more memory.
	ExactSeen bool

	mu         sync.Mutex
	init       bool
	seed       maphash.Seed
	hashes     *hashSet
	exact      map[string]struct{}
	queues     map[string]*ring
	sched      Schedule
	leases     map[uint64]leaseRecord
	token      uint64
	meta       map[string][]byte
	checkpoint []byte
}

// leaseRecord is what the store remembers of a lease: its key, and its
// item while it is out.
type leaseRecord struct {
	key  string
	item bool
	rec  record
}

// record is a queued Item without its Key (the queue's name) and with its
// small fields packed into 8 bytes, 48 bytes in all.
//
// It is deliberately not the encoding of package frontier/codec, which the
// Stores that persist share (and which imports this package): a record
// holds the caller's URL string and shares its referrer with the URL string
// of the page the link was found on, where an encoding copies both into
// every item — the referrer once per link — and a claim allocates them
// again. BenchmarkMemoryPerURL keeps a queued URL within its target of 120
// bytes beyond the URL (73–86 bytes at 10 to 1,000 URLs a host) with it.
type record struct {
	url, ref string
	lastmod  uint32 // Unix seconds; 0 when Lastmod is zero
	meta     uint32 // depth (19 bits) | kind (2 bits) | from sitemap (1 bit) | priority×1000 (10 bits)
	history  *history
}

// history is the part of an Item that records what it has been through,
// and its metadata; most items have neither, and then no history is
// allocated.
type history struct {
	retries      int
	redirects    []string
	sitemapDepth int
	meta         map[string]string
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
	s.token = maphash.String(s.seed, "lease tokens") // each store's tokens start elsewhere, so another store's lease is refused
	s.queues = make(map[string]*ring)
	s.leases = make(map[uint64]leaseRecord)
	s.meta = make(map[string][]byte)
	if s.ExactSeen {
		s.exact = make(map[string]struct{})
	} else {
		s.hashes = new(hashSet)
	}
}

// markSeen marks url seen and reports whether it was before.
func (s *MemoryStore) markSeen(url string) bool {
	if s.exact != nil {
		if _, ok := s.exact[url]; ok {
			return true
		}
		s.exact[url] = struct{}{}
		return false
	}
	return !s.hashes.add(maphash.String(s.seed, url))
}

// Add implements Store.
func (s *MemoryStore) Add(ctx context.Context, batch []Item, lim Limits) ([]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	recs := make([]record, len(batch))
	for i := range batch {
		r, err := toRecord(batch[i])
		if err != nil {
			return nil, err
		}
		recs[i] = r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	refused := make([]error, len(batch))
	for i := range batch {
		it := &batch[i]
		if err := s.sched.Admit(it, lim); err != nil {
			refused[i] = err
			continue
		}
		if s.markSeen(it.URL) {
			refused[i] = ErrSeen
			continue
		}
		s.queue(it.Key).pushBack(recs[i])
		s.sched.Queue(it, lim)
	}
	return refused, nil
}

// Claim implements Store.
func (s *MemoryStore) Claim(ctx context.Context, now time.Time, opt ClaimOptions) (Claim, error) {
	if err := ctx.Err(); err != nil {
		return Claim{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	for {
		key, host, next, ok := s.sched.Claim(now, opt)
		if !ok {
			return Claim{Next: next, Idle: s.sched.Idle()}, nil
		}
		q := s.queues[key]
		if q == nil || q.n == 0 {
			s.sched.End(key, now, Outcome{Pace: host}, false)
			s.sched.Lost(key)
			continue
		}
		r := q.popFront()
		if q.n == 0 {
			delete(s.queues, key) // memory follows the hosts with queued work
		}
		s.token++
		s.leases[s.token] = leaseRecord{key: key, item: true, rec: r}
		return Claim{Lease: &Lease{Item: r.item(key), Pace: host, Token: s.token, GivenUp: s.sched.GivenUp(key)}}, nil
	}
}

// ClaimKey implements Store.
func (s *MemoryStore) ClaimKey(ctx context.Context, key string, now time.Time, opt ClaimOptions) (*Lease, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	host, next, ok := s.sched.ClaimKey(key, now, opt)
	if !ok {
		return nil, next, nil
	}
	s.token++
	s.leases[s.token] = leaseRecord{key: key}
	return &Lease{Item: Item{Key: key}, Pace: host, Token: s.token}, time.Time{}, nil
}

// end ends lease l, requeueing its item at the front when requeue.
func (s *MemoryStore) end(ctx context.Context, l *Lease, now time.Time, o Outcome, requeue bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	lr, ok := s.leases[l.Token]
	if !ok || lr.key != l.Key {
		return ErrLeaseLost
	}
	delete(s.leases, l.Token)
	requeue = requeue && lr.item
	if requeue {
		r, err := toRecord(l.Item) // with what the item has been through since
		if err != nil {
			r = lr.rec
		}
		s.queue(l.Key).pushFront(r)
	}
	s.sched.End(l.Key, now, o, requeue)
	if o.Checkpoint != nil {
		s.checkpoint = slices.Clone(o.Checkpoint)
	}
	return nil
}

// Done implements Store.
func (s *MemoryStore) Done(ctx context.Context, l *Lease, now time.Time, o Outcome) error {
	return s.end(ctx, l, now, o, false)
}

// Requeue implements Store.
func (s *MemoryStore) Requeue(ctx context.Context, l *Lease, now time.Time, o Outcome) error {
	return s.end(ctx, l, now, o, true)
}

// GiveUp implements Store.
func (s *MemoryStore) GiveUp(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	s.sched.GiveUp(key)
	return nil
}

// Host implements Store.
func (s *MemoryStore) Host(ctx context.Context, key string) (ratelimit.HostState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sched.Host(key), nil
}

// Counts implements Store.
func (s *MemoryStore) Counts(ctx context.Context, now time.Time) (Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sched.Counts(now), nil
}

// Meta implements Store.
func (s *MemoryStore) Meta(ctx context.Context, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	return slices.Clone(s.meta[name]), nil
}

// SetMeta implements Store.
func (s *MemoryStore) SetMeta(ctx context.Context, name string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lazyInit()
	s.meta[name] = slices.Clone(value)
	return nil
}

// Checkpoint implements Store.
func (s *MemoryStore) Checkpoint(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.checkpoint), nil
}

// Close implements Store; a MemoryStore has nothing to release.
func (s *MemoryStore) Close() error { return nil }

// Len returns the number of items queued under key.
func (s *MemoryStore) Len(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[key]; q != nil {
		return int(q.n)
	}
	return 0
}

func (s *MemoryStore) queue(key string) *ring {
	q := s.queues[key]
	if q == nil {
		q = new(ring)
		s.queues[key] = q
	}
	return q
}

// item returns the Item r holds, queued under key.
func (r record) item(key string) Item {
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
		it.Retries, it.Redirects, it.SitemapDepth, it.Meta = h.retries, h.redirects, h.sitemapDepth, h.meta
	}
	return it
}

func toRecord(it Item) (record, error) {
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
	if it.Retries != 0 || len(it.Redirects) > 0 || it.SitemapDepth != 0 || len(it.Meta) > 0 {
		r.history = &history{retries: it.Retries, redirects: it.Redirects, sitemapDepth: it.SitemapDepth, meta: it.Meta}
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
