//go:build !race

package robots

import (
	"strings"
	"testing"
)

// The matcher's hot path must not allocate (the race detector's
// instrumentation would, hence the build tag).
func TestMatchDoesNotAllocate(t *testing.T) {
	r := Parse([]byte("User-agent: *\nDisallow: /a*b$\nAllow: /ツ\nDisallow: /%7Ex\n\nUser-agent: FooBot\nDisallow: /\n"))
	g := r.Group("x")
	for _, u := range []string{
		"/plain/path?q=1",
		"/a%2fx/b",
		"/%E3%83%84/%7e",
		"/ツ/long/" + strings.Repeat("é", 300),
		"/ツ/longer/" + strings.Repeat("é%41", 2000), // normalised in a pooled buffer
		"https://h.example/a/b?c#frag",
		"https://h.example?q",
		"//h.example/x",
	} {
		g.Allowed(u) // fill the pool
		if n := testing.AllocsPerRun(100, func() { g.Allowed(u) }); n != 0 {
			t.Errorf("Group.Allowed(%.40q) allocates %v times", u, n)
		}
		for _, agent := range []string{"x", "FooBot", "foobot/1.0", "UNKNOWNBOT"} {
			if n := testing.AllocsPerRun(100, func() { r.Allowed(agent, u) }); n != 0 {
				t.Errorf("Robots.Allowed(%q, %.40q) allocates %v times", agent, u, n)
			}
		}
	}
}
