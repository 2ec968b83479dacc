package pebblestore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// claimAck claims the next item, which must be of key and have url, and
// acks it.
func claimAck(t *testing.T, s *Store, key, url string) {
	t.Helper()
	c, err := s.Claim(ctx, time.Now(), frontier.ClaimOptions{})
	if err != nil || c.Lease == nil {
		t.Fatalf("Claim: %+v, %v; want %s", c, err, url)
	}
	if it := c.Lease.Item; it.Key != key || it.URL != url || it.Referrer != url+"?from" {
		t.Fatalf("claimed %+v, want %s of %s with its referrer", it, url, key)
	}
	if err := s.Done(ctx, c.Lease, time.Now(), frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
		t.Fatalf("Done: %v", err)
	}
}

// heldAhead returns how many entries of key's queue are held ahead.
func heldAhead(s *Store, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[key]; q != nil && q.ahead != nil {
		return q.ahead.n
	}
	return 0
}

func TestReadAheadServesClaimsInOrder(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	defer func() { s.Close() }()
	const n = 50
	it := func(i int) frontier.Item {
		x := item("a", fmt.Sprintf("/%d", i))
		x.Referrer = x.URL + "?from"
		return x
	}
	for i := range n {
		mustAdd(t, s, it(i))
	}
	// A short queue's items are held as they are added, up to aheadItems.
	if got := heldAhead(s, "a"); got != aheadItems {
		t.Fatalf("%d entries held after %d adds to an empty queue, want %d", got, n, aheadItems)
	}
	for i := range aheadItems + 1 {
		claimAck(t, s, "a", it(i).URL)
	}
	// The claim past what was held read its own item and the next ones.
	if got := heldAhead(s, "a"); got != aheadItems {
		t.Fatalf("%d entries held after a claim read ahead, want %d", got, aheadItems)
	}
	claimAck(t, s, "a", it(aheadItems+1).URL)

	// Reopened, nothing is held, and the first claim reads ahead again.
	s = reopenT(t, s)
	if got := heldAhead(s, "a"); got != 0 {
		t.Fatalf("%d entries held after reopening", got)
	}
	for i := aheadItems + 2; i < n; i++ {
		claimAck(t, s, "a", it(i).URL)
	}
	s.mu.Lock()
	held := s.aheadBytes
	s.mu.Unlock()
	if held != 0 {
		t.Errorf("%d bytes held with every queue empty", held)
	}
}

// Items held ahead of a queue given up are handed out to be reported, each
// once, in order.
func TestReadAheadGivenUp(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	defer s.Close()
	for i := range 40 {
		mustAdd(t, s, item("a", fmt.Sprintf("/%d", i)))
	}
	s = reopenT(t, s)
	now := time.Now()
	c, err := s.Claim(ctx, now, frontier.ClaimOptions{})
	if err != nil || c.Lease == nil || c.Lease.Item.URL != "http://a/0" {
		t.Fatalf("Claim: %+v, %v", c, err)
	}
	if heldAhead(s, "a") == 0 {
		t.Fatal("the claim held nothing ahead")
	}
	if err := s.GiveUp(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Done(ctx, c.Lease, now, frontier.Outcome{Pace: c.Lease.Pace, Rest: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 40; i++ {
		c, err := s.Claim(ctx, now, frontier.ClaimOptions{})
		if err != nil || c.Lease == nil || c.Lease.URL != fmt.Sprintf("http://a/%d", i) || !c.Lease.GivenUp {
			t.Fatalf("claim %d after GiveUp: %+v, %v; want a/%d given up", i, c.Lease, err, i)
		}
		if err := s.Done(ctx, c.Lease, now, frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := s.Claim(ctx, now, frontier.ClaimOptions{}); err != nil || c.Lease != nil || !c.Idle {
		t.Errorf("Claim after every item was handed out: %+v, %v", c, err)
	}
	s.mu.Lock()
	held := s.aheadBytes
	s.mu.Unlock()
	if held != 0 {
		t.Errorf("%d bytes held with every queue empty", held)
	}
}

// Claims of one key that run together, some reading ahead while others
// take what is held, claim every item once.
func TestReadAheadConcurrentClaims(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	defer s.Close()
	const keys, perKey = 3, 400
	for i := range perKey {
		for k := range keys {
			mustAdd(t, s, item(fmt.Sprintf("h%d", k), fmt.Sprintf("/%d", i)))
		}
	}
	s = reopenT(t, s) // nothing held: the first claims read ahead
	var mu sync.Mutex
	claimed := make(map[string]int)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				c, err := s.Claim(ctx, time.Now(), frontier.ClaimOptions{PerHost: 8})
				if err != nil {
					t.Error(err)
					return
				}
				if c.Lease == nil {
					if c.Idle {
						return
					}
					continue
				}
				mu.Lock()
				claimed[c.Lease.Item.URL]++
				mu.Unlock()
				// Adds beside the claims: each key's queue grows at its
				// tail while its head is read ahead.
				var more []frontier.Item
				if n := len(c.Lease.Item.URL); c.Lease.Item.URL[n-2:] == "/7" {
					more = append(more, item(c.Lease.Key, "/more"+c.Lease.Item.URL[n-2:]))
				}
				if _, err := s.DoneAdding(ctx, c.Lease, time.Now(), frontier.Outcome{Pace: c.Lease.Pace}, more, frontier.Limits{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	want := keys*perKey + keys // each key's "/7" added "/more/7"
	if len(claimed) != want {
		t.Errorf("%d URLs claimed, want %d", len(claimed), want)
	}
	for u, n := range claimed {
		if n != 1 {
			t.Errorf("%s claimed %d times", u, n)
		}
	}
}

// The read-ahead counts the arrays it holds against Options.ReadAhead,
// whole: a value taken leaves its bytes in its array until the array is
// dropped, and those count too, so that what is held stays near the
// limit however the claims go round the keys.
func TestReadAheadCountsArrays(t *testing.T) {
	const limit = 4 << 10
	s := openT(t, t.TempDir(), Options{ReadAhead: limit})
	defer func() { s.Close() }()
	check := func(when string) {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		sum, largest := 0, 0
		for key, q := range s.queues {
			if ra := q.ahead; ra != nil {
				if ra.size < cap(ra.buf) {
					t.Fatalf("%s: %q's array counted %d bytes, %d left in it", when, key, ra.size, cap(ra.buf))
				}
				sum += ra.size
				largest = max(largest, ra.size)
			}
		}
		if s.aheadBytes != sum {
			t.Fatalf("%s: %d bytes counted, %d in the arrays held", when, s.aheadBytes, sum)
		}
		if sum > limit+largest {
			t.Fatalf("%s: %d bytes held, limit %d", when, sum, limit)
		}
	}
	const keys, perKey = 40, 30
	for i := range perKey {
		for k := range keys {
			x := item(fmt.Sprintf("k%d", k), fmt.Sprintf("/%d", i))
			x.Referrer = x.URL + "?from"
			mustAdd(t, s, x)
		}
		check(fmt.Sprintf("after adding round %d", i))
	}
	for n := 0; ; n++ {
		c, err := s.Claim(ctx, time.Now(), frontier.ClaimOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Lease == nil {
			if n != keys*perKey {
				t.Fatalf("%d items claimed, want %d", n, keys*perKey)
			}
			break
		}
		if err := s.Done(ctx, c.Lease, time.Now(), frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("after claim %d", n))
	}
	check("at the end")
	if s.aheadBytes != 0 {
		t.Errorf("%d bytes held with every queue empty", s.aheadBytes)
	}
}
