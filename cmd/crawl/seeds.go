package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"golang.org/x/net/publicsuffix"

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

// seedList is what the command's arguments name to start from: seed
// URLs, seeds files and standard input ("-"), each in the order given.
type seedList struct {
	args  []string // every argument, in order
	files []string // the seeds files among them, "-" for standard input
	stdin bool     // "-" is among them
}

// isURLArg reports whether a command argument is meant as a URL rather
// than a seeds file: it has a scheme. A file name with "://" in it is
// not worth the ambiguity.
func isURLArg(arg string) bool { return strings.Contains(arg, "://") }

// seedArgs sorts the command's arguments into URLs and seeds files,
// refusing a URL that cannot be a seed, and "-" given twice.
func seedArgs(args []string, stderr io.Writer) (seedList, refusal) {
	l := seedList{args: args}
	for _, arg := range args {
		switch {
		case arg == "-" && l.stdin:
			fmt.Fprintln(stderr, "crawl: - (standard input) given twice")
			return l, badUsage
		case arg == "-":
			l.stdin = true
			l.files = append(l.files, arg)
		case isURLArg(arg):
			if reason := checkSeed(arg); reason != "" {
				fmt.Fprintf(stderr, "crawl: %s: %s\n", arg, reason)
				return l, badUsage
			}
		default:
			l.files = append(l.files, arg)
		}
	}
	return l, notRefused
}

// loadSeeds returns the seeds of l: its URLs, and the lines of its seeds
// files, in the order given, reporting bad lines. Standard input is read
// too when withStdin is set; otherwise streamSeeds reads it as the crawl
// goes. A file that cannot be read, or holds no seed, is a refusal; no
// arguments give no seeds (a -redis process joining a job).
func loadSeeds(l seedList, withStdin bool, stdin io.Reader, stderr io.Writer) ([]string, refusal) {
	var seeds []string
	for _, arg := range l.args {
		var got []string
		r := notRefused
		switch {
		case arg == "-" && !withStdin:
			continue
		case isURLArg(arg):
			got = []string{arg}
		default:
			got, r = readSeedsFile(arg, stdin, stderr)
		}
		if r != notRefused {
			return nil, r
		}
		seeds = append(seeds, got...)
	}
	return seeds, notRefused
}

// readSeedsFile reads the seeds file name (or stdin for "-"), reporting
// bad lines. A file that cannot be read, or holds no seed, is a refusal.
func readSeedsFile(name string, stdin io.Reader, stderr io.Writer) ([]string, refusal) {
	var r io.Reader = stdin
	if name != "-" {
		sf, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "crawl: seeds: %v%s\n", err, seedsHint(name, err))
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

// seedsHint is what a seeds file that is not there may have been meant
// as: a URL without its scheme, or a command out of place.
func seedsHint(name string, err error) string {
	if !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if name == "status" || name == "robots" {
		return fmt.Sprintf(" (crawl %s must come first: see crawl %s -h)", name, name)
	}
	host, path, _ := strings.Cut(name, "/")
	if _, icann := publicsuffix.PublicSuffix(strings.ToLower(host)); icann && strings.Contains(host, ".") && checkSeed("https://"+name) == "" {
		return fmt.Sprintf(" (a URL needs its scheme: https://%s/%s)", host, path)
	}
	return ""
}

// streamSeeds sends seeds to feed, then those of standard input as their
// lines arrive, reporting bad lines, and closes feed at the end of the
// input or when ctx ends.
func streamSeeds(ctx context.Context, seeds []string, stdin io.Reader, feed chan<- crawler.Seed, stderr io.Writer) {
	defer close(feed)
	send := func(s string) bool {
		select {
		case feed <- crawler.Seed{URL: s}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, s := range seeds {
		if !send(s) {
			return
		}
	}
	err := scanSeeds(stdin, send, func(p seedProblem) { fmt.Fprintf(stderr, "crawl: -: skipped %s\n", p) })
	if err != nil {
		fmt.Fprintf(stderr, "crawl: seeds: %v\n", err)
	}
}
