package pebblestore

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
	"github.com/heedcrawl/heed/frontier/storetest"
	"github.com/heedcrawl/heed/ratelimit"
)

// Items are package codec's encoding, tested there; the store wraps its
// errors.
func TestDecodeItemRefusesGarbage(t *testing.T) {
	it := frontier.Item{URL: "http://a/", Key: "a", Depth: 1}
	b := appendItem(nil, &it)
	if got, err := decodeItem(b, "a"); err != nil || got.URL != it.URL || got.Key != "a" || got.Depth != 1 {
		t.Errorf("decodeItem(appendItem(%+v)) = %+v, %v", it, got, err)
	}
	for _, b := range [][]byte{nil, b[:len(b)-1], append(b, 0)} {
		if _, err := decodeItem(b, "k"); !errors.Is(err, errCorrupt) || !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("decodeItem(%x): %v, want errCorrupt and codec.ErrCorrupt", b, err)
		}
	}
}

// TestRecordRoundTrip: a key's record keeps every field of its HostState
// (package codec's encoding), its counters and where its queue lies; a
// truncated record is refused.
func TestRecordRoundTrip(t *testing.T) {
	var host ratelimit.HostState
	storetest.Fill(t, &host, time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	host.NextAllowed = host.NextAllowed.Add(5) // to the nanosecond
	for _, r := range []record{
		{low: seqStart, head: seqStart, tail: seqStart, runDue: math.MinInt64},
		{
			KeyRecord: frontier.KeyRecord{Host: host, Scheduled: 1_000_000, Sitemaps: 7, SitemapURLs: 50_000, GivenUp: true},
			low:       seqStart - 5, head: seqStart - 3, tail: seqStart + 1_000_000, runDue: math.MinInt64,
		},
		{
			KeyRecord: frontier.KeyRecord{Host: host, Scheduled: 3},
			low:       seqStart, head: seqStart + 2, tail: seqStart + 7, runDue: time.Date(2025, 6, 1, 12, 0, 0, 5, time.UTC).UnixNano(),
			dueCount: 40, dueNext: 77, dueLow: duePos{due: -5, at: seqStart + 3, n: 12},
		},
		{
			low: seqStart, head: seqStart, tail: seqStart + 1, runDue: math.MaxInt64,
			dueCount: 1, dueNext: 1, dueLow: duePos{due: math.MinInt64, at: seqStart - 1},
		},
	} {
		enc := appendRecord(nil, &r)
		got, err := decodeRecord(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range storetest.Diff(r.Host, got.Host, nil) {
			t.Errorf("host: %s", d)
		}
		got.Host = r.Host
		if !reflect.DeepEqual(got, r) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
		}
		for n := range len(enc) {
			if _, err := decodeRecord(enc[:n]); !errors.Is(err, errCorrupt) {
				t.Fatalf("the first %d of %d bytes: %v, want errCorrupt", n, len(enc), err)
			}
		}
	}
}

func TestQueueKeys(t *testing.T) {
	// A key's items lie together, in order, and no other key's lie
	// among them, not even a key the first is a prefix of.
	a1, a2, b1 := queueKey(nil, "a", seqStart), queueKey(nil, "a", seqStart+1), queueKey(nil, "b", seqStart)
	if !(string(a1) < string(a2) && string(a2) < string(b1)) {
		t.Errorf("queue keys out of order: %q %q %q", a1, a2, b1)
	}
	for _, other := range []string{"a:", "a\xff", "\xff"} {
		for _, seq := range []uint64{0, seqStart, 1<<64 - 1} {
			if k := string(queueKey(nil, other, seq)); string(a1) <= k && k <= string(a2) {
				t.Errorf("entry %q of key %q lies among key a's", k, other)
			}
		}
	}
	key, seq, ok := parseQueueKey(a2)
	if !ok || key != "a" || seq != seqStart+1 {
		t.Errorf("parseQueueKey(%q) = %q, %d, %v", a2, key, seq, ok)
	}
	if _, _, ok := parseQueueKey(a2[:len(a2)-1]); ok {
		t.Error("parseQueueKey accepted a truncated key")
	}
}

// A format 3 record, with neither the run's Due nor a due part, reads as
// one of an empty due part whose run may take any item.
func TestRecordFormat3(t *testing.T) {
	var host ratelimit.HostState
	host.Delay = time.Second
	const format3 = "01" + "00" + "00" + "00" + "02" + "00" + "00" // given up, an empty queue at seqStart, one scheduled
	b, _ := hex.DecodeString(format3)
	b = codec.AppendHost(b, &host)
	r, err := decodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if !r.GivenUp || r.Scheduled != 1 || r.head != seqStart || r.runDue != math.MinInt64 || r.dueCount != 0 || r.Host.Delay != time.Second {
		t.Errorf("format 3 record decoded as %+v", r)
	}
	if got := appendRecord(nil, &r); !bytes.Equal(got, b) {
		t.Errorf("written again as %x, want format 3's %x", got, b)
	}
	// A due part counted empty is not one a Store writes.
	enc, _ := hex.DecodeString("04" + "00" + "00" + "00" + "000000" + "00" + "00" + "000000")
	if _, err := decodeRecord(codec.AppendHost(enc, &host)); !errors.Is(err, errCorrupt) {
		t.Errorf("a record with an empty due part: %v, want errCorrupt", err)
	}
	enc[7] = 1 // one entry
	if r, err := decodeRecord(codec.AppendHost(enc, &host)); err != nil || r.dueCount != 1 || r.dueLow != (duePos{at: seqStart}) {
		t.Errorf("a record with one due entry: %+v, %v", r, err)
	}
}

// TestDueKeys: the entries of a key's due part lie in the order of their
// position — Due first, the zero time and times before any other, then
// arrival — after every entry of the key's run and before the next key,
// within [dueKey(low), dueKeyEnd), and no other key's lie among them.
func TestDueKeys(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	positions := []duePos{
		{due: dueNanos(time.Time{}), at: seqStart + 9, n: 9},
		{due: dueNanos(time.Unix(-1<<40, 0)), at: seqStart + 10, n: 10}, // as the zero time
		{due: dueNanos(time.Unix(-1, 0)), at: seqStart, n: 1},
		{due: dueNanos(at), at: seqStart - 1, n: 7},
		{due: dueNanos(at), at: seqStart, n: 2},
		{due: dueNanos(at), at: seqStart, n: 3},
		{due: dueNanos(at.Add(1)), at: 0, n: 0},
		{due: dueNanos(time.Unix(1<<40, 0)), at: math.MaxUint64, n: math.MaxUint64},
	}
	for i, p := range positions {
		k := dueKey(nil, "a", p)
		if got, ok := parseDuePos(k, 1); !ok || got != p {
			t.Errorf("parseDuePos(dueKey(%+v)) = %+v, %v", p, got, ok)
		}
		if _, ok := parseDuePos(k[:len(k)-1], 1); ok {
			t.Error("parseDuePos accepted a truncated key")
		}
		if i == 0 {
			continue
		}
		prev := dueKey(nil, "a", positions[i-1])
		if !positions[i-1].before(p) || p.before(positions[i-1]) || bytes.Compare(prev, k) >= 0 {
			t.Errorf("%+v and %+v out of order, as positions or as keys", positions[i-1], p)
		}
	}
	end := dueKeyEnd("a")
	if last := dueKey(nil, "a", positions[len(positions)-1]); bytes.Compare(last, end) >= 0 {
		t.Errorf("the last entry %x is not below the end %x", last, end)
	}
	for _, other := range []string{"", "a:", "a\xff", "\xff", "b"} {
		for _, p := range []duePos{{due: math.MinInt64}, positions[3], {due: math.MaxInt64, at: math.MaxUint64, n: math.MaxUint64}} {
			k := dueKey(nil, other, p)
			if bytes.Compare(dueKey(nil, "a", duePos{due: math.MinInt64}), k) <= 0 && bytes.Compare(k, end) < 0 {
				t.Errorf("entry %x of key %q lies among key a's", k, other)
			}
		}
	}
	if dueNanos(time.Unix(1<<40, 0)) != math.MaxInt64 || dueNanos(time.Unix(-1<<40, 0)) != math.MinInt64 || !dueTime(math.MinInt64).IsZero() || !dueTime(dueNanos(at)).Equal(at) {
		t.Error("dueNanos and dueTime do not keep times, or the ends")
	}
}
