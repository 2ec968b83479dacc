package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// testLimitReports: a page MaxPages or MaxPagesPerHost refuses is marked
// seen and queued to be reported (frontier.ErrReported), not counted
// against the limits, and refused as seen when added again, whatever the
// limits; Claim hands it out with Item.Refused set, so each such URL is
// handed out once. Across a crash the seen mark and the report are kept
// or lost together: the batch added again after it makes one report of
// each.
func testLimitReports(t *testing.T, h Harness, s frontier.Store) {
	lim := frontier.Limits{MaxPages: 3, MaxPagesPerHost: 2}
	batch := []frontier.Item{item("a", "/1"), item("a", "/2"), item("a", "/3"), item("b", "/1"), item("b", "/2")}
	want := map[string]frontier.Refusal{
		"http://a/1": frontier.NotRefused, "http://a/2": frontier.NotRefused, "http://a/3": frontier.RefusedHostLimit,
		"http://b/1": frontier.NotRefused, "http://b/2": frontier.RefusedLimit,
	}
	for i, r := range add(t, s, lim, batch...) {
		w := want[batch[i].URL]
		if w == frontier.NotRefused && r != nil || w != frontier.NotRefused && (!errors.Is(r, frontier.ErrReported) || !errors.Is(r, w.Err())) {
			t.Errorf("Add(%s) = %v, want %v queued to be reported", batch[i].URL, r, w.Err())
		}
	}
	for _, l := range []frontier.Limits{lim, {}} {
		for _, r := range add(t, s, l, item("a", "/3"), item("b", "/2")) {
			if !errors.Is(r, frontier.ErrSeen) || errors.Is(r, frontier.ErrReported) {
				t.Errorf("a refused URL added again (limits %+v): %v, want ErrSeen alone", l, r)
			}
		}
	}
	if c, err := s.Counts(ctx, t0); err != nil || c.Scheduled != 3 || c.Queued != 5 {
		t.Errorf("Counts = %+v, %v; want 3 scheduled (the reports not counted), 5 queued", c, err)
	}
	now := t0
	if h.Crash != nil {
		s = h.Crash(t, s)
		t.Cleanup(func() { s.Close() })
		now = time.Now()
		for i, r := range add(t, s, lim, batch...) {
			if r != nil && !errors.Is(r, frontier.ErrSeen) && !errors.Is(r, frontier.ErrReported) {
				t.Errorf("Add(%s) after the crash: %v", batch[i].URL, r)
			}
		}
	}
	got := map[string]frontier.Refusal{}
	for range 100 {
		c := claim(t, s, now, opt)
		if c.Lease == nil {
			if c.Idle {
				break
			}
			if c.Next.After(now) {
				now = c.Next
			}
			continue
		}
		l := c.Lease
		if _, twice := got[l.URL]; twice {
			t.Errorf("%s handed out twice", l.URL)
		}
		got[l.URL] = l.Refused
		if l.Closed(now) != (l.Refused != frontier.NotRefused) {
			t.Errorf("%s: Refused %v, Closed %v: a report is closed, a page to fetch is not", l.URL, l.Refused, l.Closed(now))
		}
		ack(t, s, l, now, 0)
	}
	for u, w := range want {
		if r, ok := got[u]; !ok || r != w {
			t.Errorf("%s handed out: %v with Refused %v, want Refused %v", u, ok, r, w)
		}
	}
}
