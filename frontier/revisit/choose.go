package revisit

// Source is where a host's next request goes.
type Source uint8

// The sources Choose picks between.
const (
	// Nothing: neither a new URL nor a due revisit waits.
	Nothing Source = iota
	// NewURL: the host's oldest new URL.
	NewURL
	// Revisit: the host's revisit due earliest.
	Revisit
)

// String returns the source's name.
func (s Source) String() string {
	switch s {
	case NewURL:
		return "new"
	case Revisit:
		return "revisit"
	}
	return "nothing"
}

// Choose decides where a host's request goes when the host may be asked
// again, given whether a new URL waits for it and whether one of its
// revisits is due, and records the choice in h.Credit. When only one kind
// waits it gets the request, so that neither ever leaves the budget idle.
// When both wait, new URLs get NewShare of the requests and revisits the
// rest, interleaved by a credit (a weighted round robin): new URLs come
// first, and still neither kind is starved. A new URL therefore waits at
// most about (its place in the host's queue + 1) × delay / NewShare, and
// due revisits get at least 1 − NewShare of the host's requests however
// fast the site grows.
func (d *Default) Choose(h *Host, newWaiting, revisitDue bool) Source {
	switch {
	case newWaiting && revisitDue:
	case newWaiting:
		return NewURL
	case revisitDue:
		return Revisit
	default:
		return Nothing
	}
	credit := float64(h.Credit)
	if !(credit >= -1 && credit <= 1) {
		credit = 0 // a credit from outside the account's range starts it over
	}
	if credit >= 0 {
		h.Credit = float32(credit - (1 - d.newShare))
		return NewURL
	}
	h.Credit = float32(credit + d.newShare)
	return Revisit
}
