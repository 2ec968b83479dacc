package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/readable"
)

// failures keeps what the summary tells of what went wrong: one example of
// each kind of error, whether any was the network's, how many URLs
// robots.txt rules kept out, and the URLs a page limit kept out.
type failures struct {
	mu          sync.Mutex
	examples    map[string]string // error kind → "URL (cause)"
	firstCause  string            // the cause of the first failure
	network     bool              // some failure was DNS, a refused connection or a timeout
	byRules     int
	unscheduled map[string]int // limit flag → URLs it refused, each once
}

func newFailures() *failures {
	return &failures{examples: map[string]string{}, unscheduled: map[string]int{}}
}

// failed notes an error reported for u. It returns whether the error
// deserves an output record: every one does. A URL a page limit refused
// (reported once, on its own lease: frontier.ErrReported) is counted for
// one line of the summary, not as an example of a failure.
func (f *failures) failed(u string, err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if flag := limitFlag(err); flag != "" {
		f.unscheduled[flag]++
		return true
	}
	f.note(reportKind(err), u, causeText(err), fetch.Classify(0, err).Network())
	return true
}

// reportKind is the Stats key an error reported to OnError is counted
// under: its Kind, or, for a URL dropped unfetched, its Skipped reason.
func reportKind(err error) string {
	var e *crawler.Error
	switch {
	case !errors.As(err, &e):
		return string(crawler.FailedOther)
	case e.Kind != "":
		return string(e.Kind)
	}
	return string(e.Skipped)
}

// disallowed notes a URL robots.txt kept out. Only its rules count: a URL
// whose robots.txt could not be fetched is reported to OnError too, with
// the cause, and failed notes it there.
func (f *failures) disallowed(why crawler.DisallowReason) {
	if why != crawler.DisallowedByRules {
		return
	}
	f.mu.Lock()
	f.byRules++
	f.mu.Unlock()
}

// note keeps the first example of kind. f.mu must be held.
func (f *failures) note(kind, u, cause string, network bool) {
	if _, ok := f.examples[kind]; !ok {
		f.examples[kind] = u + " (" + cause + ")"
	}
	if f.firstCause == "" {
		f.firstCause = cause
	}
	f.network = f.network || network
}

// limitFlag names the flag whose limit err reports, or "".
func limitFlag(err error) string {
	switch {
	case errors.Is(err, frontier.ErrLimit):
		return "-max-pages"
	case errors.Is(err, frontier.ErrHostLimit):
		return "-max-pages-per-host"
	}
	return ""
}

// nothingFetched explains a crawl that ended without a single page: msg is
// the line to print, failed whether that makes the crawl a failure — it does
// when every seed failed or its robots.txt could not be fetched, but not
// when robots.txt rules kept the seeds out.
func (f *failures) nothingFetched(s crawler.Stats) (msg string, failed bool) {
	if s.Pages > 0 {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byRules > 0 {
		return "no page fetched: robots.txt disallows the seeds; `crawl robots URL` shows its rules", false
	}
	// The cause first, where the eye lands; a hint only after it.
	msg = "no seed could be fetched"
	if f.firstCause != "" {
		msg += ": " + f.firstCause
	}
	if len(f.examples) > 1 {
		msg += " (and other errors, above)"
	}
	if f.network {
		msg += "; offline? try `go run ./examples/titles`, which serves its own site"
	}
	return msg, true
}

// causeText is err without what the summary line says already: the URL
// (a *fetch.Error's, and a transport's *url.Error's) and the name server
// asked.
// For a URL whose robots.txt could not be fetched it says so first, since
// the cause is then robots.txt's, not the URL's.
func causeText(err error) string {
	cause := fetchCause(err)
	if unreachable := crawler.ErrRobotsUnavailable.Error(); errors.Is(err, crawler.ErrRobotsUnavailable) && !strings.HasPrefix(cause, unreachable) {
		cause = unreachable + ": " + cause
	}
	return cause
}

// fetchCause is the cause of a failed request, without the URL and the
// name server: the innermost of the errors that carry them.
func fetchCause(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "lookup " + dnsErr.Name + ": " + dnsErr.Err
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	var fetchErr *fetch.Error
	if errors.As(err, &fetchErr) {
		return fetchErr.Err.Error()
	}
	return err.Error()
}

// progress rewrites one status line on w every second until done closes.
func progress(c *crawler.Crawler, w io.Writer, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastPages int64
	for {
		select {
		case <-done:
			fmt.Fprint(w, "\r\033[K")
			return
		case <-t.C:
		}
		s := statsNow(c)
		fmt.Fprintf(w, "\r\033[K%d pages  %d/s  queue %d  hosts %d active %d waiting  disallowed %d  errors %d",
			s.Pages, s.Pages-lastPages, s.Queued, s.HostsActive, s.HostsWaiting, s.Disallowed, s.ErrorCount())
		lastPages = s.Pages
	}
}

// summary prints the final counters, with an example of each kind of
// error.
func summary(w io.Writer, s crawler.Stats, fails *failures, f *flags) {
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.Pages) / s.Elapsed.Seconds()
	}
	fmt.Fprintf(w, "crawl: %d pages, %s, in %s (%.1f pages/s); %d disallowed by robots.txt; %d errors; %d retries\n",
		s.Pages, readable.Bytes(s.Bytes), s.Elapsed.Round(time.Millisecond), rate, s.Disallowed, s.ErrorCount(), s.Retries)
	if len(s.Statuses) > 0 {
		var parts []string
		for _, code := range s.StatusCodes() {
			parts = append(parts, fmt.Sprintf("%d×%d", code, s.Statuses[code]))
		}
		fmt.Fprintf(w, "crawl: statuses %s\n", strings.Join(parts, " "))
	}
	fails.mu.Lock()
	examples := maps.Clone(fails.examples)
	unscheduled := maps.Clone(fails.unscheduled)
	fails.mu.Unlock()
	for _, kind := range slices.Sorted(maps.Keys(s.Errors)) {
		line := fmt.Sprintf("crawl: errors: %d %s", s.Errors[kind], kind)
		if ex, ok := examples[string(kind)]; ok {
			line += ", e.g. " + ex
			delete(examples, string(kind))
		}
		fmt.Fprintln(w, line)
	}
	// Errors of kinds the crawler counts in Skipped rather than Errors:
	// skipped seeds, refused addresses.
	for _, kind := range slices.Sorted(maps.Keys(examples)) {
		fmt.Fprintf(w, "crawl: %s: e.g. %s\n", kind, examples[kind])
	}
	if len(s.RobotsOutcomes) > 0 {
		fmt.Fprintf(w, "crawl: robots.txt: %s\n", readable.RobotsOutcomes(s.RobotsOutcomes))
	}
	if len(s.SkippedLinks) > 0 {
		fmt.Fprintf(w, "crawl: links skipped, each occurrence counted: %s\n", countList(s.SkippedLinks))
	}
	for _, flag := range slices.Sorted(maps.Keys(unscheduled)) {
		limit := f.maxPages
		if flag == "-max-pages-per-host" {
			limit = f.maxPagesHost
		}
		fmt.Fprintf(w, "crawl: %d %s not scheduled: %s %d reached\n", unscheduled[flag], plural(unscheduled[flag], "URL", "URLs"), flag, limit)
	}
	if s.CrawlDelayHosts > 0 {
		fmt.Fprintf(w, "crawl: robots.txt Crawl-delay on %d hosts (longest applied %v)\n", s.CrawlDelayHosts, s.MaxCrawlDelay)
	}
	if f.revisit {
		revisitSummary(w, s)
	}
	if s.Sitemaps > 0 {
		fmt.Fprintf(w, "crawl: %d sitemaps listing %d pages\n", s.Sitemaps, s.SitemapURLs)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func countList[K ~string](m map[K]int64) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
