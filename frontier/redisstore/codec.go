package redisstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
	"github.com/heedcrawl/heed/frontier/revisit"
	"github.com/heedcrawl/heed/ratelimit"
)

// errCorrupt reports a value in Redis, or a reply, the Store cannot decode.
var errCorrupt = errors.New("redisstore: corrupt value")

// Items and host states are kept in package codec's encoding, the one
// every Store that persists shares; the scripts treat them as opaque
// bytes. An item's Key is the queue it lies in, and is not encoded.

// encodeItem appends it, without its Key, to dst.
func encodeItem(dst []byte, it *frontier.Item) []byte {
	return codec.AppendItem(dst, it)
}

// decodeItem decodes an item of key encoded by encodeItem.
func decodeItem(b []byte, key string) (frontier.Item, error) {
	it, err := codec.DecodeItem(b, key)
	if err != nil {
		return frontier.Item{}, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return it, nil
}

// encodeHost encodes h without NextAllowed and ClosedUntil, which the
// scripts keep beside it, in microseconds on Redis's clock.
func encodeHost(h *ratelimit.HostState) []byte {
	st := *h
	st.NextAllowed, st.ClosedUntil = time.Time{}, time.Time{}
	return codec.AppendHost(nil, &st)
}

// decodeHost decodes a host state of encodeHost; an empty b is the zero
// state of a key never ended a lease of. The caller sets NextAllowed and
// ClosedUntil from the scripts' answer.
func decodeHost(b []byte) (ratelimit.HostState, error) {
	if len(b) == 0 {
		return ratelimit.HostState{}, nil
	}
	h, err := codec.DecodeHost(b)
	if err != nil {
		return ratelimit.HostState{}, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return h, nil
}

// decodeRevisiting decodes a key's revisit state as a script replies it:
// revisit.Host's encoding, or empty for a key that has none.
func decodeRevisiting(v any) (revisit.Host, error) {
	var h revisit.Host
	b := strOf(v)
	if b == "" {
		return h, nil
	}
	if err := h.UnmarshalBinary([]byte(b)); err != nil {
		return revisit.Host{}, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return h, nil
}
