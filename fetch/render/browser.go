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
	events sync.WaitGroup // the paused-request loop and its handlers
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
	b := &browser{ctx: bctx, cancel: cancel, stop: stop, r: r, pages: make(map[string]*page)}
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
		b.events.Add(1)
		go func() {
			defer b.events.Done()
			b.paused(&ev)
		}()
	}
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
}

// killGroup kills whatever is left of the browser's process group.
func (b *browser) killGroup() {
	if b.pgid > 0 {
		_ = syscall.Kill(-b.pgid, syscall.SIGKILL)
	}
}

// rss is the resident memory of the browser's processes, in bytes, read
// from /proc (0 where there is none).
func (b *browser) rss() int64 {
	if b.pgid <= 0 {
		return 0
	}
	return groupRSS(b.pgid)
}

// groupRSS sums the resident memory of the processes in group pgid.
func groupRSS(pgid int) int64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	page := int64(os.Getpagesize())
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
		// at state: pgrp is the third of them, rss the twenty-second.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 22 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		if n, err := strconv.ParseInt(f[21], 10, 64); err == nil {
			total += n * page
		}
	}
	return total
}
