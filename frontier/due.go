package frontier

import (
	"math"
	"time"
)

// DueCounts is how a Store's queued items fall due, seen from a moment
// now: what a live view of a crawl shows as its frontier. Stores that can
// say cheaply fill one (MemoryStore exactly; pebblestore and redisstore
// from a bounded read, see theirs).
type DueCounts struct {
	// Edges are the upper bounds of the buckets after the first, as
	// durations from now, increasing.
	Edges []time.Duration
	// Counts has len(Edges)+2 buckets: Counts[0] the items due by now
	// (overdue: they wait for their host's turn), Counts[i] those due
	// after now+Edges[i-2] (now for i = 1) and by now+Edges[i-1], and
	// the last those due later than the last edge.
	Counts []int
	// OldestKey and OldestURL are the item that has been due the longest,
	// due at OldestDue; empty if no item is overdue or the Store cannot
	// say.
	OldestKey string
	OldestURL string
	OldestDue time.Time
	// Read is how many items the Store looked at, and Queued how many it
	// holds; Approximate says the Counts were scaled from a part of them
	// (Read < Queued) or are otherwise an estimate the Store documents.
	Read, Queued int
	Approximate  bool
}

// NewDueCounts returns empty DueCounts over edges.
func NewDueCounts(edges []time.Duration) DueCounts {
	return DueCounts{Edges: edges, Counts: make([]int, len(edges)+2)}
}

// Bucket returns the index in Counts of an item due at due, in Unix
// nanoseconds (math.MinInt64 for at once), seen from now.
func (d *DueCounts) Bucket(now, due int64) int {
	if due <= now {
		return 0
	}
	for i, e := range d.Edges {
		if due-now <= int64(e) {
			return i + 1
		}
	}
	return len(d.Edges) + 1
}

// Add counts n items of key due at due (Unix nanoseconds, math.MinInt64
// for at once) seen from now, the first of them url (may be empty).
func (d *DueCounts) Add(now, due int64, n int, key, url string) {
	if n <= 0 {
		return
	}
	d.Counts[d.Bucket(now, due)] += n
	d.Read += n
	if due <= now && due != math.MinInt64 && (d.OldestKey == "" || due < d.OldestDue.UnixNano()) {
		d.OldestKey, d.OldestURL, d.OldestDue = key, url, time.Unix(0, due)
	}
}

// Scale, when the Store read fewer items than it holds, scales the counts
// to queued and marks them Approximate.
func (d *DueCounts) Scale(queued int) {
	d.Queued = queued
	if d.Read >= queued || d.Read == 0 {
		return
	}
	d.Approximate = true
	f := float64(queued) / float64(d.Read)
	for i, c := range d.Counts {
		d.Counts[i] = int(math.Round(float64(c) * f))
	}
}
