package pebblestore

import (
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// The store's keyspaces, each under a one-byte prefix. Keys of one kind sort
// together, so that each kind is scanned sequentially.
const (
	prefixCheckpoint = 'c' // "c": the checkpoint of the last Ack
	prefixKey        = 'k' // "k" key: the key's record (pacing state and counters)
	prefixMeta       = 'm' // "m" name: a value of SetMeta
	prefixSeenCount  = 'n' // "n": how many URLs were seen, a uvarint
	prefixQueue      = 'q' // "q" len(key) key seq: a queued item
	prefixSeen       = 's' // "s" URL: a URL seen
	prefixVersion    = 'v' // "v": the format of the store
)

// formatVersion names the layout this package writes; Open refuses a
// directory written in another.
const formatVersion = "heed pebblestore 2"

// seqStart is the sequence number of the first item a queue gets: far from
// both ends, so that items released to the front (lower numbers) and added
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

// Flags of an encoded Item: which optional fields follow. The common ones
// come first, to fit the flags in one byte.
const (
	itemFromSitemap = 1 << iota
	itemReferrer
	itemPriority
	itemLastmod
	itemRetries
	itemRedirects
	itemSitemapDepth
	itemBlockedSince // retired: Item.BlockedSince, deleted; read and dropped
	itemMeta
)

// appendItem appends the encoding of it, all but its Key, to dst: the
// flags (a uvarint), the URL, the depth and kind, then only the fields that
// are set, Meta's pairs sorted by key.
func appendItem(dst []byte, it *frontier.Item) []byte {
	var flags uint64
	if it.FromSitemap {
		flags |= itemFromSitemap
	}
	if it.Referrer != "" {
		flags |= itemReferrer
	}
	if it.Priority != 0 {
		flags |= itemPriority
	}
	if !it.Lastmod.IsZero() {
		flags |= itemLastmod
	}
	if it.Retries != 0 {
		flags |= itemRetries
	}
	if len(it.Redirects) > 0 {
		flags |= itemRedirects
	}
	if it.SitemapDepth != 0 {
		flags |= itemSitemapDepth
	}
	if len(it.Meta) > 0 {
		flags |= itemMeta
	}
	dst = binary.AppendUvarint(dst, flags)
	dst = appendString(dst, it.URL)
	dst = binary.AppendVarint(dst, int64(it.Depth))
	dst = append(dst, byte(it.Kind))
	if flags&itemReferrer != 0 {
		dst = appendString(dst, it.Referrer)
	}
	if flags&itemPriority != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(it.Priority))
	}
	if flags&itemLastmod != 0 {
		dst = appendTime(dst, it.Lastmod)
	}
	if flags&itemRetries != 0 {
		dst = binary.AppendVarint(dst, int64(it.Retries))
	}
	if flags&itemRedirects != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(it.Redirects)))
		for _, r := range it.Redirects {
			dst = appendString(dst, r)
		}
	}
	if flags&itemSitemapDepth != 0 {
		dst = binary.AppendVarint(dst, int64(it.SitemapDepth))
	}
	if flags&itemMeta != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(it.Meta)))
		for _, k := range slices.Sorted(maps.Keys(it.Meta)) {
			dst = appendString(appendString(dst, k), it.Meta[k])
		}
	}
	return dst
}

// decodeItem decodes an item encoded by appendItem, queued under key. It
// copies what it keeps of b.
func decodeItem(b []byte, key string) (frontier.Item, error) {
	d := decoder{b: b}
	flags := d.uvarint()
	it := frontier.Item{
		URL:         d.string(),
		Key:         key,
		Depth:       int(d.varint()),
		Kind:        frontier.Kind(d.byte()),
		FromSitemap: flags&itemFromSitemap != 0,
	}
	if flags&itemReferrer != 0 {
		it.Referrer = d.string()
	}
	if flags&itemPriority != 0 {
		it.Priority = math.Float32frombits(d.uint32())
	}
	if flags&itemLastmod != 0 {
		it.Lastmod = d.time()
	}
	if flags&itemRetries != 0 {
		it.Retries = int(d.varint())
	}
	if flags&itemRedirects != 0 {
		n := d.uvarint()
		if n > uint64(len(d.b)) { // each takes at least a byte: a bad count fails here, not in make
			return frontier.Item{}, errCorrupt
		}
		it.Redirects = make([]string, n)
		for i := range it.Redirects {
			it.Redirects[i] = d.string()
		}
	}
	if flags&itemSitemapDepth != 0 {
		it.SitemapDepth = int(d.varint())
	}
	if flags&itemBlockedSince != 0 {
		d.time()
	}
	if flags&itemMeta != 0 {
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			return frontier.Item{}, errCorrupt
		}
		it.Meta = make(map[string]string, n)
		for range n {
			k := d.string()
			it.Meta[k] = d.string()
		}
	}
	if d.err || len(d.b) != 0 || flags >= itemMeta<<1 {
		return frontier.Item{}, errCorrupt
	}
	return it, nil
}

// record is what the store keeps of a key: frontier.KeyRecord, the pacing
// state and counters the Schedule hands it, and where its queue lies.
type record struct {
	frontier.KeyRecord
	// The key's items are the queue entries from low to tail-1: those
	// before head (items leased or released to the front) with gaps where
	// items were done, those from head on without. Claim writes nothing,
	// so after a crash head may be behind: the items claimed since are
	// leased ones, which go back to the front.
	low, head, tail uint64
}

// Flags of an encoded record.
const (
	recHasCrawlDelay = 1 << iota
	recGivenUp
	recNextAllowed
	recPausedUntil
	recClosedUntil
)

// appendRecord appends the encoding of r to dst.
func appendRecord(dst []byte, r *record) []byte {
	h := &r.Host
	var flags byte
	if h.HasCrawlDelay {
		flags |= recHasCrawlDelay
	}
	if r.GivenUp {
		flags |= recGivenUp
	}
	if !h.NextAllowed.IsZero() {
		flags |= recNextAllowed
	}
	if !h.PausedUntil.IsZero() {
		flags |= recPausedUntil
	}
	if !h.ClosedUntil.IsZero() {
		flags |= recClosedUntil
	}
	dst = append(dst, flags)
	// Sequence numbers as distances from seqStart: a byte or two.
	dst = binary.AppendVarint(dst, int64(r.head-seqStart))
	dst = binary.AppendUvarint(dst, r.head-r.low)
	dst = binary.AppendUvarint(dst, r.tail-r.head)
	for _, d := range [...]time.Duration{h.Delay, h.CrawlDelay, h.Backoff, h.RTT} {
		dst = binary.AppendVarint(dst, int64(d))
	}
	for _, n := range [...]int{h.Failures, r.Scheduled, r.Sitemaps, r.SitemapURLs} {
		dst = binary.AppendVarint(dst, int64(n))
	}
	if flags&recNextAllowed != 0 {
		dst = appendTime(dst, h.NextAllowed)
	}
	if flags&recPausedUntil != 0 {
		dst = appendTime(dst, h.PausedUntil)
	}
	if flags&recClosedUntil != 0 {
		dst = appendTime(dst, h.ClosedUntil)
	}
	return dst
}

func decodeRecord(b []byte) (record, error) {
	d := decoder{b: b}
	flags := d.byte()
	var r record
	h := &r.Host
	h.HasCrawlDelay = flags&recHasCrawlDelay != 0
	r.GivenUp = flags&recGivenUp != 0
	r.head = seqStart + uint64(d.varint())
	r.low = r.head - d.uvarint()
	r.tail = r.head + d.uvarint()
	for _, p := range [...]*time.Duration{&h.Delay, &h.CrawlDelay, &h.Backoff, &h.RTT} {
		*p = time.Duration(d.varint())
	}
	for _, p := range [...]*int{&h.Failures, &r.Scheduled, &r.Sitemaps, &r.SitemapURLs} {
		*p = int(d.varint())
	}
	if flags&recNextAllowed != 0 {
		h.NextAllowed = d.time()
	}
	if flags&recPausedUntil != 0 {
		h.PausedUntil = d.time()
	}
	if flags&recClosedUntil != 0 {
		h.ClosedUntil = d.time()
	}
	if d.err || len(d.b) != 0 || flags >= recClosedUntil<<1 {
		return record{}, errCorrupt
	}
	return r, nil
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// appendTime appends t to the nanosecond, as Unix seconds and nanoseconds:
// every time.Time survives, in UTC.
func appendTime(dst []byte, t time.Time) []byte {
	return binary.AppendUvarint(binary.AppendVarint(dst, t.Unix()), uint64(t.Nanosecond()))
}

// decoder reads what the append functions wrote; a short or malformed
// input sets err and yields zero values.
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

func (d *decoder) uint32() uint32 {
	if len(d.b) < 4 {
		d.err = true
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
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

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = true
		d.b = nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= 1e9 {
		d.err = true
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
