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

// runDone returns, if the Store holds l (a lease it ended already is
// not lost when its Done is refused), l's own item, unless it is
// requeued, and those of l's run whose Dones were held back: the items
// its end would leave done by this process if the lease was lost.
func (s *Store) runDone(l *frontier.Lease, o frontier.Outcome, requeue bool) []lostItem {
	if l == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.held[l.Token]; !ok {
		return nil
	}
	var done []lostItem
	if r := s.runs[l.Token]; r != nil && r.key == l.Key {
		done = append(done, r.doneItems...)
	}
	if !requeue && l.URL != "" {
		done = append(done, lostItem{url: l.URL, revisit: o.Revisit})
	}
	return done
}

// noteLost remembers done (runDone), if err says their lease was lost.
func (s *Store) noteLost(err error, done []lostItem) {
	if !errors.Is(err, frontier.ErrLeaseLost) || len(done) == 0 || s.opt.FixedLeases {
		// With FixedLeases a lease expires while its worker is slow:
		// its item is fetched again, by whichever process.
		return
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
