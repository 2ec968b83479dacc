package redisstore

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

var fullItem = frontier.Item{
	URL: "http://a/x", Key: "a", Referrer: "http://r/", Depth: 7, Kind: frontier.KindSitemap,
	Priority: 0.123, Lastmod: time.Date(2024, 2, 29, 23, 59, 58, 123456789, time.UTC), FromSitemap: true,
	Meta: map[string]string{"k": "v", "empty": ""}, Retries: -3, Redirects: []string{"http://a/0", ""},
	SitemapDepth: 2,
}

// TestItemCodec: every field of an Item comes back exactly, and the zero
// fields cost nothing beyond the URL.
func TestItemCodec(t *testing.T) {
	for _, in := range []frontier.Item{fullItem, {URL: "http://a/", Key: "a"}} {
		b := encodeItem(nil, &in)
		out, err := decodeItem(b, in.Key)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, in) {
			t.Errorf("decoded\n %+v\nwant\n %+v", out, in)
		}
	}
	bare := frontier.Item{URL: "http://a/"}
	if n := len(encodeItem(nil, &bare)); n != 3+len(bare.URL) {
		t.Errorf("an item with only a URL encodes in %d bytes, want %d", n, 3+len(bare.URL))
	}
}

func TestHostCodec(t *testing.T) {
	for _, in := range []frontier.HostState{{}, {
		Delay: time.Second, CrawlDelay: 2 * time.Second, HasCrawlDelay: true, Backoff: time.Minute,
		RTT: time.Millisecond, PausedUntil: time.Date(2030, 1, 1, 0, 0, 0, 1, time.UTC), Failures: 4,
	}} {
		out, err := decodeHost(encodeHost(&in))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, in) {
			t.Errorf("decoded %+v, want %+v", out, in)
		}
	}
}

// TestCorrupt: every truncation of an encoding is an error, never a panic.
func TestCorrupt(t *testing.T) {
	b := encodeItem(nil, &fullItem)
	for i := range len(b) {
		if _, err := decodeItem(b[:i], "a"); err == nil {
			t.Errorf("item truncated to %d of %d bytes decoded", i, len(b))
		}
	}
	h := encodeHost(&frontier.HostState{Delay: time.Second, PausedUntil: time.Now()})
	for i := 1; i < len(h); i++ {
		if _, err := decodeHost(h[:i]); err == nil {
			t.Errorf("host state truncated to %d of %d bytes decoded", i, len(h))
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encodeItem(nil, &fullItem))
	f.Add(encodeHost(&frontier.HostState{Delay: time.Second, PausedUntil: time.Now()}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if it, err := decodeItem(b, "k"); err == nil {
			// What decodes encodes to what decodes to the same.
			enc := encodeItem(nil, &it)
			again, err := decodeItem(enc, "k")
			if err != nil || !bytes.Equal(encodeItem(nil, &again), enc) {
				t.Errorf("re-encoding %+v: %+v, %v", it, again, err)
			}
		}
		decodeHost(b)
	})
}
