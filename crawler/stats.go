package crawler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
)

// Stats is a snapshot of a crawl's counters. Crawler.Stats returns one at any
// time, live during Run and final after it.
type Stats struct {
	// Started is when Run began; Elapsed how long it has run (or ran).
	Started time.Time
	Elapsed time.Duration

	// Pages is the number of responses received for pages (any status);
	// Bytes the body bytes read off the wire for them.
	Pages int64
	Bytes int64
	// Statuses counts responses by HTTP status code.
	Statuses map[int]int64
	// Errors counts failed fetches and other problems by kind: "timeout",
	// "dns", "connection", "tls", "redirect", "encoding", "handler-panic",
	// "extract", "extractor-panic", "robots-unavailable", "host-given-up"
	// (URLs dropped with a host that kept failing), "sitemap", "other".
	Errors map[string]int64
	// Retries counts pages scheduled again after a failure.
	Retries int64

	// Disallowed counts URLs robots.txt did not let us fetch.
	Disallowed int64
	// RobotsOutcomes counts robots.txt fetches by outcome.
	RobotsOutcomes map[string]int64
	// Skipped counts URLs not scheduled or not fetched, by reason: "seen",
	// "scope", "depth", "max-pages", "max-pages-per-host", "max-links"
	// (links past WithMaxLinks), "sitemap-limit", "sitemap-depth",
	// "pathological" (trap-shaped paths), "private-address" (see
	// WithAllowPrivate), "host-given-up", "invalid", "filter".
	Skipped map[string]int64
	// Nofollow counts pages whose links were not followed because of a
	// nofollow directive; Noindex the pages that asked not to be indexed.
	Nofollow int64
	Noindex  int64

	// Sitemaps counts sitemap documents read; SitemapURLs the page URLs
	// they listed.
	Sitemaps    int64
	SitemapURLs int64

	// CrawlDelayHosts counts the hosts whose robots.txt set a Crawl-delay
	// for us; MaxCrawlDelay is the longest of those delays as applied
	// (after WithMaxDelay's cap). Crawler.Host tells one host's effective
	// delay and why.
	CrawlDelayHosts int64
	MaxCrawlDelay   time.Duration

	// Queued is the number of URLs waiting; InFlight the number being
	// worked on; Hosts the hosts with queued or in-flight work, of which
	// HostsActive are being worked on and HostsWaiting wait for their turn.
	// Of the hosts with queued URLs and a free slot, HostsReady may be
	// fetched now (they wait for a free worker) and HostsResting wait out
	// their delay, a back-off or a Retry-After.
	Queued       int
	InFlight     int
	Hosts        int
	HostsActive  int
	HostsWaiting int
	HostsReady   int
	HostsResting int
}

// stats holds the live counters behind Stats. One mutex is enough: it is
// taken a handful of times per fetched page, next to a network round trip.
type stats struct {
	mu       sync.Mutex
	started  time.Time
	ended    time.Time
	s        Stats
	frontier *frontier.Frontier
}

func newStats(now time.Time) *stats {
	return &stats{started: now, s: Stats{
		Statuses:       map[int]int64{},
		Errors:         map[string]int64{},
		RobotsOutcomes: map[string]int64{},
		Skipped:        map[string]int64{},
	}}
}

func (st *stats) update(f func(s *Stats)) {
	st.mu.Lock()
	f(&st.s)
	st.mu.Unlock()
}

func (st *stats) page(status int, bytes int64) {
	st.update(func(s *Stats) {
		s.Pages++
		s.Bytes += bytes
		s.Statuses[status]++
	})
}

func (st *stats) errorKind(kind string) { st.update(func(s *Stats) { s.Errors[kind]++ }) }
func (st *stats) skipped(reason string) { st.update(func(s *Stats) { s.Skipped[reason]++ }) }

// snapshot returns the counters, and the queue's figures as the frontier's
// Store gives them within ctx (once the run has ended, as they were then).
func (st *stats) snapshot(ctx context.Context, now time.Time) (Stats, error) {
	st.mu.Lock()
	out := st.s
	out.Statuses = maps.Clone(st.s.Statuses)
	out.Errors = maps.Clone(st.s.Errors)
	out.RobotsOutcomes = maps.Clone(st.s.RobotsOutcomes)
	out.Skipped = maps.Clone(st.s.Skipped)
	out.Started = st.started
	end := now
	if !st.ended.IsZero() {
		end = st.ended
	}
	out.Elapsed = end.Sub(st.started)
	fr := st.frontier
	st.mu.Unlock()
	if fr == nil {
		return out, nil
	}
	fs, err := fr.Counts(ctx)
	if err != nil {
		return out, err
	}
	out.setCounts(fs)
	return out, nil
}

// end marks the run ended at now, with the queue's figures as the Store
// gives them within ctx: Stats after Run no longer asks a Store the caller
// may have closed.
func (st *stats) end(ctx context.Context, now time.Time) {
	st.mu.Lock()
	fr := st.frontier
	st.mu.Unlock()
	var fs frontier.Counts
	var err error
	if fr != nil {
		fs, err = fr.Counts(ctx)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ended, st.frontier = now, nil
	if err == nil {
		st.s.setCounts(fs)
	}
}

// setCounts sets the queue's figures from the frontier's.
func (s *Stats) setCounts(fs frontier.Counts) {
	s.Queued, s.InFlight, s.Hosts = fs.Queued, fs.Leased, fs.Hosts
	s.HostsActive, s.HostsWaiting = fs.Busy, max(fs.Hosts-fs.Busy, 0)
	s.HostsReady, s.HostsResting = fs.Ready, fs.Resting
}

// ErrorCount is the total of Errors.
func (s Stats) ErrorCount() int64 {
	var n int64
	for _, v := range s.Errors {
		n += v
	}
	return n
}

// StatusCodes returns the status codes seen, in increasing order.
func (s Stats) StatusCodes() []int {
	codes := make([]int, 0, len(s.Statuses))
	for c := range s.Statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	return codes
}

// Error is what the crawl reports to OnError: why a URL failed, and the
// kind Stats.Errors counts it under.
type Error struct {
	// Kind is the Stats.Errors key: "timeout", "dns", "robots-unavailable",
	// "host-given-up", …
	Kind string
	// Err is the cause.
	Err error
}

// Error returns the cause's message.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrRobotsUnavailable is wrapped by the errors reported for URLs not
// fetched because their robots.txt could not be read (5xx, 429, network
// errors): RFC 9309 makes that a complete disallow for now. It is counted
// in Stats.Errors["robots-unavailable"], not in Stats.Disallowed.
var ErrRobotsUnavailable = errors.New("robots.txt unreachable")

// ErrorKind returns the kind Stats.Errors counts err under: the Kind of an
// *Error in its chain, or else the kind of a fetch error ("timeout",
// "dns", "connection", "tls", "encoding", "redirect", "other").
func ErrorKind(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, fetch.ErrTimeout), errors.Is(err, fetch.ErrHeaderTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.Is(err, fetch.ErrContentEncoding):
		return "encoding"
	case errors.Is(err, fetch.ErrTooManyRedirects), errors.Is(err, fetch.ErrRedirectLoop):
		return "redirect"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case isTLS(err):
		return "tls"
	case errors.As(err, new(*net.OpError)):
		return "connection"
	default:
		return "other"
	}
}

// skipReason names why the frontier refused a URL, for Stats.Skipped.
func skipReason(err error) string {
	switch {
	case errors.Is(err, frontier.ErrSeen):
		return "seen"
	case errors.Is(err, frontier.ErrScope):
		return "scope"
	case errors.Is(err, frontier.ErrDepth):
		return "depth"
	case errors.Is(err, frontier.ErrLimit):
		return "max-pages"
	case errors.Is(err, frontier.ErrHostLimit):
		return "max-pages-per-host"
	case errors.Is(err, frontier.ErrClosed):
		return "stopped"
	case errors.Is(err, frontier.ErrSitemapLimit):
		return "sitemap-limit"
	case errors.Is(err, frontier.ErrPathological):
		return "pathological"
	case errors.Is(err, frontier.ErrGivenUp):
		return "host-given-up"
	case errors.Is(err, frontier.ErrStore):
		return "store"
	default:
		return "invalid"
	}
}

// String summarises s in a few lines a person can read: pages and bytes,
// statuses, robots.txt, errors, skips, and the queue.
func (s Stats) String() string {
	var b strings.Builder
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.Pages) / s.Elapsed.Seconds()
	}
	fmt.Fprintf(&b, "%d pages, %d bytes in %v (%.1f pages/s)", s.Pages, s.Bytes, s.Elapsed.Round(time.Millisecond), rate)
	if len(s.Statuses) > 0 {
		b.WriteString("\nstatuses:")
		for _, code := range s.StatusCodes() {
			fmt.Fprintf(&b, " %d×%d", code, s.Statuses[code])
		}
	}
	fmt.Fprintf(&b, "\nrobots.txt: %d disallowed%s", s.Disallowed, countsText(s.RobotsOutcomes, "; fetches"))
	if s.CrawlDelayHosts > 0 {
		fmt.Fprintf(&b, "; Crawl-delay on %d hosts (longest applied %v)", s.CrawlDelayHosts, s.MaxCrawlDelay)
	}
	fmt.Fprintf(&b, "\nerrors: %d%s; retries %d", s.ErrorCount(), countsText(s.Errors, ""), s.Retries)
	if len(s.Skipped) > 0 {
		fmt.Fprintf(&b, "\nskipped:%s", countsText(s.Skipped, ""))
	}
	if s.Sitemaps > 0 {
		fmt.Fprintf(&b, "\nsitemaps: %d listing %d pages", s.Sitemaps, s.SitemapURLs)
	}
	fmt.Fprintf(&b, "\nqueue: %d queued, %d in flight; hosts: %d with work, %d active, %d ready, %d resting",
		s.Queued, s.InFlight, s.Hosts, s.HostsActive, s.HostsReady, s.HostsResting)
	return b.String()
}

// countsText lists m as " (a 1, b 2)" after label, sorted by key, or "" if
// m is empty.
func countsText(m map[string]int64, label string) string {
	if len(m) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return label + " (" + strings.Join(parts, ", ") + ")"
}
