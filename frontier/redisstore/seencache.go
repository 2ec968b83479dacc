package redisstore

// A Store's memory of URLs known seen in Redis: most links of a page were
// seen before, and a link dropped here costs Redis nothing.

import (
	"encoding/binary"
	"errors"
	"sync/atomic"

	"github.com/heedcrawl/heed/frontier"
)

// seenCacheSlots is the size of a Store's seen cache: 8 bytes a slot,
// 4 MiB.
const seenCacheSlots = 1 << 19

// seenCache holds fingerprints of URLs the Store knows are in the job's
// seen-set: it added them, or Redis refused them as seen. It is lossy —
// a fingerprint overwrites the one in its slot — and only answers "seen
// for sure" (a URL the cache does not hold goes to Redis as before). The
// seen-set only grows, except when Redis loses writes (a restart, a
// failover: see the package documentation, Failover); the cache is
// cleared whenever the Store sees a sign of one (resetSeen).
type seenCache struct {
	slots atomic.Pointer[[]atomic.Uint64] // 0: empty; replaced whole by reset
}

func newSeenCache() *seenCache {
	c := new(seenCache)
	c.reset()
	return c
}

// fingerprint returns the cache's number of a seen-set member of the
// hash kind (8 bytes), never 0.
func fingerprint(member string) uint64 {
	return max(binary.BigEndian.Uint64([]byte(member)), 1)
}

func (c *seenCache) has(fp uint64) bool {
	return (*c.slots.Load())[fp%seenCacheSlots].Load() == fp
}

func (c *seenCache) add(fp uint64) {
	(*c.slots.Load())[fp%seenCacheSlots].Store(fp)
}

// reset forgets every fingerprint: Redis may have lost some. The table
// is replaced (its memory is the operating system's until used), not
// cleared; an add racing with it may land in the old one, and be lost.
func (c *seenCache) reset() {
	slots := make([]atomic.Uint64, seenCacheSlots)
	c.slots.Store(&slots)
}

// seenFilter drops from batch the items the Store knows seen, if it may:
// those no limit of lim applies to (Redis checks the limits before the
// seen-set, and reports a link over a limit as such).
// It returns the items left, their indexes in batch, and batch's
// refusals so far (ErrSeen for those dropped); a nil refused when none
// was dropped.
func (s *Store) seenFilter(batch []frontier.Item, lim frontier.Limits) (left []frontier.Item, idx []int, refused []error) {
	c := s.seenCache
	if c == nil {
		return batch, nil, nil
	}
	for i := range batch {
		it := &batch[i]
		if unlimited(it, lim) && c.has(fingerprint(s.seenMember(it.URL))) {
			if refused == nil {
				refused = make([]error, len(batch))
			}
			refused[i] = frontier.ErrSeen
		}
	}
	if refused == nil {
		return batch, nil, nil
	}
	for i := range batch {
		if refused[i] == nil {
			left = append(left, batch[i])
			idx = append(idx, i)
		}
	}
	return left, idx, refused
}

// unlimited reports whether Redis answers ErrSeen for it, a URL the
// seen-set holds, whatever lim (add.lua): a page refused by a page limit
// is seen if it was, as it is marked seen if not (frontier.ErrReported),
// but a sitemap budget refuses before the seen-set is asked.
func unlimited(it *frontier.Item, lim frontier.Limits) bool {
	switch {
	case it.SeenOnly:
		return true
	case it.Kind == frontier.KindSitemap:
		return lim.MaxSitemapsPerHost <= 0
	}
	return !it.FromSitemap || lim.MaxSitemapURLsPerHost <= 0
}

// seenLearn notes the answers Redis gave for batch: an item added,
// refused as seen or queued to be reported is in the seen-set.
func (s *Store) seenLearn(batch []frontier.Item, refused []error) {
	c := s.seenCache
	if c == nil || refused == nil {
		return
	}
	for i := range batch {
		if refused[i] == nil || refused[i] == frontier.ErrSeen || errors.Is(refused[i], frontier.ErrReported) {
			c.add(fingerprint(s.seenMember(batch[i].URL)))
		}
	}
}

// resetSeen clears the seen cache: Redis may have lost writes.
func (s *Store) resetSeen() {
	if s.seenCache != nil {
		s.seenCache.reset()
	}
}
