package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadSeeds(t *testing.T) {
	in := "\ufeff# quick start\n" +
		"https://example.com/\r\n" +
		"\n" +
		"   http://Example.org/a?b=1   # trailing comment\n" +
		"example.net/no-scheme\n" +
		"ftp://example.com/file\n" +
		"https://a.example/ https://b.example/\n" +
		"http://\n" +
		"https://last.example/x" // no final newline
	seeds, problems, err := readSeeds(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"https://example.com/", "http://Example.org/a?b=1", "https://last.example/x"}
	if !reflect.DeepEqual(seeds, want) {
		t.Errorf("seeds = %q, want %q", seeds, want)
	}
	var lines []int
	for _, p := range problems {
		lines = append(lines, p.Line)
		if p.Reason == "" {
			t.Errorf("problem on line %d has no reason", p.Line)
		}
	}
	if want := []int{5, 6, 7, 8}; !reflect.DeepEqual(lines, want) {
		t.Errorf("problem lines = %v, want %v (problems: %v)", lines, want, problems)
	}
}

func TestReadSeedsLongLine(t *testing.T) {
	in := "https://a.example/\n" + "https://b.example/" + strings.Repeat("x", 100<<10) + "\nhttps://c.example/\n"
	seeds, problems, err := readSeeds(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://a.example/", "https://c.example/"}; !reflect.DeepEqual(seeds, want) {
		t.Errorf("seeds = %q, want %q", seeds, want)
	}
	if len(problems) != 1 || problems[0].Line != 2 {
		t.Errorf("problems = %v, want one on line 2", problems)
	}
}

func TestReadSeedsReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := iotest.DataErrReader(strings.NewReader("https://a.example/\n"))
	_, _, err := readSeeds(&errAfter{r: r, err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want it to wrap %v", err, boom)
	}
}

type errAfter struct {
	r    interface{ Read([]byte) (int, error) }
	err  error
	done bool
}

func (e *errAfter) Read(p []byte) (int, error) {
	if e.done {
		return 0, e.err
	}
	n, err := e.r.Read(p)
	if err != nil {
		e.done = true
		return n, e.err
	}
	return n, nil
}
