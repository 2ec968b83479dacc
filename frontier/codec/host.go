package codec

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/heedcrawl/heed/ratelimit"
)

// Flags of an encoded HostState: which fields follow, in this order. The
// fields most keys have come first, to fit in the flags' first byte.
const (
	hostNextAllowed = 1 << iota
	hostDelay
	hostRTT
	hostHasCrawlDelay // no bytes: the flag is the value
	hostCrawlDelay
	hostFailures
	hostBackoff
	hostPausedUntil
	hostClosedUntil
	hostInterrupted
	hostNext // the flag a new field takes; flags from here on are unknown
)

// hostVersion1 is redisstore's fixed layout of a host state before this
// package: Delay, CrawlDelay, HasCrawlDelay (a byte), Backoff, RTT,
// PausedUntil (a byte saying whether it follows), Failures.
const hostVersion1 = 1

// AppendHost appends the encoding of h, every field of it, to dst and
// returns the extended buffer. It allocates only when dst is too small.
func AppendHost(dst []byte, h *ratelimit.HostState) []byte {
	var flags uint64
	size := 2
	instant := func(f uint64, t time.Time) {
		if !t.IsZero() {
			flags |= f
			size += 10
		}
	}
	dur := func(f uint64, d time.Duration) {
		if d != 0 {
			flags |= f
			size += 5
		}
	}
	instant(hostNextAllowed, h.NextAllowed)
	dur(hostDelay, h.Delay)
	dur(hostRTT, h.RTT)
	if h.HasCrawlDelay {
		flags |= hostHasCrawlDelay
	}
	dur(hostCrawlDelay, h.CrawlDelay)
	if h.Failures != 0 {
		flags |= hostFailures
		size++
	}
	dur(hostBackoff, h.Backoff)
	instant(hostPausedUntil, h.PausedUntil)
	instant(hostClosedUntil, h.ClosedUntil)
	instant(hostInterrupted, h.Interrupted)
	dst = grow(dst, size)
	dst = append(dst, HostVersion)
	dst = binary.AppendUvarint(dst, flags)
	if flags&hostNextAllowed != 0 {
		dst = appendTime(dst, h.NextAllowed)
	}
	if flags&hostDelay != 0 {
		dst = binary.AppendVarint(dst, int64(h.Delay))
	}
	if flags&hostRTT != 0 {
		dst = binary.AppendVarint(dst, int64(h.RTT))
	}
	if flags&hostCrawlDelay != 0 {
		dst = binary.AppendVarint(dst, int64(h.CrawlDelay))
	}
	if flags&hostFailures != 0 {
		dst = binary.AppendVarint(dst, int64(h.Failures))
	}
	if flags&hostBackoff != 0 {
		dst = binary.AppendVarint(dst, int64(h.Backoff))
	}
	if flags&hostPausedUntil != 0 {
		dst = appendTime(dst, h.PausedUntil)
	}
	if flags&hostClosedUntil != 0 {
		dst = appendTime(dst, h.ClosedUntil)
	}
	if flags&hostInterrupted != 0 {
		dst = appendTime(dst, h.Interrupted)
	}
	return dst
}

// DecodeHost decodes an encoding of AppendHost (b holds it whole, and
// nothing else), or of redisstore's layout before it (version 1). It
// allocates nothing but its error. An input it cannot read is refused with
// an error wrapping ErrCorrupt or ErrVersion.
func DecodeHost(b []byte) (ratelimit.HostState, error) {
	var h ratelimit.HostState
	d := decoder{b: b, n: len(b)}
	switch v := d.byte(); {
	case d.why != "":
	case v == hostVersion1:
		decodeHostVersion1(&d, &h)
	case v != HostVersion:
		return ratelimit.HostState{}, fmt.Errorf("%w: host state version %d; this build reads versions %d and %d", ErrVersion, v, hostVersion1, HostVersion)
	default:
		flags := d.uvarint()
		if flags >= hostNext && d.why == "" {
			return ratelimit.HostState{}, fmt.Errorf("%w: host state flags %#x; this build knows those below %#x", ErrVersion, flags, hostNext)
		}
		h.HasCrawlDelay = flags&hostHasCrawlDelay != 0
		if flags&hostNextAllowed != 0 {
			h.NextAllowed = d.time()
		}
		if flags&hostDelay != 0 {
			h.Delay = time.Duration(d.varint())
		}
		if flags&hostRTT != 0 {
			h.RTT = time.Duration(d.varint())
		}
		if flags&hostCrawlDelay != 0 {
			h.CrawlDelay = time.Duration(d.varint())
		}
		if flags&hostFailures != 0 {
			h.Failures = d.int()
		}
		if flags&hostBackoff != 0 {
			h.Backoff = time.Duration(d.varint())
		}
		if flags&hostPausedUntil != 0 {
			h.PausedUntil = d.time()
		}
		if flags&hostClosedUntil != 0 {
			h.ClosedUntil = d.time()
		}
		if flags&hostInterrupted != 0 {
			h.Interrupted = d.time()
		}
	}
	if d.why != "" || len(d.b) != 0 {
		return ratelimit.HostState{}, d.err("host state", len(b))
	}
	return h, nil
}

// decodeHostVersion1 reads into h the fields of a host state of version 1.
func decodeHostVersion1(d *decoder, h *ratelimit.HostState) {
	h.Delay = time.Duration(d.varint())
	h.CrawlDelay = time.Duration(d.varint())
	h.HasCrawlDelay = d.bool()
	h.Backoff = time.Duration(d.varint())
	h.RTT = time.Duration(d.varint())
	if d.bool() {
		h.PausedUntil = d.time()
	}
	h.Failures = d.int()
}

// bool reads a byte that is 0 or 1.
func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("boolean neither 0 nor 1")
	return false
}
