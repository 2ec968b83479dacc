package codec_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
	"github.com/heedcrawl/heed/frontier/revisit"
	"github.com/heedcrawl/heed/frontier/storetest"
	"github.com/heedcrawl/heed/ratelimit"
)

// FuzzDecodeItem: DecodeItem never panics, and what it decodes encodes to
// what decodes to the same item, in the same bytes again.
func FuzzDecodeItem(f *testing.F) {
	full := filledItem(f)
	f.Add(codec.AppendItem(nil, &full))
	f.Add(codec.AppendItem(nil, &frontier.Item{URL: "http://a/", Referrer: "http://b/", Depth: 1}))
	f.Add([]byte{codec.ItemVersion, 0x80, 0x04, 0x01, 'a', 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		it, err := codec.DecodeItem(b, "k")
		if err != nil {
			return
		}
		enc := codec.AppendItem(nil, &it)
		again, err := codec.DecodeItem(enc, "k")
		if err != nil {
			t.Fatalf("%x decodes to %+v, which encodes to %x, which does not decode: %v", b, it, enc, err)
		}
		for _, d := range storetest.Diff(it, again, nil) {
			t.Errorf("%x: re-encoded: %s", b, d)
		}
		if enc2 := codec.AppendItem(nil, &again); !bytes.Equal(enc, enc2) {
			t.Errorf("%x: encodings differ: %x, then %x", b, enc, enc2)
		}
	})
}

// FuzzDecodeHost: DecodeHost never panics, and what it decodes encodes to
// what decodes to the same state.
func FuzzDecodeHost(f *testing.F) {
	full := filledHost(f)
	f.Add(codec.AppendHost(nil, &full))
	f.Add([]byte{1, 0x80, 0x04, 0, 1, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := codec.DecodeHost(b)
		if err != nil {
			return
		}
		enc := codec.AppendHost(nil, &h)
		again, err := codec.DecodeHost(enc)
		if err != nil {
			t.Fatalf("%x decodes to %+v, which encodes to %x, which does not decode: %v", b, h, enc, err)
		}
		for _, d := range storetest.Diff(h, again, nil) {
			t.Errorf("%x: re-encoded: %s", b, d)
		}
	})
}

// FuzzRoundTrip: any Item and HostState encode to what decodes to them.
func FuzzRoundTrip(f *testing.F) {
	f.Add("http://a/", "http://b/", 3, uint8(1), float32(0.5), int64(1700000000), int64(5), true, "k", "v", 2, "http://c/", 1, int64(1e9), 4, `"e"`, uint64(7))
	f.Fuzz(func(t *testing.T, url, ref string, depth int, kind uint8, prio float32, sec, nsec int64, flag bool,
		mk, mv string, retries int, redirect string, sitemapDepth int, d int64, failures int, etag string, digest uint64) {
		at := time.Unix(sec, nsec) // nsec outside [0, 1e9) carries into sec
		it := frontier.Item{URL: url, Key: "k", Referrer: ref, Depth: depth, Kind: frontier.Kind(kind), Priority: prio,
			Lastmod: at, FromSitemap: flag, Meta: map[string]string{mk: mv, mv: mk}, Retries: retries,
			Redirects: []string{redirect, url}, SitemapDepth: sitemapDepth, Due: at.Add(time.Duration(d)),
			Visit: &frontier.Visit{Fetched: at, Changed: at.Add(-time.Duration(d)), ETag: etag, LastModified: time.Unix(nsec, 0),
				Digest: digest, Status: failures, Gone: retries, Size: d, LastmodRead: at.Add(time.Duration(-d))}}
		if d > 0 {
			_ = it.Visit.Estimator.Observe(revisit.Obs{Interval: time.Duration(d), Changed: flag})
		}
		got, err := codec.DecodeItem(codec.AppendItem(nil, &it), "k")
		if err != nil {
			t.Fatalf("%+v: %v", it, err)
		}
		for _, diff := range storetest.Diff(it, got, nil) {
			t.Errorf("Item: %s", diff)
		}
		h := ratelimit.HostState{NextAllowed: at, Delay: time.Duration(d), CrawlDelay: time.Duration(-d), HasCrawlDelay: flag,
			Backoff: time.Duration(d / 3), RTT: time.Duration(d * 7), PausedUntil: at.Add(time.Duration(d)), Failures: failures,
			ClosedUntil: at.Add(-time.Duration(d)), Interrupted: time.Unix(nsec, sec%1e9)}
		gotH, err := codec.DecodeHost(codec.AppendHost(nil, &h))
		if err != nil {
			t.Fatalf("%+v: %v", h, err)
		}
		for _, diff := range storetest.Diff(h, gotH, nil) {
			t.Errorf("HostState: %s", diff)
		}
	})
}
