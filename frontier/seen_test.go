package frontier

import (
	"hash/maphash"
	"strconv"
	"testing"
)

func TestHashSet(t *testing.T) {
	var s hashSet
	seed := maphash.MakeSeed()
	const n = 100_000
	for i := range n {
		if !s.add(maphash.String(seed, strconv.Itoa(i))) {
			t.Fatalf("add(%d) of a new hash reported a duplicate", i)
		}
	}
	for i := range n {
		if s.add(maphash.String(seed, strconv.Itoa(i))) {
			t.Fatalf("add(%d) of a present hash reported new", i)
		}
	}
	if s.n != n {
		t.Fatalf("n = %d, want %d", s.n, n)
	}
	// 0 is reserved for empty slots and folds into 1.
	if !s.add(0) || s.add(1) || s.add(0) {
		t.Error("hash 0 not stored as 1")
	}
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.n*5 > len(sh.slots)*4 {
			t.Fatalf("shard %d: load %d/%d above 0.8", i, sh.n, len(sh.slots))
		}
	}
}

func BenchmarkHashSetAdd(b *testing.B) {
	var s hashSet
	seed := maphash.MakeSeed()
	var x uint64
	for b.Loop() {
		x++
		s.add(maphash.Comparable(seed, x))
	}
}

func BenchmarkMapAdd(b *testing.B) {
	m := map[uint64]struct{}{}
	seed := maphash.MakeSeed()
	var x uint64
	for b.Loop() {
		x++
		m[maphash.Comparable(seed, x)] = struct{}{}
	}
}
