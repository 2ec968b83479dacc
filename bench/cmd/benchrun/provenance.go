package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/heedcrawl/heed/bench/harness"
)

// provenance is what the tables say of a run: this machine, the command
// as it would be typed at the repository's root, today's date, and the
// commit of the heed checkout at repo (relative to the bench module).
func provenance(ctx context.Context, repo string, args []string) harness.Provenance {
	return harness.Provenance{
		Machine: machine(),
		Command: command(args),
		Date:    time.Now().UTC().Format(time.DateOnly),
		Build:   build(ctx, repo),
	}
}

// machine is the CPU count and model, and the Go toolchain.
func machine() string {
	cpu := ""
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = " (" + strings.TrimSpace(v) + ")"
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs%s, %s %s/%s", runtime.NumCPU(), cpu, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// command is benchrun's command line with args, each quoted for a POSIX
// shell where it needs to be.
func command(args []string) string {
	words := []string{"go -C bench run ./cmd/benchrun"}
	for _, a := range args {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

// shellQuote returns s as one word of a POSIX shell: as it is when it has
// nothing the shell treats specially, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,/:+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// build is the short commit of the checkout at repo, marked "+ changes"
// when its tracked files differ from it, or "unknown" where git cannot
// tell.
func build(ctx context.Context, repo string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if diff, err := exec.CommandContext(ctx, "git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(diff) > 0 {
		commit += " + changes"
	}
	return commit
}
