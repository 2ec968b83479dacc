// Package benchdoc reads the commands BENCHMARKS.md names, so that tests
// can check that each still runs as written: that benchrun and crawl still
// define every flag it passes them, and that every -bench and -run pattern
// of a go test command still matches a function in the packages it names.
// A figure whose command no longer runs cannot be reproduced, and the page
// would rot without anyone noticing.
//
// The commands are the code spans (`...`) and indented code lines of the
// document that start, after any NAME=value settings and a taskset prefix,
// with one of:
//
//	go -C bench run ./cmd/benchrun ARGS   (Tool "benchrun")
//	go run ./cmd/crawl ARGS, crawl ARGS   (Tool "crawl")
//	go test ARGS, go -C DIR test ARGS     (Tool "go test")
package benchdoc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The tools a Command runs.
const (
	Benchrun = "benchrun"
	Crawl    = "crawl"
	GoTest   = "go test"
)

// Command is one command the document names.
type Command struct {
	Line int    // where it is written, from 1
	Text string // as written
	// Cell is the header of the table column the command is in, or ""
	// outside a table.
	Cell string
	Env  []string // the NAME=value settings before it
	Tool string   // Benchrun, Crawl or GoTest
	// Dir is the directory the tool runs in, relative to the repository's
	// root: "bench" for benchrun, go -C's directory for go test.
	Dir  string
	Args []string // after the tool's name, unquoted
}

func (c Command) String() string { return fmt.Sprintf("line %d: %s", c.Line, c.Text) }

// ErrQuote is returned for a command whose quotes are not closed.
var ErrQuote = errors.New("benchdoc: unclosed quote")

// ReadFile returns the commands of the Markdown file at path.
func ReadFile(path string) ([]Command, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse returns the commands of a Markdown document, in order. Code that
// names no tool it knows (go doc, git, prose in backquotes) is left out.
func Parse(r io.Reader) ([]Command, error) {
	var out []Command
	var header []string // cells of the table the scanner is in
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		var spans []string
		var cells []string
		switch {
		case strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t"):
			spans = []string{strings.TrimSpace(line)}
			header = nil
		case strings.HasPrefix(strings.TrimSpace(line), "|"):
			cells = TableCells(line)
			if header == nil {
				header = cells
			}
		default:
			header = nil
		}
		if cells == nil {
			spans = append(spans, codeSpans(line)...)
			for _, s := range spans {
				c, ok, err := parseCommand(s)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				if ok {
					c.Line = n
					out = append(out, c)
				}
			}
			continue
		}
		for i, cell := range cells {
			for _, s := range codeSpans(cell) {
				c, ok, err := parseCommand(s)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				if ok {
					c.Line = n
					if i < len(header) {
						c.Cell = header[i]
					}
					out = append(out, c)
				}
			}
		}
	}
	return out, sc.Err()
}

// TableCells splits a Markdown table row on its bars, but not on a bar
// escaped (\|) or inside a code span.
func TableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	code := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			code = !code
			cur.WriteByte(c)
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// codeSpans returns the text of each `code span` of a line.
func codeSpans(line string) []string {
	var spans []string
	for {
		_, rest, ok := strings.Cut(line, "`")
		if !ok {
			return spans
		}
		span, after, ok := strings.Cut(rest, "`")
		if !ok {
			return spans
		}
		spans = append(spans, span)
		line = after
	}
}

// parseCommand reads one piece of code as a command; ok is false if it
// names none of the tools.
func parseCommand(text string) (c Command, ok bool, err error) {
	words, err := shellWords(text)
	if err != nil {
		return Command{}, false, fmt.Errorf("%w: %s", err, text)
	}
	c.Text = text
	for len(words) > 0 && isSetting(words[0]) {
		c.Env = append(c.Env, words[0])
		words = words[1:]
	}
	if len(words) >= 3 && words[0] == "taskset" && words[1] == "-c" {
		words = words[3:]
	}
	switch {
	case len(words) >= 5 && words[0] == "go" && words[1] == "-C" && words[3] == "run" && words[4] == "./cmd/benchrun":
		c.Tool, c.Dir, c.Args = Benchrun, words[2], words[5:]
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/crawl":
		c.Tool, c.Args = Crawl, words[3:]
	case len(words) >= 1 && words[0] == "crawl":
		c.Tool, c.Args = Crawl, words[1:]
	case len(words) >= 2 && words[0] == "go" && words[1] == "test":
		c.Tool, c.Dir, c.Args = GoTest, ".", words[2:]
	case len(words) >= 4 && words[0] == "go" && words[1] == "-C" && words[3] == "test":
		c.Tool, c.Dir, c.Args = GoTest, words[2], words[4:]
	default:
		return Command{}, false, nil
	}
	return c, true, nil
}

// isSetting says whether w is an environment setting, NAME=value.
func isSetting(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for _, r := range name {
		if !(r == '_' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// shellWords splits text into words as a POSIX shell does for plain
// words, 'single' and "double" quotes, backslashes and # comments; it
// expands nothing.
func shellWords(text string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case ' ', '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case '#':
			if !inWord {
				i = len(text)
				continue
			}
			cur.WriteByte(c)
		case '\'', '"':
			end := strings.IndexByte(text[i+1:], c)
			if end < 0 {
				return nil, ErrQuote
			}
			cur.WriteString(text[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case '\\':
			if i+1 < len(text) {
				i++
				cur.WriteByte(text[i])
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
