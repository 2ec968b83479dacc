package runcmd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/heedcrawl/heed/bench/internal/runcmd"
	"github.com/heedcrawl/heed/bench/runner"
)

// Main is the whole of a runner command: flags, seeds file, summary line.
func ExampleMain() {
	dir, _ := os.MkdirTemp("", "runcmd")
	defer os.RemoveAll(dir)
	seeds := filepath.Join(dir, "seeds.txt")
	os.WriteFile(seeds, []byte("http://h000.test/\n"), 0o644)
	crawl := func(_ context.Context, o runner.Options) (runner.Result, error) {
		fmt.Println("crawling", o.Seeds, "with delay", o.Delay)
		return runner.Result{}, nil
	}
	code := runcmd.Main("demo", crawl, []string{"-delay", "200ms", seeds}, os.Stderr)
	fmt.Println("exit", code)
	// Output:
	// crawling [http://h000.test/] with delay 200ms
	// exit 0
}
