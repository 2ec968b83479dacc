package codec_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"iter"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/codec"
	"github.com/heedcrawl/heed/frontier/revisit"
	"github.com/heedcrawl/heed/frontier/storetest"
	"github.com/heedcrawl/heed/ratelimit"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// filledItem returns an Item with every field set (storetest.Fill fails t
// for a field of a kind it does not know), times to the nanosecond.
func filledItem(t testing.TB) frontier.Item {
	var it frontier.Item
	storetest.Fill(t, &it, t0)
	it.Lastmod = it.Lastmod.Add(123456789)
	it.SeenOnly = false // an instruction to Add: a queued item never has it, and it is not encoded
	return it
}

func filledHost(t testing.TB) ratelimit.HostState {
	var h ratelimit.HostState
	storetest.Fill(t, &h, t0)
	h.NextAllowed = h.NextAllowed.Add(1)
	h.Interrupted = h.Interrupted.Add(999999999)
	return h
}

func roundTripItem(t *testing.T, it frontier.Item) []byte {
	t.Helper()
	enc := codec.AppendItem([]byte("prefix"), &it)
	if !bytes.HasPrefix(enc, []byte("prefix")) {
		t.Fatalf("AppendItem did not append: %q", enc)
	}
	enc = enc[len("prefix"):]
	got, err := codec.DecodeItem(enc, it.Key)
	if err != nil {
		t.Fatalf("DecodeItem: %v", err)
	}
	for _, d := range storetest.Diff(it, got, nil) {
		t.Errorf("round trip: %s", d)
	}
	return enc
}

func roundTripHost(t *testing.T, h ratelimit.HostState) []byte {
	t.Helper()
	enc := codec.AppendHost([]byte("prefix"), &h)
	enc = enc[len("prefix"):]
	got, err := codec.DecodeHost(enc)
	if err != nil {
		t.Fatalf("DecodeHost: %v", err)
	}
	for _, d := range storetest.Diff(h, got, nil) {
		t.Errorf("round trip: %s", d)
	}
	return enc
}

// TestItemRoundTrip: every field of an Item comes back, each on its own and
// all at once, and so do extreme values.
func TestItemRoundTrip(t *testing.T) {
	full := filledItem(t)
	t.Run("full", func(t *testing.T) { roundTripItem(t, full) })
	t.Run("zero", func(t *testing.T) { roundTripItem(t, frontier.Item{}) })
	t.Run("each field alone", func(t *testing.T) {
		// A field whose flag another field's shadows would pass "full".
		zero := codec.AppendItem(nil, &frontier.Item{})
		for name, it := range eachField(full) {
			if name != "Key" && name != "SeenOnly" && bytes.Equal(codec.AppendItem(nil, &it), zero) {
				t.Errorf("Item.%s is not encoded", name)
			}
			roundTripItem(t, it)
		}
	})
	t.Run("extremes", func(t *testing.T) {
		roundTripItem(t, frontier.Item{URL: strings.Repeat("x", 1<<16), Depth: math.MinInt64, Retries: math.MaxInt64,
			SitemapDepth: -1, Kind: math.MaxUint8, Priority: float32(math.Inf(-1)),
			Lastmod: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)})
		roundTripItem(t, frontier.Item{Priority: float32(math.NaN()), Lastmod: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)})
		roundTripItem(t, frontier.Item{Priority: -0.0001, Lastmod: time.Unix(-1, 0), Meta: map[string]string{"": ""}, Redirects: []string{""}})
		roundTripItem(t, frontier.Item{Priority: float32(math.Copysign(0, -1))}) // -0, which == 0
	})
	t.Run("local time", func(t *testing.T) {
		lm := time.Date(2020, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))
		got, err := codec.DecodeItem(codec.AppendItem(nil, &frontier.Item{Lastmod: lm}), "")
		if err != nil || !got.Lastmod.Equal(lm) || got.Lastmod.Location() != time.UTC {
			t.Errorf("Lastmod %v came back as %v (%v), want the same instant in UTC", lm, got.Lastmod, err)
		}
	})
	t.Run("zero Visit", func(t *testing.T) {
		got, err := codec.DecodeItem(codec.AppendItem(nil, &frontier.Item{Visit: &frontier.Visit{}}), "")
		if err != nil || got.Visit == nil || *got.Visit != (frontier.Visit{}) {
			t.Errorf("a Visit of zero fields came back as %+v (%v)", got.Visit, err)
		}
		roundTripItem(t, frontier.Item{Due: time.Unix(-5, 1), Visit: &frontier.Visit{Status: -1, Gone: math.MaxInt64, Digest: math.MaxUint64}})
	})
	t.Run("empty lists", func(t *testing.T) {
		got, err := codec.DecodeItem(codec.AppendItem(nil, &frontier.Item{Meta: map[string]string{}, Redirects: []string{}}), "")
		if err != nil || got.Meta != nil || got.Redirects != nil {
			t.Errorf("empty Meta and Redirects came back as %#v, %#v (%v), want nil", got.Meta, got.Redirects, err)
		}
	})
}

func TestHostRoundTrip(t *testing.T) {
	full := filledHost(t)
	t.Run("full", func(t *testing.T) { roundTripHost(t, full) })
	t.Run("zero", func(t *testing.T) { roundTripHost(t, ratelimit.HostState{}) })
	t.Run("each field alone", func(t *testing.T) {
		zero := codec.AppendHost(nil, &ratelimit.HostState{})
		for name, h := range eachField(full) {
			if bytes.Equal(codec.AppendHost(nil, &h), zero) {
				t.Errorf("HostState.%s is not encoded", name)
			}
			roundTripHost(t, h)
		}
	})
	t.Run("extremes", func(t *testing.T) {
		roundTripHost(t, ratelimit.HostState{Delay: math.MinInt64, RTT: math.MaxInt64, Failures: math.MinInt64,
			NextAllowed: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), Interrupted: time.Unix(math.MaxInt32*4, 999999999)})
	})
}

// TestItemGolden: the layout of what is stored does not change by
// accident. An item of redisstore's layout before this package, with the
// retired BlockedSince, still decodes.
func TestItemGolden(t *testing.T) {
	it := frontier.Item{URL: "http://a/x", Key: "a", Referrer: "http://a/", Depth: 2, Kind: frontier.KindSitemap,
		Priority: 0.5, Lastmod: time.Date(2024, 2, 29, 12, 0, 0, 5, time.UTC), FromSitemap: true,
		Meta: map[string]string{"k": "v", "e": ""}, Retries: 1, Redirects: []string{"http://a/0"}, SitemapDepth: 3}
	const golden = "01ff070a687474703a2f2f612f7809687474703a2f2f612f04010000003f80c783de0c0502016500016b017602010a687474703a2f2f612f3006"
	if got := hex.EncodeToString(codec.AppendItem(nil, &it)); got != golden {
		t.Errorf("AppendItem = %s\nwant          %s\n(a change of layout: a new flag, or a new version DecodeItem reads beside the old)", got, golden)
	}
	// With a revisit's Due and Visit (flags 11 and 12).
	rv := it
	rv.Due = time.Date(2025, 6, 1, 13, 0, 0, 0, time.UTC)
	rv.Visit = &frontier.Visit{Fetched: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), Changed: time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC),
		ETag: `W/"x"`, LastModified: time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC), Digest: 0x0102030405060708, Status: 304, Gone: 1}
	if err := rv.Visit.Estimator.Observe(revisit.Obs{Interval: time.Hour, Changed: true}); err != nil {
		t.Fatal(err)
	}
	const goldenVisit = "01ff370a687474703a2f2f612f7809687474703a2f2f612f04010000003f80c783de0c0502016500016b017602010a687474703a2f2f612f3006a0bbe2830d00ff018083e2830d0080e695810d0005572f22782280b2d9fe0c000807060504030201e004020000000000006145000000000000000008000000000000000800a107"
	if got := hex.EncodeToString(codec.AppendItem(nil, &rv)); got != goldenVisit {
		t.Errorf("AppendItem with Due and Visit = %s\nwant          %s", got, goldenVisit)
	}
	// Written by redisstore before package codec, with BlockedSince.
	const old = "01ff0f0a687474703a2f2f612f7809687474703a2f2f612f04010000003f80c783de0c0502016500016b017602010a687474703a2f2f612f3006ca88b0f70c00"
	b, _ := hex.DecodeString(old)
	got, err := codec.DecodeItem(b, "a")
	if err != nil {
		t.Fatalf("DecodeItem(redisstore's layout): %v", err)
	}
	for _, d := range storetest.Diff(it, got, nil) {
		t.Errorf("redisstore's layout: %s", d)
	}
}

func TestHostGolden(t *testing.T) {
	h := ratelimit.HostState{Delay: time.Second, CrawlDelay: 2 * time.Second, HasCrawlDelay: true, Backoff: time.Minute,
		RTT: 80 * time.Millisecond, PausedUntil: time.Date(2025, 6, 1, 13, 0, 0, 7, time.UTC), Failures: 4}
	with := h
	with.NextAllowed = time.Date(2025, 6, 1, 12, 0, 0, 5, time.UTC)
	with.ClosedUntil = time.Date(2025, 6, 1, 14, 0, 0, 0, time.UTC)
	with.Interrupted = time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC)
	const golden = "02ff078083e2830d0580a8d6b90780d0a54c80d0acf30e0880e0ba84bf03a0bbe2830d07c0f3e2830d00e0cae1830d00"
	if got := hex.EncodeToString(codec.AppendHost(nil, &with)); got != golden {
		t.Errorf("AppendHost = %s\nwant          %s\n(a change of layout: a new flag, or a new version DecodeHost reads beside the old)", got, golden)
	}
	// Written by redisstore before package codec (version 1).
	for old, want := range map[string]ratelimit.HostState{
		"0180a8d6b90780d0acf30e0180e0ba84bf0380d0a54c01a0bbe2830d0708": h,
		"0100000000000000": {},
	} {
		b, _ := hex.DecodeString(old)
		got, err := codec.DecodeHost(b)
		if err != nil {
			t.Fatalf("DecodeHost(%s): %v", old, err)
		}
		for _, d := range storetest.Diff(want, got, nil) {
			t.Errorf("version 1 %s: %s", old, d)
		}
	}
}

// TestTruncated: every strict prefix of an encoding is refused, not
// misread.
func TestTruncated(t *testing.T) {
	it, h := filledItem(t), filledHost(t)
	item := codec.AppendItem(nil, &it)
	for n := range len(item) {
		if _, err := codec.DecodeItem(item[:n], it.Key); !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("DecodeItem of the first %d of %d bytes: %v, want ErrCorrupt", n, len(item), err)
		}
	}
	host := codec.AppendHost(nil, &h)
	for n := range len(host) {
		if _, err := codec.DecodeHost(host[:n]); !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("DecodeHost of the first %d of %d bytes: %v, want ErrCorrupt", n, len(host), err)
		}
	}
}

func TestGarbage(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    string // hex
		want error
	}{
		{"empty", "", codec.ErrCorrupt},
		{"a later version", "02000161", codec.ErrVersion},
		{"version 0", "00000161", codec.ErrVersion},
		{"a flag past those known", "0180800101" + "61", codec.ErrVersion},
		{"a refusal out of range", "01804001" + "61" + "09", codec.ErrCorrupt},
		{"a Visit flag past those known", "01802001" + "61" + "8008", codec.ErrVersion},
		{"a Visit's estimator impossible", "01802001" + "61" + "80010000803f0000000000000000000000000000000000000000000000000000", codec.ErrCorrupt},
		{"a Visit's digest truncated", "01802001" + "61" + "100102", codec.ErrCorrupt},
		{"flags overflow", "01ffffffffffffffffffff01", codec.ErrCorrupt},
		{"URL past the end", "01000561", codec.ErrCorrupt},
		{"a byte left over", "0100016100", codec.ErrCorrupt},
		{"absurd Meta count", "014001" + "61" + "ffffffff0f", codec.ErrCorrupt},
		{"absurd Redirects count", "01800201" + "61" + "ffffffff0f", codec.ErrCorrupt},
		{"Kind past a byte", "010401" + "61" + "8002", codec.ErrCorrupt},
		{"nanoseconds past a second", "011001" + "61" + "00" + "80943deb03", codec.ErrCorrupt},
		{"depth overflows", "010201" + "61" + "ffffffffffffffffffff01", codec.ErrCorrupt},
	} {
		b, err := hex.DecodeString(tc.b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := codec.DecodeItem(b, "k"); !errors.Is(err, tc.want) {
			t.Errorf("DecodeItem, %s (%s): %v, want %v", tc.name, tc.b, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		b    string
		want error
	}{
		{"empty", "", codec.ErrCorrupt},
		{"a later version", "0300", codec.ErrVersion},
		{"a flag past those known", "028008", codec.ErrVersion},
		{"a byte left over", "020000", codec.ErrCorrupt},
		{"version 1, a boolean of 2", "01000002000000", codec.ErrCorrupt},
		{"version 1, truncated", "01000000000000", codec.ErrCorrupt},
	} {
		b, _ := hex.DecodeString(tc.b)
		if _, err := codec.DecodeHost(b); !errors.Is(err, tc.want) {
			t.Errorf("DecodeHost, %s (%s): %v, want %v", tc.name, tc.b, err, tc.want)
		}
	}
}

// TestErrorSaysWhere: a corrupt input's error says what and where.
func TestErrorSaysWhere(t *testing.T) {
	_, err := codec.DecodeItem([]byte{1, 0, 5, 'a'}, "k")
	if err == nil || !strings.Contains(err.Error(), "item of 4 bytes: string past the end at byte 3") {
		t.Errorf("DecodeItem error %q does not say what and where", err)
	}
}

// TestDecodeCopies: a decoded item does not share memory with its input,
// which a Store reuses.
func TestDecodeCopies(t *testing.T) {
	it := filledItem(t)
	b := codec.AppendItem(nil, &it)
	got, err := codec.DecodeItem(b, it.Key)
	if err != nil {
		t.Fatal(err)
	}
	clear(b)
	for _, d := range storetest.Diff(it, got, nil) {
		t.Errorf("after the input was cleared: %s", d)
	}
}

// TestAllocations: encoding into a buffer with room allocates nothing;
// decoding allocates one string for all of an item's, and its lists.
func TestAllocations(t *testing.T) {
	link := frontier.Item{URL: "https://example.com/a/b", Key: "example.com", Referrer: "https://example.com/a", Depth: 3}
	meta := link
	meta.Meta = map[string]string{"a": "1", "b": "2", "c": "3"}
	h := filledHost(t)
	buf := make([]byte, 0, 1024)
	for name, f := range map[string]func(){
		"AppendItem":           func() { buf = codec.AppendItem(buf[:0], &link) },
		"AppendItem with Meta": func() { buf = codec.AppendItem(buf[:0], &meta) },
		"AppendHost":           func() { buf = codec.AppendHost(buf[:0], &h) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
	enc := codec.AppendItem(nil, &link)
	if n := testing.AllocsPerRun(100, func() { codec.DecodeItem(enc, link.Key) }); n != 1 {
		t.Errorf("DecodeItem: %v allocations, want 1", n)
	}
	enc = codec.AppendHost(nil, &h)
	if n := testing.AllocsPerRun(100, func() { codec.DecodeHost(enc) }); n != 0 {
		t.Errorf("DecodeHost: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { codec.AppendItem(nil, &meta) }); n != 1 {
		t.Errorf("AppendItem(nil, ...): %v allocations, want 1", n)
	}
}

// eachField yields, for each field of full, its name and a T with that
// field alone set as in full.
func eachField[T any](full T) iter.Seq2[string, T] {
	return func(yield func(string, T) bool) {
		v := reflect.ValueOf(full)
		for i := range v.NumField() {
			var one T
			reflect.ValueOf(&one).Elem().Field(i).Set(v.Field(i))
			if !yield(v.Type().Field(i).Name, one) {
				return
			}
		}
	}
}
