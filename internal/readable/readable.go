// Package readable words a crawl's counters for a person: sizes in binary
// units and robots.txt outcomes in plain words. crawler.Stats.String and
// the crawl command's summary both say them so, in the same words.
package readable

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Bytes says n bytes in the largest binary unit it reaches, to one
// decimal: "512 B", "1.5 KiB", "48.3 MiB", "2.0 GiB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// robotsOutcomes are the outcomes of a robots.txt fetch, by the names
// robots/gate.Outcome.String gives them, in the order they are listed,
// each with what it means for the crawl: two of them, "unavailable" and
// "unreachable", are near-synonyms for opposite outcomes (RFC 9309 §2.3.1).
var robotsOutcomes = []struct{ name, words string }{
	{"ok", "ok"},
	{"unavailable", "none (4xx, all allowed)"},
	{"unreachable", "unreachable (all disallowed)"},
	{"stale", "unreachable (earlier copy applied)"},
	{"assumed-allow", "unreachable for long (all allowed)"},
}

// RobotsOutcome says what the robots.txt outcome of that name meant for
// the crawl, "none (4xx, all allowed)" for "unavailable"; a name it does
// not know is said as it is.
func RobotsOutcome(name string) string {
	if i := outcomeIndex(name); i >= 0 {
		return robotsOutcomes[i].words
	}
	return name
}

func outcomeIndex(name string) int {
	return slices.IndexFunc(robotsOutcomes, func(o struct{ name, words string }) bool { return o.name == name })
}

// RobotsOutcomes lists counts of robots.txt fetches by outcome name, as
// crawler.Stats.RobotsOutcomes holds them: "ok 5, none (4xx, all
// allowed) 1, unreachable (all disallowed) 3", in a fixed order (names it
// does not know last, sorted).
func RobotsOutcomes(counts map[string]int64) string {
	var parts []string
	for _, o := range robotsOutcomes {
		if n, ok := counts[o.name]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", o.words, n))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		if outcomeIndex(name) < 0 {
			parts = append(parts, fmt.Sprintf("%s %d", name, counts[name]))
		}
	}
	return strings.Join(parts, ", ")
}
