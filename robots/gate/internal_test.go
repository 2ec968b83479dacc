package gate

import (
	"strings"
	"testing"

	"github.com/heedcrawl/heed/robots"
)

func TestBodyDropsCutLine(t *testing.T) {
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
		got := string(bodyToParse(&Response{Body: []byte(tc.body), Truncated: tc.truncated}))
		if got != tc.want {
			t.Errorf("bodyToParse(%q, truncated %v) = %q, want %q", tc.body, tc.truncated, got, tc.want)
		}
	}
	// Longer than MaxSize: cut to MaxSize+1 and left for Parse to judge.
	long := strings.Repeat("# x\n", robots.MaxSize)
	if got := bodyToParse(&Response{Body: []byte(long), Truncated: true}); len(got) != robots.MaxSize+1 {
		t.Errorf("len = %d, want robots.MaxSize+1", len(got))
	}
}
