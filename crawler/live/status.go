package live

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

// Status is the status strip and the small panels of the page.
type Status struct {
	State   string    `json:"state"` // not started, running, paused, stopping, ended
	Now     time.Time `json:"now"`
	Started time.Time `json:"started"`
	Uptime  float64   `json:"uptime_s"`

	Pages       int64   `json:"pages"`
	Bytes       int64   `json:"bytes"`
	RateMinute  float64 `json:"pages_per_s_minute"`
	RateAverage float64 `json:"pages_per_s_average"`
	InFlight    int     `json:"in_flight"`
	Queued      int     `json:"queued"`
	Hosts       int     `json:"hosts"`
	// HostsDueNow have queued URLs they may be fetched for now;
	// HostsLater wait out a delay, a back-off or a Retry-After.
	HostsDueNow int           `json:"hosts_due_now"`
	HostsLater  int           `json:"hosts_later"`
	Errors      int64         `json:"errors"`
	Disallowed  int64         `json:"disallowed"`
	Statuses    map[int]int64 `json:"statuses"`
	Alerts      []string      `json:"alerts"`
	LatencyP50  float64       `json:"latency_p50_ms"`
	LatencyP95  float64       `json:"latency_p95_ms"`
	Freshness   *Freshness    `json:"freshness,omitempty"`
	Process     Process       `json:"process"`
	StoreError  string        `json:"store_error,omitempty"`
}

// stallWindow is how long no answer must have come for a crawl whose
// hosts all rest to be called stalled.
const stallWindow = 10 * time.Second

// Freshness is what revisits found (crawler.WithRevisit).
type Freshness struct {
	Revisits    int64   `json:"revisits"`
	Changed     int64   `json:"changed"`
	NotModified int64   `json:"not_modified"`
	Unchanged   int64   `json:"unchanged"`
	ChangedPct  float64 `json:"changed_pct"`
	BytesSaved  int64   `json:"bytes_saved"`
	Dropped     int64   `json:"dropped"`
}

// Process is the crawling process's own load.
type Process struct {
	HeapBytes  uint64 `json:"heap_bytes"`
	TotalBytes uint64 `json:"total_bytes"`
	Goroutines uint64 `json:"goroutines"`
	// OpenConns counts the process's open sockets (-1 where /proc does
	// not say).
	OpenConns int `json:"open_conns"`
}

// Status returns the crawl's status now. stopping says a stop was asked.
func (r *Recorder) Status(ctx context.Context, stopping bool) Status {
	st, err := r.c.Stats(ctx)
	now := r.now()
	s := Status{
		Now: now, Started: st.Started, Uptime: st.Elapsed.Seconds(),
		Pages: st.Pages, Bytes: st.Bytes, InFlight: st.InFlight, Queued: st.Queued, Hosts: st.Hosts,
		HostsDueNow: st.HostsReady, HostsLater: st.HostsResting,
		Errors: st.ErrorCount(), Disallowed: st.Disallowed, Statuses: st.Statuses,
		Process: process(r.socks.get(now)),
	}
	if err != nil {
		s.StoreError = err.Error()
	}
	switch {
	case !r.c.Running() && st.Started.IsZero():
		s.State = "not started"
	case !r.c.Running():
		s.State = "ended"
	case stopping:
		s.State = "stopping"
	case r.c.Paused():
		s.State = "paused"
	default:
		s.State = "running"
	}
	if st.Elapsed > 0 {
		s.RateAverage = float64(st.Pages) / st.Elapsed.Seconds()
	}
	if st.Revisits > 0 {
		s.Freshness = &Freshness{Revisits: st.Revisits, Changed: st.RevisitChanges, NotModified: st.NotModified,
			Unchanged: st.Revisits - st.RevisitChanges, BytesSaved: st.BytesSaved, Dropped: st.RevisitsDropped,
			ChangedPct: 100 * float64(st.RevisitChanges) / float64(st.Revisits)}
	}
	sec := now.Unix()
	span := min(int64(60), max(int64(st.Elapsed.Seconds()), 1))
	s.RateMinute = float64(r.secs.sum(sec-span, sec-1)) / float64(span)
	s.LatencyP50, s.LatencyP95 = r.fetches.percentiles()
	quiet := st.Elapsed > stallWindow && r.secs.sum(sec-int64(stallWindow/time.Second), sec) == 0
	var over, stale []string
	r.hosts.each(func(k string, h *hostRec) {
		// What has aged out of its window is let go here, on each poll,
		// so that hosts no longer fetched hold none of it.
		h.trimStarts(now)
		h.throttled, h.serverErrs = recent(h.throttled, now), recent(h.serverErrs, now)
		if h.overloaded(now) {
			over = append(over, k)
		}
		if h.freshnessCapped() {
			stale = append(stale, k)
		}
	})
	s.Alerts = alerts(s, st, over, stale, quiet)
	return s
}

// alerts are what an operator should look at now.
//
// quiet says no answer came in the last stallWindow: a host resting
// between two requests is no stall, every host resting that long is.
func alerts(s Status, st crawler.Stats, over, stale []string, quiet bool) []string {
	var out []string
	if len(over) > 0 {
		slices.Sort(over)
		out = append(out, fmt.Sprintf("%d host(s) above 100%% of the load their delay allows: %s", len(over), strings.Join(over[:min(len(over), 5)], ", ")))
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		out = append(out, fmt.Sprintf("%d host(s) cannot be kept fresh within their politeness (revisits wait past %d delays): %s", len(stale), targetWaits, strings.Join(stale[:min(len(stale), 5)], ", ")))
	}
	if s.State == "running" && s.Queued > 0 && s.InFlight == 0 && s.HostsDueNow == 0 && quiet {
		out = append(out, fmt.Sprintf("stalled: every one of the %d hosts with work is resting", s.Hosts))
	}
	if s.State == "paused" {
		out = append(out, "paused: no request is being made")
	}
	if n := st.Errors[crawler.FailedRobotsUnavailable]; n > 0 {
		out = append(out, fmt.Sprintf("%d URL(s) not fetched: robots.txt unreachable", n))
	}
	if n := st.Errors[crawler.FailedHostGivenUp]; n > 0 {
		out = append(out, fmt.Sprintf("%d URL(s) dropped with hosts given up", n))
	}
	if s.StoreError != "" {
		out = append(out, "the Store does not answer: "+s.StoreError)
	}
	return out
}

// percentiles returns the 50th and 95th percentile latencies, in ms, of
// the last answers.
func (l *fetchLog) percentiles() (p50, p95 float64) {
	l.mu.Lock()
	n := min(l.latN, latencySize)
	d := slices.Clone(l.latency[:n])
	l.mu.Unlock()
	if n == 0 {
		return 0, 0
	}
	slices.Sort(d)
	ms := func(q float64) float64 { return float64(d[int(q*float64(n-1))]) / float64(time.Millisecond) }
	return ms(0.50), ms(0.95)
}

// process reads the runtime's figures (runtime/metrics: no stop of the
// world, unlike ReadMemStats), with sockets the open sockets counted.
func process(sockets int) Process {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(samples)
	p := Process{OpenConns: sockets}
	if samples[0].Value.Kind() == metrics.KindUint64 {
		p.HeapBytes = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindUint64 {
		p.TotalBytes = samples[1].Value.Uint64()
	}
	if samples[2].Value.Kind() == metrics.KindUint64 {
		p.Goroutines = samples[2].Value.Uint64()
	} else {
		p.Goroutines = uint64(runtime.NumGoroutine())
	}
	return p
}

// socketsEvery is how often the open sockets are counted at most: the
// count makes a system call per open descriptor, thousands on a crawl of
// thousands of hosts, which a page polling every two seconds must not
// make the crawl pay for each time.
const socketsEvery = 5 * time.Second

// socketCount is the last count of open sockets, made at most every
// socketsEvery.
type socketCount struct {
	mu sync.Mutex
	at time.Time
	n  int
}

// get returns the open sockets, counted again if the last count is
// socketsEvery old at now.
func (sc *socketCount) get(now time.Time) int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.at.IsZero() || now.Sub(sc.at) >= socketsEvery || now.Before(sc.at) {
		sc.at, sc.n = now, openSockets()
	}
	return sc.n
}

// Chart is the outcomes of each second over the last hour at most: the
// counts of second From+i at index i of each series.
type Chart struct {
	From   int64               `json:"from"` // Unix second of the first point
	Series map[string][]uint32 `json:"series"`
}

// Chart returns the outcomes per second since the crawl started, over the
// last hour at most, up to the last complete second.
func (r *Recorder) Chart(started time.Time) Chart {
	to := r.now().Unix() - 1
	from := started.Unix()
	if started.IsZero() || to-from+1 > int64(window/time.Second) {
		from = to - int64(window/time.Second) + 1
	}
	series := r.secs.series(from, to)
	c := Chart{From: from, Series: map[string][]uint32{}}
	for o, s := range series {
		if s == nil {
			s = []uint32{}
		}
		c.Series[Outcome(o).String()] = s
	}
	return c
}

// ErrorKind is a row of the errors panel.
type ErrorKind struct {
	Kind    string `json:"kind"`
	Count   int64  `json:"count"`
	URL     string `json:"example_url"`
	Example string `json:"example"`
}

// Errors returns the failures by kind, most frequent first, with the first
// example of each.
func (r *Recorder) Errors() []ErrorKind {
	r.errMu.Lock()
	out := make([]ErrorKind, 0, len(r.errs))
	for _, k := range slices.Sorted(maps.Keys(r.errs)) {
		e := r.errs[k]
		out = append(out, ErrorKind{Kind: string(k), Count: e.count, URL: e.url, Example: e.cause})
	}
	r.errMu.Unlock()
	slices.SortStableFunc(out, func(a, b ErrorKind) int { return int(min(max(b.Count-a.Count, -1), 1)) })
	return out
}

// Log returns the last fetches, newest first.
func (r *Recorder) Log() []Fetch {
	l := &r.fetches
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(l.logN, logSize)
	out := make([]Fetch, n)
	for i := range n {
		out[i] = l.log[(l.logN-1-i)%logSize]
	}
	return out
}
