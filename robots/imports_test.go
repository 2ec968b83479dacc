package robots

import (
	"go/build"
	"strings"
	"testing"
)

// robots is the parser and matcher alone, importable anywhere: it uses the
// standard library only (fetching and caching are package robots/gate's).
func TestImportsStandardLibraryOnly(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("no imports found: is this the package's directory?")
	}
	for _, path := range pkg.Imports {
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
			t.Errorf("robots imports %s: the parser and matcher use the standard library only", path)
		}
	}
}
