package redisstore

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// errCorrupt reports a value in Redis the Store cannot decode.
var errCorrupt = errors.New("redisstore: corrupt value")

// Versions of the encodings, their first byte, so that a later layout can
// tell an old value.
const (
	itemVersion = 1
	hostVersion = 1
)

// Flags of an encoded Item: which optional fields follow the URL, in this
// order.
const (
	fReferrer = 1 << iota
	fDepth
	fKind
	fPriority
	fLastmod
	fFromSitemap
	fMeta
	fRetries
	fRedirects
	fSitemapDepth
	fBlockedSince // retired: Item.BlockedSince, deleted; read and dropped
)

// encodeItem appends it, without its Key (the queue's name), to dst: a
// version byte, a varint of flags saying which fields are not zero, the
// URL, then those fields. Every field is kept exactly; times to the
// nanosecond, without their location.
func encodeItem(dst []byte, it *frontier.Item) []byte {
	var flags uint64
	set := func(f uint64, ok bool) {
		if ok {
			flags |= f
		}
	}
	set(fReferrer, it.Referrer != "")
	set(fDepth, it.Depth != 0)
	set(fKind, it.Kind != 0)
	set(fPriority, it.Priority != 0)
	set(fLastmod, !it.Lastmod.IsZero())
	set(fFromSitemap, it.FromSitemap)
	set(fMeta, len(it.Meta) > 0)
	set(fRetries, it.Retries != 0)
	set(fRedirects, len(it.Redirects) > 0)
	set(fSitemapDepth, it.SitemapDepth != 0)
	dst = append(dst, itemVersion)
	dst = binary.AppendUvarint(dst, flags)
	dst = appendString(dst, it.URL)
	if flags&fReferrer != 0 {
		dst = appendString(dst, it.Referrer)
	}
	if flags&fDepth != 0 {
		dst = binary.AppendVarint(dst, int64(it.Depth))
	}
	if flags&fKind != 0 {
		dst = binary.AppendUvarint(dst, uint64(it.Kind))
	}
	if flags&fPriority != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(it.Priority))
	}
	if flags&fLastmod != 0 {
		dst = appendTime(dst, it.Lastmod)
	}
	if flags&fMeta != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(it.Meta)))
		names := make([]string, 0, len(it.Meta))
		for k := range it.Meta {
			names = append(names, k)
		}
		slices.Sort(names) // one item, one encoding
		for _, k := range names {
			dst = appendString(appendString(dst, k), it.Meta[k])
		}
	}
	if flags&fRetries != 0 {
		dst = binary.AppendVarint(dst, int64(it.Retries))
	}
	if flags&fRedirects != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(it.Redirects)))
		for _, r := range it.Redirects {
			dst = appendString(dst, r)
		}
	}
	if flags&fSitemapDepth != 0 {
		dst = binary.AppendVarint(dst, int64(it.SitemapDepth))
	}
	return dst
}

// decodeItem decodes an item of key encoded by encodeItem.
func decodeItem(b []byte, key string) (frontier.Item, error) {
	d := decoder{b: b}
	if d.byte() != itemVersion {
		return frontier.Item{}, errCorrupt
	}
	it := frontier.Item{Key: key}
	flags := d.uvarint()
	it.URL = d.string()
	if flags&fReferrer != 0 {
		it.Referrer = d.string()
	}
	if flags&fDepth != 0 {
		it.Depth = d.int()
	}
	if flags&fKind != 0 {
		it.Kind = frontier.Kind(d.uvarint())
	}
	if flags&fPriority != 0 {
		it.Priority = math.Float32frombits(d.uint32())
	}
	if flags&fLastmod != 0 {
		it.Lastmod = d.time()
	}
	it.FromSitemap = flags&fFromSitemap != 0
	if flags&fMeta != 0 {
		n := d.count()
		if n > 0 {
			it.Meta = make(map[string]string, n)
		}
		for range n {
			k := d.string()
			it.Meta[k] = d.string()
		}
	}
	if flags&fRetries != 0 {
		it.Retries = d.int()
	}
	if flags&fRedirects != 0 {
		if n := d.count(); n > 0 {
			it.Redirects = make([]string, n)
		}
		for i := range it.Redirects {
			it.Redirects[i] = d.string()
		}
	}
	if flags&fSitemapDepth != 0 {
		it.SitemapDepth = d.int()
	}
	if flags&fBlockedSince != 0 {
		d.time()
	}
	if d.err || len(d.b) != 0 {
		return frontier.Item{}, errCorrupt
	}
	return it, nil
}

// encodeHost encodes h without NextAllowed, which the scripts keep beside
// it in microseconds.
func encodeHost(h *frontier.HostState) []byte {
	dst := []byte{hostVersion}
	dst = binary.AppendVarint(dst, int64(h.Delay))
	dst = binary.AppendVarint(dst, int64(h.CrawlDelay))
	b := byte(0)
	if h.HasCrawlDelay {
		b = 1
	}
	dst = append(dst, b)
	dst = binary.AppendVarint(dst, int64(h.Backoff))
	dst = binary.AppendVarint(dst, int64(h.RTT))
	if h.PausedUntil.IsZero() {
		dst = append(dst, 0)
	} else {
		dst = appendTime(append(dst, 1), h.PausedUntil)
	}
	return binary.AppendVarint(dst, int64(h.Failures))
}

// decodeHost decodes a host state of encodeHost; an empty b is the zero
// state of a key never ended a lease of.
func decodeHost(b []byte) (frontier.HostState, error) {
	var h frontier.HostState
	if len(b) == 0 {
		return h, nil
	}
	d := decoder{b: b}
	if d.byte() != hostVersion {
		return h, errCorrupt
	}
	h.Delay = time.Duration(d.varint())
	h.CrawlDelay = time.Duration(d.varint())
	h.HasCrawlDelay = d.byte() == 1
	h.Backoff = time.Duration(d.varint())
	h.RTT = time.Duration(d.varint())
	if d.byte() == 1 {
		h.PausedUntil = d.time()
	}
	h.Failures = d.int()
	if d.err || len(d.b) != 0 {
		return frontier.HostState{}, errCorrupt
	}
	return h, nil
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// appendTime appends t as Unix seconds and nanoseconds: every time a
// time.Time holds, not only those UnixNano can.
func appendTime(dst []byte, t time.Time) []byte {
	return binary.AppendUvarint(binary.AppendVarint(dst, t.Unix()), uint64(t.Nanosecond()))
}

// decoder reads an encoding, noting in err the first read past its end or
// malformed varint; reads after that return zeros.
type decoder struct {
	b   []byte
	err bool
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
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
		d.err, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int {
	v := d.varint()
	if v < math.MinInt || v > math.MaxInt {
		d.err = true
		return 0
	}
	return int(v)
}

// count reads a number of elements that follow, each at least one byte.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err, d.b = true, nil
		return 0
	}
	return int(n)
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err, d.b = true, nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) uint32() uint32 {
	if len(d.b) < 4 {
		d.err, d.b = true, nil
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
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
