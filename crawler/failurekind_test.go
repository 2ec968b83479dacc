package crawler

import (
	"slices"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/ratelimit"
)

// TestFailureKinds: every way a fetch can fail that the crawl reports
// under its classification's name has an ErrorKind of its own, so that
// Stats.Errors has no key the package does not declare. Answers (none,
// throttled, server-error) are pages, and a forbidden address is a skip.
func TestFailureKinds(t *testing.T) {
	fetchKinds := []ErrorKind{FailedTimeout, FailedDNS, FailedConnection, FailedTLS, FailedRedirect,
		FailedEncoding, FailedInvalidURL, FailedCanceled, FailedOther}
	var named []ErrorKind
	for f := ratelimit.Failure(0); !strings.HasPrefix(f.String(), "Failure("); f++ {
		switch f {
		case ratelimit.FailureNone, ratelimit.FailureThrottled, ratelimit.FailureServerError, ratelimit.FailureForbidden:
			continue
		}
		k := failureKind(f)
		if !slices.Contains(fetchKinds, k) {
			t.Errorf("failure %d is reported as %q, which is no declared ErrorKind", f, k)
		}
		named = append(named, k)
	}
	if len(named) != len(fetchKinds) {
		t.Errorf("fetch failures are reported as %q, want each of %q", named, fetchKinds)
	}
}
