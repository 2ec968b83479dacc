package frontier

import (
	"errors"
	"time"

	"github.com/heedcrawl/heed/frontier/revisit"
)

// ErrRevisit: Done was given an Outcome.Revisit that is not the lease's
// item (another URL or key), or a Revisit for a lease of a key alone
// (ClaimKey). Nothing of the Done is applied.
var ErrRevisit = errors.New("frontier: revisit is not the lease's item")

// Visit is what a crawl keeps of a URL it has fetched, to revisit it: when
// it was fetched and last found changed, the validators and digest of the
// version held, and the revisit policy's state. It travels with the URL's
// Item (Item.Visit) through the Store, which keeps it exactly (MemoryStore:
// LastModified to the second, LastmodRead to the millisecond after
// Fetched, Status within 0–65,535, Gone within 0–255 and Size within 0–4
// GiB), across a reopen and a crash for the Stores that persist.
type Visit struct {
	// Fetched is when the URL was last answered.
	Fetched time.Time
	// Changed is when a fetch last found the page changed; on the first
	// fetch, Fetched.
	Changed time.Time
	// ETag is the entity tag of the version held, strong or weak (W/"…"),
	// as the server sent it: a revisit sends it as If-None-Match. Empty
	// when the server sent none.
	ETag string
	// LastModified is the Last-Modified time of the version held: a
	// revisit sends it as If-Modified-Since. Zero when the server sent
	// none.
	LastModified time.Time
	// Digest is the content digest of the version held (fetch.Page.Digest),
	// which judges whether a page changed when it has no validators or
	// validators that lie.
	Digest uint64
	// Status is the HTTP status of the last answer (304 for a conditional
	// revisit that found the page unchanged).
	Status int
	// Gone counts the consecutive 404 and 410 answers up to the last one;
	// zero after any other answer.
	Gone int
	// Size is the number of body bytes of the version held, as
	// transferred: what a revisit answered 304 saves the site and the
	// crawler.
	Size int64
	// LastmodRead is when a sitemap read after the fetch gave the item's
	// Lastmod (Item.Lastmod): the <lastmod> a site claims for the page
	// since the version held, the evidence the revisit policy weighs
	// (revisit.Fetch.Lastmod). Zero when no sitemap was read since the
	// fetch (Item.Lastmod is then what a sitemap said before it); a
	// Store may drop one not after Fetched.
	LastmodRead time.Time
	// Estimator is the revisit policy's summary of the page's changes,
	// from which it estimates the page's change rate (package
	// frontier/revisit).
	Estimator revisit.Page
}
