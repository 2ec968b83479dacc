package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/heedcrawl/heed/internal/benchdoc"
)

// TestBenchmarksCommands checks every crawl command BENCHMARKS.md names
// (go run ./cmd/crawl ..., crawl ...) against crawl's flag set: a flag
// renamed or removed fails it until the page is updated too.
func TestBenchmarksCommands(t *testing.T) {
	cmds, err := benchdoc.ReadFile(filepath.Join("..", "..", "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cmds {
		if c.Tool != benchdoc.Crawl {
			continue
		}
		n++
		var f flags
		fs := newFlagSet(&f)
		fs.SetOutput(io.Discard)
		if err := fs.Parse(c.Args); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
	if n == 0 {
		t.Error("BENCHMARKS.md names no crawl command; its tables name the flags heed's variants run with")
	}
}
