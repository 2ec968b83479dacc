package live

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots/gate"
)

// Sizes of what a Recorder keeps.
const (
	logSize       = 100  // the last fetches shown live
	latencySize   = 1024 // the answers latency percentiles are taken over
	journalSize   = 40   // events in a host's politeness journal
	hostStartsMax = 512  // a host's request starts kept to count its load over a minute
	recentWindow  = 10 * time.Minute
)

// Recorder keeps what a crawl did, as its hooks tell it: outcomes per
// second, the last fetches, errors by kind, and per host the requests
// made, their answers and the pacing they led to. Attach it to a Crawler
// before Run. Its zero value is not usable; make one with NewRecorder.
// A Recorder is safe for concurrent use.
//
// Its hooks run on every worker of the crawl, for every request, so each
// concern has a lock of its own (the host table one a shard, the chart's
// counters none): workers recording requests to different hosts do not
// wait on each other, and what can wait — trimming old figures, ranking
// hosts — is left to the page's rare requests.
type Recorder struct {
	c   *crawler.Crawler
	now func() time.Time

	hosts   hostTable
	secs    seconds
	fetches fetchLog

	errMu sync.Mutex
	errs  map[crawler.ErrorKind]*errorRec

	front frontierCache
	socks socketCount
}

// fetchLog is the last fetches and the latencies of the last answers.
type fetchLog struct {
	mu      sync.Mutex
	log     [logSize]Fetch
	logN    int
	latency [latencySize]time.Duration
	latN    int
}

// NewRecorder returns a Recorder of c's crawl, its hooks registered on c.
func NewRecorder(c *crawler.Crawler) *Recorder {
	r := &Recorder{c: c, now: time.Now, errs: map[crawler.ErrorKind]*errorRec{}}
	c.OnRequest(r.request)
	c.OnRobots(r.robots)
	c.OnPage(r.page)
	c.OnError(r.error)
	c.OnDisallowed(func(context.Context, *url.URL, crawler.DisallowReason) {
		r.secs.add(r.now(), OutcomeRobots)
	})
	return r
}

// Fetch is one line of the live log: a page request and how it ended.
type Fetch struct {
	At     time.Time     `json:"at"`
	URL    string        `json:"url"`
	Status int           `json:"status"`
	Error  string        `json:"error,omitempty"`
	RTT    time.Duration `json:"rtt_ns"`
	Size   int64         `json:"size"`
	Title  string        `json:"title,omitempty"`
}

type errorRec struct {
	count      int64
	url, cause string
}

// hostRec is what the crawl did to one host, as this process saw it.
type hostRec struct {
	// What every request reads or writes comes first, together: the
	// record is cold in the cache by the time a worker records its
	// request, and a start then touches its first 40 bytes, an answer
	// its first 208, not lines spread over all its 328.
	inFlight int
	requests int64
	// starts are the last request starts (Unix nanoseconds), for the load
	// over a minute: int64s, which the garbage collector need not scan,
	// where time.Times hold a pointer each.
	starts     []int64
	last       time.Time
	lastStatus int
	minDelay   time.Duration
	url        string               // a URL of the host, to ask the crawler about it
	pace       ratelimit.HostStatus // as the last answer left it

	key        string
	throttled  []time.Time // 429 and 503 answers in the last recentWindow
	serverErrs []time.Time // other 5xx
	robots     *gate.Entry
	givenUp    bool
	revisits   int64
	wait       time.Duration // revisits' wait past their due, a moving average
	journal    []JournalEvent
}

// request records a request's start or end.
func (r *Recorder) request(_ context.Context, req *crawler.Request) {
	s := r.hosts.lock(req.Key)
	h := s.host(req.Key, req.URL)
	if req.Answered.IsZero() {
		h.started(req.Started)
		s.mu.Unlock()
		return
	}
	h.inFlight = max(h.inFlight-1, 0)
	h.last, h.lastStatus = req.Answered, req.Status
	r.journalAnswer(h, req)
	h.pace = req.Pace
	if req.Pace.Delay > 0 && (h.minDelay == 0 || req.Pace.Delay < h.minDelay) {
		h.minDelay = req.Pace.Delay
	}
	if !req.Robots && !req.Due.IsZero() {
		h.revisited(req.Answered.Sub(req.Due))
	}
	s.mu.Unlock()
	if req.Robots {
		return
	}
	r.secs.add(req.Answered, statusOutcome(req.Status))
	r.fetches.add(req)
}

// started records a request to h starting at t. The starts older than a
// minute are dropped only when the slice is full or at hostStartsMax
// (and on each poll of the status), not on every request: a host's load
// is counted over the last minute whatever older starts the slice still
// holds.
func (h *hostRec) started(t time.Time) {
	h.inFlight++
	h.requests++
	if len(h.starts) == cap(h.starts) || len(h.starts) >= hostStartsMax {
		h.trimStarts(t)
		if len(h.starts) == hostStartsMax {
			h.starts = h.starts[1:]
		}
	}
	h.starts = append(h.starts, t.UnixNano())
}

// add records the answer to req in the live log and the latencies.
func (l *fetchLog) add(req *crawler.Request) {
	rtt := req.Answered.Sub(req.Started)
	f := Fetch{At: req.Answered, URL: req.URL, Status: req.Status, RTT: rtt, Size: req.Size}
	if req.Err != nil {
		f.Error = req.Err.Error()
	}
	l.mu.Lock()
	l.latency[l.latN%latencySize] = rtt
	l.latN++
	l.log[l.logN%logSize] = f
	l.logN++
	l.mu.Unlock()
}

// trimStarts drops the request starts older than a minute before now: a
// host's load is counted over the last minute, and a host no longer
// fetched holds none. Reslicing, not copying: append moves the live ones
// to a new array when the old one is used up.
func (h *hostRec) trimStarts(now time.Time) {
	h.starts = h.starts[h.startsBefore(now):]
	if len(h.starts) == 0 {
		h.starts = nil
	}
}

// startsBefore returns how many of h's starts are more than a minute
// before now.
func (h *hostRec) startsBefore(now time.Time) int {
	from := now.Add(-time.Minute).UnixNano()
	i, _ := slices.BinarySearch(h.starts, from)
	return i
}

// page adds the page's title to its line of the live log.
func (r *Recorder) page(_ context.Context, p *crawler.Page) {
	if p.URL == nil || p.ContentType != "text/html" {
		return
	}
	title := p.Title()
	if title == "" {
		return
	}
	l := &r.fetches
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 1; i <= min(l.logN, 8); i++ { // its line is among the last few
		f := &l.log[(l.logN-i)%logSize]
		if f.Title == "" && sameURL(f.URL, p.URL) {
			f.Title = title
			return
		}
	}
}

// sameURL reports whether s is u.String(), without building that string
// for the common absolute URL (scheme, host, path, query, fragment): the
// page hook compares every HTML page's URL with the log's last lines,
// and building it would allocate on every page. Other forms are built.
func sameURL(s string, u *url.URL) bool {
	path := u.EscapedPath()
	if u.Opaque != "" || u.User != nil || u.Host == "" || u.Scheme == "" || (path != "" && path[0] != '/') {
		return s == u.String()
	}
	rest, ok := strings.CutPrefix(s, u.Scheme)
	if ok {
		rest, ok = strings.CutPrefix(rest, "://")
	}
	if ok {
		rest, ok = strings.CutPrefix(rest, u.Host)
	}
	if ok {
		rest, ok = strings.CutPrefix(rest, path)
	}
	if ok && (u.ForceQuery || u.RawQuery != "") {
		if rest, ok = strings.CutPrefix(rest, "?"); ok {
			rest, ok = strings.CutPrefix(rest, u.RawQuery)
		}
	}
	if ok && u.Fragment != "" {
		if rest, ok = strings.CutPrefix(rest, "#"); ok {
			rest, ok = strings.CutPrefix(rest, u.EscapedFragment())
		}
	}
	return ok && rest == ""
}

// error counts a failure by kind, keeping its first example.
func (r *Recorder) error(_ context.Context, u *url.URL, err error) {
	var e *crawler.Error
	if !errors.As(err, &e) || e.Kind == "" {
		return
	}
	key := ""
	if e.Kind == crawler.FailedHostGivenUp {
		key, _ = r.c.Key(u.String())
	}
	r.errMu.Lock()
	rec := r.errs[e.Kind]
	if rec == nil {
		rec = &errorRec{url: u.String(), cause: e.Err.Error()}
		r.errs[e.Kind] = rec
	}
	rec.count++
	r.errMu.Unlock()
	if key != "" {
		s := r.hosts.lock(key)
		defer s.mu.Unlock()
		h := s.host(key, u.String())
		if !h.givenUp {
			h.givenUp = true
			h.journal = appendEvent(h.journal, JournalEvent{At: r.now(), Kind: "given-up", Text: "host given up after failing in a row"})
		}
	}
}

// robots records a robots.txt fetch in its host's record and journal.
func (r *Recorder) robots(_ context.Context, key string, e *gate.Entry) {
	s := r.hosts.lock(key)
	defer s.mu.Unlock()
	h := s.host(key, "")
	if h.url == "" {
		h.url = e.URL
	}
	h.journal = appendEvent(h.journal, robotsEvent(h.robots, e))
	h.robots = e
}
