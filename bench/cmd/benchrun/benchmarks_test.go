package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/bench/harness"
	"github.com/heedcrawl/heed/internal/benchdoc"
)

// benchmarksFile is the repository's BENCHMARKS.md.
var benchmarksFile = filepath.Join("..", "..", "..", "BENCHMARKS.md")

// TestBenchmarksCommands checks every benchrun command BENCHMARKS.md
// names against benchrun's own flags: each flag defined, each value one
// it takes, each workload one it knows. A flag renamed here fails it
// until the page is updated too.
func TestBenchmarksCommands(t *testing.T) {
	cmds, err := benchdoc.ReadFile(benchmarksFile)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cmds {
		if c.Tool != benchdoc.Benchrun {
			continue
		}
		n++
		if err := checkArgs(c.Args); err != nil {
			t.Errorf("%s: %v", c, err)
		}
		if c.Dir != "bench" {
			t.Errorf("%s: benchrun runs in bench (go -C bench run ./cmd/benchrun), not %s", c, c.Dir)
		}
	}
	if n < 5 {
		t.Errorf("BENCHMARKS.md names %d benchrun commands; want its tables' commands", n)
	}
}

// checkArgs parses args as benchrun does.
func checkArgs(args []string) error {
	var o options
	fs := newFlagSet(&o)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("benchrun takes no arguments: %q", fs.Args())
	}
	_, err := chosenWorkloads(o.workloads, o.broken, o.forDuration)
	return err
}

func TestCheckArgs(t *testing.T) {
	for _, ok := range [][]string{
		{"-runs", "1", "-broken=false", "-port", "0"},
		{"-workloads", "g", "-crawlers", "heed,heed-redis-2", "-for", "5m", "-redis-cluster", "3"},
	} {
		if err := checkArgs(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range [][]string{
		{"-run", "1"},         // a flag renamed
		{"-for", "5"},         // a duration without its unit
		{"-workloads", "a,h"}, // a workload unknown
		{"-runs", "1", "[-repo", "DIR]"},
	} {
		if err := checkArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The document's tables of today's figures have the shape Figures prints,
// so that a run's output can be pasted into them.
func TestBenchmarksTablesHaveFiguresShape(t *testing.T) {
	doc, err := os.ReadFile(benchmarksFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, header := range []string{harness.PeersHeader, harness.FiguresHeader} {
		if !strings.Contains(string(doc), header) {
			t.Errorf("BENCHMARKS.md has no table headed\n%s(harness.Figures prints that shape)", header)
		}
	}
}
