// Package codec is the one binary encoding of frontier.Item and
// ratelimit.HostState, in which the Stores that persist keep them:
// pebblestore on disk, redisstore in Redis (whose scripts treat the bytes as
// opaque). A field added to either type is added here, once.
//
// Encoding appends to a buffer the caller owns, so that a Store encoding
// items one after another into one scratch buffer allocates nothing.
// Decoding copies what it keeps, in one allocation for all of an item's
// strings, and never panics: input it cannot read is refused with an error
// wrapping ErrCorrupt, or ErrVersion when it was written by a later version
// of this package.
//
// # Fidelity
//
// Every field comes back as it went in, with these exceptions:
//
//   - Item.Key is not encoded: both stores keep an item under its key, which
//     they pass to DecodeItem.
//   - Item.SeenOnly is not encoded: it asks Add not to queue the item, so a
//     queued item never has it (one queued to be reported has Item.Refused).
//   - Times are kept to the nanosecond, as an instant: they come back in
//     UTC, without the monotonic clock reading.
//   - Item.Meta comes back nil when it was empty, and Item.Redirects too.
//   - Item.Visit comes back nil when it was nil, and as a Visit of zero
//     fields when it was one.
//
// HostState.Interrupted, which frontier.Store says a Store need not keep, is
// encoded like every other field, so that a Store keeps it as it keeps the
// rest: a key found cut short by a stop stays interrupted for whichever
// worker claims it next — in whichever process, with redisstore — until a
// request to it completes. pebblestore, reopening after a stop, sets it to
// the reopening anyway (frontier.Schedule.Restore).
//
// # Layout and versions
//
// An encoding starts with a version byte, then a uvarint of flags saying
// which fields follow, then those fields, in the order of their flags; a
// field whose flag is clear is zero and takes no bytes. Integers are
// varints, strings and lists a uvarint length then their contents, times
// Unix seconds (varint) then nanoseconds (uvarint), Item.Priority the four
// little-endian bytes of its float32, Item.Meta its pairs sorted by key.
//
// A field added later takes the next flag: what was written before has the
// flag clear and decodes with the field zero, so stored data stays readable
// without a new version. A decoder refuses an encoding with a flag it does
// not know (ErrVersion) rather than drop a field it cannot read. The
// version changes only when the layout of a field already there does;
// DecodeItem and DecodeHost read every version there has been:
//
//   - Items: version 1 (ItemVersion), as redisstore wrote items before this
//     package; flag 10, Item.BlockedSince of earlier releases, is read and
//     dropped. Flags 11 and 12 (Item.Due, and Item.Visit with flags of its
//     own) came later: items written before them decode with neither;
//     so did flag 13, Item.Refused, set only on items queued to be
//     reported (frontier.ErrReported).
//   - Host states: version 1, redisstore's fixed layout before this package
//     (no NextAllowed, ClosedUntil or Interrupted), is read; version 2
//     (HostVersion), with flags, is written.
//
// To add a field: give it the flag before itemNext (or hostNext), and
// append and read it after the others. The round-trip tests fill every
// field (storetest.Fill) and fail until it is encoded; the golden tests
// keep the layout of what was stored before.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// ItemVersion is the version byte AppendItem writes first.
const ItemVersion = 1

// HostVersion is the version byte AppendHost writes first.
const HostVersion = 2

// Errors of DecodeItem and DecodeHost, wrapped with where the input went
// wrong.
var (
	// ErrCorrupt: the input is not an encoding of this package: it is
	// truncated, has bytes left over, or holds a malformed or impossible
	// value.
	ErrCorrupt = errors.New("codec: corrupt input")
	// ErrVersion: the input has a version byte or a field flag this
	// version of the package does not know: it was written by a later
	// one.
	ErrVersion = errors.New("codec: unknown version")
)

// grow returns dst with room for n more bytes: one allocation, if any, of
// what an encoding needs (slices.Grow can make two under the race
// detector).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		dst = append(make([]byte, 0, len(dst)+n), dst...)
	}
	return dst
}

// appendString appends s, its length first.
func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// appendTime appends t as Unix seconds and nanoseconds: every instant a
// time.Time holds, not only those UnixNano can.
func appendTime(dst []byte, t time.Time) []byte {
	return binary.AppendUvarint(binary.AppendVarint(dst, t.Unix()), uint64(t.Nanosecond()))
}

// decoder reads an encoding of n bytes, of which b is what is left. The
// first read that fails records why, and where in at; reads after it
// return zero values.
type decoder struct {
	b   []byte
	n   int
	why string
	at  int
	// s, when not empty, holds a copy of the input's last len(s) bytes:
	// strings are cut from it instead of being allocated one by one.
	s string
}

func (d *decoder) fail(why string) {
	if d.why == "" {
		d.why, d.at = why, d.n-len(d.b)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if b := d.b; len(b) > 0 && b[0] < 0x80 { // most are one byte: flags, lengths, counts
		d.b = b[1:]
		return uint64(b[0])
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(varintError(n))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(varintError(n))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func varintError(n int) string {
	if n == 0 {
		return "truncated"
	}
	return "varint overflows 64 bits"
}

func (d *decoder) int() int {
	v := d.varint()
	if v < math.MinInt || v > math.MaxInt {
		d.fail("integer out of range")
		return 0
	}
	return int(v)
}

// count reads the number of elements of a list or map that follows, each
// of which takes at least one byte: a count past the input's end fails
// here, before anything is allocated for it.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("count past the end")
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("string past the end")
		return ""
	}
	var s string
	if d.s != "" {
		at := len(d.s) - len(d.b)
		s = d.s[at : at+int(n)]
	} else {
		s = string(d.b[:n])
	}
	d.b = d.b[n:]
	return s
}

func (d *decoder) uint32() uint32 {
	if len(d.b) < 4 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) uint64() uint64 {
	if len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= 1e9 {
		d.fail("nanoseconds out of range")
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// copyStrings makes the strings read from here on slices of one copy of
// the rest of the input: one allocation instead of one per string.
func (d *decoder) copyStrings() {
	if len(d.b) > 0 {
		d.s = string(d.b)
	}
}

// err returns the error for what the reads met, nil if none, with what was
// decoded; a decoder that has bytes left over fails too.
func (d *decoder) err(what string, size int) error {
	if d.why == "" && len(d.b) != 0 {
		d.why, d.at = "bytes left over", d.n-len(d.b)
	}
	if d.why == "" {
		return nil
	}
	return fmt.Errorf("%w: %s of %d bytes: %s at byte %d", ErrCorrupt, what, size, d.why, d.at)
}
