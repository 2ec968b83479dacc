package pebblestore

import (
	"strconv"
	"testing"
)

func TestSeenFilter(t *testing.T) {
	f := newSeenFilter(0)
	defer f.free()
	url := func(prefix string, i int) []byte {
		return strconv.AppendInt([]byte("https://example.com/"+prefix), int64(i), 10)
	}
	const n = 3 * minFilterCap // past the first filter's capacity, twice
	for i := range n {
		if i%2 == 0 {
			f.add(string(url("", i)))
		} else {
			f.addHash(f.hashBytes(url("", i)))
		}
	}
	if len(*f.parts.Load()) != 3 {
		t.Errorf("%d URLs in %d filters, want 3 (capacities 1, 1 and 2 Mi)", n, len(*f.parts.Load()))
	}
	for i := range n {
		if u := string(url("", i)); !f.mayContain(u) {
			t.Fatalf("%s added, but not found", u)
		}
	}
	const probes = 200_000
	fp := 0
	for i := range probes {
		if f.mayContain(string(url("new/", i))) {
			fp++
		}
	}
	// Two full filters of 2.5% or so, and one half full.
	if rate := float64(fp) / probes; rate > 0.07 {
		t.Errorf("false positive rate %.2f%%, want under 7%%", 100*rate)
	} else {
		t.Logf("false positive rate %.2f%% over %d filters, %d MB", 100*rate, len(*f.parts.Load()), f.bytes()>>20)
	}
	if want := 4 * minFilterCap * bitsPerURL / 8; f.bytes() != want {
		t.Errorf("%d bytes, want %d", f.bytes(), want)
	}
}
