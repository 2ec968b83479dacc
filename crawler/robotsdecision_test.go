package crawler

import (
	"fmt"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/robots"
)

// TestRobotsDecision is robotsDecision's table: what a lease does after
// the gate's verdict, its host's rest and WithRobotsWait.
func TestRobotsDecision(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	unreachable := func(since time.Duration) *robots.Entry {
		return &robots.Entry{Outcome: robots.OutcomeUnreachable, UnreachableSince: t0.Add(since), Status: 503}
	}
	recordErr := &robots.Entry{Err: fmt.Errorf("warc: %w", fetch.ErrRecord)}
	forbidden := &robots.Entry{Outcome: robots.OutcomeUnreachable, Err: fmt.Errorf("dial: %w", fetch.ErrForbiddenAddress)}
	for _, c := range []struct {
		name     string
		v        robots.Verdict
		restLeft time.Duration
		wait     time.Duration
		want     robotsAction
	}{
		{"allowed", robots.Verdict{Allowed: true, Entry: &robots.Entry{}}, 0, 0, robotsFetch},
		{"allowed, robots.txt took the lease's request", robots.Verdict{Allowed: true, Fetched: true, Entry: &robots.Entry{}}, time.Second, 0, robotsAfterRest},
		{"disallowed by the rules", robots.Verdict{Entry: &robots.Entry{Outcome: robots.OutcomeOK}}, 0, 0, robotsDisallowed},
		{"disallowed, host resting", robots.Verdict{Entry: &robots.Entry{Outcome: robots.OutcomeOK}}, time.Minute, 0, robotsDisallowed},
		{"unreachable, no wait", robots.Verdict{RetryAt: t0.Add(time.Second), Entry: unreachable(0)}, 0, 0, robotsReport},
		{"unreachable, retry within the wait", robots.Verdict{RetryAt: t0.Add(time.Minute), Entry: unreachable(0)}, 0, 2 * time.Minute, robotsWaitRetry},
		{"unreachable, retry exactly at the wait's end", robots.Verdict{RetryAt: t0.Add(time.Minute), Entry: unreachable(0)}, 0, time.Minute, robotsWaitRetry},
		{"unreachable, retry past the wait", robots.Verdict{RetryAt: t0.Add(time.Hour), Entry: unreachable(0)}, 0, time.Minute, robotsReport},
		{"unreachable long since, retry past the wait", robots.Verdict{RetryAt: t0.Add(time.Minute), Entry: unreachable(-time.Hour)}, 0, time.Minute, robotsReport},
		{"unreachable, first failure unknown", robots.Verdict{RetryAt: t0.Add(time.Second), Entry: &robots.Entry{Outcome: robots.OutcomeUnreachable}}, 0, time.Minute, robotsReport},
		{"recording robots.txt failed", robots.Verdict{Fetched: true, Entry: recordErr}, 0, 0, robotsRecordFailed},
		{"recording failed in another worker's fetch", robots.Verdict{Entry: recordErr}, 0, 0, robotsDisallowed},
		{"forbidden address", robots.Verdict{RetryAt: t0.Add(time.Second), Entry: forbidden}, 0, time.Hour, robotsForbidden},
	} {
		if got := robotsDecision(c.v, c.restLeft, c.wait); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
