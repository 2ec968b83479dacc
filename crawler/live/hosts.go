package live

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/heedcrawl/heed/robots/gate"
)

// Host states, from busiest to done.
const (
	StateActive      = "active"             // a request to it is under way
	StateWaiting     = "waiting"            // resting between requests, or idle
	StateBackingOff  = "backing off"        // failures or a Retry-After lengthened its delay
	StateRobotsUnrch = "robots unreachable" // its last robots.txt fetch failed: a complete disallow
	StateGivenUp     = "given up"           // it kept failing; its URLs are reported, not fetched
)

var stateOrder = map[string]int{StateActive: 0, StateWaiting: 1, StateBackingOff: 2, StateRobotsUnrch: 3, StateGivenUp: 4}

// HostRow is one row of the host table.
type HostRow struct {
	Key      string `json:"key"`
	URL      string `json:"url"`
	State    string `json:"state"`
	InFlight int    `json:"in_flight"`
	// Queued is how many of its URLs are queued, when the crawl's Store
	// can say (frontier.KeyCounter: every Store of the tree); -1 otherwise.
	Queued   int   `json:"queued"`
	Requests int64 `json:"requests"`
	// LastStatus is the status of the last answer (0: none, or no answer).
	LastStatus int       `json:"last_status"`
	LastAt     time.Time `json:"last_at"`
	// Delay is the effective delay between requests, and Reason what
	// demanded it (min-delay, crawl-delay, adaptive, back-off).
	DelayMS     int64     `json:"delay_ms"`
	Reason      string    `json:"reason"`
	NextAllowed time.Time `json:"next_allowed"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
	Failures    int       `json:"failures"`
	// Recent429 and Recent5xx count the 429/503 and the other 5xx
	// answers of the last ten minutes.
	Recent429 int `json:"recent_429"`
	Recent5xx int `json:"recent_5xx"`
	// Robots: the robots.txt outcome, when it was fetched, its
	// Crawl-delay for us.
	RobotsOutcome string    `json:"robots_outcome"`
	RobotsAt      time.Time `json:"robots_at,omitzero"`
	CrawlDelayMS  int64     `json:"crawl_delay_ms"`
	// LoadPerMin is the requests started in the last minute; AllowedPerMin
	// what the shortest delay the host had in that time allows (0: no
	// bound but -per-host); LoadPct the one against the other.
	LoadPerMin    int     `json:"load_per_min"`
	AllowedPerMin float64 `json:"allowed_per_min"`
	LoadPct       float64 `json:"load_pct"`
	// Overloaded reports more requests in the last minute than the
	// host's delay allows: a broken politeness invariant.
	Overloaded bool `json:"overloaded"`
	// Freshness (WithRevisit): Revisits counts the host's revisits;
	// RevisitWaitMS is how long they wait past their due time (a moving
	// average); FreshnessDebtPct that wait against the eight delays the
	// revisit policy lets a due revisit wait for the host's politeness
	// budget. Above 100 % the host's pages ask for more fetches than its
	// delay allows: FreshnessCapped, its freshness cannot be met politely.
	Revisits         int64   `json:"revisits"`
	RevisitWaitMS    int64   `json:"revisit_wait_ms"`
	FreshnessDebtPct float64 `json:"freshness_debt_pct"`
	FreshnessCapped  bool    `json:"freshness_capped"`
}

// targetWaits is how many delays a due revisit may wait for its host
// before its pages ask for more than the host's budget: the revisit
// policy's own target (package frontier/revisit).
const targetWaits = 8

// minRevisits is how many revisits a host needs before its freshness
// debt is judged.
const minRevisits = 4

// revisited records a revisit that waited wait past its due time.
func (h *hostRec) revisited(wait time.Duration) {
	wait = max(wait, 0)
	if h.revisits == 0 {
		h.wait = wait
	} else {
		h.wait += (wait - h.wait) / 8
	}
	h.revisits++
}

// freshnessDebt is the host's revisit wait against what its politeness
// allows, in percent (0 with no delay, or no revisit yet).
func (h *hostRec) freshnessDebt() float64 {
	if h.revisits == 0 || h.pace.Delay <= 0 {
		return 0
	}
	return 100 * float64(h.wait) / float64(targetWaits*h.pace.Delay)
}

// freshnessCapped reports a host whose freshness cannot be met politely.
func (h *hostRec) freshnessCapped() bool {
	return h.revisits >= minRevisits && h.freshnessDebt() > 100
}

// HostQuery selects a page of the host table.
type HostQuery struct {
	Search string // a substring of the host key, case-insensitive
	State  string // only hosts in this state; empty for all
	Sort   string // a column: key, state, in_flight, requests, delay, load, recent_429, recent_5xx, last, failures, freshness
	Desc   bool
	Offset int
	Limit  int // 0 means 50; at most 500
}

// HostPage is a page of the host table, and how many hosts matched.
type HostPage struct {
	Total int       `json:"total"`
	Hosts int       `json:"hosts"`
	Rows  []HostRow `json:"rows"`
}

// sortKey is what a host is sorted by, copied out of its shard's lock.
type sortKey struct {
	key string
	n   int64
}

// Hosts returns the page of the host table q asks for. Hosts are filtered
// and ranked in one pass over the Recorder's table, keeping only the best
// Offset+Limit of them (so a page costs one comparison or so per host, not
// a sort of every host), and only the rows of the page are built. The
// pacing of those rows is asked of the crawler (Crawler.Host), which reads
// the Store, the owner of when a host may next be fetched.
func (r *Recorder) Hosts(ctx context.Context, q HostQuery) HostPage {
	now := r.now()
	search := strings.ToLower(q.Search)
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 500)
	offset := max(q.Offset, 0)
	less := keyOrder(q)
	var page HostPage
	best := make([]sortKey, 0, offset+limit+1)
	page.Hosts = r.hosts.each(func(k string, h *hostRec) {
		if search != "" && !strings.Contains(k, search) {
			return
		}
		if q.State != "" && h.state(now) != q.State {
			return
		}
		page.Total++
		c := sortKey{key: k, n: sortFigure(h, q.Sort, now)}
		if len(best) == offset+limit && less(best[len(best)-1], c) <= 0 {
			return
		}
		i, _ := slices.BinarySearchFunc(best, c, less)
		best = slices.Insert(best, i, c)
		if len(best) > offset+limit {
			best = best[:offset+limit]
		}
	})
	rows := best[min(offset, len(best)):]
	page.Rows = make([]HostRow, 0, len(rows))
	for _, k := range rows {
		// As it is now: a host's figures may have moved since it was
		// ranked, under its shard's lock, without holding every shard.
		if row, ok := get(&r.hosts, k.key, func(h *hostRec) HostRow { return h.row(now) }); ok {
			page.Rows = append(page.Rows, row)
		}
	}
	for i := range page.Rows {
		r.refreshPace(ctx, &page.Rows[i], now)
	}
	return page
}

// keyOrder is the order q sorts hosts in: by the figure of its column,
// then by key.
func keyOrder(q HostQuery) func(a, b sortKey) int {
	byKey := q.Sort == "" || q.Sort == "key"
	return func(a, b sortKey) int {
		c := 0
		if !byKey {
			c = cmp.Compare(a.n, b.n)
		}
		if c == 0 {
			c = strings.Compare(a.key, b.key)
			if !byKey {
				return c // ties in ascending key order either way
			}
		}
		if q.Desc {
			c = -c
		}
		return c
	}
}

// refreshPace sets the row's pacing as the crawler holds it now.
func (r *Recorder) refreshPace(ctx context.Context, row *HostRow, now time.Time) {
	if row.URL == "" {
		return
	}
	info, err := r.c.Host(ctx, row.URL)
	if err != nil || info.Key != row.Key {
		return
	}
	p := info.Pace
	row.DelayMS, row.Reason, row.Failures = p.Delay.Milliseconds(), p.Reason.String(), p.Failures
	row.NextAllowed, row.PausedUntil = p.ReadyAt, p.PausedUntil
	row.Queued = info.Queued
}

// sortFigure is h's figure for the sort column col.
func sortFigure(h *hostRec, col string, now time.Time) int64 {
	switch col {
	case "state":
		return int64(stateOrder[h.state(now)])
	case "in_flight":
		return int64(h.inFlight)
	case "requests":
		return h.requests
	case "delay":
		return int64(h.pace.Delay)
	case "load":
		load, allowed := h.load(now)
		if allowed == 0 {
			return int64(load) // unbounded: by the load alone, below any bounded share
		}
		return int64(float64(load) / allowed * 1e6)
	case "recent_429":
		return int64(len(recent(h.throttled, now)))
	case "recent_5xx":
		return int64(len(recent(h.serverErrs, now)))
	case "last":
		return h.last.UnixNano()
	case "failures":
		return int64(h.pace.Failures)
	case "freshness":
		return int64(h.freshnessDebt() * 1000)
	}
	return 0
}

// state is the host's state at now.
func (h *hostRec) state(now time.Time) string {
	switch {
	case h.givenUp:
		return StateGivenUp
	case h.robots != nil && h.robots.Outcome == gate.OutcomeUnreachable:
		// Until robots.txt is read again: a host whose URLs were all
		// reported is asked no more, and stays as its last fetch left it.
		return StateRobotsUnrch
	case h.inFlight > 0:
		return StateActive
	case h.pace.Backoff > 0 || h.pace.PausedUntil.After(now):
		return StateBackingOff
	}
	return StateWaiting
}

// load returns the requests started in the minute before now, and how
// many the host's shortest delay in that time allows (0: no delay, no
// bound). A delay d lets at most one request start per d, plus the one
// at the window's start.
func (h *hostRec) load(now time.Time) (n int, allowed float64) {
	n = len(h.starts) - h.startsBefore(now)
	if h.minDelay > 0 {
		allowed = float64(time.Minute) / float64(h.minDelay)
	}
	return n, allowed
}

// overloaded reports a broken invariant: more requests in the last
// minute than the host's delay allows.
func (h *hostRec) overloaded(now time.Time) bool {
	n, allowed := h.load(now)
	return allowed > 0 && float64(n) > allowed+1
}

// row returns h's table row at now.
func (h *hostRec) row(now time.Time) HostRow {
	load, allowed := h.load(now)
	row := HostRow{
		Key: h.key, URL: h.url, State: h.state(now), InFlight: h.inFlight, Queued: -1, Requests: h.requests,
		LastStatus: h.lastStatus, LastAt: h.last,
		DelayMS: h.pace.Delay.Milliseconds(), Reason: h.pace.Reason.String(), NextAllowed: h.pace.ReadyAt,
		PausedUntil: h.pace.PausedUntil, Failures: h.pace.Failures,
		Recent429: len(recent(h.throttled, now)), Recent5xx: len(recent(h.serverErrs, now)),
		LoadPerMin: load, AllowedPerMin: allowed, Overloaded: h.overloaded(now),
		Revisits: h.revisits, RevisitWaitMS: h.wait.Milliseconds(), FreshnessDebtPct: h.freshnessDebt(),
		FreshnessCapped: h.freshnessCapped(),
	}
	if allowed > 0 {
		row.LoadPct = 100 * float64(load) / allowed
	}
	if e := h.robots; e != nil {
		row.RobotsOutcome, row.RobotsAt = e.Outcome.String(), e.FetchedAt
		if e.HasCrawlDelay {
			row.CrawlDelayMS = e.CrawlDelay.Milliseconds()
		}
	}
	return row
}

// Journal returns key's politeness journal, oldest first, and its row;
// false if the crawl has not met the host.
func (r *Recorder) Journal(key string) (HostRow, []JournalEvent, bool) {
	now := r.now()
	type rowJournal struct {
		row     HostRow
		journal []JournalEvent
	}
	rj, ok := get(&r.hosts, key, func(h *hostRec) rowJournal { return rowJournal{h.row(now), slices.Clone(h.journal)} })
	return rj.row, rj.journal, ok
}
