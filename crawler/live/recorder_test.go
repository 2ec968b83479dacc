package live

import (
	"net/url"
	"sync"
	"testing"
	"time"
)

// A host's request starts stay bounded however fast it is asked, and
// those older than a minute do not count in its load, trimmed or not.
func TestStartsBounded(t *testing.T) {
	var h hostRec
	t0 := time.Unix(1_000_000, 0)
	for i := range 3 * hostStartsMax {
		h.started(t0.Add(time.Duration(i) * time.Millisecond))
		if len(h.starts) > hostStartsMax {
			t.Fatalf("after %d starts: %d kept, want at most %d", i+1, len(h.starts), hostStartsMax)
		}
	}
	now := t0.Add(3 * hostStartsMax * time.Millisecond)
	if n, _ := h.load(now); n != hostStartsMax {
		t.Errorf("load = %d, want the %d kept", n, hostStartsMax)
	}
	// A minute later, three new starts: the old ones are out of the load
	// before any poll trims them.
	later := now.Add(2 * time.Minute)
	for i := range 3 {
		h.started(later.Add(time.Duration(i) * time.Second))
	}
	if n, _ := h.load(later.Add(3 * time.Second)); n != 3 {
		t.Errorf("load a minute later = %d, want 3", n)
	}
	if h.requests != 3*hostStartsMax+3 || h.inFlight != 3*hostStartsMax+3 {
		t.Errorf("requests %d, in flight %d", h.requests, h.inFlight)
	}
}

// The chart's counters, added to by many workers at once without a lock,
// lose no answer, also when a slot starts a new second.
func TestSecondsConcurrent(t *testing.T) {
	var s seconds
	t0 := time.Unix(2_000_000, 0)
	s.add(t0.Add(-window), Outcome5xx) // the slot t0 reuses, an hour earlier
	const workers, each = 8, 3000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				s.add(t0.Add(time.Duration(i%3)*time.Second+time.Duration(w)), Outcome2xx)
			}
		})
	}
	wg.Wait()
	got := s.series(t0.Unix(), t0.Unix()+2)
	for sec, n := range got[Outcome2xx] {
		if n != workers*each/3 {
			t.Errorf("second %d: %d answers, want %d", sec, n, workers*each/3)
		}
	}
	if got[Outcome5xx][0] != 0 {
		t.Errorf("an hour-old count left in the slot: %d", got[Outcome5xx][0])
	}
}

// sameURL agrees with comparing u.String(), for the URLs a crawl fetches
// and for the forms it leaves to String.
func TestSameURL(t *testing.T) {
	for _, raw := range []string{
		"http://a.example/", "http://a.example", "https://a.example:8443/p/q.html",
		"http://a.example/p?q=1&r=%20", "http://a.example/p?", "http://a.example/p#frag",
		"http://a.example/a%2Fb", "http://a.example/é ü", "http://a.example/p?q#f%20g",
		"http://user:pw@a.example/", "mailto:x@a.example", "/relative", "http://[::1]:80/x",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		s := u.String()
		if !sameURL(s, u) {
			t.Errorf("sameURL(%q, %q) = false", s, raw)
		}
		for _, other := range []string{s + "x", s[:len(s)-1], "x" + s, "", "http://b.example/"} {
			if other != s && sameURL(other, u) {
				t.Errorf("sameURL(%q, %q) = true", other, raw)
			}
		}
	}
}
