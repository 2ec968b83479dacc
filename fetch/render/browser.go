package render

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// browser is one Chromium process and the pages rendered in it.
type browser struct {
	ctx    context.Context // the browser's chromedp context
	cancel context.CancelFunc
	stop   context.CancelFunc // the allocator's
	pgid   int                // the process group its processes run in
	r      *Renderer

	mu     sync.Mutex
	pages  map[string]*page // by target id, frame id or browser context id
	active int              // pages rendering in it
	served int              // pages started in it
	retire bool             // take no more pages; close once idle
	closed bool
	events sync.WaitGroup // the paused-request loop, its handlers, tabs opening and closing
	spare  chan *tab      // a tab opened ahead for the next page
}

// tab is a tab in a browser context of its own, opened for one page.
type tab struct {
	ctx   context.Context
	close context.CancelFunc
	err   error // opening it failed
}

// startBrowser starts Chromium with heed's flags and the browser-level
// interception of every request, in its own process group and with a
// parent-death signal, so that no Chromium process outlives the crawl.
func (r *Renderer) startBrowser() (*browser, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(r.ExecPath),
		chromedp.UserAgent(r.UserAgent),
		// A rendered page's service worker would fetch on its own after
		// the render: interception covers it, but none is wanted.
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,MediaRouter,OptimizationHints"),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("mute-audio", true),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			if cmd.SysProcAttr == nil {
				cmd.SysProcAttr = new(syscall.SysProcAttr)
			}
			// Killed with the thread that starts it (chromedp keeps
			// that thread for the browser's life), and in a group of
			// its own that Close kills whole.
			cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
			cmd.SysProcAttr.Setpgid = true
		}),
	)
	actx, stop := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx)
	b := &browser{ctx: bctx, cancel: cancel, stop: stop, r: r, pages: make(map[string]*page), spare: make(chan *tab, 1)}
	if err := chromedp.Do(bctx); err != nil {
		cancel()
		stop()
		return nil, fmt.Errorf("%w: starting %s: %w", ErrBrowser, r.ExecPath, err)
	}
	if p := chromedp.FromContext(bctx).Browser.Process(); p != nil {
		b.pgid = p.Pid
	}
	b.events.Add(1)
	go b.pausedLoop()
	// Every request of every target — pages, iframes, workers, service
	// workers — pauses until heed answers it.
	if _, err := chromedp.CallBrowser(bctx, fetch.Enable, fetch.EnableParams{}); err != nil {
		b.close()
		return nil, fmt.Errorf("%w: enabling interception: %w", ErrBrowser, err)
	}
	return b, nil
}

// pausedLoop hands every paused request to a goroutine of its own: a
// handler may wait for robots.txt, the host's pace and the fetch, and the
// protocol's events must keep flowing meanwhile.
func (b *browser) pausedLoop() {
	defer b.events.Done()
	for ev, err := range chromedp.BrowserEvents(b.ctx, fetch.RequestPaused) {
		if err != nil {
			return
		}
		b.track(func() { b.paused(&ev) })
	}
}

// track runs f on a goroutine that close waits for; once the browser is
// closing, f runs on the caller's (its work fails fast on a dead browser).
func (b *browser) track(f func()) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		f()
		return
	}
	b.events.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.events.Done()
		f()
	}()
}

// openTab opens a tab in a fresh browser context: no cookies, storage or
// cache shared with any other page.
func (b *browser) openTab() *tab {
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	return &tab{ctx: ctx, close: cancel, err: chromedp.Do(ctx)}
}

// takeTab returns a tab for the next page — the one opened ahead if
// there is one — and opens the following one meanwhile: opening a tab
// and its context takes the browser a good part of a second.
func (b *browser) takeTab() *tab {
	var t *tab
	select {
	case t = <-b.spare:
	default:
		t = b.openTab()
	}
	b.track(func() {
		next := b.openTab()
		select {
		case b.spare <- next:
		default:
			next.close()
		}
	})
	return t
}

// crashed reports whether the browser is gone while nobody closed it.
func (b *browser) crashed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.closed && b.ctx.Err() != nil
}

// close ends the browser, its processes and its goroutines.
func (b *browser) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	// Killed first: a browser asked to close its tabs one by one may take
	// seconds over it, and nothing of it is wanted any more.
	b.killGroup()
	b.cancel()
	b.stop()
	b.events.Wait()
	select {
	case t := <-b.spare:
		t.close()
	default:
	}
}

// killGroup kills whatever is left of the browser's process group.
func (b *browser) killGroup() {
	if b.pgid > 0 {
		_ = syscall.Kill(-b.pgid, syscall.SIGKILL)
	}
}

// rss is the memory of the browser's processes, in bytes: the sum of
// their proportional set sizes (shared pages divided among the processes
// that share them; plain RSS would count Chromium's shared memory once per
// process).
func (b *browser) rss() int64 {
	if b.pgid <= 0 {
		return 0
	}
	return groupPSS(b.pgid)
}

// groupPSS sums the proportional set size of the processes in group pgid,
// read from /proc.
func groupPSS(pgid int) int64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command (which may hold spaces) start
		// at state: pgrp is the third of them.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		total += pss(e.Name())
	}
	return total
}

// pss reads a process's proportional set size, in bytes.
func pss(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
