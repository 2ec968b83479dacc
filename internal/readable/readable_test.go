package readable_test

import (
	"fmt"
	"testing"

	"github.com/heedcrawl/heed/internal/readable"
	"github.com/heedcrawl/heed/robots/gate"
)

func ExampleRobotsOutcomes() {
	fmt.Println(readable.RobotsOutcomes(map[string]int64{"unreachable": 3, "ok": 5, "unavailable": 1}))
	fmt.Println(readable.Bytes(45583381))
	// Output:
	// ok 5, none (4xx, all allowed) 1, unreachable (all disallowed) 3
	// 43.5 MiB
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 48<<20 + 300<<10: "48.3 MiB", 3 << 30: "3.0 GiB"} {
		if got := readable.Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestEveryGateOutcomeWorded: each outcome the gate reports has words of
// its own, and the two near-synonyms say opposite things.
func TestEveryGateOutcomeWorded(t *testing.T) {
	seen := map[string]bool{}
	for o := gate.OutcomeOK; o <= gate.OutcomeAssumedAllow; o++ {
		words := readable.RobotsOutcome(o.String())
		if words == "" || seen[words] || (o != gate.OutcomeOK && words == o.String()) {
			t.Errorf("outcome %s worded %q", o, words)
		}
		seen[words] = true
	}
	if got := readable.RobotsOutcomes(map[string]int64{"new-kind": 2, "ok": 1}); got != "ok 1, new-kind 2" {
		t.Errorf("an unknown outcome: %q", got)
	}
}
