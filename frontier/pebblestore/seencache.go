package pebblestore

import (
	"sync/atomic"
	"unsafe"
)

// seenCache holds the hashes of the URLs added to the seen-set, and of
// those found in it, as many as fit: it answers "seen" for them without a
// lookup in pebble. Most links a crawl finds go to pages it has seen,
// and the filter over the seen-set, which lets every such URL by, cannot
// tell them from new ones; on bench workload (e) these lookups were the
// Store's largest cost (2.1 million pebble Gets, 12 CPU-s of a 108-s
// crawl).
//
// The cache is a table of buckets of eight 64-bit hashes (the filter's
// hash of the URL), newest first, a bucket one cache line. A bucket is
// chosen by the low bits of the hash, so a URL is taken for seen wrongly
// only when its hash equals one of its bucket's in all the other bits: at
// a table of 16 MB (2^18 buckets), about once in 2^43 lookups of URLs
// never seen, as rarely as by MemoryStore's 64-bit fingerprints of a crawl
// of two million URLs.
//
// The table's memory is reserved at its largest, outside the Go heap, but
// only the buckets in use take memory: the table starts small and doubles
// while its hashes fill half of it and links lead to pages seen (a crawl
// whose links rarely do keeps it small), by linear hashing, each
// bucket splitting in place into itself and its twin in the new half. A
// lookup beside a split may miss a hash being moved: a cache miss, which
// costs a lookup in pebble, never a wrong answer.
//
// One goroutine at a time adds new URLs and grows the table (the Store's,
// under its lock); lookups, and adds of the URLs found seen on disk, may
// run beside it: every slot is read and written atomically.
type seenCache struct {
	slots   []uint64 // ways per bucket; buckets [0, active) in use
	active  atomic.Uint64
	max     uint64 // buckets the memory holds
	entries uint64 // new URLs added: the table's load

	// seen counts the lookups of URLs seen, answered here or found on
	// disk. Past freeBuckets, the table grows only while they number at
	// least an eighth of the URLs added: a crawl whose links rarely lead
	// to pages seen keeps it small.
	seen atomic.Uint64
	mem  []byte
	free func([]byte)
}

const (
	ways            = 8 // a bucket is one 64-byte cache line
	minCacheBuckets = 1 << 10
	freeBuckets     = 1 << 15 // 2 MB, which the table grows to whatever the crawl
)

// newSeenCache returns a cache of at most size bytes (a power of two
// buckets of 64 bytes, at least 64 KB); zero or less means no cache.
func newSeenCache(size int) *seenCache {
	c := new(seenCache)
	if size <= 0 {
		return c
	}
	c.max = minCacheBuckets
	for c.max*2*ways*8 <= uint64(size) {
		c.max *= 2
	}
	c.mem, c.free = offHeap(int(c.max) * ways * 8)
	c.slots = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(c.mem))), c.max*ways)
	c.active.Store(minCacheBuckets)
	return c
}

// bucket returns the slots of h's bucket among n.
func (c *seenCache) bucket(h, n uint64) []uint64 {
	i := (h & (n - 1)) * ways
	return c.slots[i : i+ways : i+ways]
}

// contains reports whether h is in the cache.
func (c *seenCache) contains(h uint64) bool {
	if c.max == 0 {
		return false
	}
	h = nonZero(h)
	b := c.bucket(h, c.active.Load())
	for i := range b {
		if atomic.LoadUint64(&b[i]) == h {
			return true
		}
	}
	return false
}

// found adds h, the hash of a URL found seen on disk.
func (c *seenCache) found(h uint64) {
	if c.max == 0 {
		return
	}
	c.seen.Add(1)
	c.put(h)
}

// put puts h in its bucket.
func (c *seenCache) put(h uint64) {
	h = nonZero(h)
	put(c.bucket(h, c.active.Load()), h)
}

// added adds h, the hash of a URL new to the seen-set, growing the table
// while it is more than half full: fuller, a bucket more often overflows,
// and the hash it loses is lost for good, a split moving only what is in. Only the owner calls it.
func (c *seenCache) added(h uint64) {
	if c.max == 0 {
		return
	}
	c.put(h)
	c.entries++
	if n := c.active.Load(); c.entries > n*ways/2 && n < c.max &&
		(n < freeBuckets || c.seen.Load()*8 >= c.entries) {
		c.split(n)
	}
}

// answered counts n lookups that the cache answered.
func (c *seenCache) answered(n int) {
	if n > 0 {
		c.seen.Add(uint64(n))
	}
}

// put puts h first in bucket b, the others moving one place back and the
// oldest out, unless b holds it.
func put(b []uint64, h uint64) {
	for i := range b {
		if atomic.LoadUint64(&b[i]) == h {
			return
		}
	}
	for i := len(b) - 1; i > 0; i-- {
		atomic.StoreUint64(&b[i], atomic.LoadUint64(&b[i-1]))
	}
	atomic.StoreUint64(&b[0], h)
}

// split doubles the buckets in use from n: the hashes of each bucket whose
// bit n is set move, in their order, to its twin, which was never in use.
func (c *seenCache) split(n uint64) {
	var stay, move [ways]uint64
	for i := range n {
		b, twin := c.slots[i*ways:(i+1)*ways], c.slots[(i+n)*ways:(i+n+1)*ways]
		ns, nm := 0, 0
		for j := range b {
			switch h := atomic.LoadUint64(&b[j]); {
			case h == 0:
			case h&n != 0:
				move[nm], nm = h, nm+1
			default:
				stay[ns], ns = h, ns+1
			}
		}
		if nm == 0 {
			continue
		}
		clear(move[nm:])
		clear(stay[ns:])
		for j := range ways {
			atomic.StoreUint64(&twin[j], move[j])
			atomic.StoreUint64(&b[j], stay[j])
		}
	}
	c.active.Store(n * 2)
}

// bytes returns the memory the buckets in use take.
func (c *seenCache) bytes() int { return int(c.active.Load()) * ways * 8 }

// release gives the memory back; the cache holds nothing after.
func (c *seenCache) release() {
	if c.max == 0 {
		return
	}
	c.max = 0
	c.free(c.mem)
	c.mem, c.slots = nil, nil
}

// nonZero maps h to a hash that is not 0, the empty slot.
func nonZero(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}
