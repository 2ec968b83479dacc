package pebblestore

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
	"github.com/heedcrawl/heed/frontier/storetest"
	"github.com/heedcrawl/heed/ratelimit"
)

// Items are package codec's encoding, tested there; the store wraps its
// errors.
func TestDecodeItemRefusesGarbage(t *testing.T) {
	it := frontier.Item{URL: "http://a/", Key: "a", Depth: 1}
	b := appendItem(nil, &it)
	if got, err := decodeItem(b, "a"); err != nil || got.URL != it.URL || got.Key != "a" || got.Depth != 1 {
		t.Errorf("decodeItem(appendItem(%+v)) = %+v, %v", it, got, err)
	}
	for _, b := range [][]byte{nil, b[:len(b)-1], append(b, 0)} {
		if _, err := decodeItem(b, "k"); !errors.Is(err, errCorrupt) || !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("decodeItem(%x): %v, want errCorrupt and codec.ErrCorrupt", b, err)
		}
	}
}

// TestRecordRoundTrip: a key's record keeps every field of its HostState
// (package codec's encoding), its counters and where its queue lies; a
// truncated record is refused.
func TestRecordRoundTrip(t *testing.T) {
	var host ratelimit.HostState
	storetest.Fill(t, &host, time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	host.NextAllowed = host.NextAllowed.Add(5) // to the nanosecond
	for _, r := range []record{
		{low: seqStart, head: seqStart, tail: seqStart},
		{
			KeyRecord: frontier.KeyRecord{Host: host, Scheduled: 1_000_000, Sitemaps: 7, SitemapURLs: 50_000, GivenUp: true},
			low:       seqStart - 5, head: seqStart - 3, tail: seqStart + 1_000_000,
		},
	} {
		enc := appendRecord(nil, &r)
		got, err := decodeRecord(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range storetest.Diff(r.Host, got.Host, nil) {
			t.Errorf("host: %s", d)
		}
		got.Host = r.Host
		if !reflect.DeepEqual(got, r) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
		}
		for n := range len(enc) {
			if _, err := decodeRecord(enc[:n]); !errors.Is(err, errCorrupt) {
				t.Fatalf("the first %d of %d bytes: %v, want errCorrupt", n, len(enc), err)
			}
		}
	}
}

func TestQueueKeys(t *testing.T) {
	// A key's items lie together, in order, and no other key's lie
	// among them, not even a key the first is a prefix of.
	a1, a2, b1 := queueKey(nil, "a", seqStart), queueKey(nil, "a", seqStart+1), queueKey(nil, "b", seqStart)
	if !(string(a1) < string(a2) && string(a2) < string(b1)) {
		t.Errorf("queue keys out of order: %q %q %q", a1, a2, b1)
	}
	for _, other := range []string{"a:", "a\xff", "\xff"} {
		for _, seq := range []uint64{0, seqStart, 1<<64 - 1} {
			if k := string(queueKey(nil, other, seq)); string(a1) <= k && k <= string(a2) {
				t.Errorf("entry %q of key %q lies among key a's", k, other)
			}
		}
	}
	key, seq, ok := parseQueueKey(a2)
	if !ok || key != "a" || seq != seqStart+1 {
		t.Errorf("parseQueueKey(%q) = %q, %d, %v", a2, key, seq, ok)
	}
	if _, _, ok := parseQueueKey(a2[:len(a2)-1]); ok {
		t.Error("parseQueueKey accepted a truncated key")
	}
}
