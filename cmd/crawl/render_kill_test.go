package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/chromiumtest"
	"github.com/heedcrawl/heed/internal/testweb"
)

// TestRenderLeavesNoChromium stops `crawl -render always` mid-render —
// with SIGKILL, SIGTERM and an interrupt — and checks that every process
// of its browser's process group is gone.
func TestRenderLeavesNoChromium(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	chromiumtest.Path(t)
	bin := buildCrawl(t)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			w := testweb.NewShellWeb(testweb.ShellConfig{Items: 30})
			defer w.Close()
			seeds := filepath.Join(t.TempDir(), "seeds.txt")
			if err := os.WriteFile(seeds, []byte(w.Seed()+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r := startCrawl(t, ctx, bin, "-render", "always", "-scope", "any", "-delay", "50ms", "-grace", "1s", "-o", filepath.Join(t.TempDir(), "out.jsonl"), seeds)
			// A render is under way once the browser asked for app.js.
			untilTrue(t, "a render", []*crawlRun{r}, func() bool { return logged(w.Log, "/app.js") })
			groups := browserGroups(r.cmd.Process.Pid)
			if len(groups) == 0 {
				t.Fatal("no browser process found under crawl")
			}
			r.signal(t, sig)
			sent := time.Now()
			<-r.exited
			t.Logf("crawl ended %v after %v", time.Since(sent), sig)
			if sig != syscall.SIGKILL {
				t.Logf("stderr: %s", r.stderr)
			}
			untilGone(t, groups)
		})
	}
}

func logged(l *testweb.Log, target string) bool {
	for _, e := range l.Entries() {
		if e.Target == target {
			return true
		}
	}
	return false
}

// browserGroups returns the process groups of crawl's descendants.
func browserGroups(crawl int) map[int]bool {
	ps := chromiumtest.Procs()
	groups := map[int]bool{}
	for pid, p := range ps {
		for a := p.PPID; a > 1; a = ps[a].PPID {
			if a == crawl {
				groups[ps[pid].PGID] = true
				break
			}
		}
	}
	return groups
}

// untilGone waits until no live process is left in groups; the kernel
// takes a moment to deliver the parent-death signal and Chromium's
// children to notice. Ten seconds fail the test.
func untilGone(t *testing.T, groups map[int]bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var left []int
		for pid, p := range chromiumtest.Procs() {
			if groups[p.PGID] && !p.Zombie {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL) // leave nothing behind
			}
			t.Fatalf("browser processes outlived crawl: %v", left)
		}
		<-tick.C
	}
}
