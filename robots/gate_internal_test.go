package robots

import (
	"strings"
	"testing"
)

func TestGateFromUTF16(t *testing.T) {
	le := []byte{0xff, 0xfe, 'A', 0, 0xfc, 0, 0x3d, 0xd8, 0x00, 0xde, '\n', 0, 'x'} // "Aü😀\n", then half a unit
	if got := string(gateFromUTF16(le)); got != "Aü😀\n" {
		t.Errorf("UTF-16LE = %q", got)
	}
	be := []byte{0xfe, 0xff, 0, 'A', 0, 0xfc}
	if got := string(gateFromUTF16(be)); got != "Aü" {
		t.Errorf("UTF-16BE = %q", got)
	}
	for _, plain := range []string{"User-agent: *\n", "\xef\xbb\xbfUser-agent: *\n", "", "\xff"} {
		if got := string(gateFromUTF16([]byte(plain))); got != plain {
			t.Errorf("gateFromUTF16(%q) = %q, want it unchanged", plain, got)
		}
	}
}

func TestGateBodyDropsCutLine(t *testing.T) {
	cases := []struct {
		body      string
		truncated bool
		want      string
	}{
		{"User-agent: *\nDisallow: /a\nDisallow: /b", true, "User-agent: *\nDisallow: /a\n"},
		{"User-agent: *\r\nDisallow: /a\r", true, "User-agent: *\r\nDisallow: /a\r"},
		{"Disallow: /a", true, ""},
		{"User-agent: *\nDisallow: /a\nDisallow: /b", false, "User-agent: *\nDisallow: /a\nDisallow: /b"},
	}
	for _, tc := range cases {
		got := string(gateBody(&Response{Body: []byte(tc.body), Truncated: tc.truncated}))
		if got != tc.want {
			t.Errorf("gateBody(%q, truncated %v) = %q, want %q", tc.body, tc.truncated, got, tc.want)
		}
	}
	// Longer than MaxSize: cut to MaxSize+1 and left for Parse to judge.
	long := strings.Repeat("# x\n", MaxSize)
	if got := gateBody(&Response{Body: []byte(long), Truncated: true}); len(got) != MaxSize+1 {
		t.Errorf("len = %d, want MaxSize+1", len(got))
	}
}
