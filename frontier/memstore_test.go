package frontier_test

import (
	"testing"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	for _, exact := range []bool{false, true} {
		t.Run(map[bool]string{false: "hashes", true: "exact"}[exact], func(t *testing.T) {
			storetest.Run(t, storetest.Harness{
				Open: func(t *testing.T) frontier.Store { return &frontier.MemoryStore{ExactSeen: exact} },
			})
		})
	}
}
