package frontier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// ackAddStore is a MemoryStore that is a frontier.DoneAdder, counting calls.
type ackAddStore struct {
	frontier.MemoryStore
	ackAdds, adds int
	batch         []frontier.Item
}

func (s *ackAddStore) Add(ctx context.Context, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	s.adds++
	return s.MemoryStore.Add(ctx, batch, lim)
}

func (s *ackAddStore) DoneAdding(ctx context.Context, l *frontier.Lease, now time.Time, o frontier.Outcome, batch []frontier.Item, lim frontier.Limits) ([]error, error) {
	s.ackAdds++
	s.batch = batch
	refused, err := s.MemoryStore.Add(ctx, batch, lim)
	if err != nil {
		return nil, err
	}
	return refused, s.MemoryStore.Done(ctx, l, now, o)
}

// DoneAdding hands the Store the links that pass the Frontier's own checks
// and the end of the lease in one call, and answers for every link in
// order, those the Frontier refused included.
func TestDoneAddingOneStoreCall(t *testing.T) {
	for _, shared := range []bool{true, false} {
		var store frontier.Store = new(frontier.MemoryStore)
		aa := &ackAddStore{}
		if shared {
			store = aa
		}
		fr := frontier.New(frontier.Config{Store: store, Scope: frontier.ScopeSeedHosts})
		ctx := context.Background()
		if _, err := fr.AddSeeds(ctx, []string{"http://a.test/"}); err != nil {
			t.Fatal(err)
		}
		l, err := fr.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		links := []frontier.Item{
			l.Child("http://a.test/x"),
			l.Child("http://elsewhere.test/"), // out of scope
			l.Child("http://a.test/"),         // the seed: seen
			l.Child("http://a.test/y"),
		}
		errs, err := fr.DoneAdding(ctx, l, frontier.Outcome{Pace: l.Pace}, links)
		if err != nil {
			t.Fatalf("DoneAdding (DoneAdder %v): %v", shared, err)
		}
		if len(errs) != 4 || errs[0] != nil || !errors.Is(errs[1], frontier.ErrScope) || !errors.Is(errs[2], frontier.ErrSeen) || errs[3] != nil {
			t.Fatalf("DoneAdding (DoneAdder %v) = %v, want [nil ErrScope ErrSeen nil]", shared, errs)
		}
		if shared && (aa.ackAdds != 1 || len(aa.batch) != 3) {
			t.Errorf("DoneAdding called %d times with %d items, want once with the 3 in scope", aa.ackAdds, len(aa.batch))
		}
		if err := fr.Done(ctx, l, frontier.Outcome{}); !errors.Is(err, frontier.ErrLeaseLost) {
			t.Errorf("Done after DoneAdding: %v, want ErrLeaseLost", err)
		}
		for _, want := range []string{"http://a.test/x", "http://a.test/y"} {
			l, err := fr.Next(ctx)
			if err != nil || l.URL != want {
				t.Fatalf("Next = %v, %v; want %s", l, err, want)
			}
			if err := fr.Done(ctx, l, frontier.Outcome{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
