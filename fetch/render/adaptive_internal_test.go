package render

import (
	"fmt"
	"net/url"
	"testing"
)

// TestAdaptiveForgetsPastMaxKinds: the kinds remembered stay within
// MaxKinds however many hosts a crawl meets.
func TestAdaptiveForgetsPastMaxKinds(t *testing.T) {
	a := &Adaptive{MaxKinds: 8}
	static := Measures{Scripts: []string{"/app.js"}, Links: map[string]bool{}}
	for i := range 100 {
		key := fmt.Sprintf("host%d.test", i)
		u := &url.URL{Scheme: "http", Host: key, Path: "/"}
		a.Choose(key, u, static)
		a.Observe(key, u, Render, static, static)
	}
	a.mu.Lock()
	n := len(a.kinds)
	a.mu.Unlock()
	if n > 8 {
		t.Fatalf("%d kinds remembered, want at most MaxKinds 8", n)
	}
}
