package benchdoc_test

import (
	"fmt"
	"strings"

	"github.com/heedcrawl/heed/internal/benchdoc"
)

// Parse finds the commands of a table's cells and of code lines.
func ExampleParse() {
	doc := "| measure | command |\n|---|---|\n" +
		"| (a) | `go -C bench run ./cmd/benchrun -workloads a -runs 1 -port 0` |\n" +
		"| parse | `go test ./robots -run '^$' -bench ParseCorpus` |\n"
	cmds, err := benchdoc.Parse(strings.NewReader(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cmds {
		fmt.Printf("line %d, %s: %q\n", c.Line, c.Tool, c.Args)
	}
	// Output:
	// line 3, benchrun: ["-workloads" "a" "-runs" "1" "-port" "0"]
	// line 4, go test: ["./robots" "-run" "^$" "-bench" "ParseCorpus"]
}
