package live

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
)

// dueEdges are the frontier panel's buckets after "overdue", over the next
// hour; dueLabels name every bucket, "later" last.
var (
	dueEdges  = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}
	dueLabels = []string{"overdue", "0–1 min", "1–5 min", "5–15 min", "15–30 min", "30–60 min", "later"}
)

// frontierEvery is how often the frontier panel asks the Store at most:
// counting items by due time reads much of a Store (a bounded scan on
// disk, a script a shard in Redis), which a page polling every two
// seconds must not make the crawl pay for each time.
const frontierEvery = 5 * time.Second

// Frontier is the frontier panel: the queued URLs by when they fall due
// over the next hour, and the one overdue longest.
type Frontier struct {
	Buckets []DueBucket `json:"buckets"`
	// Queued is how many URLs the Store holds; Approximate says the
	// buckets were scaled from a part of them (see the Store's
	// DueCounts).
	Queued      int  `json:"queued"`
	Approximate bool `json:"approximate"`
	// OldestURL, of host OldestKey, has been due the longest: since
	// OldestDue, OldestAge seconds before At.
	OldestKey string    `json:"oldest_key,omitempty"`
	OldestURL string    `json:"oldest_url,omitempty"`
	OldestDue time.Time `json:"oldest_due,omitzero"`
	OldestAge float64   `json:"oldest_age_s"`
	At        time.Time `json:"at"`
	Error     string    `json:"error,omitempty"`
}

// DueBucket is one bar of the frontier panel.
type DueBucket struct {
	Label string `json:"label"`
	Count int    `json:"count"`
}

// DueAsker asks a Store how its queued items fall due over edges, seen
// from now (frontier.DueCounts): a crawl's through Crawler.Frontier, a
// -redis job's through its Store's DueCounts.
type DueAsker func(ctx context.Context, edges []time.Duration) (frontier.DueCounts, error)

// frontierCache holds the last Frontier, asked at most every frontierEvery.
type frontierCache struct {
	mu   sync.Mutex
	last Frontier
}

// Frontier returns the frontier panel, as the crawl's Store (a
// crawler.DueCounter) says, at most frontierEvery old.
func (r *Recorder) Frontier(ctx context.Context) Frontier {
	return r.front.get(ctx, r.now(), r.c.Frontier)
}

// get returns the last Frontier if it is less than frontierEvery old at
// now, else asks ask for a new one.
func (fc *frontierCache) get(ctx context.Context, now time.Time, ask DueAsker) Frontier {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if !fc.last.At.IsZero() && now.Sub(fc.last.At) < frontierEvery && now.After(fc.last.At) {
		return fc.last
	}
	f := Frontier{At: now}
	d, err := ask(ctx, dueEdges)
	switch {
	case errors.Is(err, crawler.ErrNotRunning):
		f.Error = "the crawl is not running"
	case err != nil:
		f.Error = err.Error()
	}
	if err != nil {
		return f // not kept: asked again at the next poll
	}
	f.Queued, f.Approximate = d.Queued, d.Approximate
	f.Buckets = make([]DueBucket, len(d.Counts))
	for i, n := range d.Counts {
		f.Buckets[i] = DueBucket{Label: dueLabels[min(i, len(dueLabels)-1)], Count: n}
	}
	if d.OldestKey != "" {
		f.OldestKey, f.OldestURL, f.OldestDue = d.OldestKey, d.OldestURL, d.OldestDue
		f.OldestAge = max(now.Sub(d.OldestDue).Seconds(), 0)
	}
	fc.last = f
	return f
}

// serveFrontier serves /api/frontier: get's Frontier, asked within
// apiTimeout.
func serveFrontier(get func(ctx context.Context) Frontier) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), apiTimeout)
		defer cancel()
		writeJSON(w, get(ctx))
	}
}
