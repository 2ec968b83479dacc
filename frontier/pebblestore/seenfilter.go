package pebblestore

import (
	"hash/maphash"
	"sync/atomic"
	"unsafe"
)

// seenFilter is a bloom filter over the seen-set, in memory: Add asks it
// first, and only a URL it may hold is looked up on disk. It is rebuilt
// from the seen-set on Open, so its hash needs no fixed seed.
//
// It is a chain of blocked bloom filters, each twice the capacity of the
// one before: a URL is added to the last, and looked up in all. Each holds
// 8 bits a URL and sets 6 bits of one 512-bit block (one cache line), for
// a false positive rate of about 2.5% while it is not over capacity; the
// chain's rate is about the sum of its filters' (a few percent), and its
// memory about 1 to 2 bytes a URL, allocated outside the Go heap, so that
// the garbage collector neither scans it nor doubles it.
//
// One goroutine at a time adds (the Store's, under its lock); mayContain
// may run beside it: the chain is swapped whole when it grows, and bits
// are set and read atomically.
type seenFilter struct {
	seed  maphash.Seed
	parts atomic.Pointer[[]bloomPart]
}

// bloomPart is one filter of the chain.
type bloomPart struct {
	blocks   [][blockWords]uint64
	cap, n   int
	mem      []byte // what offHeap returned, for freeing
	freeFunc func([]byte)
}

const (
	blockWords   = 8 // 512 bits, one cache line
	bitsPerURL   = 8
	probes       = 6
	minFilterCap = 1 << 20
)

func newSeenFilter(capacity int) *seenFilter {
	f := &seenFilter{seed: maphash.MakeSeed()}
	f.parts.Store(new([]bloomPart))
	f.grow(max(capacity, minFilterCap))
	return f
}

// grow adds a filter of capacity to the chain, in a new chain: readers
// keep the one they loaded.
func (f *seenFilter) grow(capacity int) {
	nblocks := (capacity*bitsPerURL + 511) / 512
	mem, free := offHeap(nblocks * blockWords * 8)
	old := *f.parts.Load()
	parts := append(old[:len(old):len(old)], bloomPart{
		blocks:   bytesToBlocks(mem, nblocks),
		cap:      capacity,
		mem:      mem,
		freeFunc: free,
	})
	f.parts.Store(&parts)
}

// hash returns the hash of url that the filter, and the Store's seenCache,
// go by.
func (f *seenFilter) hash(url string) uint64 { return maphash.String(f.seed, url) }

// hashBytes returns the hash of the URL in url.
func (f *seenFilter) hashBytes(url []byte) uint64 { return maphash.Bytes(f.seed, url) }

// add adds url.
func (f *seenFilter) add(url string) { f.addHash(f.hash(url)) }

// addHash adds the URL of hash h.
func (f *seenFilter) addHash(h uint64) {
	parts := *f.parts.Load()
	p := &parts[len(parts)-1]
	if p.n >= p.cap {
		total := 0
		for i := range parts {
			total += parts[i].cap
		}
		f.grow(total) // doubling the chain's capacity
		parts = *f.parts.Load()
		p = &parts[len(parts)-1]
	}
	p.n++
	b := &p.blocks[blockIndex(h, len(p.blocks))]
	for i := range probes {
		bit := bitAt(h, i)
		atomic.OrUint64(&b[bit/64], 1<<(bit%64))
	}
}

// mayContain reports whether url may have been added: false means it was
// not.
func (f *seenFilter) mayContain(url string) bool { return f.mayContainHash(f.hash(url)) }

// mayContainHash reports whether the URL of hash h may have been added.
func (f *seenFilter) mayContainHash(h uint64) bool {
	parts := *f.parts.Load()
	for i := range parts {
		p := &parts[i]
		b := &p.blocks[blockIndex(h, len(p.blocks))]
		found := true
		for j := range probes {
			bit := bitAt(h, j)
			if atomic.LoadUint64(&b[bit/64])&(1<<(bit%64)) == 0 {
				found = false
				break
			}
		}
		if found {
			return true
		}
	}
	return false
}

// bytes returns the memory the filter holds.
func (f *seenFilter) bytes() int {
	n := 0
	for _, p := range *f.parts.Load() {
		n += len(p.mem)
	}
	return n
}

// free gives the filter's memory back; the filter is unusable after.
func (f *seenFilter) free() {
	for _, p := range *f.parts.Load() {
		p.freeFunc(p.mem)
	}
	f.parts.Store(new([]bloomPart))
}

// blockIndex maps h's high half onto n blocks (Lemire's multiply-shift).
func blockIndex(h uint64, n int) int {
	return int((h >> 32) * uint64(n) >> 32)
}

// bitAt returns the i-th bit of a block to set for h: 9 bits each of a
// remix of h (splitmix64's finaliser), so that the bits in a block do not
// follow from which block it is.
func bitAt(h uint64, i int) uint {
	m := h
	m ^= m >> 30
	m *= 0xbf58476d1ce4e5b9
	m ^= m >> 27
	m *= 0x94d049bb133111eb
	m ^= m >> 31
	return uint(m>>(9*i)) & 511
}

// bytesToBlocks views mem, which is aligned to at least 8 bytes, as n
// blocks.
func bytesToBlocks(mem []byte, n int) [][blockWords]uint64 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*[blockWords]uint64)(unsafe.Pointer(unsafe.SliceData(mem))), n)
}

// onHeap returns n bytes of zeroed Go memory, 8-byte aligned.
func onHeap(n int) ([]byte, func([]byte)) {
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), n), func([]byte) {}
}
