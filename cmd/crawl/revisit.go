package main

// Continuous crawling from the command line: -revisit and its bounds,
// -for, what a revisit's record adds, and the summary's revisit line.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/internal/readable"
)

// checkRevisitFlags checks that -revisit, its bounds and -for go
// together: the bounds mean nothing without -revisit, so giving them
// without it is a mistake worth saying, not a setting to ignore.
func checkRevisitFlags(fs *flag.FlagSet, f *flags, stderr io.Writer) refusal {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	fail := func(format string, a ...any) refusal {
		fmt.Fprintf(stderr, "crawl: "+format+"; see crawl -h\n", a...)
		return badUsage
	}
	switch {
	case !f.revisit && set["min-revisit"]:
		return fail("-min-revisit is for a crawl with -revisit")
	case !f.revisit && set["max-revisit"]:
		return fail("-max-revisit is for a crawl with -revisit")
	case f.minRevisit <= 0:
		return fail("-min-revisit must be positive, got %v", f.minRevisit)
	case f.maxRevisit < f.minRevisit:
		return fail("-max-revisit %v is below -min-revisit %v", f.maxRevisit, f.minRevisit)
	case f.forDuration < 0:
		return fail("-for must not be negative, got %v", f.forDuration)
	}
	return notRefused
}

// timeUp is the cause of a crawl stopped because its -for ran out.
type timeUp struct{ after time.Duration }

func (t timeUp) Error() string { return "-for " + t.after.String() + " is up" }

// stopAfter cancels the crawl with a timeUp cause once d has passed, and
// says so on stderr; stop ends the wait, or waits for the message to be
// out, so that it comes before the summary. A d of 0 never stops it.
func stopAfter(d time.Duration, cancel context.CancelCauseFunc, stderr io.Writer) (stop func()) {
	if d <= 0 {
		return func() {}
	}
	said := make(chan struct{})
	t := time.AfterFunc(d, func() {
		defer close(said)
		// Cancel first: once the message is out, the crawl takes no more
		// work.
		cancel(timeUp{d})
		fmt.Fprintf(stderr, "crawl: -for %v is up: finishing fetches in flight\n", d)
	})
	return func() {
		if !t.Stop() {
			<-said
		}
	}
}

// revisitFields are what a record adds with -revisit: what the fetch
// found against the copy held, the version it holds now, and when the
// page was fetched before. Times are RFC 3339 in UTC, as fetched_at.
type revisitFields struct {
	Change        string     `json:"change,omitempty"`
	ETag          string     `json:"etag,omitempty"`
	LastModified  *time.Time `json:"last_modified,omitempty"`
	Digest        string     `json:"digest,omitempty"`
	PreviousFetch *time.Time `json:"previous_fetch,omitempty"`
}

// revisitRecord fills in what p's record says with -revisit. The
// validators and the digest are those of the version the crawl holds
// after the fetch (crawler.Page.Held): for a 304 the version held before,
// its validators as the 304 may have updated them; for a page gone, moved
// or failing none.
func revisitRecord(p *crawler.Page) revisitFields {
	rf := revisitFields{Change: string(p.Change)}
	if p.Previous != nil {
		t := p.Previous.Fetched.UTC()
		rf.PreviousFetch = &t
	}
	if p.Held == nil {
		return rf
	}
	rf.ETag = p.Held.ETag
	if !p.Held.LastModified.IsZero() {
		t := p.Held.LastModified.UTC()
		rf.LastModified = &t
	}
	rf.Digest = fmt.Sprintf("%016x", p.Held.Digest)
	return rf
}

// revisitSummary is the summary's line for a crawl with -revisit: the
// revisits of this run, what they found, what conditional requests
// spared the sites, and the sitemaps' <lastmod>s taken as evidence.
func revisitSummary(w io.Writer, s crawler.Stats) {
	fmt.Fprintf(w, "crawl: revisits: %d, %d found changed, %d answered 304 Not Modified (about %s not transferred against unconditional refetches); %d %s no longer revisited (gone, moved or disallowed); %d sitemap lastmods of pages held\n",
		s.Revisits, s.RevisitChanges, s.NotModified, readable.Bytes(s.BytesSaved), s.RevisitsDropped, plural(int(s.RevisitsDropped), "page", "pages"), s.SitemapLastmods)
}
