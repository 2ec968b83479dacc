package revisit

import (
	"math"
	"time"
)

const (
	trustEvidence = 8   // weighed verdicts before a source may be trusted
	trustScore    = 0.9 // the least Score of a trusted source
	trustMemory   = 64  // verdicts weighed before the counts are halved
)

// Trust is how far one kind of a host's claims about when its pages last
// changed — its Last-Modified headers, or its sitemaps' <lastmod> — has
// agreed with what fetches found (by ETag, 304 or content digest). A host
// earns it: a claim is used as evidence of a change time only once Trusted.
// Claims that are always "now", never move, or lie otherwise lose it
// within a few fetches. The zero value trusts nothing yet.
type Trust struct {
	// Agree and Disagree are the weighed verdicts so far; once they add up
	// to 64 both are halved, so that a host that changes its ways is
	// judged by its recent claims.
	Agree, Disagree float32
}

// Record adds one verdict of the given weight (0 to 1).
func (t *Trust) Record(agree bool, weight float64) {
	if !(weight > 0) {
		return
	}
	w := float32(min(1, weight))
	if agree {
		t.Agree += w
	} else {
		t.Disagree += w
	}
	if t.Agree+t.Disagree >= trustMemory {
		t.Agree /= 2
		t.Disagree /= 2
	}
}

// Score is the estimated share of the source's claims that are true: the
// mean of a uniform prior updated by the verdicts, (Agree+1)/(Agree+Disagree+2).
func (t Trust) Score() float64 {
	return (float64(t.Agree) + 1) / (float64(t.Agree) + float64(t.Disagree) + 2)
}

// Undecided says whether the claims have been weighed fewer than the 8
// times trust needs: neither trusted nor found lying yet.
func (t Trust) Undecided() bool {
	return t.Agree+t.Disagree < trustEvidence
}

// Trusted says whether the claims have been weighed at least 8 times and
// found true at least 9 times in 10.
func (t Trust) Trusted() bool {
	return t.Agree+t.Disagree >= trustEvidence && t.Score() >= trustScore
}

// verdict weighs a claim that the page last changed at claim, read at read,
// against a fetch at at that found the page changed or not since the fetch
// at prev; rate is the page's estimated change rate (0 if unknown). A claim
// of a change after prev must match a change found. A claim of none is
// contradicted by a change found only if that change came before the claim
// was read, which, unseen, has the probability used as the weight; a claim
// read before prev says nothing of the interval.
func verdict(claim, read, prev, at time.Time, changed bool, rate float64) (agree bool, weight float64) {
	if claim.After(prev) {
		return changed, 1
	}
	if !read.After(prev) {
		return false, 0
	}
	if !changed {
		return true, 1
	}
	if read.After(at) {
		read = at
	}
	before := read.Sub(prev).Seconds()
	all := at.Sub(prev).Seconds()
	if !(rate > 0) {
		return false, before / all
	}
	return false, math.Expm1(-rate*before) / math.Expm1(-rate*all)
}

// sitemapDecisive is the least probability that a change found came
// before a sitemap's claim of none was read for the claim to count against
// the sitemap (see sitemapVerdict).
const sitemapDecisive = 0.9

// sitemapVerdict weighs a sitemap's claim that the page last changed at
// claim, read at read, as verdict does a Last-Modified header's, but for
// two cases a sitemap read between two fetches makes different:
//
//   - A claim of no change when the fetch found none agrees with any
//     sitemap, true or one never updated, and says nothing: it weighs 0.
//     Were it counted, a sitemap that is never updated would earn trust
//     on a host whose pages seldom change, and Claim would then put off
//     the pages it claims unchanged.
//   - A claim of no change when the fetch found one counts against the
//     sitemap only where the change almost surely came before the reading
//     (probability at least sitemapDecisive), and then by that
//     probability. A true sitemap read halfway between fetches is followed
//     by half the changes found; counted by their probability, as for a
//     header, they held its score near 0.85 on the changing web, short of
//     trust (at 0.7 it hovered about 0.9), while a sitemap never updated
//     still loses it, since a change it fails to claim is as often early as
//     late.
//
// A claim of a change since prev is decisive, as for a header: it agrees
// exactly when a change was found.
func sitemapVerdict(claim, read, prev, at time.Time, changed bool, rate float64) (agree bool, weight float64) {
	if claim.After(prev) || !read.After(prev) {
		return verdict(claim, read, prev, at, changed, rate)
	}
	if !changed {
		return true, 0
	}
	agree, weight = verdict(claim, read, prev, at, changed, rate)
	if weight < sitemapDecisive {
		return agree, 0
	}
	return agree, weight
}
