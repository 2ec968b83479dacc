package crawler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/readable"
	"github.com/heedcrawl/heed/ratelimit"
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
	// Errors counts failed fetches and other problems by kind (see
	// ErrorKind). Each count is one report to OnError.
	Errors map[ErrorKind]int64
	// Retries counts pages scheduled again after a failure.
	Retries int64

	// Disallowed counts URLs robots.txt did not let us fetch.
	Disallowed int64
	// RobotsOutcomes counts robots.txt fetches by outcome, named as
	// gate.Outcome's String names it: "ok"; "unavailable", no robots.txt
	// (4xx), so all is allowed; "unreachable" (5xx, 429, network errors),
	// so all is disallowed; "stale", unreachable with an earlier copy in
	// force; "assumed-allow", unreachable for so long that all is allowed.
	RobotsOutcomes map[string]int64
	// SkippedLinks counts, by reason (see SkipReason), the links not
	// scheduled or not fetched: each occurrence of a URL on a page or in
	// a sitemap, and each seed, redirect target and Enqueue, counts once.
	// A URL linked from a hundred pages counts a hundred times (under
	// SkippedSeen, SkippedScope, …), so on a site of 500 pages these run
	// into the thousands. A URL a page limit refuses is counted once,
	// under SkippedMaxPages or SkippedMaxPagesPerHost, when it is
	// reported (see Reports in the package documentation), and as
	// SkippedSeen when found again.
	SkippedLinks map[SkipReason]int64
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

	// Revisiting (WithRevisit): Revisits counts the answers for pages
	// fetched before, RevisitChanges those that found the page changed,
	// NotModified the 304 answers among them. BytesSaved counts the
	// body bytes the 304s saved against unconditional fetches: each the
	// size, as transferred, of the version held (frontier.Visit.Size). RevisitsDropped counts pages no longer
	// revisited: moved, gone GoneLimit times in a row, or now disallowed
	// by robots.txt.
	Revisits        int64
	RevisitChanges  int64
	NotModified     int64
	BytesSaved      int64
	RevisitsDropped int64
	// SitemapLastmods counts the <lastmod>s of pages held that sitemaps
	// read again handed to their queued revisits (LastmodPolicy).
	SitemapLastmods int64

	// Rendering (WithRenderer): Rendered counts the pages rendered,
	// RenderFailed the renders that failed (the page went on as fetched),
	// RenderTime their total wall time. Subrequests counts the requests
	// rendered pages made that heed fetched, SubrequestsCached those the
	// resource cache answered, SubrequestsRefused those refused — by
	// robots.txt, the address guard, a render's budget, or by type
	// (media, reports). With RenderAuto, RenderSkipped counts the HTML
	// pages left unrendered as predicted static, RenderChecked the pages
	// predicted static rendered to check the prediction (among
	// Rendered), RenderMissed the checks where rendering found links the
	// static HTML lacked: RenderMissed/RenderChecked estimates the share
	// of skipped pages that would have.
	Rendered           int64
	RenderFailed       int64
	RenderTime         time.Duration
	Subrequests        int64
	SubrequestsCached  int64
	SubrequestsRefused int64
	RenderSkipped      int64
	RenderChecked      int64
	RenderMissed       int64

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
		Errors:         map[ErrorKind]int64{},
		RobotsOutcomes: map[string]int64{},
		SkippedLinks:   map[SkipReason]int64{},
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

func (st *stats) failed(kind ErrorKind)     { st.update(func(s *Stats) { s.Errors[kind]++ }) }
func (st *stats) skipped(reason SkipReason) { st.update(func(s *Stats) { s.SkippedLinks[reason]++ }) }

// snapshot returns the counters, and the queue's figures as the frontier's
// Store gives them within ctx (once the run has ended, as they were then).
func (st *stats) snapshot(ctx context.Context, now time.Time) (Stats, error) {
	st.mu.Lock()
	out := st.s
	out.Statuses = maps.Clone(st.s.Statuses)
	out.Errors = maps.Clone(st.s.Errors)
	out.RobotsOutcomes = maps.Clone(st.s.RobotsOutcomes)
	out.SkippedLinks = maps.Clone(st.s.SkippedLinks)
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

// Error is what the crawl reports to OnError: why a URL failed or was
// dropped, and where Stats counts it. Exactly one of Kind and Skipped is
// set.
type Error struct {
	// Kind is the Stats.Errors key the failure is counted under; empty
	// when the URL was skipped.
	Kind ErrorKind
	// Skipped is the Stats.SkippedLinks key of a URL dropped without a failure
	// of its own (a seed the frontier refused, a host at an address the
	// crawl may not reach, a redirect target that cannot be scoped); empty
	// when the URL failed.
	Skipped SkipReason
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
// in Stats.Errors[FailedRobotsUnavailable], not in Stats.Disallowed.
var ErrRobotsUnavailable = errors.New("robots.txt unreachable")

// ErrorKind names a kind of failure: the keys of Stats.Errors, the Kind of
// an *Error reported to OnError, and the heed_errors_total metric's kind
// label. A fetch failure's kind is the name of its classification
// (ratelimit.Failure, by fetch.Classify); the others are the crawler's.
type ErrorKind string

// Kinds of failure. Every one is counted in Stats.Errors and reported to
// OnError, once per URL (or handler) it befell.
const (
	// Fetch failures, as fetch.Classify names them.
	FailedTimeout    ErrorKind = "timeout"     // headers or body too slow (WithHeaderTimeout, WithFetchTimeout)
	FailedDNS        ErrorKind = "dns"         // the host name did not resolve
	FailedConnection ErrorKind = "connection"  // refused, reset, or another connection failure
	FailedTLS        ErrorKind = "tls"         // the TLS handshake or certificate check failed
	FailedRedirect   ErrorKind = "redirect"    // a redirect past WithMaxRedirects, or a loop
	FailedEncoding   ErrorKind = "encoding"    // a Content-Encoding that is unknown or does not decode
	FailedInvalidURL ErrorKind = "invalid-url" // a URL the fetcher cannot request
	FailedCanceled   ErrorKind = "canceled"    // a request canceled, not by the crawl's stop (a caller's transport)
	FailedOther      ErrorKind = "other"       // any other failure (a connection closed before an answer…)

	// The crawler's own.
	FailedRobotsUnavailable ErrorKind = "robots-unavailable" // robots.txt unreachable: a complete disallow (ErrRobotsUnavailable)
	FailedHostGivenUp       ErrorKind = "host-given-up"      // dropped with a host that kept failing (WithHostFailures)
	FailedHandlerPanic      ErrorKind = "handler-panic"      // a hook (OnPage, OnHTML, OnScraped, OnError, OnDisallowed, Filter) panicked
	FailedExtract           ErrorKind = "extract"            // an extractor failed; the links found are kept
	FailedExtractorPanic    ErrorKind = "extractor-panic"    // an extractor panicked
	FailedSitemap           ErrorKind = "sitemap"            // a sitemap that is not one, or was read in part
	FailedRender            ErrorKind = "render"             // rendering a page failed; its static HTML was used (WithRenderer)
)

// failureKind is the kind a fetch failure f is counted under.
func failureKind(f ratelimit.Failure) ErrorKind { return ErrorKind(f.String()) }

// SkipReason names why a link to a URL was not scheduled or not fetched:
// the keys of Stats.SkippedLinks, the Skipped of an *Error reported to
// OnError (for the reasons a report names), and the
// heed_skipped_links_total metric's reason label.
type SkipReason string

// Reasons for skipping a URL. A seed refused for any reason but
// SkippedSeen, a redirect target refused as SkippedInvalid and every
// SkippedPrivateAddress are also reported to OnError, as an *Error with
// Skipped set; the others are only counted (see "Reports" in the package
// documentation for why).
const (
	SkippedSeen            SkipReason = "seen"               // already scheduled (frontier.ErrSeen)
	SkippedScope           SkipReason = "scope"              // outside the crawl's scope (frontier.ErrScope)
	SkippedDepth           SkipReason = "depth"              // past WithMaxDepth (frontier.ErrDepth)
	SkippedMaxPages        SkipReason = "max-pages"          // WithMaxPages reached (frontier.ErrLimit)
	SkippedMaxPagesPerHost SkipReason = "max-pages-per-host" // WithMaxPagesPerHost reached (frontier.ErrHostLimit)
	SkippedMaxLinks        SkipReason = "max-links"          // links of a page past WithMaxLinks
	SkippedStopped         SkipReason = "stopped"            // found as the crawl stopped (frontier.ErrClosed)
	SkippedSitemapLimit    SkipReason = "sitemap-limit"      // past a host's sitemap budget (frontier.ErrSitemapLimit)
	SkippedSitemapDepth    SkipReason = "sitemap-depth"      // a sitemap nested past WithMaxSitemapDepth
	SkippedPathological    SkipReason = "pathological"       // a trap-shaped path (WithMaxPathSegments, WithMaxSegmentRepeats; frontier.ErrPathological)
	SkippedHostGivenUp     SkipReason = "host-given-up"      // a sitemap dropped with its host given up (a page is reported, FailedHostGivenUp)
	SkippedStore           SkipReason = "store"              // the Store failed to take it (frontier.ErrStore)
	SkippedFilter          SkipReason = "filter"             // a Filter kept it out
	SkippedInvalid         SkipReason = "invalid"            // not a URL the frontier takes
	SkippedPrivateAddress  SkipReason = "private-address"    // its host is at an address the crawl may not reach (WithAllowPrivate)
)

// skipReason names why the frontier refused a URL, for Stats.SkippedLinks.
func skipReason(err error) SkipReason {
	switch {
	case errors.Is(err, frontier.ErrSeen):
		return SkippedSeen
	case errors.Is(err, frontier.ErrScope):
		return SkippedScope
	case errors.Is(err, frontier.ErrDepth):
		return SkippedDepth
	case errors.Is(err, frontier.ErrLimit):
		return SkippedMaxPages
	case errors.Is(err, frontier.ErrHostLimit):
		return SkippedMaxPagesPerHost
	case errors.Is(err, frontier.ErrClosed):
		return SkippedStopped
	case errors.Is(err, frontier.ErrSitemapLimit):
		return SkippedSitemapLimit
	case errors.Is(err, frontier.ErrPathological):
		return SkippedPathological
	case errors.Is(err, frontier.ErrGivenUp):
		return SkippedHostGivenUp
	case errors.Is(err, frontier.ErrStore):
		return SkippedStore
	default:
		return SkippedInvalid
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
	fmt.Fprintf(&b, "%d pages, %s in %v (%.1f pages/s)", s.Pages, readable.Bytes(s.Bytes), s.Elapsed.Round(time.Millisecond), rate)
	if len(s.Statuses) > 0 {
		b.WriteString("\nstatuses:")
		for _, code := range s.StatusCodes() {
			fmt.Fprintf(&b, " %d×%d", code, s.Statuses[code])
		}
	}
	fmt.Fprintf(&b, "\nrobots.txt: %d disallowed", s.Disallowed)
	if len(s.RobotsOutcomes) > 0 {
		fmt.Fprintf(&b, "; fetched: %s", readable.RobotsOutcomes(s.RobotsOutcomes))
	}
	if s.CrawlDelayHosts > 0 {
		fmt.Fprintf(&b, "; Crawl-delay on %d hosts (longest applied %v)", s.CrawlDelayHosts, s.MaxCrawlDelay)
	}
	fmt.Fprintf(&b, "\nerrors: %d%s; retries %d", s.ErrorCount(), countsText(s.Errors, ""), s.Retries)
	if len(s.SkippedLinks) > 0 {
		fmt.Fprintf(&b, "\nlinks skipped, each occurrence counted%s", countsText(s.SkippedLinks, ""))
	}
	if s.Revisits > 0 || s.RevisitsDropped > 0 {
		fmt.Fprintf(&b, "\nrevisits: %d, %d changed, %d not modified (%s saved), %d dropped, %d sitemap lastmods",
			s.Revisits, s.RevisitChanges, s.NotModified, readable.Bytes(s.BytesSaved), s.RevisitsDropped, s.SitemapLastmods)
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
func countsText[K ~string](m map[K]int64, label string) string {
	if len(m) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", string(k), m[k]))
	}
	return label + " (" + strings.Join(parts, ", ") + ")"
}
