package redisstore

// Items done whose leases were lost: a process writes a page's record
// before it ends the page's lease, so a lease lost in between (its member
// presumed dead, a failover that lost the claim) leaves a page written and
// not done in Redis. If the same Store is handed it again, it ends the
// lease at once instead of handing it to a worker: no page is written
// twice by one process. Another process fetches it again, once — as after
// kill -9.

import (
	"errors"

	"github.com/heedcrawl/heed/frontier"
)

// lostMax bounds how many such items a Store remembers: a process that
// lost more than that (many runs at once) may write one of the others
// twice.
const lostMax = 1 << 16

// lostItem is an item done under a lease that was lost, with the revisit
// its Done carried.
type lostItem struct {
	url     string
	revisit *frontier.Item
}

// runDone returns the items of l's run whose Dones were held back, nil if
// l is no run's.
func (s *Store) runDone(l *frontier.Lease) []lostItem {
	if l == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[l.Token]; r != nil && r.key == l.Key {
		return append([]lostItem(nil), r.doneItems...)
	}
	return nil
}

// noteLost remembers, if err says l was lost, the items done under it:
// done, those of its run, and l's own unless it was requeued.
func (s *Store) noteLost(err error, l *frontier.Lease, o frontier.Outcome, requeue bool, done []lostItem) {
	if !errors.Is(err, frontier.ErrLeaseLost) || l == nil || s.opt.FixedLeases {
		// With FixedLeases a lease expires while its worker is slow:
		// its item is fetched again, by whichever process.
		return
	}
	if !requeue && l.URL != "" {
		done = append(done, lostItem{url: l.URL, revisit: o.Revisit})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range done {
		if s.lost == nil {
			s.lost = make(map[string]*frontier.Item)
		}
		if len(s.lost) < lostMax {
			s.lost[it.url] = it.revisit
		}
	}
}

// takeLost reports whether l's item is one this Store did under a lease it
// lost, forgets it, and returns the revisit its Done carried.
func (s *Store) takeLost(l *frontier.Lease) (*frontier.Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.URL == "" || len(s.lost) == 0 {
		return nil, false
	}
	rv, ok := s.lost[l.URL]
	if ok {
		delete(s.lost, l.URL)
	}
	return rv, ok
}
