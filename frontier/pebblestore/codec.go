package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// The store's keyspaces, each under a one-byte prefix. Keys of one kind sort
// together, so that each kind is scanned sequentially.
const (
	prefixCheckpoint = 'c' // "c": the checkpoint of the last Done
	prefixDue        = 'd' // "d" len(key) key due at n: an item queued by its Due
	prefixKey        = 'k' // "k" key: the key's record (pacing state and counters)
	prefixMeta       = 'm' // "m" name: a value of SetMeta
	prefixSeenCount  = 'n' // "n": how many URLs were seen, a uvarint
	prefixQueue      = 'q' // "q" len(key) key seq: a queued item
	prefixSeen       = 's' // "s" URL: a URL seen
	prefixVersion    = 'v' // "v": the format of the store
)

// formatVersion names the layout this package writes; Open refuses a
// directory written in another, but for formatVersion3, which it reads and
// marks as formatVersion: format 3 is format 4 without the due keyspace
// and the fields of records that describe it.
const (
	formatVersion  = "heed pebblestore 4"
	formatVersion3 = "heed pebblestore 3"
)

// seqStart is the sequence number of the first item a queue gets: far from
// both ends, so that items requeued to the front (lower numbers) and added
// at the back (higher numbers) never run out.
const seqStart = 1 << 63

// errCorrupt reports a value the store cannot decode.
var errCorrupt = errors.New("pebblestore: corrupt value")

var (
	keyCheckpoint = []byte{prefixCheckpoint}
	keySeenCount  = []byte{prefixSeenCount}
	keyVersion    = []byte{prefixVersion}
)

// queueKey appends the key of item seq of key's queue to dst: the
// politeness key, its length first, then the big-endian sequence number.
// A key's queue lies in order in a range of its own, so that one seek
// reads its next items, and no key's range holds another's.
func queueKey(dst []byte, key string, seq uint64) []byte {
	dst = binary.AppendUvarint(append(dst, prefixQueue), uint64(len(key)))
	return binary.BigEndian.AppendUint64(append(dst, key...), seq)
}

// parseQueueKey returns the politeness key and sequence number of a queue
// entry's key.
func parseQueueKey(k []byte) (key string, seq uint64, ok bool) {
	if len(k) < 1 || k[0] != prefixQueue {
		return "", 0, false
	}
	n, w := binary.Uvarint(k[1:])
	if w <= 0 || uint64(len(k)-1-w) != n+8 {
		return "", 0, false
	}
	k = k[1+w:]
	return string(k[:n]), binary.BigEndian.Uint64(k[n:]), true
}

// duePos is where an item of a key's due part lies, in the order of the
// key's items: by its Due, then by arrival. at is the run's tail when the
// item was queued — it came after the run's items numbered below at, and
// before the others — and n numbers the due part's items as they come, so
// that (at, n) is their order of arrival.
type duePos struct {
	due   int64 // Item.Due in Unix nanoseconds (dueNanos)
	at, n uint64
}

// before reports whether p comes before o.
func (p duePos) before(o duePos) bool {
	if p.due != o.due {
		return p.due < o.due
	}
	if p.at != o.at {
		return p.at < o.at
	}
	return p.n < o.n
}

// beforeRun reports whether p comes before the run's item at seq, due at
// due.
func (p duePos) beforeRun(due int64, seq uint64) bool {
	return p.due < due || p.due == due && p.at <= seq
}

// dueNanos is t as a due time in Unix nanoseconds: math.MinInt64 for the
// zero time (due at once), and times beyond int64's nanoseconds (before
// 1678, after 2262) at its ends, where they keep their order.
func dueNanos(t time.Time) int64 {
	switch {
	case t.IsZero() || t.Before(minDue):
		return math.MinInt64
	case t.After(maxDue):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minDue = time.Unix(0, math.MinInt64)
	maxDue = time.Unix(0, math.MaxInt64)
)

// dueTime is the time of Unix nanoseconds n, the zero time for
// math.MinInt64: what Schedule.Head takes.
func dueTime(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// dueKey appends the key of the entry at p of key's due part to dst: the
// politeness key, its length first, as queueKey's, then p, big-endian
// (due with its sign bit flipped, so that bytes order as numbers do).
func dueKey(dst []byte, key string, p duePos) []byte {
	dst = binary.AppendUvarint(append(dst, prefixDue), uint64(len(key)))
	dst = binary.BigEndian.AppendUint64(append(dst, key...), uint64(p.due)^1<<63)
	dst = binary.BigEndian.AppendUint64(dst, p.at)
	return binary.BigEndian.AppendUint64(dst, p.n)
}

// dueKeyEnd is the upper bound of key's due part: after every entry of
// key, before every entry of any other key.
func dueKeyEnd(key string) []byte {
	return append(dueKey(nil, key, duePos{due: math.MaxInt64, at: math.MaxUint64, n: math.MaxUint64}), 0)
}

// parseDuePos returns the position of an entry of the due part of a key
// of keyLen bytes.
func parseDuePos(k []byte, keyLen int) (duePos, bool) {
	if len(k) < 1 || k[0] != prefixDue {
		return duePos{}, false
	}
	n, w := binary.Uvarint(k[1:])
	if w <= 0 || n != uint64(keyLen) || len(k) != 1+w+keyLen+24 {
		return duePos{}, false
	}
	k = k[1+w+keyLen:]
	return duePos{
		due: int64(binary.BigEndian.Uint64(k) ^ 1<<63),
		at:  binary.BigEndian.Uint64(k[8:]),
		n:   binary.BigEndian.Uint64(k[16:]),
	}, true
}

func recordKey(dst []byte, key string) []byte {
	return append(append(dst, prefixKey), key...)
}

func seenKey(dst []byte, url string) []byte {
	return append(append(dst, prefixSeen), url...)
}

func metaKey(dst []byte, name string) []byte {
	return append(append(dst, prefixMeta), name...)
}

// record is what the store keeps of a key: frontier.KeyRecord, the pacing
// state and counters the Schedule hands it, and where its queue lies.
type record struct {
	frontier.KeyRecord
	// The key's run is the queue entries from low to tail-1: those
	// before head (items leased or requeued to the front) with gaps where
	// items were done, those from head on without. Claim writes nothing,
	// so after a crash head may be behind: the items claimed since are
	// leased ones, which go back to the front.
	low, head, tail uint64
	// runDue is the latest Due of the run's items (dueNanos), so that an
	// item added due earlier goes to the due part; math.MinInt64 when
	// none has one.
	runDue int64
	// The key's due part holds dueCount entries (queued or leased), none
	// before dueLow; the next one queued is numbered dueNext.
	dueCount, dueNext uint64
	dueLow            duePos
}

// Flags of an encoded record. Format 3's records have recGivenUp alone.
const (
	recGivenUp    = 1 << iota
	recRunDue     // runDue follows the counters
	recDue        // the due part's count, next number and low follow
	recRevisiting // the key's revisit state follows the due part (revisit.HostSize bytes)
)

// appendRecord appends the encoding of r to dst: its flags, where its queue
// lies, its counters, then its pacing state in package codec's encoding,
// which takes the rest of the value.
func appendRecord(dst []byte, r *record) []byte {
	var flags byte
	if r.GivenUp {
		flags |= recGivenUp
	}
	if r.runDue != math.MinInt64 {
		flags |= recRunDue
	}
	if r.dueCount > 0 {
		flags |= recDue
	}
	if r.Revisiting != (revisit.Host{}) {
		flags |= recRevisiting
	}
	dst = append(dst, flags)
	// Sequence numbers as distances from seqStart: a byte or two.
	dst = binary.AppendVarint(dst, int64(r.head-seqStart))
	dst = binary.AppendUvarint(dst, r.head-r.low)
	dst = binary.AppendUvarint(dst, r.tail-r.head)
	for _, n := range [...]int{r.Scheduled, r.Sitemaps, r.SitemapURLs} {
		dst = binary.AppendVarint(dst, int64(n))
	}
	if flags&recRunDue != 0 {
		dst = binary.AppendVarint(dst, r.runDue)
	}
	if flags&recDue != 0 {
		dst = binary.AppendUvarint(dst, r.dueCount)
		dst = binary.AppendUvarint(dst, r.dueNext)
		dst = binary.AppendVarint(dst, r.dueLow.due)
		dst = binary.AppendVarint(dst, int64(r.dueLow.at-seqStart))
		dst = binary.AppendUvarint(dst, r.dueLow.n)
	}
	if flags&recRevisiting != 0 {
		dst, _ = r.Revisiting.AppendBinary(dst) // never fails
	}
	return codec.AppendHost(dst, &r.Host)
}

func decodeRecord(b []byte) (record, error) {
	d := decoder{b: b}
	flags := d.byte()
	var r record
	r.GivenUp = flags&recGivenUp != 0
	r.head = seqStart + uint64(d.varint())
	r.low = r.head - d.uvarint()
	r.tail = r.head + d.uvarint()
	for _, p := range [...]*int{&r.Scheduled, &r.Sitemaps, &r.SitemapURLs} {
		*p = int(d.varint())
	}
	r.runDue = math.MinInt64
	if flags&recRunDue != 0 {
		r.runDue = d.varint()
	}
	if flags&recDue != 0 {
		r.dueCount = d.uvarint()
		r.dueNext = d.uvarint()
		r.dueLow.due = d.varint()
		r.dueLow.at = seqStart + uint64(d.varint())
		r.dueLow.n = d.uvarint()
		if r.dueCount == 0 {
			d.err = true
		}
	}
	if flags&recRevisiting != 0 {
		if len(d.b) < revisit.HostSize || r.Revisiting.UnmarshalBinary(d.b[:revisit.HostSize]) != nil {
			return record{}, errCorrupt
		}
		d.b = d.b[revisit.HostSize:]
	}
	if d.err || flags >= recRevisiting<<1 {
		return record{}, errCorrupt
	}
	h, err := codec.DecodeHost(d.b)
	if err != nil {
		return record{}, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	r.Host = h
	return r, nil
}

// appendItem appends the encoding of it, all but its Key, to dst: package
// codec's, which every Store that persists shares.
func appendItem(dst []byte, it *frontier.Item) []byte {
	return codec.AppendItem(dst, it)
}

// decodeItem decodes an item encoded by appendItem, queued under key. It
// copies what it keeps of b.
func decodeItem(b []byte, key string) (frontier.Item, error) {
	it, err := codec.DecodeItem(b, key)
	if err != nil {
		return frontier.Item{}, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return it, nil
}

// decoder reads what appendRecord and the seen count wrote; a short or
// malformed input sets err and yields zero values.
type decoder struct {
	b   []byte
	err bool
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.err = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}
