package frontier

import "errors"

// ErrReported: Add refused the item by a page limit but marked its URL
// seen and queued it to be reported, never fetched (Item.Refused). An
// error of Add that is ErrReported is also the limit's (ErrLimit or
// ErrHostLimit): the item is not scheduled, and its
// report comes on a lease of its own, as a given-up key's items do, so
// that it is made once, with that lease's acknowledgement (and its
// Outcome.Checkpoint), however often the URL is found and whatever
// process finds it.
var ErrReported = errors.New("frontier: queued to be reported")

// Refusal says why an item is queued only to be reported (Item.Refused).
type Refusal uint8

// The refusals of an item queued to be reported.
const (
	// NotRefused is an item queued to be fetched.
	NotRefused Refusal = iota
	// RefusedLimit: Limits.MaxPages was reached (ErrLimit).
	RefusedLimit
	// RefusedHostLimit: Limits.MaxPagesPerHost was reached for its key
	// (ErrHostLimit).
	RefusedHostLimit
	// RefusedSeenOnly: the item was added SeenOnly (robots.txt disallows
	// it) and its report was not known written when the process that
	// added it died: a shared Store queues it to be reported again.
	RefusedSeenOnly

	refusalEnd // the first value a Store refuses to hold
)

// Valid reports whether r is one of the refusals a Store holds.
func (r Refusal) Valid() bool { return r < refusalEnd }

// Err returns the limit's error of r (ErrLimit, ErrHostLimit), or nil.
func (r Refusal) Err() error {
	switch r {
	case RefusedLimit:
		return ErrLimit
	case RefusedHostLimit:
		return ErrHostLimit
	}
	return nil
}

// reported is Add's answer for an item refused by a limit and queued to
// be reported: ErrReported and the limit's error.
type reported struct{ limit error }

func (e *reported) Error() string   { return e.limit.Error() + " (queued to be reported)" }
func (e *reported) Unwrap() []error { return []error{e.limit, ErrReported} }

// The answers of Add for a page refused by a limit and queued to be
// reported, one value each so that answering allocates nothing.
var (
	reportedLimit     error = &reported{ErrLimit}
	reportedHostLimit error = &reported{ErrHostLimit}
)

// Reported returns Add's answer for an item refused so and queued to be
// reported: an error that is ErrReported and r's limit's error; nil for a
// refusal that is not a limit's.
func (r Refusal) Reported() error {
	switch r {
	case RefusedLimit:
		return reportedLimit
	case RefusedHostLimit:
		return reportedHostLimit
	}
	return nil
}

// RefusalOf returns the Refusal of a page limit's error (ErrLimit,
// ErrHostLimit), NotRefused for any other.
func RefusalOf(err error) Refusal {
	switch {
	case errors.Is(err, ErrLimit):
		return RefusedLimit
	case errors.Is(err, ErrHostLimit):
		return RefusedHostLimit
	}
	return NotRefused
}

// ToReport returns the Refusal under which a Store's Add queues it,
// refused with err, to be reported (see Store.Add): a page item's refusal
// by MaxPages or MaxPagesPerHost. Any other refusal is NotRefused: the
// item is only refused. A sitemap budget's (ErrSitemapLimit) refuses a
// sitemap, or a sitemap's entry that a link may still bring in, not the
// URL: marked seen, the URL would be kept out when linked.
func ToReport(it *Item, err error) Refusal {
	if it.Kind == KindSitemap {
		return NotRefused
	}
	return RefusalOf(err)
}
