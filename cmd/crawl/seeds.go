package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/heedcrawl/heed/crawler"
)

// seedProblem is a seeds-file line that was skipped, with the reason.
type seedProblem struct {
	Line   int
	Text   string
	Reason string
}

func (p seedProblem) String() string {
	return fmt.Sprintf("line %d: %s: %q", p.Line, p.Reason, p.Text)
}

// maxSeedLine bounds one line of a seeds file; a longer line is reported and skipped
// rather than ending the read.
const maxSeedLine = 64 << 10

// readSeeds reads one URL per line. Blank lines and '#' comments (whole-line or
// trailing after whitespace) are ignored; lines that are not absolute http(s) URLs are
// returned as problems with their line numbers so the caller can report them and go on.
func readSeeds(r io.Reader) (seeds []string, problems []seedProblem, err error) {
	err = scanSeeds(r, func(s string) bool {
		seeds = append(seeds, s)
		return true
	}, func(p seedProblem) { problems = append(problems, p) })
	return seeds, problems, err
}

// scanSeeds reads r line by line as readSeeds does, handing each seed to
// yield as soon as its line is read (until yield returns false) and each bad
// line to problem.
func scanSeeds(r io.Reader, yield func(seed string) bool, problem func(seedProblem)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, tooLong, rerr := readLine(br)
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("reading seeds: line %d: %w", n, rerr)
		}
		if tooLong {
			problem(seedProblem{Line: n, Text: line[:80] + "…", Reason: "line longer than 64 KiB"})
		} else if s := seedText(line); s != "" {
			if reason := checkSeed(s); reason != "" {
				problem(seedProblem{Line: n, Text: s, Reason: reason})
			} else if !yield(s) {
				return nil
			}
		}
		if rerr == io.EOF {
			return nil
		}
	}
}

// readLine returns the next line without its terminator. It never holds more than
// maxSeedLine bytes of one line; the excess is discarded and tooLong set.
func readLine(br *bufio.Reader) (line string, tooLong bool, err error) {
	var b strings.Builder
	for {
		chunk, isPrefix, rerr := br.ReadLine()
		if rerr != nil {
			if b.Len() > 0 || tooLong {
				return b.String(), tooLong, nil
			}
			return "", false, rerr
		}
		if !tooLong {
			if b.Len()+len(chunk) > maxSeedLine {
				tooLong = true
			}
			b.Write(chunk)
		}
		if !isPrefix {
			return b.String(), tooLong, nil
		}
	}
}

// seedText strips comments, a BOM and surrounding space from one line.
func seedText(line string) string {
	line = strings.TrimPrefix(line, "\ufeff")
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "#") {
		return ""
	}
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	if i := strings.Index(line, "\t#"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// checkSeed returns why s cannot be a seed, or "" when it can.
func checkSeed(s string) string {
	if strings.ContainsAny(s, " \t") {
		return "more than one field (one URL per line)"
	}
	u, err := url.Parse(s)
	if err != nil {
		return "not a URL"
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return "not an absolute URL (want http:// or https://)"
	default:
		return "scheme " + u.Scheme + " is not crawlable (want http or https)"
	}
	if u.Host == "" {
		return "no host"
	}
	return ""
}

// loadSeeds reads the seeds file (or stdin for "-"), reporting bad lines.
// A file that cannot be read, or holds no seed, is a refusal.
func loadSeeds(name string, stdin io.Reader, stderr io.Writer) ([]string, refusal) {
	var r io.Reader = stdin
	if name != "-" {
		sf, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: seeds: %v\n", err)
			return nil, badUsage
		}
		defer sf.Close()
		if st, err := sf.Stat(); err == nil && st.IsDir() {
			fmt.Fprintf(stderr, "crawl: seeds: %s is a directory\n", name)
			return nil, badUsage
		}
		r = sf
	}
	seeds, problems, err := readSeeds(r)
	for _, p := range problems {
		fmt.Fprintf(stderr, "crawl: %s: skipped %s\n", name, p)
	}
	if err != nil {
		fmt.Fprintf(stderr, "crawl: seeds: %v\n", err)
		return nil, badUsage
	}
	if len(seeds) == 0 {
		fmt.Fprintf(stderr, "crawl: %s: no seed URLs\n", name)
		return nil, badUsage
	}
	return seeds, notRefused
}

// streamSeeds sends the seeds of standard input to feed as their lines
// arrive, reporting bad lines, and closes feed at the end of the input or
// when ctx ends.
func streamSeeds(ctx context.Context, stdin io.Reader, feed chan<- crawler.Seed, stderr io.Writer) {
	defer close(feed)
	err := scanSeeds(stdin, func(s string) bool {
		select {
		case feed <- crawler.Seed{URL: s}:
			return true
		case <-ctx.Done():
			return false
		}
	}, func(p seedProblem) { fmt.Fprintf(stderr, "crawl: -: skipped %s\n", p) })
	if err != nil {
		fmt.Fprintf(stderr, "crawl: seeds: %v\n", err)
	}
}
