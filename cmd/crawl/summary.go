package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
)

// failures keeps what the summary tells of what went wrong: one example of
// each kind of error, whether any was the network's, how many URLs
// robots.txt rules kept out, and the seeds a page limit kept out.
type failures struct {
	c           *crawler.Crawler
	mu          sync.Mutex
	examples    map[string]string // error kind → "URL (cause)"
	network     bool              // some failure was DNS, a refused connection or a timeout
	byRules     int
	unscheduled map[string]int // limit flag → seeds it refused
}

func newFailures(c *crawler.Crawler) *failures {
	return &failures{c: c, examples: map[string]string{}, unscheduled: map[string]int{}}
}

// failed notes an error reported for u. It returns whether the error
// deserves an output record: a seed refused by a page limit does not, it is
// counted for one line of the summary instead.
func (f *failures) failed(u string, err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if flag := limitFlag(err); flag != "" {
		f.unscheduled[flag]++
		return false
	}
	f.note(errorKind(err), u, causeText(err), isNetwork(err))
	return true
}

// disallowed notes a URL robots.txt kept out. For one whose robots.txt could
// not be fetched, the example says why, as the crawl's robots.txt entry
// tells it.
func (f *failures) disallowed(u *url.URL, why crawler.DisallowReason) {
	if why != crawler.DisallowedUnavailable {
		f.mu.Lock()
		f.byRules++
		f.mu.Unlock()
		return
	}
	cause, network := "robots.txt unreachable", false
	if info, err := f.c.Host(u.String()); err == nil && info.Robots != nil {
		switch e := info.Robots; {
		case e.Err != nil:
			cause += ": " + causeText(e.Err)
			network = isNetwork(e.Err)
		case e.Status != 0:
			cause += fmt.Sprintf(": answered %d %s", e.Status, http.StatusText(e.Status))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.note(string(crawler.DisallowedUnavailable), u.String(), cause, network)
}

// note keeps the first example of kind. f.mu must be held.
func (f *failures) note(kind, u, cause string, network bool) {
	if _, ok := f.examples[kind]; !ok {
		f.examples[kind] = u + " (" + cause + ")"
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
	if f.network {
		return "no seed could be fetched; offline? try `go run ./examples/titles`, which serves its own site", true
	}
	return "no seed could be fetched; the errors above say why", true
}

// kindedError is an error that names its kind among Stats.Errors' keys.
type kindedError interface{ ErrorKind() string }

// errorKind sorts an error reported to OnError into the kinds of
// Stats.Errors, so that the summary can give an example of each. It follows
// the crawler's own sorting; an error that names its kind is taken at its
// word.
func errorKind(err error) string {
	var k kindedError
	var dnsErr *net.DNSError
	var netErr net.Error
	msg := err.Error()
	switch {
	case errors.As(err, &k):
		return k.ErrorKind()
	case errors.Is(err, frontier.ErrGivenUp):
		return "host-given-up"
	case errors.Is(err, fetch.ErrExtractorPanic):
		return "extractor-panic"
	case strings.HasPrefix(msg, "crawler: handler panicked"):
		return "handler-panic"
	case strings.HasPrefix(msg, "extracting links: "):
		return "extract"
	case strings.HasPrefix(msg, "sitemap: "):
		return "sitemap"
	case strings.HasPrefix(msg, "robots gate: "):
		return "other"
	case errors.Is(err, fetch.ErrForbiddenAddress):
		return "private-address"
	case strings.HasPrefix(msg, "seed skipped: "), strings.HasPrefix(msg, "redirect target: "):
		return "skipped"
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
	}
	return "other"
}

// isTLS reports whether err comes from a TLS handshake or certificate check.
func isTLS(err error) bool {
	return errors.As(err, new(tls.RecordHeaderError)) || errors.As(err, new(*tls.CertificateVerificationError)) ||
		errors.As(err, new(x509.UnknownAuthorityError)) || errors.As(err, new(x509.HostnameError)) ||
		errors.As(err, new(x509.CertificateInvalidError))
}

// isNetwork reports whether err says the network, not the site, failed: a
// name that did not resolve, a connection refused or reset, a timeout.
func isNetwork(err error) bool {
	var netErr net.Error
	return errors.As(err, new(*net.DNSError)) || errors.As(err, new(*net.OpError)) ||
		errors.As(err, &netErr) && netErr.Timeout()
}

// causeText is err without what the summary line says already: the URL
// (a fetch's "fetch URL: Get "URL": " prefix) and the name server asked.
func causeText(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "lookup " + dnsErr.Name + ": " + dnsErr.Err
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "fetch "); ok {
		if u, cause, ok := strings.Cut(rest, ": "); ok && !strings.Contains(u, " ") {
			return cause
		}
	}
	return msg
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
		s := c.Stats()
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
		s.Pages, humanBytes(s.Bytes), s.Elapsed.Round(time.Millisecond), rate, s.Disallowed, s.ErrorCount(), s.Retries)
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
		if ex, ok := examples[kind]; ok {
			line += ", e.g. " + ex
			delete(examples, kind)
		}
		fmt.Fprintln(w, line)
	}
	// Errors the crawler counts elsewhere (skipped seeds, refused
	// addresses), or under a kind the command sorted otherwise.
	for _, kind := range slices.Sorted(maps.Keys(examples)) {
		fmt.Fprintf(w, "crawl: %s: e.g. %s\n", kind, examples[kind])
	}
	if len(s.RobotsOutcomes) > 0 {
		fmt.Fprintf(w, "crawl: robots.txt %s\n", countList(s.RobotsOutcomes))
	}
	if len(s.Skipped) > 0 {
		fmt.Fprintf(w, "crawl: skipped %s\n", countList(s.Skipped))
	}
	for _, flag := range slices.Sorted(maps.Keys(unscheduled)) {
		limit := f.maxPages
		if flag == "-max-pages-per-host" {
			limit = f.maxPagesHost
		}
		fmt.Fprintf(w, "crawl: %d %s not scheduled: %s %d reached\n", unscheduled[flag], plural(unscheduled[flag], "seed", "seeds"), flag, limit)
	}
	if s.CrawlDelayHosts > 0 {
		fmt.Fprintf(w, "crawl: robots.txt Crawl-delay on %d hosts (longest applied %v)\n", s.CrawlDelayHosts, s.MaxCrawlDelay)
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

func countList(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
