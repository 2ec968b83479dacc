package crawler

import (
	"fmt"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/robots/gate"
)

// TestRobotsDecision is robotsDecision's table: what a lease does after
// the gate's verdict, its host's rest and WithRobotsWait.
func TestRobotsDecision(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	unreachable := func(since time.Duration) *gate.Entry {
		return &gate.Entry{Outcome: gate.OutcomeUnreachable, UnreachableSince: t0.Add(since), Status: 503}
	}
	recordErr := &gate.Entry{Err: fmt.Errorf("warc: %w", fetch.ErrRecord)}
	forbidden := &gate.Entry{Outcome: gate.OutcomeUnreachable, Err: fmt.Errorf("dial: %w", fetch.ErrForbiddenAddress)}
	for _, c := range []struct {
		name     string
		v        gate.Verdict
		restLeft time.Duration
		wait     time.Duration
		want     robotsAction
	}{
		{"allowed", gate.Verdict{Allowed: true, Entry: &gate.Entry{}}, 0, 0, robotsFetch},
		{"allowed, robots.txt took the lease's request", gate.Verdict{Allowed: true, Fetched: true, Entry: &gate.Entry{}}, time.Second, 0, robotsAfterRest},
		{"disallowed by the rules", gate.Verdict{Entry: &gate.Entry{Outcome: gate.OutcomeOK}}, 0, 0, robotsDisallowed},
		{"disallowed, host resting", gate.Verdict{Entry: &gate.Entry{Outcome: gate.OutcomeOK}}, time.Minute, 0, robotsDisallowed},
		{"unreachable, no wait", gate.Verdict{RetryAt: t0.Add(time.Second), Entry: unreachable(0)}, 0, 0, robotsReport},
		{"unreachable, retry within the wait", gate.Verdict{RetryAt: t0.Add(time.Minute), Entry: unreachable(0)}, 0, 2 * time.Minute, robotsWaitRetry},
		{"unreachable, retry exactly at the wait's end", gate.Verdict{RetryAt: t0.Add(time.Minute), Entry: unreachable(0)}, 0, time.Minute, robotsWaitRetry},
		{"unreachable, retry past the wait", gate.Verdict{RetryAt: t0.Add(time.Hour), Entry: unreachable(0)}, 0, time.Minute, robotsReport},
		{"unreachable long since, retry past the wait", gate.Verdict{RetryAt: t0.Add(time.Minute), Entry: unreachable(-time.Hour)}, 0, time.Minute, robotsReport},
		{"unreachable, first failure unknown", gate.Verdict{RetryAt: t0.Add(time.Second), Entry: &gate.Entry{Outcome: gate.OutcomeUnreachable}}, 0, time.Minute, robotsReport},
		{"recording robots.txt failed", gate.Verdict{Fetched: true, Entry: recordErr}, 0, 0, robotsRecordFailed},
		{"recording failed in another worker's fetch", gate.Verdict{Entry: recordErr}, 0, 0, robotsDisallowed},
		{"forbidden address", gate.Verdict{RetryAt: t0.Add(time.Second), Entry: forbidden}, 0, time.Hour, robotsForbidden},
	} {
		if got := robotsDecision(c.v, c.restLeft, c.wait); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
