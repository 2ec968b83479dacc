package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// runEdits runs the cases of frontier.QueueEditor, for a Store that is
// one.
func runEdits(t *testing.T, h Harness, open func(t *testing.T) frontier.Store) {
	if _, ok := open(t).(frontier.QueueEditor); !ok {
		return
	}
	t.Run("EditQueued", func(t *testing.T) { testEditQueued(t, h, open(t)) })
	t.Run("EditQueuedRefused", func(t *testing.T) { testEditQueuedRefused(t, open(t)) })
}

// editQueued calls s.EditQueued and returns the URLs edit was shown, in
// order.
func editQueued(t *testing.T, s frontier.Store, key string, edit func(*frontier.Item) bool) (shown []string, n int, err error) {
	t.Helper()
	n, err = s.(frontier.QueueEditor).EditQueued(ctx, key, func(it *frontier.Item) bool {
		shown = append(shown, it.URL)
		return edit(it)
	})
	slices.Sort(shown)
	return shown, n, err
}

// testEditQueued: EditQueued shows edit the key's queued items with a
// Visit — not those leased, new URLs or other keys' —, each as it was
// queued; an edited item comes back with every field as edited, by its new
// Due (earlier or later), one not edited as it was; and, for stores that
// persist, an edit survives a reopening.
func testEditQueued(t *testing.T, h Harness, s frontier.Store) {
	dues := map[string]time.Time{
		"http://a/1": t0.Add(3 * time.Hour),
		"http://a/2": t0.Add(time.Hour),
		"http://a/3": t0.Add(2 * time.Hour),
		"http://a/4": t0.Add(150 * time.Minute),
		"http://b/1": t0.Add(90 * time.Minute),
	}
	queued := fetchOnce(t, s, t0, dues, item("a", "/1"), item("a", "/2"), item("a", "/3"), item("a", "/4"), item("b", "/1"))
	a5, a6 := item("a", "/5"), item("a", "/6")
	a5.Due = t0.Add(4 * time.Hour)
	a6.Due, a6.Visit = t0.Add(210*time.Minute), visitOf(a6.URL, t0) // added with a Visit: a page held before
	mustAdd(t, s, a5, a6)
	queued[a6.URL] = &a6
	at := t0.Add(time.Hour)
	leased := mustClaim(t, s, at, "http://a/2")

	edited, shown, n, err := editAsSitemap(t, s, queued, at)
	if err != nil {
		t.Fatalf("EditQueued: %v", err)
	}
	if want := []string{"http://a/1", "http://a/3", "http://a/4", "http://a/6"}; !slices.Equal(shown, want) || n != 2 {
		t.Errorf("EditQueued showed %v and stored %d, want %v (a/2 leased, a/5 never fetched) and 2", shown, n, want)
	}
	ack(t, s, leased, at, 0)
	if h.Reopen != nil {
		s = h.Reopen(t, s)
		t.Cleanup(func() { s.Close() })
		at = t0.Add(time.Hour) // nothing due before a/1's new Due, and the Delay of a reopening
	}
	if c := claim(t, s, at, opt); c.Lease != nil || !c.Next.Equal(t0.Add(70*time.Minute)) {
		t.Errorf("Claim at t0+1h after the edit = %+v, want nothing until a/1's new Due, t0+1h10m", c)
	}
	at = t0.Add(70 * time.Minute)
	l := mustClaim(t, s, at, "http://a/1")
	checkRevisit(t, "a/1 edited", l, edited["http://a/1"])
	ack(t, s, l, at, 0)

	// An edit alone, with no lease ending after it, makes its key's first
	// item due sooner.
	if _, n, err := editQueued(t, s, "a", func(it *frontier.Item) bool {
		if it.URL != "http://a/4" {
			return false
		}
		it.Due = t0.Add(80 * time.Minute)
		edited[it.URL] = new(*it)
		return true
	}); err != nil || n != 1 {
		t.Fatalf("EditQueued of a/4 = %d, %v, want 1", n, err)
	}
	at = t0.Add(80 * time.Minute)
	l = mustClaim(t, s, at, "http://a/4")
	checkRevisit(t, "a/4 edited", l, edited["http://a/4"])
	ack(t, s, l, at, 0)

	at = t0.Add(6 * time.Hour)
	var order []string
	for {
		c := claim(t, s, at, opt)
		if c.Lease == nil {
			break
		}
		switch want := c.Lease.URL; want {
		case "http://a/3":
			checkRevisit(t, "a/3 edited", c.Lease, edited[want])
		case "http://a/6", "http://b/1":
			checkRevisit(t, want+" not edited", c.Lease, queued[want])
		}
		if c.Lease.Key == "a" {
			order = append(order, c.Lease.URL)
		}
		ack(t, s, c.Lease, at, 0)
	}
	if want := []string{"http://a/6", "http://a/5", "http://a/3"}; !slices.Equal(order, want) {
		t.Errorf("key a's items after the edit came in the order %v, want %v (by Due)", order, want)
	}
}

// testEditQueuedRefused: an edit that changes an item's URL fails the
// call, and none of its edits is stored.
func testEditQueuedRefused(t *testing.T, s frontier.Store) {
	dues := map[string]time.Time{"http://a/1": t0.Add(time.Hour), "http://a/2": t0.Add(2 * time.Hour)}
	queued := fetchOnce(t, s, t0, dues, item("a", "/1"), item("a", "/2"))
	_, n, err := editQueued(t, s, "a", func(it *frontier.Item) bool {
		it.Due = t0.Add(time.Minute)
		if it.URL == "http://a/2" {
			it.URL = "http://a/other"
		}
		return true
	})
	if !errors.Is(err, frontier.ErrEdit) || n != 0 {
		t.Errorf("EditQueued that changed a URL = %d, %v, want ErrEdit and nothing stored", n, err)
	}
	at := t0.Add(3 * time.Hour)
	for _, want := range []string{"http://a/1", "http://a/2"} {
		l := mustClaim(t, s, at, want)
		checkRevisit(t, want+" after a refused edit", l, queued[want])
		ack(t, s, l, at, 0)
	}
}

// editAsSitemap edits key a's queue as a sitemap read at at would: a/1
// claimed changed, due sooner; a/3 claimed unchanged, due later; nothing
// else. It checks that each item shown is as queued, and returns the items
// as edited and what editQueued returns.
func editAsSitemap(t *testing.T, s frontier.Store, queued map[string]*frontier.Item, at time.Time) (edited map[string]*frontier.Item, shown []string, n int, err error) {
	t.Helper()
	edited = map[string]*frontier.Item{}
	shown, n, err = editQueued(t, s, "a", func(it *frontier.Item) bool {
		if want := queued[it.URL]; want != nil {
			for _, d := range Diff(*want, *it, nil) {
				t.Errorf("EditQueued showed %s: %s", it.URL, d)
			}
		}
		switch it.URL {
		case "http://a/1": // a sitemap claims a change: due sooner
			it.Due = t0.Add(70 * time.Minute)
			it.Lastmod = t0.Add(50 * time.Minute).Truncate(time.Second)
			it.Visit.LastmodRead = at
		case "http://a/3": // a sitemap claims none: due later
			it.Due = t0.Add(5 * time.Hour)
			it.Lastmod = t0.Add(-time.Hour).Truncate(time.Second)
			it.Visit.LastmodRead = at
		default:
			return false
		}
		cp := *it
		edited[it.URL] = &cp
		return true
	})
	return edited, shown, n, err
}
