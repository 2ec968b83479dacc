package storetest_test

import (
	"fmt"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/storetest"
)

// Diff compares an item as a Store gave it back with the item added:
// field by field, times as instants (a Store may hand a Due back in
// another time zone), and the fields a check leaves out named with why.
func ExampleDiff() {
	due := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	added := frontier.Item{URL: "http://a.example/p", Key: "a.example", Depth: 2, Priority: 0.5, Due: due}
	back := added
	back.Due = due.In(time.FixedZone("CET", 3600)) // the same instant
	back.Priority = 0.25
	back.Retries = 1 // counted by the Store: not a difference here
	for _, d := range storetest.Diff(added, back, map[string]string{"Item.Retries": "counted by the Store"}) {
		fmt.Println(d)
	}
	// Output:
	// Item.Priority: got 0.25, want 0.5
}
