package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// Flags of an encoded Item: which fields follow the URL, in this order.
// The fields most items have come first, to fit in the flags' first byte.
const (
	itemReferrer = 1 << iota
	itemDepth
	itemKind
	itemPriority
	itemLastmod
	itemFromSitemap // no bytes: the flag is the value
	itemMeta
	itemRetries
	itemRedirects
	itemSitemapDepth
	itemBlockedSince // retired: Item.BlockedSince, read and dropped
	itemDue
	itemVisit // a Visit follows, with flags of its own (visitFetched, …)
	// ItemRefused: Item.Refused, a uvarint, one byte. redisstore's add
	// script sets this flag and appends the byte to an item it queues to
	// be reported (frontier.ErrReported): it must stay the last field.
	itemRefused
	itemNext // the flag a new field takes; flags from here on are unknown
)

// Flags of an encoded Visit: which of its fields follow, in this order.
// No flag at all is a Visit with every field zero, which is not a nil one.
const (
	visitFetched = 1 << iota
	visitChanged
	visitETag
	visitLastModified
	visitDigest    // eight little-endian bytes: digests fill them
	visitStatus    // varint
	visitGone      // varint
	visitEstimator // revisit.PageSize bytes, revisit.Page's encoding
	visitSize      // varint
	visitLastmodRead
	visitNext // the flag a new field takes; flags from here on are unknown
)

// AppendItem appends the encoding of it to dst and returns the extended
// buffer. Every field is encoded but Key, which the Store keeps the item
// under. It allocates only when dst is too small, or when it.Meta holds
// more than eight pairs.
func AppendItem(dst []byte, it *frontier.Item) []byte {
	if cap(dst)-len(dst) < 32+len(it.URL)+len(it.Referrer) {
		dst = grow(dst, itemSize(it))
	}
	flags := itemFlags(it)
	dst = append(dst, ItemVersion)
	dst = binary.AppendUvarint(dst, flags)
	dst = appendString(dst, it.URL)
	if flags&itemReferrer != 0 {
		dst = appendString(dst, it.Referrer)
	}
	if flags&itemDepth != 0 {
		dst = binary.AppendVarint(dst, int64(it.Depth))
	}
	if flags&itemKind != 0 {
		dst = binary.AppendUvarint(dst, uint64(it.Kind))
	}
	if flags&itemPriority != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(it.Priority))
	}
	if flags&itemLastmod != 0 {
		dst = appendTime(dst, it.Lastmod)
	}
	if flags&itemMeta != 0 {
		dst = appendMeta(dst, it.Meta)
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
	if flags&itemDue != 0 {
		dst = appendTime(dst, it.Due)
	}
	if flags&itemVisit != 0 {
		dst = appendVisit(dst, it.Visit)
	}
	if flags&itemRefused != 0 {
		dst = binary.AppendUvarint(dst, uint64(it.Refused))
	}
	return dst
}

// itemFlags returns the flags of the fields of it that are encoded: those
// that are not zero.
func itemFlags(it *frontier.Item) uint64 {
	var flags uint64
	if it.Referrer != "" {
		flags |= itemReferrer
	}
	if it.Depth != 0 {
		flags |= itemDepth
	}
	if it.Kind != 0 {
		flags |= itemKind
	}
	if math.Float32bits(it.Priority) != 0 { // -0 too
		flags |= itemPriority
	}
	if !it.Lastmod.IsZero() {
		flags |= itemLastmod
	}
	if it.FromSitemap {
		flags |= itemFromSitemap
	}
	if len(it.Meta) > 0 {
		flags |= itemMeta
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
	if !it.Due.IsZero() {
		flags |= itemDue
	}
	if it.Visit != nil {
		flags |= itemVisit
	}
	if it.Refused != frontier.NotRefused {
		flags |= itemRefused
	}
	return flags
}

// appendVisit appends v, its flags first.
func appendVisit(dst []byte, v *frontier.Visit) []byte {
	var flags uint64
	if !v.Fetched.IsZero() {
		flags |= visitFetched
	}
	if !v.Changed.IsZero() {
		flags |= visitChanged
	}
	if v.ETag != "" {
		flags |= visitETag
	}
	if !v.LastModified.IsZero() {
		flags |= visitLastModified
	}
	if v.Digest != 0 {
		flags |= visitDigest
	}
	if v.Status != 0 {
		flags |= visitStatus
	}
	if v.Gone != 0 {
		flags |= visitGone
	}
	if v.Estimator != (revisit.Page{}) {
		flags |= visitEstimator
	}
	if v.Size != 0 {
		flags |= visitSize
	}
	if !v.LastmodRead.IsZero() {
		flags |= visitLastmodRead
	}
	dst = binary.AppendUvarint(dst, flags)
	if flags&visitFetched != 0 {
		dst = appendTime(dst, v.Fetched)
	}
	if flags&visitChanged != 0 {
		dst = appendTime(dst, v.Changed)
	}
	if flags&visitETag != 0 {
		dst = appendString(dst, v.ETag)
	}
	if flags&visitLastModified != 0 {
		dst = appendTime(dst, v.LastModified)
	}
	if flags&visitDigest != 0 {
		dst = binary.LittleEndian.AppendUint64(dst, v.Digest)
	}
	if flags&visitStatus != 0 {
		dst = binary.AppendVarint(dst, int64(v.Status))
	}
	if flags&visitGone != 0 {
		dst = binary.AppendVarint(dst, int64(v.Gone))
	}
	if flags&visitEstimator != 0 {
		dst, _ = v.Estimator.AppendBinary(dst) // never fails
	}
	if flags&visitSize != 0 {
		dst = binary.AppendVarint(dst, v.Size)
	}
	if flags&visitLastmodRead != 0 {
		dst = appendTime(dst, v.LastmodRead)
	}
	return dst
}

// itemSize returns about how many bytes it takes encoded: enough for most
// items, so that encoding into a new buffer allocates once.
func itemSize(it *frontier.Item) int {
	n := 32 + len(it.URL) + len(it.Referrer)
	if it.Visit != nil {
		n += 80 + revisit.PageSize + len(it.Visit.ETag)
	}
	for k, v := range it.Meta {
		n += 2 + len(k) + len(v)
	}
	for _, r := range it.Redirects {
		n += 1 + len(r)
	}
	return n
}

// appendMeta appends m's pairs, their count first, sorted by key: one item,
// one encoding.
func appendMeta(dst []byte, m map[string]string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(m)))
	var buf [8]string // most items carry a few pairs: sorted on the stack
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		dst = appendString(appendString(dst, k), m[k])
	}
	return dst
}

// DecodeItem decodes an encoding of AppendItem (b holds it whole, and
// nothing else), returning the Item with key as its Key. It does not keep
// b: the item's strings are cut from one copy of it, so that one of them
// kept keeps the copy, all the item's strings' worth. An input it cannot read is
// refused with an error wrapping ErrCorrupt or ErrVersion.
func DecodeItem(b []byte, key string) (frontier.Item, error) {
	d := decoder{b: b, n: len(b)}
	switch v := d.byte(); {
	case d.why != "":
		return frontier.Item{}, d.err("item", len(b))
	case v != ItemVersion:
		return frontier.Item{}, fmt.Errorf("%w: item version %d; this build reads version %d", ErrVersion, v, ItemVersion)
	}
	flags := d.uvarint()
	if flags >= itemNext && d.why == "" {
		return frontier.Item{}, fmt.Errorf("%w: item flags %#x; this build knows those below %#x", ErrVersion, flags, itemNext)
	}
	d.copyStrings()
	it := frontier.Item{Key: key, URL: d.string(), FromSitemap: flags&itemFromSitemap != 0}
	if flags&itemReferrer != 0 {
		it.Referrer = d.string()
	}
	if flags&itemDepth != 0 {
		it.Depth = d.int()
	}
	if flags&itemKind != 0 {
		k := d.uvarint()
		if k > math.MaxUint8 {
			d.fail("kind out of range")
		}
		it.Kind = frontier.Kind(k)
	}
	if flags&itemPriority != 0 {
		it.Priority = math.Float32frombits(d.uint32())
	}
	if flags&itemLastmod != 0 {
		it.Lastmod = d.time()
	}
	if flags&itemMeta != 0 {
		it.Meta = d.meta()
	}
	if flags&itemRetries != 0 {
		it.Retries = d.int()
	}
	if flags&itemRedirects != 0 {
		it.Redirects = d.strings()
	}
	if flags&itemSitemapDepth != 0 {
		it.SitemapDepth = d.int()
	}
	if flags&itemBlockedSince != 0 {
		_ = d.time()
	}
	if flags&itemDue != 0 {
		it.Due = d.time()
	}
	if flags&itemVisit != 0 {
		v, err := d.visit()
		if err != nil {
			return frontier.Item{}, err
		}
		it.Visit = v
	}
	if flags&itemRefused != 0 {
		r := d.uvarint()
		if r > math.MaxUint8 || !frontier.Refusal(r).Valid() {
			d.fail("refusal out of range")
		}
		it.Refused = frontier.Refusal(r)
	}
	if d.why != "" || len(d.b) != 0 {
		return frontier.Item{}, d.err("item", len(b))
	}
	return it, nil
}

// meta reads an item's Meta: a count, then that many keys and values
// (nil for none).
func (d *decoder) meta() map[string]string {
	n := d.count()
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.string()
		m[k] = d.string()
	}
	return m
}

// strings reads a count, then that many strings (nil for none).
func (d *decoder) strings() []string {
	n := d.count()
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.string()
	}
	return ss
}

// visit reads a Visit. It returns an error only for flags it does not
// know; other failures are the decoder's, for the caller to report.
func (d *decoder) visit() (*frontier.Visit, error) {
	flags := d.uvarint()
	if flags >= visitNext && d.why == "" {
		return nil, fmt.Errorf("%w: visit flags %#x; this build knows those below %#x", ErrVersion, flags, visitNext)
	}
	v := new(frontier.Visit)
	if flags&visitFetched != 0 {
		v.Fetched = d.time()
	}
	if flags&visitChanged != 0 {
		v.Changed = d.time()
	}
	if flags&visitETag != 0 {
		v.ETag = d.string()
	}
	if flags&visitLastModified != 0 {
		v.LastModified = d.time()
	}
	if flags&visitDigest != 0 {
		v.Digest = d.uint64()
	}
	if flags&visitStatus != 0 {
		v.Status = d.int()
	}
	if flags&visitGone != 0 {
		v.Gone = d.int()
	}
	if flags&visitEstimator != 0 {
		if len(d.b) < revisit.PageSize {
			d.fail("truncated")
		} else if err := v.Estimator.UnmarshalBinary(d.b[:revisit.PageSize]); err != nil {
			d.fail("estimator: " + err.Error())
		} else {
			d.b = d.b[revisit.PageSize:]
		}
	}
	if flags&visitSize != 0 {
		v.Size = d.varint()
	}
	if flags&visitLastmodRead != 0 {
		v.LastmodRead = d.time()
	}
	return v, nil
}
