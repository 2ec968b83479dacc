package benchdoc

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ErrNoMatch is returned for a -bench or -run pattern that matches no
// function of the packages a go test command names.
var ErrNoMatch = errors.New("benchdoc: pattern matches no function")

// CheckGoTest checks a GoTest command against the repository at root: its
// go test flags are go test's, each package it names exists, each
// top-level alternative of its -bench pattern matches a Benchmark
// function of those packages, each of its -run pattern (unless it is
// '^$') a Test, Fuzz or Example function, and each NAME of its NAME=value
// settings is named in those packages' source.
func CheckGoTest(root string, c Command) error {
	if c.Tool != GoTest {
		return fmt.Errorf("benchdoc: %s is not a go test command", c)
	}
	fset := flag.NewFlagSet("go test", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	var bench, run string
	fset.StringVar(&bench, "bench", "", "")
	fset.StringVar(&run, "run", "", "")
	for _, name := range []string{"benchtime", "count", "timeout", "cpu", "tags", "o", "coverprofile", "cpuprofile", "memprofile"} {
		fset.String(name, "", "")
	}
	for _, name := range []string{"v", "race", "benchmem", "short", "failfast", "cover", "c"} {
		fset.Bool(name, false, "")
	}
	// Packages and flags may come in any order.
	var pkgs []string
	args := c.Args
	for len(args) > 0 {
		if err := fset.Parse(args); err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		args = fset.Args()
		if len(args) > 0 {
			pkgs = append(pkgs, args[0])
			args = args[1:]
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	funcs := map[string][]string{} // Benchmark, Test: names
	var sources []string
	for _, p := range pkgs {
		dirs, err := packageDirs(filepath.Join(root, c.Dir), p)
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		for _, d := range dirs {
			src, err := readPackage(d, funcs)
			if err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
			sources = append(sources, src...)
		}
	}
	if bench != "" {
		if err := matchEach(bench, funcs["Benchmark"]); err != nil {
			return fmt.Errorf("%s: -bench: %w", c, err)
		}
	}
	if run != "" && run != "^$" {
		if err := matchEach(run, funcs["Test"]); err != nil {
			return fmt.Errorf("%s: -run: %w", c, err)
		}
	}
	for _, e := range c.Env {
		name, _, _ := strings.Cut(e, "=")
		if !mentions(sources, name) {
			return fmt.Errorf("%s: %s is read nowhere in %s", c, name, strings.Join(pkgs, " "))
		}
	}
	return nil
}

// packageDirs returns the directories a package pattern of go test names,
// relative to dir: one, or with /... every directory below it that has Go
// files.
func packageDirs(dir, pattern string) ([]string, error) {
	base, all := strings.CutSuffix(pattern, "/...")
	base = filepath.Join(dir, filepath.FromSlash(base))
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("no package %s in %s", pattern, dir)
	}
	if !all {
		return []string{base}, nil
	}
	var dirs []string
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != base && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	return dirs, err
}

// readPackage adds the names of the Benchmark functions, and of the Test,
// Fuzz and Example functions (as "Test"), of the Go test files in dir to
// funcs, and returns the text of all its Go files.
func readPackage(dir string, funcs map[string][]string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var sources []string
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		sources = append(sources, string(src))
		if !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			switch name := fn.Name.Name; {
			case strings.HasPrefix(name, "Benchmark"):
				funcs["Benchmark"] = append(funcs["Benchmark"], name)
			case strings.HasPrefix(name, "Test"), strings.HasPrefix(name, "Fuzz"), strings.HasPrefix(name, "Example"):
				funcs["Test"] = append(funcs["Test"], name)
			}
		}
	}
	return sources, nil
}

// matchEach checks that each alternative of the first level of a go test
// pattern (the part before its first unbracketed /) matches one of names.
// Later levels name subtests, often computed, and are not checked.
func matchEach(pattern string, names []string) error {
	first := splitLevel(pattern, '/')[0]
	for _, alt := range splitLevel(first, '|') {
		re, err := regexp.Compile(alt)
		if err != nil {
			return fmt.Errorf("%q: %w", alt, err)
		}
		found := false
		for _, n := range names {
			if re.MatchString(n) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%w: %q", ErrNoMatch, alt)
		}
	}
	return nil
}

// splitLevel splits a pattern on sep outside brackets and parentheses, as
// go test splits -bench and -run on /.
func splitLevel(pattern string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case sep:
			if depth == 0 {
				parts = append(parts, pattern[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, pattern[start:])
}

// mentions says whether name is a string literal in one of sources.
func mentions(sources []string, name string) bool {
	lit := strconv.Quote(name)
	for _, s := range sources {
		if strings.Contains(s, lit) {
			return true
		}
	}
	return false
}
