package pebblestore

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// fullItem returns an Item with every field set to something other than
// its zero value; it fails t on a field it does not know how to fill, so
// that a field added to frontier.Item is not silently left out of the
// encoding.
func fullItem(t *testing.T) frontier.Item {
	t.Helper()
	it := frontier.Item{
		URL:          "https://example.com/a?b=c#d",
		Key:          "example.com",
		Referrer:     "https://example.com/",
		Depth:        524_288 * 3,
		Kind:         frontier.KindSitemap,
		Priority:     0.123456789,
		Lastmod:      time.Date(2024, 2, 29, 23, 59, 58, 123456789, time.UTC),
		FromSitemap:  true,
		Meta:         map[string]string{"k": "v", "empty": "", "ünï": "cødé"},
		Retries:      -3, // not meaningful, but an int the encoding must keep
		Redirects:    []string{"http://example.com/0", "", "http://example.com/1"},
		SitemapDepth: 2,
	}
	v := reflect.ValueOf(it)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullItem leaves Item.%s zero: set it, and encode it", v.Type().Field(i).Name)
		}
	}
	return it
}

func sameItem(a, b frontier.Item) bool {
	// time.Time values are compared as instants; the rest exactly.
	if !a.Lastmod.Equal(b.Lastmod) {
		return false
	}
	a.Lastmod, b.Lastmod = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

func TestItemRoundTrip(t *testing.T) {
	full := fullItem(t)
	for name, it := range map[string]frontier.Item{
		"full":    full,
		"minimal": {URL: "http://a/", Key: "a"},
		"seed":    {URL: "http://a/", Key: "a", Kind: frontier.KindPage, Depth: 0},
		"extreme": {URL: "http://a/", Key: "a", Depth: math.MinInt64, Retries: math.MaxInt64, SitemapDepth: math.MinInt64,
			Priority: float32(math.Inf(-1)), Lastmod: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		"local time": {URL: "http://a/", Key: "a", Lastmod: time.Date(2020, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))},
	} {
		t.Run(name, func(t *testing.T) {
			enc := appendItem([]byte("prefix"), &it)
			got, err := decodeItem(enc[len("prefix"):], it.Key)
			if err != nil {
				t.Fatalf("decodeItem: %v", err)
			}
			if !sameItem(got, it) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, it)
			}
			// Every strict prefix of an encoding is refused, not misread.
			for n := range len(enc) - len("prefix") {
				if _, err := decodeItem(enc[len("prefix"):len("prefix")+n], it.Key); !errors.Is(err, errCorrupt) {
					t.Fatalf("decoding the first %d bytes: %v, want errCorrupt", n, err)
				}
			}
		})
	}
}

func TestItemEncodingIsCompact(t *testing.T) {
	it := frontier.Item{URL: "http://example.com/page", Key: "example.com", Depth: 3}
	if n, want := len(appendItem(nil, &it)), 1+1+len(it.URL)+1+1; n != want {
		t.Errorf("a plain item takes %d bytes, want %d (flags, URL with its length, depth, kind)", n, want)
	}
}

func TestDecodeItemRefusesGarbage(t *testing.T) {
	for _, b := range [][]byte{
		nil,
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // flags overflow
		{0x80, 0x04, 0x01, 'a', 0, 0},                                      // a flag past Meta's: a newer format
		{0, 0x05, 'a'},                                                     // URL longer than the input
		{itemRedirects, 0x01, 'a', 0, 0, 0xff, 0xff, 0xff, 0x0f},           // absurd redirect count
		{0x80, 0x02, 0x01, 'a', 0, 0, 0xff, 0xff, 0xff, 0x0f},              // absurd Meta count
		{0, 0x01, 'a', 0, 0, 0},                                            // a byte left over
	} {
		if _, err := decodeItem(b, "k"); !errors.Is(err, errCorrupt) {
			t.Errorf("decodeItem(%x): %v, want errCorrupt", b, err)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []record{
		{low: seqStart, head: seqStart, tail: seqStart},
		{
			KeyRecord: frontier.KeyRecord{
				Host: frontier.HostState{
					NextAllowed: time.Date(2025, 6, 1, 12, 0, 0, 5, time.UTC), Delay: 1500 * time.Millisecond,
					CrawlDelay: 10 * time.Second, HasCrawlDelay: true, Backoff: time.Minute, RTT: 80 * time.Millisecond,
					PausedUntil: time.Date(2025, 6, 1, 13, 0, 0, 0, time.UTC), Failures: 4,
				},
				Scheduled: 1_000_000, Sitemaps: 7, SitemapURLs: 50_000, GivenUp: true,
			},
			low: seqStart - 5, head: seqStart - 3, tail: seqStart + 1_000_000,
		},
	} {
		got, err := decodeRecord(appendRecord(nil, &r))
		if err != nil {
			t.Fatal(err)
		}
		if !got.Host.NextAllowed.Equal(r.Host.NextAllowed) || !got.Host.PausedUntil.Equal(r.Host.PausedUntil) {
			t.Errorf("times: got %+v, want %+v", got, r)
		}
		got.Host.NextAllowed, got.Host.PausedUntil = r.Host.NextAllowed, r.Host.PausedUntil
		if got != r {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
		}
	}
	if _, err := decodeRecord([]byte{recNextAllowed, 0, 0}); !errors.Is(err, errCorrupt) {
		t.Errorf("short record: %v, want errCorrupt", err)
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
