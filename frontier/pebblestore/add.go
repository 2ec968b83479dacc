package pebblestore

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/heedcrawl/heed/frontier"
)

// Add implements frontier.Store. It marks each new URL seen and queues it,
// with its key's record, in one batch.
func (s *Store) Add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pre, gen, err := s.seenBefore(batch)
	if err != nil {
		return nil, s.readFailed(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	refused, err := s.addTo(b, batch, lim, "", pre, gen)
	if err != nil {
		return nil, err
	}
	if err := s.apply(b); err != nil {
		return nil, err
	}
	s.addedSeen(batch, refused)
	return refused, nil
}

// DoneAdding implements frontier.DoneAdder: Add and Done in one batch, which
// writes the record of the page's own key, where most of its links go,
// once.
func (s *Store) DoneAdding(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	pre, gen, err := s.seenBefore(batch)
	if err != nil {
		return nil, s.readFailed(err)
	}
	unlock, err := s.lockToEnd(ctx, o)
	if err != nil {
		return nil, err
	}
	defer unlock()
	b := s.db.NewBatch()
	defer b.Close()
	ls, held := s.leases[l.Token]
	ackErr := frontier.ErrLeaseLost
	if held = held && ls.key == l.Key; held {
		ackErr = checkRevisit(l, ls, o)
		held = ackErr == nil
	}
	skip := ""
	if held {
		skip = l.Key // endTo writes its record
	}
	refused, err := s.addTo(b, batch, lim, skip, pre, gen)
	if err != nil {
		return nil, err
	}
	var q *queue
	if held {
		if q, ackErr = s.endTo(b, l, ls, now, o, false); q == nil {
			return nil, ackErr // the Store failed
		}
	}
	if err := s.apply(b); err != nil {
		return nil, err
	}
	s.addedSeen(batch, refused)
	if q != nil {
		s.forgetIfIdle(l.Key, q)
	}
	return refused, ackErr
}

// addTo writes into b what Add does for batch, and changes the Store's
// state in memory accordingly, but for the filter over the seen-set, which
// addedSeen updates once b is applied. It writes no record for key skip.
// pre and gen are seenBefore's answer: the URLs it found seen are, and
// those it did not need no second look while no URL was added since.
// s.mu is held.
func (s *Store) addTo(b *pebble.Batch, batch []frontier.Item, lim frontier.Limits, skip string, pre []bool, gen uint64) ([]error, error) {
	trust := gen == s.seenCount
	refused := make([]error, len(batch))
	touched := s.touched[:0]
	clear(s.inBatch)
	var rep frontier.Item // an item refused by a limit, to be reported
	for i := range batch {
		it := &batch[i]
		why := frontier.NotRefused
		if !it.SeenOnly {
			if err := s.sched.Admit(it, lim); err != nil {
				if why = frontier.ToReport(it, err); why == frontier.NotRefused {
					refused[i] = err
					continue
				}
			}
		}
		seen, err := s.seenNow(it.URL, pre[i], len(batch) > 1, trust)
		if err != nil {
			return nil, err
		}
		if seen {
			refused[i] = frontier.ErrSeen
			continue
		}
		if len(batch) > 1 {
			if s.inBatch == nil {
				s.inBatch = make(map[string]struct{})
			}
			s.inBatch[it.URL] = struct{}{}
		}
		if it.SeenOnly {
			b.Set(seenKey(s.scratch[:0], it.URL), nil, nil)
			continue
		}
		if why != frontier.NotRefused {
			// Marked seen and queued to be reported, in this batch: once,
			// across any stop (see frontier.Store.Add).
			rep = *it
			rep.Refused = why
			it, refused[i] = &rep, why.Reported()
		}
		q, err := s.queue(it.Key)
		if err != nil {
			return nil, err
		}
		b.Set(seenKey(s.scratch[:0], it.URL), nil, nil)
		s.queueItem(b, it.Key, q, it, it.Visit != nil)
		s.sched.Queue(it, lim)
		touched = s.touch(touched, it.Key)
	}
	for _, key := range touched {
		q := s.queues[key]
		s.reportHead(key, q)
		if key != skip {
			s.setRecord(b, key, q)
		}
	}
	clear(touched)
	s.touched = touched[:0]
	if len(s.touchedSet) > 1024 {
		s.touchedSet = nil // a huge batch's map is not kept
	}
	clear(s.touchedSet)
	if len(s.inBatch) > 1024 {
		s.inBatch = nil // a huge batch's map is not kept
	}
	return refused, nil
}

// seenNow reports whether u is seen, given seenBefore's answer pre (to be
// trusted, if no URL was added since, for a URL it found unseen) and
// whether the batch holds other URLs, which may have added u. s.mu is held.
func (s *Store) seenNow(u string, pre, several, trust bool) (bool, error) {
	if pre {
		return true, nil
	}
	if several && s.inBatch != nil {
		if _, ok := s.inBatch[u]; ok {
			return true, nil
		}
	}
	if trust {
		return false, nil
	}
	h := s.seen.hash(u)
	if !s.seen.mayContainHash(h) {
		return false, nil
	}
	if s.recent.contains(h) {
		s.recent.answered(1)
		return true, nil
	}
	seen, err := s.has(seenKey(s.scratch[:0], u))
	if err != nil {
		return false, s.fail(err)
	}
	if seen {
		s.recent.found(h)
	}
	return seen, nil
}

// addedSeen counts the URLs of batch that were added, and adds them to the
// filter over the seen-set, once their batch is applied. s.mu is held.
func (s *Store) addedSeen(batch []frontier.Item, refused []error) {
	for i := range batch {
		if refused[i] == nil || errors.Is(refused[i], frontier.ErrReported) {
			s.seenCount++
			h := s.seen.hash(batch[i].URL)
			s.seen.addHash(h)
			s.recent.added(h)
		}
	}
	s.seenGen.Store(s.seenCount)
}

// touch adds key to touched, the keys an Add queued items of, once.
func (s *Store) touch(touched []string, key string) []string {
	if n := len(touched); n > 0 && touched[n-1] == key {
		return touched // the common case: links to the page's own host
	}
	if len(touched) < 16 {
		if slices.Contains(touched, key) {
			return touched
		}
		return append(touched, key)
	}
	if s.touchedSet == nil {
		s.touchedSet = make(map[string]struct{})
	}
	if len(s.touchedSet) == 0 {
		for _, k := range touched {
			s.touchedSet[k] = struct{}{}
		}
	}
	if _, ok := s.touchedSet[key]; ok {
		return touched
	}
	s.touchedSet[key] = struct{}{}
	return append(touched, key)
}

// seenBefore reports, for each URL of batch, whether it was seen before:
// looked up outside s.mu, in the filter and, for those it lets by, in the
// cache of recent URLs, then on disk. A URL seen stays seen, so a true
// answer holds; a false one must be checked again under the lock only if
// URLs were added since (gen, the count of URLs seen when the lookups
// began, says).
func (s *Store) seenBefore(batch []frontier.Item) (seen []bool, gen uint64, err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.dbClosed || s.broken.Load() {
		return nil, 0, ErrClosed
	}
	gen = s.seenGen.Load()
	seen = make([]bool, len(batch))
	hits := 0
	defer func() { s.recent.answered(hits) }()
	for i := range batch {
		h := s.seen.hash(batch[i].URL)
		if !s.seen.mayContainHash(h) {
			continue
		}
		if s.recent.contains(h) {
			seen[i] = true
			hits++
			continue
		}
		_, closer, err := s.db.Get(seenKey(nil, batch[i].URL))
		switch {
		case err == nil:
			closer.Close()
			seen[i] = true
			s.recent.found(h)
		case !errors.Is(err, pebble.ErrNotFound):
			return nil, 0, err
		}
	}
	return seen, gen, nil
}
