package redisstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/internal/redistest"
)

// keyFields are the fields of a key's packed state (lua/keystate.lua), in
// order, each in hash field s or c, and 'd' (double), 'i' (int32) or 'B'
// (byte).
var keyFields = []struct{ field, name, kind string }{
	{"s", "na", "d"}, {"s", "bt", "d"}, {"s", "bl", "d"}, {"s", "br", "d"}, {"s", "rs", "d"},
	{"s", "delay", "d"}, {"s", "leased", "i"}, {"s", "ep", "i"}, {"s", "ql", "i"},
	{"c", "cu", "d"}, {"c", "dh", "d"}, {"c", "ds", "d"}, {"c", "dn", "i"}, {"c", "sched", "i"},
	{"c", "sm", "i"}, {"c", "smu", "i"}, {"c", "gu", "B"}, {"c", "p", "B"},
}

// keyState reads the packed state of key in the shard of prefix p: nil if
// the key has none.
func keyState(tb testing.TB, c redis.Cmdable, p, key string) map[string]float64 {
	tb.Helper()
	kept, err := c.HMGet(ctx, p+"k:"+key, "s", "c").Result()
	if err != nil {
		tb.Fatal(err)
	}
	if kept[0] == nil || kept[1] == nil {
		return nil
	}
	packed := map[string][]byte{"s": []byte(kept[0].(string)), "c": []byte(kept[1].(string))}
	for f, v := range packed {
		if len(v) > 64 {
			tb.Errorf("key %s: field %s is %d bytes, more than Redis keeps compact", key, f, len(v))
		}
	}
	st := map[string]float64{}
	for _, f := range keyFields {
		v := packed[f.field]
		switch f.kind {
		case "d":
			st[f.name] = math.Float64frombits(binary.LittleEndian.Uint64(v))
			v = v[8:]
		case "i":
			st[f.name] = float64(int32(binary.LittleEndian.Uint32(v)))
			v = v[4:]
		case "B":
			st[f.name] = float64(v[0])
			v = v[1:]
		}
		packed[f.field] = v
	}
	for f, v := range packed {
		if len(v) != 0 {
			tb.Fatalf("key %s: %d bytes left over in field %s", key, len(v), f)
		}
	}
	return st
}

// toOldLayout writes key's state as the layout before it was packed did,
// a field each — without the queue's length and the ready score, which
// the first such layout lacked.
func toOldLayout(tb testing.TB, c redis.Cmdable, p, key string) {
	tb.Helper()
	st := keyState(tb, c, p, key)
	if st == nil {
		tb.Fatalf("key %s has no state", key)
	}
	var args []any
	for _, f := range keyFields {
		if f.name == "ql" || f.name == "rs" || f.name == "dh" && st["dn"] == 0 {
			continue
		}
		args = append(args, f.name, strconv.FormatFloat(st[f.name], 'f', -1, 64))
	}
	if err := c.HSet(ctx, p+"k:"+key, args...).Err(); err != nil {
		tb.Fatal(err)
	}
	if err := c.HDel(ctx, p+"k:"+key, "s", "c").Err(); err != nil {
		tb.Fatal(err)
	}
}

// TestKeyStateRoundTrip: the decoder of the tests reads what keystate.lua
// packs, field by field.
func TestKeyStateRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	want := map[string]float64{}
	var vals []string
	for i, f := range keyFields {
		v := float64(i + 1)
		if f.kind == "d" {
			v = 1732612345678901 + float64(i)
		}
		want[f.name] = v
		vals = append(vals, fmt.Sprintf("%.0f", v))
	}
	script := keyStateSrc + "local s, c = keyPack(" + strings.Join(vals, ", ") + ")\n" +
		"redis.call('HSET', KEYS[1], 's', s, 'c', c)\n" +
		"local n = select('#', keyUnpack(s, c))\n" +
		"if n ~= " + strconv.Itoa(len(keyFields)) + " then return redis.error_reply('keyUnpack gave ' .. n .. ' values') end\n" +
		"return 1\n"
	if err := c.Eval(ctx, script, []string{"t:k:x"}).Err(); err != nil {
		t.Fatal(err)
	}
	got := keyState(t, c, "t:", "x")
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
}
