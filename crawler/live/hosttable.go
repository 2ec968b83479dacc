package live

import "sync"

// hostShards is how many parts the host table is split into, each under
// its own lock: a crawl's workers record requests to different hosts at
// once, and with one lock for every host each request would wait on the
// others' and move the lock's cache line between cores.
const hostShards = 64

// hostTable is the Recorder's per-host records, split by key over
// hostShards shards. A record is only read or changed with its shard's
// lock held.
type hostTable struct {
	shards [hostShards]hostShard
}

// hostShard is one part of the host table.
type hostShard struct {
	mu    sync.Mutex
	hosts map[string]*hostRec
	// Padding to a cache line of its own: the next shard's lock, taken
	// by another worker, does not share this one's line.
	_ [64 - 16]byte
}

// shard returns the shard key's record is in. FNV-1a over the key: keys
// are short host names, hashed in a few nanoseconds, with no allocation.
func (t *hostTable) shard(key string) *hostShard {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return &t.shards[h%hostShards]
}

// lock returns key's shard, locked.
func (t *hostTable) lock(key string) *hostShard {
	s := t.shard(key)
	s.mu.Lock()
	return s
}

// host returns key's record in s, made on first sight with rawURL as its
// URL. s.mu is held.
func (s *hostShard) host(key, rawURL string) *hostRec {
	h := s.hosts[key]
	if h == nil {
		if s.hosts == nil {
			s.hosts = map[string]*hostRec{}
		}
		h = &hostRec{key: key}
		s.hosts[key] = h
	}
	if h.url == "" && rawURL != "" {
		h.url = rawURL
	}
	return h
}

// each calls f for every host record and its key, one shard at a time
// with that shard's lock held (so f must not take another), and returns
// how many records there were. The key is the map's, read without
// touching the record: a pass that needs only keys (the host table by
// name) reads no record.
func (t *hostTable) each(f func(key string, h *hostRec)) (n int) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.hosts)
		for k, h := range s.hosts {
			f(k, h)
		}
		s.mu.Unlock()
	}
	return n
}

// get returns f's result for key's record with its shard's lock held;
// false if the crawl has not met the host.
func get[T any](t *hostTable, key string, f func(h *hostRec) T) (T, bool) {
	s := t.lock(key)
	defer s.mu.Unlock()
	h := s.hosts[key]
	if h == nil {
		var zero T
		return zero, false
	}
	return f(h), true
}
