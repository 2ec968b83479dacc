package pebblestore

import (
	"math/rand/v2"
	"testing"
)

func TestSeenCacheKeepsWhatFits(t *testing.T) {
	c := newSeenCache(1 << 20) // 16,384 buckets, 131,072 slots
	defer c.release()
	r := rand.New(rand.NewPCG(1, 2))
	hashes := make([]uint64, 95_000) // 72% of the slots at the largest table
	for i := range hashes {
		hashes[i] = r.Uint64()
		c.added(hashes[i])
		c.answered(1) // as many links to pages seen as URLs added: it grows
	}
	if got := c.active.Load(); got != c.max {
		t.Fatalf("buckets in use %d, want all %d after %d adds", got, c.max, len(hashes))
	}
	kept := 0
	for _, h := range hashes {
		if c.contains(h) {
			kept++
		}
	}
	// Eight slots a bucket at a load of 0.72: about 5% of the hashes lose
	// their place to eight later ones of their bucket (Poisson), and each
	// split keeps every hash.
	if kept < len(hashes)*94/100 {
		t.Errorf("kept %d of %d hashes", kept, len(hashes))
	}
	for range 100_000 {
		if h := r.Uint64(); c.contains(h) {
			t.Fatalf("hash %x never added is in the cache", h)
		}
	}
}

// A crawl whose links never lead to pages seen keeps the cache at its
// smallest: its memory goes to a crawl that has use for it. Links to pages
// seen make it grow, answered by it or found on disk: a cache too small to
// hold them grows all the same.
func TestSeenCacheGrowsWithLinksToPagesSeen(t *testing.T) {
	c := newSeenCache(16 << 20)
	defer c.release()
	r := rand.New(rand.NewPCG(5, 6))
	const n = freeBuckets * ways // twice what fills freeBuckets by half
	for range n {
		c.added(r.Uint64())
	}
	if got := c.active.Load(); got != freeBuckets {
		t.Errorf("%d buckets in use after %d adds and no link to a page seen, want %d", got, n, freeBuckets)
	}
	for range n/8 + 1 { // an eighth of the URLs added
		c.found(r.Uint64())
	}
	c.added(r.Uint64())
	if got := c.active.Load(); got != freeBuckets*2 {
		t.Errorf("%d buckets in use once links led to pages seen on disk, want %d", got, freeBuckets*2)
	}
}

func TestSeenCacheSplitKeepsEveryHash(t *testing.T) {
	c := newSeenCache(1 << 20)
	defer c.release()
	r := rand.New(rand.NewPCG(3, 4))
	var hashes []uint64
	// Fill the smallest table just under its growth point, one hash a
	// bucket, then grow it: each hash must be found after every split.
	for b := range uint64(minCacheBuckets) {
		h := r.Uint64()&^uint64(minCacheBuckets-1) | b
		hashes = append(hashes, h)
		c.found(h)
	}
	for n := c.active.Load(); n < c.max; n = c.active.Load() {
		c.split(n)
		for _, h := range hashes {
			if !c.contains(h) {
				t.Fatalf("hash %x lost when the table grew to %d buckets", h, c.active.Load())
			}
		}
	}
}

func TestSeenCacheNewestStays(t *testing.T) {
	c := newSeenCache(1 << 16) // the smallest table only
	defer c.release()
	n := c.active.Load()
	var in []uint64 // hashes of one bucket, oldest first
	for i := range uint64(ways + 1) {
		in = append(in, 5+i*n)
		c.found(in[i])
	}
	if c.contains(in[0]) {
		t.Errorf("the oldest of %d hashes in a %d-slot bucket is still in", ways+1, ways)
	}
	for _, h := range in[1:] {
		if !c.contains(h) {
			t.Errorf("hash %x, one of the newest %d of its bucket, is not in", h, ways)
		}
	}
	c.found(in[1]) // already in: no change of order, it stays the oldest
	c.found(in[0])
	if !c.contains(in[0]) || c.contains(in[1]) {
		t.Errorf("after the oldest came back: %v %v, want %x dropped", c.contains(in[0]), c.contains(in[1]), in[1])
	}
}

func TestSeenCacheOff(t *testing.T) {
	c := newSeenCache(-1)
	c.added(7)
	c.found(7)
	if c.contains(7) {
		t.Error("a cache of no memory holds a hash")
	}
	c.release()
}
