package benchdoc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, seen from this package.
const root = "../.."

// TestBenchmarksGoTestCommands checks every go test command of
// BENCHMARKS.md against the repository: packages that exist, -bench and
// -run patterns that match functions, settings the packages read. The
// commands of benchrun and crawl are checked against their own flag sets,
// by the tests of bench/cmd/benchrun and cmd/crawl.
func TestBenchmarksGoTestCommands(t *testing.T) {
	cmds, err := ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cmds {
		if c.Tool != GoTest {
			continue
		}
		n++
		if err := CheckGoTest(root, c); err != nil {
			t.Error(err)
		}
	}
	// The robots.txt table alone names several: a document that names
	// none has lost its commands, not passed.
	if n < 5 {
		t.Errorf("BENCHMARKS.md names %d go test commands; want its tables' commands", n)
	}
}

// TestBenchmarksCommandCells checks that every cell of a "command" column
// in BENCHMARKS.md's tables is a command this package reads (and so one
// the tests check), and that every row of today's figures has one.
func TestBenchmarksCommandCells(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := Parse(strings.NewReader(string(doc)))
	if err != nil {
		t.Fatal(err)
	}
	byLine := map[int]int{}
	for _, c := range cmds {
		if c.Cell == "command" {
			byLine[c.Line]++
		}
	}
	rows := 0
	col := -1
	for i, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "|") {
			col = -1
			continue
		}
		cells := TableCells(line)
		if col < 0 {
			col = slices.Index(cells, "command")
			if col < 0 {
				col = len(cells) + 1 // a table without commands
			}
			continue
		}
		if col >= len(cells) || strings.HasPrefix(cells[col], "---") {
			continue
		}
		rows++
		if byLine[i+1] == 0 {
			t.Errorf("BENCHMARKS.md line %d: command cell %q names no command the tests check", i+1, cells[col])
		}
	}
	if rows < 10 {
		t.Errorf("BENCHMARKS.md has %d rows with a command cell; want its tables of today's figures", rows)
	}
}

func TestParse(t *testing.T) {
	doc := "# x\n\n" +
		"| measure | command |\n|---|---|\n" +
		"| a | `HEED_X=1 go test ./robots -run '^$' -bench 'Parse|Match' -count 3` |\n" +
		"| b | `taskset -c 0 go -C bench run ./cmd/benchrun -workloads a -runs 1` and `crawl -state DIR` |\n\n" +
		"Prose with `go doc ./frontier` and `-runs`.\n\n" +
		"    go -C bench test ./...   # harness tests\n"
	cmds, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{Line: 5, Cell: "command", Env: []string{"HEED_X=1"}, Tool: GoTest, Dir: ".", Args: []string{"./robots", "-run", "^$", "-bench", "Parse|Match", "-count", "3"}},
		{Line: 6, Cell: "command", Tool: Benchrun, Dir: "bench", Args: []string{"-workloads", "a", "-runs", "1"}},
		{Line: 6, Cell: "command", Tool: Crawl, Args: []string{"-state", "DIR"}},
		{Line: 10, Tool: GoTest, Dir: "bench", Args: []string{"./..."}},
	}
	if len(cmds) != len(want) {
		t.Fatalf("%d commands, want %d: %+v", len(cmds), len(want), cmds)
	}
	for i, c := range cmds {
		w := want[i]
		if c.Line != w.Line || c.Cell != w.Cell || c.Tool != w.Tool || c.Dir != w.Dir || !slices.Equal(c.Env, w.Env) || !slices.Equal(c.Args, w.Args) {
			t.Errorf("command %d = %+v, want %+v", i, c, w)
		}
	}
	if _, err := Parse(strings.NewReader("`go test -run 'x`\n")); !errors.Is(err, ErrQuote) {
		t.Errorf("unclosed quote: err %v, want ErrQuote", err)
	}
}

// A renamed benchmark, test or setting, or a package moved, fails the
// check.
func TestCheckGoTest(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pkg", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package pkg\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n" +
		"func BenchmarkParseCorpus(b *testing.B) { _ = os.Getenv(\"HEED_X\") }\n" +
		"func BenchmarkMatch(b *testing.B)       {}\n" +
		"func TestRoundTrips(t *testing.T)       {}\n"
	if err := os.WriteFile(filepath.Join(dir, "pkg", "pkg_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(text string) error {
		cmds, err := Parse(strings.NewReader("`" + text + "`\n"))
		if err != nil || len(cmds) != 1 {
			t.Fatalf("%q: %v, %d commands", text, err, len(cmds))
		}
		return CheckGoTest(dir, cmds[0])
	}
	for _, ok := range []string{
		"go test -run '^$' -bench . ./pkg",
		"HEED_X=2 go test ./pkg -run '^$' -bench 'ParseCorpus|^BenchmarkMatch$' -benchtime 1x -count 3",
		"go test -bench 'Match/(a|b)$/N=1' ./pkg/...",
		"go test -run 'RoundTrips' -v ./pkg",
	} {
		if err := check(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for text, want := range map[string]error{
		"go test -run '^$' -bench 'ParseCorpus|Renamed' ./pkg": ErrNoMatch,
		"go test -run 'TestGone' ./pkg":                        ErrNoMatch,
		"go test -bench Match ./nopkg":                         nil,
		"HEED_Y=1 go test -bench Match ./pkg":                  nil,
		"go test -benchtme 1x ./pkg":                           nil,
	} {
		err := check(text)
		if err == nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%s: err %v, want %v", text, err, want)
		}
	}
}
