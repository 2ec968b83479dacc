package gate

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// The gate builds on the parser (package robots), heed's one definition of
// a host and its one Clock (package ratelimit's), and otherwise on the
// standard library alone.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"github.com/heedcrawl/heed/robots", "github.com/heedcrawl/heed/internal/hostid", "github.com/heedcrawl/heed/ratelimit"}
	for _, want := range allowed {
		if !slices.Contains(pkg.Imports, want) {
			t.Errorf("the gate does not import %s: %q", want, pkg.Imports)
		}
	}
	for _, path := range pkg.Imports {
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !slices.Contains(allowed, path) {
			t.Errorf("the gate imports %s: only robots, internal/hostid, ratelimit and the standard library are its to use", path)
		}
	}
}
