package redisstore

import (
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
	"github.com/heedcrawl/heed/frontier/storetest"
	"github.com/heedcrawl/heed/ratelimit"
)

// Items and host states are package codec's encoding, tested there. What
// the store adds: a host state is kept without NextAllowed and ClosedUntil,
// which the scripts keep beside it; an empty one is the zero state; errors
// wrap errCorrupt.
func TestHostCodec(t *testing.T) {
	var in ratelimit.HostState
	storetest.Fill(t, &in, time.Now())
	out, err := decodeHost(encodeHost(&in))
	if err != nil {
		t.Fatal(err)
	}
	if !out.NextAllowed.IsZero() || !out.ClosedUntil.IsZero() {
		t.Errorf("NextAllowed %v and ClosedUntil %v came back: they are the scripts' to keep", out.NextAllowed, out.ClosedUntil)
	}
	scripts := map[string]string{"HostState.NextAllowed": "kept by the scripts", "HostState.ClosedUntil": "kept by the scripts"}
	for _, d := range storetest.Diff(in, out, scripts) {
		t.Error(d)
	}
	if h, err := decodeHost(nil); err != nil || h != (ratelimit.HostState{}) {
		t.Errorf("decodeHost(empty) = %+v, %v; want the zero state", h, err)
	}
	for _, b := range [][]byte{{0}, encodeHost(&in)[:3]} {
		if _, err := decodeHost(b); !errors.Is(err, errCorrupt) || !errors.Is(err, codec.ErrCorrupt) && !errors.Is(err, codec.ErrVersion) {
			t.Errorf("decodeHost(%x) = %v, want errCorrupt wrapping codec's", b, err)
		}
	}
	if _, err := decodeItem([]byte{codec.ItemVersion}, "a"); !errors.Is(err, errCorrupt) || !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("decodeItem of a version byte alone = %v, want errCorrupt wrapping codec's", err)
	}
}

// TestOldValues: a job's items and host states written by this package
// before package codec still decode — items with no Due and no Visit, due
// at once, as the lists of queues hold them still (TestOldQueues queues
// this item).
func TestOldValues(t *testing.T) {
	item, _ := hex.DecodeString("01ff0f0a687474703a2f2f612f7809687474703a2f2f612f04010000003f80c783de0c0502016500016b017602010a687474703a2f2f612f3006ca88b0f70c00")
	it, err := decodeItem(item, "a")
	want := frontier.Item{URL: "http://a/x", Key: "a", Referrer: "http://a/", Depth: 2, Kind: frontier.KindSitemap,
		Priority: 0.5, Lastmod: time.Date(2024, 2, 29, 12, 0, 0, 5, time.UTC), FromSitemap: true,
		Meta: map[string]string{"k": "v", "e": ""}, Retries: 1, Redirects: []string{"http://a/0"}, SitemapDepth: 3}
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range storetest.Diff(want, it, nil) {
		t.Errorf("old item: %s", d)
	}
	host, _ := hex.DecodeString("0180a8d6b90780d0acf30e0180e0ba84bf0380d0a54c01a0bbe2830d0708")
	h, err := decodeHost(host)
	wantH := ratelimit.HostState{Delay: time.Second, CrawlDelay: 2 * time.Second, HasCrawlDelay: true, Backoff: time.Minute,
		RTT: 80 * time.Millisecond, PausedUntil: time.Date(2025, 6, 1, 13, 0, 0, 7, time.UTC), Failures: 4}
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range storetest.Diff(wantH, h, nil) {
		t.Errorf("old host state: %s", d)
	}
}
