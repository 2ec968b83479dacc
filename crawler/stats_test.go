package crawler_test

import (
	"strings"
	"testing"

	"github.com/heedcrawl/heed/crawler"
)

// TestStatsStringWords: Stats.String says bytes as the crawl command does,
// robots.txt outcomes in plain words, and what the skip counts count.
func TestStatsStringWords(t *testing.T) {
	s := crawler.Stats{
		Pages:          530,
		Bytes:          45583381,
		Disallowed:     2,
		RobotsOutcomes: map[string]int64{"ok": 1, "unavailable": 1, "unreachable": 3},
		SkippedLinks:   map[crawler.SkipReason]int64{crawler.SkippedScope: 6007, crawler.SkippedSeen: 15006},
		Revisits:       1,
		BytesSaved:     2048,
	}
	str := s.String()
	for _, want := range []string{
		"530 pages, 43.5 MiB in ",
		"robots.txt: 2 disallowed; fetched: ok 1, none (4xx, all allowed) 1, unreachable (all disallowed) 3",
		"links skipped, each occurrence counted (scope 6007, seen 15006)",
		"(2.0 KiB saved)",
	} {
		if !strings.Contains(str, want) {
			t.Errorf("Stats.String() lacks %q:\n%s", want, str)
		}
	}
	if strings.Contains(str, "bytes") {
		t.Errorf("Stats.String() counts bytes in bytes:\n%s", str)
	}
}
