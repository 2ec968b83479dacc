package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
)

// The store's keyspaces, each under a one-byte prefix. Keys of one kind sort
// together, so that each kind is scanned sequentially.
const (
	prefixCheckpoint = 'c' // "c": the checkpoint of the last Done
	prefixKey        = 'k' // "k" key: the key's record (pacing state and counters)
	prefixMeta       = 'm' // "m" name: a value of SetMeta
	prefixSeenCount  = 'n' // "n": how many URLs were seen, a uvarint
	prefixQueue      = 'q' // "q" len(key) key seq: a queued item
	prefixSeen       = 's' // "s" URL: a URL seen
	prefixVersion    = 'v' // "v": the format of the store
)

// formatVersion names the layout this package writes; Open refuses a
// directory written in another.
const formatVersion = "heed pebblestore 3"

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
	// The key's items are the queue entries from low to tail-1: those
	// before head (items leased or requeued to the front) with gaps where
	// items were done, those from head on without. Claim writes nothing,
	// so after a crash head may be behind: the items claimed since are
	// leased ones, which go back to the front.
	low, head, tail uint64
}

// Flags of an encoded record.
const (
	recGivenUp = 1 << iota
)

// appendRecord appends the encoding of r to dst: its flags, where its queue
// lies, its counters, then its pacing state in package codec's encoding,
// which takes the rest of the value.
func appendRecord(dst []byte, r *record) []byte {
	var flags byte
	if r.GivenUp {
		flags |= recGivenUp
	}
	dst = append(dst, flags)
	// Sequence numbers as distances from seqStart: a byte or two.
	dst = binary.AppendVarint(dst, int64(r.head-seqStart))
	dst = binary.AppendUvarint(dst, r.head-r.low)
	dst = binary.AppendUvarint(dst, r.tail-r.head)
	for _, n := range [...]int{r.Scheduled, r.Sitemaps, r.SitemapURLs} {
		dst = binary.AppendVarint(dst, int64(n))
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
	if d.err || flags >= recGivenUp<<1 {
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
