package robots

import (
	"strings"
	"testing"
)

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
