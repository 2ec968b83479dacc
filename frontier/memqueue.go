package frontier

import (
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/heedcrawl/heed/frontier/revisit"
)

// record is a queued Item without its Key (the queue's name) and its Visit
// (kept beside it, in a laterEntry), its small fields packed, 48 bytes in
// all.
//
// It is deliberately not the encoding of package frontier/codec, which the
// Stores that persist share (and which imports this package): a record
// holds the caller's URL string and shares its referrer with the URL string
// of the page the link was found on, where an encoding copies both into
// every item — the referrer once per link — and a claim allocates them
// again. BenchmarkMemoryPerURL keeps a queued URL within its target of 120
// bytes beyond the URL (73–86 bytes at 10 to 1,000 URLs a host) with it.
//
// The strings are kept as their bytes and 32-bit lengths (unsafe.String
// makes them strings again), not as string headers with 64-bit lengths:
// that makes room for Due within the 48 bytes the record had before Due
// existed. A pointer into a string's bytes keeps them alive like the
// string.
type record struct {
	url, ref       *byte // unsafe.StringData of the strings
	urlLen, refLen uint32
	lastmod        uint32 // Unix seconds; 0 when Lastmod is zero
	meta           uint32 // depth (19 bits) | kind (2 bits) | from sitemap (1 bit) | priority×1000 (10 bits)
	history        *history
	due            int64 // Unix nanoseconds; math.MinInt64 when Due is zero
}

// history is the part of an Item that records what it has been through,
// and its metadata; most items have neither, and then no history is
// allocated.
type history struct {
	retries      int
	redirects    []string
	sitemapDepth int
	meta         map[string]string
	refused      Refusal
}

const (
	depthBits   = 19
	kindBits    = 2
	sitemapBit  = 1 << (depthBits + kindBits)
	prioritySft = depthBits + kindBits + 1
)

// Bounds of the times a record keeps to the nanosecond: those
// time.Time.UnixNano can represent (1678–2262).
var (
	minNanoTime = time.Unix(0, math.MinInt64+1)
	maxNanoTime = time.Unix(0, math.MaxInt64)
)

// toNanos returns t in Unix nanoseconds, math.MinInt64 for the zero time;
// what is outside 1678–2262 it cannot hold.
func toNanos(t time.Time, what string) (int64, error) {
	switch {
	case t.IsZero():
		return math.MinInt64, nil
	case t.Before(minNanoTime) || t.After(maxNanoTime):
		return 0, fmt.Errorf("frontier: memory store: %s %v out of range", what, t)
	}
	return t.UnixNano(), nil
}

// fromNanos is toNanos undone, in UTC.
func fromNanos(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func (r *record) urlString() string { return unsafe.String(r.url, r.urlLen) }

// item returns the Item r holds, queued under key.
func (r *record) item(key string) Item {
	it := Item{
		URL:         r.urlString(),
		Key:         key,
		Referrer:    unsafe.String(r.ref, r.refLen),
		Depth:       int(r.meta & (1<<depthBits - 1)),
		Kind:        Kind(r.meta >> depthBits & (1<<kindBits - 1)),
		FromSitemap: r.meta&sitemapBit != 0,
		Priority:    float32(r.meta>>prioritySft) / 1000,
		Due:         fromNanos(r.due),
	}
	if r.lastmod != 0 {
		it.Lastmod = time.Unix(int64(r.lastmod), 0).UTC()
	}
	if h := r.history; h != nil {
		it.Retries, it.Redirects, it.SitemapDepth, it.Meta, it.Refused = h.retries, h.redirects, h.sitemapDepth, h.meta, h.refused
	}
	return it
}

func toRecord(it *Item) (record, error) {
	if it.Depth < 0 || it.Depth > maxStoredDepth {
		return record{}, fmt.Errorf("frontier: memory store: depth %d out of range", it.Depth)
	}
	if it.Kind >= 1<<kindBits {
		return record{}, fmt.Errorf("frontier: memory store: cannot hold %v", it.Kind)
	}
	if len(it.URL) > math.MaxUint32 || len(it.Referrer) > math.MaxUint32 {
		return record{}, fmt.Errorf("frontier: memory store: URL of %d bytes", max(len(it.URL), len(it.Referrer)))
	}
	due, err := toNanos(it.Due, "Due")
	if err != nil {
		return record{}, err
	}
	prio := math.Round(float64(it.Priority) * 1000)
	switch {
	case !(prio >= 0): // negative or NaN
		prio = 0
	case prio > 1000:
		prio = 1000
	}
	r := record{
		url:    unsafe.StringData(it.URL),
		urlLen: uint32(len(it.URL)),
		ref:    unsafe.StringData(it.Referrer),
		refLen: uint32(len(it.Referrer)),
		meta:   uint32(it.Depth) | uint32(it.Kind)<<depthBits | uint32(prio)<<prioritySft,
		due:    due,
	}
	if it.FromSitemap {
		r.meta |= sitemapBit
	}
	if it.Retries != 0 || len(it.Redirects) > 0 || it.SitemapDepth != 0 || len(it.Meta) > 0 || it.Refused != NotRefused {
		r.history = &history{retries: it.Retries, redirects: it.Redirects, sitemapDepth: it.SitemapDepth, meta: it.Meta, refused: it.Refused}
	}
	if sec := it.Lastmod.Unix(); !it.Lastmod.IsZero() && sec > 0 && sec <= math.MaxUint32 {
		r.lastmod = uint32(sec)
	}
	return r, nil
}

// visitRecord is a Visit packed into 80 bytes: times to the nanosecond but
// LastModified, an HTTP date, to the second (1970–2106), and LastmodRead,
// to the millisecond after Fetched (rounded up, so that a read after the
// fetch stays after it; one not after it is dropped, and one more than 49
// days after it is kept as 49 days after); Status within 0–65,535, Gone
// within 0–255 and Size within 0–4 GiB. The ETag, like a record's
// strings, is kept as its bytes and a 32-bit length.
type visitRecord struct {
	fetched, changed int64 // Unix nanoseconds; math.MinInt64 for the zero time
	digest           uint64
	etag             *byte // unsafe.StringData
	etagLen          uint32
	lastModified     uint32 // Unix seconds; 0 for the zero time
	status           uint16
	gone             uint8
	ok               bool // a Visit is held: the item's Visit is not nil
	estimator        revisit.Page
	size             uint32
	lastmodRead      uint32 // milliseconds after fetched; 0 for the zero time
}

func toVisitRecord(v *Visit) (visitRecord, error) {
	if v == nil {
		return visitRecord{}, nil
	}
	if v.Status < 0 || v.Status > math.MaxUint16 || v.Gone < 0 || v.Gone > math.MaxUint8 || v.Size < 0 || v.Size > math.MaxUint32 || len(v.ETag) > math.MaxUint32 {
		return visitRecord{}, fmt.Errorf("frontier: memory store: Visit status %d, gone %d, size %d, ETag of %d bytes out of range", v.Status, v.Gone, v.Size, len(v.ETag))
	}
	fetched, err := toNanos(v.Fetched, "Visit.Fetched")
	if err != nil {
		return visitRecord{}, err
	}
	changed, err := toNanos(v.Changed, "Visit.Changed")
	if err != nil {
		return visitRecord{}, err
	}
	r := visitRecord{fetched: fetched, changed: changed, digest: v.Digest,
		etag: unsafe.StringData(v.ETag), etagLen: uint32(len(v.ETag)),
		status: uint16(v.Status), gone: uint8(v.Gone), estimator: v.Estimator, size: uint32(v.Size), ok: true}
	if sec := v.LastModified.Unix(); !v.LastModified.IsZero() && sec > 0 && sec <= math.MaxUint32 {
		r.lastModified = uint32(sec)
	}
	if after := v.LastmodRead.Sub(v.Fetched); !v.LastmodRead.IsZero() && !v.Fetched.IsZero() && after > 0 {
		r.lastmodRead = uint32(min((after+time.Millisecond-1)/time.Millisecond, math.MaxUint32))
	}
	return r, nil
}

// visit returns the Visit v holds, nil if none.
func (v *visitRecord) visit() *Visit {
	if !v.ok {
		return nil
	}
	out := &Visit{Fetched: fromNanos(v.fetched), Changed: fromNanos(v.changed), ETag: unsafe.String(v.etag, v.etagLen), Digest: v.digest,
		Status: int(v.status), Gone: int(v.gone), Estimator: v.estimator, Size: int64(v.size)}
	if v.lastModified != 0 {
		out.LastModified = time.Unix(int64(v.lastModified), 0).UTC()
	}
	if v.lastmodRead != 0 {
		out.LastmodRead = out.Fetched.Add(time.Duration(v.lastmodRead) * time.Millisecond)
	}
	return out
}

// ring is a FIFO queue with cheap PushFront. Capacity grows by 1.25× (at
// least one record), so a queue's slack stays under a quarter of its
// records — most queues are short, and doubling would waste up to half.
// Buffers use their whole allocation size class.
type ring struct {
	buf     []record
	head, n int32
}

func (q *ring) grow() {
	c := len(q.buf)
	q.resize(c + max(c/4, 1))
}

func (q *ring) resize(c int) {
	buf := slices.Grow([]record(nil), c)
	buf = buf[:cap(buf)]
	for i := int32(0); i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)%int32(len(q.buf))]
	}
	q.buf, q.head = buf, 0
}

func (q *ring) pushBack(r record) {
	if int(q.n) == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%int32(len(q.buf))] = r
	q.n++
}

func (q *ring) pushFront(r record) {
	if int(q.n) == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1 + int32(len(q.buf))) % int32(len(q.buf))
	q.buf[q.head] = r
	q.n++
}

// front returns the first record; the ring must not be empty.
func (q *ring) front() *record { return &q.buf[q.head] }

// back returns the last record; the ring must not be empty.
func (q *ring) back() *record { return &q.buf[(q.head+q.n-1)%int32(len(q.buf))] }

func (q *ring) popFront() record {
	r := q.buf[q.head]
	q.buf[q.head] = record{} // let the strings go
	q.head = (q.head + 1) % int32(len(q.buf))
	q.n--
	// A queue that drained from a burst gives most of its buffer back.
	if len(q.buf) > 64 && int(q.n) < len(q.buf)/4 {
		q.resize(2 * int(q.n))
	}
	return r
}

// laterEntry is an item of a key's later heap: a revisit, or any item that
// could not join its key's ring in order. 136 bytes.
type laterEntry struct {
	rec   record
	visit visitRecord
	// pos is the ring position the entry arrived at: the entry came after
	// the ring's items before pos (see later). seq orders entries of one
	// Due and pos as they arrived.
	pos int32
	seq uint32
}

// later is a key's items that the ring cannot hold in order: a min-heap by
// Due, then arrival. It exists only while it holds an item.
//
// The ring's items and the heap's are compared by Due and, among equal
// Dues, by arrival: positions number the ring's pushes at the back since
// the heap was made (those queued then are 0 to n−1), the ring's first
// item is at position pushed − n, and an entry that arrived when pushed was
// p came after the ring's items before p. Positions are 32 bits: a key
// that queued 2³¹ items at the back of its ring while holding revisits
// could misorder items of exactly equal Due.
type later struct {
	heap   []laterEntry
	pushed int32
	seq    uint32
}

// newLater returns a later heap for a key whose ring is q (nil if none).
func newLater(q *ring) *later {
	l := new(later)
	if q != nil {
		l.pushed = q.n
	}
	return l
}

// headPos returns the position of q's first item.
func (l *later) headPos(q *ring) int64 {
	if q == nil {
		return int64(l.pushed)
	}
	return int64(l.pushed) - int64(q.n)
}

func (e *laterEntry) less(f *laterEntry) bool {
	if e.rec.due != f.rec.due {
		return e.rec.due < f.rec.due
	}
	if e.pos != f.pos {
		return e.pos < f.pos
	}
	return e.seq < f.seq
}

// first reports whether the heap's first entry comes before the ring's
// first item (q may be nil or empty).
func (l *later) first(q *ring) bool {
	if len(l.heap) == 0 {
		return false
	}
	if q == nil || q.n == 0 {
		return true
	}
	e, r := &l.heap[0], q.front()
	if e.rec.due != r.due {
		return e.rec.due < r.due
	}
	return int64(e.pos) <= l.headPos(q)
}

// push adds e, numbered as arriving now.
func (l *later) push(e laterEntry) {
	l.seq++
	e.pos, e.seq = l.pushed, l.seq
	l.insert(e)
}

// pushFirst adds e, which was the first of its key's items when claimed,
// back in that place: ahead of every item of its Due, in the ring (q) or
// here.
func (l *later) pushFirst(e laterEntry, q *ring) {
	e.pos, e.seq = int32(l.headPos(q)), 0
	l.insert(e)
}

func (l *later) insert(e laterEntry) {
	if len(l.heap) == cap(l.heap) {
		// 1.125×: entries are big, and a key's revisits stay queued for
		// the life of the crawl, so slack costs more than copies (append
		// would double a short heap). The buffer takes its whole size
		// class.
		c := len(l.heap)
		grown := slices.Grow([]laterEntry(nil), c+max(c/8, 1))
		l.heap = append(grown, l.heap...)
	}
	l.heap = append(l.heap, e)
	h := l.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// pop removes and returns the first entry; the heap must not be empty.
func (l *later) pop() laterEntry {
	h := l.heap
	e := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = laterEntry{} // let the strings go
	h = h[:n]
	down(h, 0)
	l.heap = h
	if cap(h) > 64 && len(h) < cap(h)/4 {
		l.heap = append(make([]laterEntry, 0, 2*len(h)), h...)
	}
	return e
}

// down moves h[i] down the heap h to its place.
func down(h []laterEntry, i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h[r].less(&h[c]) {
			c = r
		}
		if !h[c].less(&h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// edit lets f change each entry in place, and puts the heap back in order
// after: f returns whether it moved the entry's Due, which then takes its
// place after the entries of its new Due, as pushed now.
func (l *later) edit(f func(e *laterEntry) (moved bool)) {
	for i := range l.heap {
		if f(&l.heap[i]) {
			l.seq++
			l.heap[i].pos, l.heap[i].seq = l.pushed, l.seq
		}
	}
	for i := len(l.heap)/2 - 1; i >= 0; i-- {
		down(l.heap, i)
	}
}
