package robots

import (
	"net/http"
	"testing"
	"time"
)

func TestPunycodeEncode(t *testing.T) {
	// Samples from RFC 3492 §7.1, lower-cased as hosts are before encoding,
	// and common IDN examples.
	cases := []struct{ in, want string }{
		{"bücher", "bcher-kva"},
		{"münchen", "mnchen-3ya"},
		{"\u4ed6\u4eec\u4e3a\u4ec0\u4e48\u4e0d\u8bf4\u4e2d\u6587", "ihqwcrb4cv8a8dqg056pqjye"},
		{"\u4ed6\u5011\u7232\u4ec0\u9ebd\u4e0d\u8aaa\u4e2d\u6587", "ihqwctvzc91f659drss3x8bo0yb"},
		{"\u05dc\u05de\u05d4\u05d4\u05dd\u05e4\u05e9\u05d5\u05d8\u05dc\u05d0\u05de\u05d3\u05d1\u05e8\u05d9\u05dd\u05e2\u05d1\u05e8\u05d9\u05ea", "4dbcagdahymbxekheh6e0a7fei0b"},
		{"почемужеонинеговорятпорусски", "b1abfaaepdrnnbgefbadotcwatmq2g4l"},
		{"porquénopuedensimplementehablarenespañol", "porqunopuedensimplementehablarenespaol-fmd56a"},
		{"3年b組金八先生", "3b-ww4c5e180e575a65lsy2b"},
		{"安室奈美恵-with-super-monkeys", "-with-super-monkeys-pc58ag80a8qai00g7n9n"},
		{"ü", "tda"},
	}
	for _, tc := range cases {
		got, err := punycodeEncode(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("punycodeEncode(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestGateASCIIHostRejectsInvalidUTF8(t *testing.T) {
	if _, err := gateASCIIHost("b\xffcher.example"); err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
}

func TestGateParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{now.Add(time.Hour).Format(http.TimeFormat), time.Hour, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"99999999999999999999", (1<<32 - 1) * time.Second, true},
		{"", 0, false},
		{"1.5", 0, false},
		{"-1", 0, false},
		{"soon", 0, false},
	}
	for _, tc := range cases {
		got, ok := gateRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("gateRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
