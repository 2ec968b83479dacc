package main

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/crawler"
)

// readmeFlag is one row of the README's flags table.
type readmeFlag struct {
	group   string
	head    string // "-delay DURATION"
	def     string // the default cell as written
	meaning string
}

// readmeFlags parses the table under "### Flags" in the repository's README.
func readmeFlags(t *testing.T) []readmeFlag {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []readmeFlag
	in, group := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = line == "### Flags"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := tableCells(line)
		if len(cells) != 3 {
			t.Fatalf("README flags table: row with %d cells: %s", len(cells), line)
		}
		switch {
		case strings.HasPrefix(cells[0], "**"):
			group = strings.Trim(cells[0], "*")
		case strings.HasPrefix(cells[0], "`-"):
			rows = append(rows, readmeFlag{group: group, head: strings.Trim(cells[0], "`"), def: cells[1], meaning: cells[2]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("no flags table under ### Flags in the README")
	}
	return rows
}

// tableCells splits a Markdown table row on its unescaped bars.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// firstCode returns the first `code` span of a table cell, or "".
func firstCode(cell string) string {
	_, rest, ok := strings.Cut(cell, "`")
	if !ok {
		return ""
	}
	code, _, _ := strings.Cut(rest, "`")
	return code
}

// TestReadmeFlagsTable keeps the README's flags table and crawl -h from
// drifting apart: the same flags in the same groups and order, shown the
// same way, with the defaults the FlagSet really has.
func TestReadmeFlagsTable(t *testing.T) {
	var f flags
	fs := newFlagSet(&f)
	rows := readmeFlags(t)

	var grouped []string
	for _, g := range flagGroups {
		grouped = append(grouped, g.names...)
	}
	fs.VisitAll(func(fl *flag.Flag) {
		if !slices.Contains(grouped, fl.Name) {
			t.Errorf("-%s is in no group of flagGroups, so crawl -h does not show it", fl.Name)
		}
	})

	c, err := crawler.New()
	if err != nil {
		t.Fatal(err)
	}
	// Defaults the FlagSet leaves empty because the crawler computes
	// them.
	computed := map[string]string{"ua": c.UserAgent()}

	byName := map[string]readmeFlag{}
	var order []string
	for _, row := range rows {
		name := strings.TrimPrefix(strings.FieldsFunc(row.head, func(r rune) bool { return r == ' ' || r == '=' })[0], "-")
		byName[name] = row
		order = append(order, name)
	}
	for _, g := range flagGroups {
		for _, name := range g.names {
			fl := fs.Lookup(name)
			if fl == nil {
				t.Errorf("flagGroups names -%s, which is not a flag", name)
				continue
			}
			row, ok := byName[name]
			if !ok {
				t.Errorf("README flags table lacks -%s (%s)", name, fl.Usage)
				continue
			}
			delete(byName, name)
			if row.group != g.title {
				t.Errorf("README puts %s under %q; crawl -h under %q", row.head, row.group, g.title)
			}
			if want := flagHead(fl); row.head != want {
				t.Errorf("README row %q; crawl -h shows %q", row.head, want)
			}
			got := firstCode(row.def)
			switch want, ok := computed[name]; {
			case ok:
				if got != want {
					t.Errorf("README default of -%s is %q; the crawler's is %q", name, got, want)
				}
			case fl.DefValue == "":
				if got != "" {
					t.Errorf("README default of -%s is %q; it has none", name, got)
				}
			case got != fl.DefValue:
				t.Errorf("README default of -%s is %q (cell %q); crawl -h says %q", name, got, row.def, fl.DefValue)
			}
		}
	}
	for _, row := range byName {
		t.Errorf("README flags table has %s, which crawl -h does not show", row.head)
	}
	if !t.Failed() && !slices.Equal(order, grouped) {
		t.Errorf("README flags table in the order\n%v\ncrawl -h in the order\n%v", order, grouped)
	}
}

func TestHelpNamesDefaultUserAgent(t *testing.T) {
	c, err := crawler.New()
	if err != nil {
		t.Fatal(err)
	}
	_, out, _ := runCmd(t, "", "-h")
	if !strings.Contains(out, `"`+c.UserAgent()+`"`) {
		t.Errorf("crawl -h does not name the default User-Agent %q:\n%s", c.UserAgent(), out)
	}
}
