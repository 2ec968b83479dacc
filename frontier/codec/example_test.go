package codec_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
	"github.com/heedcrawl/heed/ratelimit"
)

// A Store keeps an item under its key, encoded into a scratch buffer it
// reuses, and decodes it when the item is claimed.
func Example() {
	it := frontier.Item{
		URL: "https://example.com/b", Key: "example.com", Referrer: "https://example.com/", Depth: 1,
		Retries: 1, Meta: map[string]string{"list": "spring"},
	}
	var scratch []byte
	scratch = codec.AppendItem(scratch[:0], &it)
	fmt.Printf("%d bytes, version %d\n", len(scratch), scratch[0])

	got, err := codec.DecodeItem(scratch, it.Key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.URL, got.Key, got.Depth, got.Retries, got.Meta["list"])

	h := ratelimit.HostState{Delay: 2 * time.Second, ClosedUntil: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	host, err := codec.DecodeHost(codec.AppendHost(nil, &h))
	fmt.Println(host.Delay, host.ClosedUntil, err)

	_, err = codec.DecodeItem(scratch[:10], it.Key)
	fmt.Println(errors.Is(err, codec.ErrCorrupt), err)
	// Output:
	// 61 bytes, version 1
	// https://example.com/b example.com 1 1 spring
	// 2s 2025-06-01 12:00:00 +0000 UTC <nil>
	// true codec: corrupt input: item of 10 bytes: string past the end at byte 4
}
