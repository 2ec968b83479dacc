package frontier

// hashSet is a set of 64-bit hashes: 256 open-addressing tables with
// linear probing, picked by the hash's top byte. It exists because a Go
// map[uint64]struct{} costs 27–38 bytes an entry; this costs 8 bytes a
// slot at a load of 0.4–0.8, 10–20 bytes an entry. Sharding also bounds
// the pause of a resize to 1/256 of the set, which matters because the
// Frontier holds its lock meanwhile.
type hashSet struct {
	shards [256]hashShard
	n      int
}

type hashShard struct {
	slots []uint64 // 0 marks an empty slot; len is 0 or a power of two
	n     int
}

// add inserts h and reports whether it was absent. Hash 0 is stored as 1
// so that 0 can mark empty slots; that merges two hashes out of 2⁶⁴.
func (s *hashSet) add(h uint64) bool {
	if h == 0 {
		h = 1
	}
	sh := &s.shards[h>>56]
	if (sh.n+1)*5 > len(sh.slots)*4 { // keep load ≤ 0.8
		sh.resize(max(2*len(sh.slots), 16))
	}
	if !sh.insert(h) {
		return false
	}
	sh.n++
	s.n++
	return true
}

func (sh *hashShard) insert(h uint64) bool {
	mask := uint64(len(sh.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch sh.slots[i] {
		case h:
			return false
		case 0:
			sh.slots[i] = h
			return true
		}
	}
}

func (sh *hashShard) resize(size int) {
	old := sh.slots
	sh.slots = make([]uint64, size)
	for _, h := range old {
		if h != 0 {
			sh.insert(h)
		}
	}
}
