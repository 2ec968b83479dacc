package runcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/bench/runner"
)

func TestMainRunsCrawl(t *testing.T) {
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte("# comment\n\nhttp://a.test/\n  http://b.test/  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got runner.Options
	crawl := func(_ context.Context, o runner.Options) (runner.Result, error) {
		got = o
		return runner.Result{Visited: 7}, nil
	}
	var stderr bytes.Buffer
	if code := Main("x", crawl, []string{"-agent", "bot", "-delay", "250ms", "-header-timeout", "3s", seeds}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !slices.Equal(got.Seeds, []string{"http://a.test/", "http://b.test/"}) || got.Agent != "bot" || got.Delay != 250*time.Millisecond || got.HeaderTimeout != 3*time.Second {
		t.Errorf("options %+v", got)
	}
	if !strings.Contains(stderr.String(), "7 pages visited") {
		t.Errorf("summary %q", stderr.String())
	}
	for _, args := range [][]string{{}, {"-delay", "soon", seeds}, {filepath.Join(t.TempDir(), "missing.txt")}} {
		if code := Main("x", crawl, args, &bytes.Buffer{}); code != 2 {
			t.Errorf("Main(%q) exit %d, want 2", args, code)
		}
	}
}
