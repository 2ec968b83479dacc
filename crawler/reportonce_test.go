package crawler

import (
	"strconv"
	"sync/atomic"
	"testing"
)

// reportOnce's states: a URL held by two workers is reported by the first
// to end; forgotten once no worker holds it and a lease of it ended; kept
// reported when its lease was taken back, until it comes back and ends.
func TestReportOnce(t *testing.T) {
	var o reportOnce
	const u = "https://example.com/a"

	o.hold(u)
	o.hold(u)
	if !o.first(u) || o.first(u) {
		t.Fatal("two holders: want the first to report and the second not")
	}
	o.ended(u)
	o.release(u)
	o.release(u)
	if len(o.urls) != 0 {
		t.Fatalf("ended and released: %v still known", o.urls)
	}

	// Reported, then the lease lost (no end): kept, and not reported when
	// it comes back; forgotten once it ends there.
	o.hold(u)
	if !o.first(u) {
		t.Fatal("a URL held once: want its report")
	}
	o.release(u)
	o.hold(u)
	if o.first(u) {
		t.Fatal("reported under a lost lease, back again: reported twice")
	}
	o.ended(u)
	o.release(u)
	if len(o.urls) != 0 {
		t.Fatalf("back and ended: %v still known", o.urls)
	}

	// Revisited later: reported again.
	o.hold(u)
	if !o.first(u) {
		t.Fatal("a URL ended and forgotten, revisited: want its report")
	}
	o.ended(u)
	o.release(u)

	// Held but given back unreported (a requeue): forgotten.
	o.hold(u)
	o.release(u)
	if len(o.urls) != 0 {
		t.Fatalf("requeued: %v still known", o.urls)
	}
	// Not held (no worker's lease): reported, nothing kept.
	if !o.first(u) || len(o.urls) != 0 {
		t.Fatalf("not held: want a report and nothing kept, got %v", o.urls)
	}
}

// BenchmarkReportOnce is what a page's lease costs reportOnce, workers in
// parallel on distinct URLs, as in a crawl.
func BenchmarkReportOnce(b *testing.B) {
	var o reportOnce
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		base := "https://example.com/" + strconv.FormatInt(next.Add(1), 10) + "/"
		urls := make([]string, 64)
		for i := range urls {
			urls[i] = base + strconv.Itoa(i)
		}
		i := 0
		for pb.Next() {
			u := urls[i%len(urls)]
			i++
			o.hold(u)
			o.first(u)
			o.ended(u)
			o.release(u)
		}
	})
}
