package frontier_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// TestScheduleRestoreKeepsHostCounts: a key a persisting Store restores
// idle — nothing queued, its rest over — keeps its per-key counters while
// time passes and claims sweep idle keys, so that MaxPagesPerHost holds
// after a resume.
func TestScheduleRestoreKeepsHostCounts(t *testing.T) {
	now := time.Now()
	var s frontier.Schedule
	lim := frontier.Limits{MaxPagesPerHost: 3}
	s.Restore("full", frontier.KeyRecord{Scheduled: 3}, 0, now)
	for i := range 20 {
		s.Restore(fmt.Sprintf("idle%d", i), frontier.KeyRecord{Scheduled: 1}, 0, now)
	}
	s.Restore("busy", frontier.KeyRecord{Scheduled: 1}, 1, now)
	for i := range 50 {
		at := now.Add(time.Duration(i) * time.Hour)
		if key, _, _, ok := s.Claim(at, frontier.ClaimOptions{}); ok {
			s.End(key, at, frontier.Outcome{}, false)
		}
	}
	it := frontier.Item{URL: "http://full/4", Key: "full"}
	if err := s.Admit(&it, lim); !errors.Is(err, frontier.ErrHostLimit) {
		t.Errorf("Admit a fourth page of a key restored with three: %v, want ErrHostLimit", err)
	}
	// Once a Queue says per-key limits are in force, they stay kept.
	s.Queue(&frontier.Item{URL: "http://other/1", Key: "other"}, lim)
	for i := range 50 {
		at := now.Add(time.Duration(50+i) * time.Hour)
		if key, _, _, ok := s.Claim(at, frontier.ClaimOptions{}); ok {
			s.End(key, at, frontier.Outcome{}, false)
		}
	}
	if err := s.Admit(&it, lim); !errors.Is(err, frontier.ErrHostLimit) {
		t.Errorf("after claims with limits in force: %v, want ErrHostLimit", err)
	}
}
