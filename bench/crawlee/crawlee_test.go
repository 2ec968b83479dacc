// Package crawlee_test runs Crawlee's PlaywrightCrawler (crawl.mjs, beside
// this file) and heed on the same web of application shells, with the same
// browser, and judges both from the servers' log: robots.txt violations and
// politeness violations, every request a browser made counted. Install
// Crawlee first: npm ci --prefix bench/crawlee.
package crawlee_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/fetch/render"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/chromiumtest"
	"github.com/heedcrawl/heed/internal/testweb"
)

// delay is the least time between two requests to a host both crawlers
// are given (heed's -delay, Crawlee's sameDomainDelaySecs), and the judge's.
const delay = 50 * time.Millisecond

// outcome is what one crawler did to the web.
type outcome struct {
	pages   int
	links   map[string]bool
	elapsed time.Duration
	rep     *testweb.ShellReport
}

// BenchmarkShellWebCrawlee crawls the shell web of BenchmarkRenderShellWeb
// (four shell hosts) with heed rendering every page and with Crawlee, two
// pages at once each, one after the other. Run with -benchtime 1x.
func BenchmarkShellWebCrawlee(b *testing.B) {
	bin := chromiumtest.Path(b)
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node not found: Crawlee needs Node.js")
	}
	if _, err := os.Stat("node_modules/crawlee"); err != nil {
		b.Skip("Crawlee not installed: run npm ci --prefix bench/crawlee")
	}
	crawlers := []struct {
		name  string
		crawl func(*testweb.ShellWeb) (int, []string)
	}{
		{"heed", func(w *testweb.ShellWeb) (int, []string) { return crawlHeed(b, bin, w) }},
		{"crawlee", func(w *testweb.ShellWeb) (int, []string) { return crawlCrawlee(b, node, bin, w) }},
	}
	for _, c := range crawlers {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				o := crawlWith(c.crawl)
				b.ReportMetric(float64(o.pages), "pages")
				b.ReportMetric(float64(len(o.links)), "links")
				b.ReportMetric(float64(o.rep.Requests), "requests")
				b.ReportMetric(float64(len(o.rep.RobotsViolations)), "robots-violations")
				b.ReportMetric(float64(len(o.rep.PaceViolations)), "pace-violations")
				b.ReportMetric(o.elapsed.Seconds(), "seconds")
				b.Logf("%s: %d pages, %d links, %d requests, %d robots violations (%v…), %d politeness violations (%v…), in %v",
					c.name, o.pages, len(o.links), o.rep.Requests, len(o.rep.RobotsViolations), first(o.rep.RobotsViolations, 3),
					len(o.rep.PaceViolations), first(o.rep.PaceViolations, 3), o.elapsed.Round(time.Second))
			}
		})
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// crawlWith crawls a fresh shell web with crawl, which returns the pages
// crawled and the links found, and judges it.
func crawlWith(crawl func(*testweb.ShellWeb) (int, []string)) outcome {
	w := testweb.NewShellWeb(testweb.ShellConfig{Apps: 4, Items: 10})
	defer w.Close()
	start := time.Now()
	pages, links := crawl(w)
	o := outcome{pages: pages, links: map[string]bool{}, elapsed: time.Since(start)}
	for _, l := range links {
		o.links[w.Role(l)] = true
	}
	o.rep = w.Judge(delay)
	return o
}

// crawlHeed crawls w as crawl -render always -render-tabs 2 -delay 50ms
// would.
func crawlHeed(b *testing.B, bin string, w *testweb.ShellWeb) (int, []string) {
	r := &render.Renderer{ExecPath: bin, Tabs: 2}
	defer r.Close()
	c, err := crawler.New(crawler.WithRenderer(r, crawler.RenderAlways), crawler.WithScope(frontier.ScopeAny),
		crawler.WithDelay(delay), crawler.WithHeaderTimeout(2*time.Second), crawler.WithSitemaps(false))
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var links []string
	pages := 0
	c.OnPage(func(_ context.Context, p *crawler.Page) {
		mu.Lock()
		defer mu.Unlock()
		pages++
		for _, l := range p.Links {
			links = append(links, l.URL)
		}
	})
	if err := c.Run(context.Background(), w.Seed()); err != nil {
		b.Fatal(err)
	}
	return pages, links
}

// crawlCrawlee runs crawl.mjs on w in a process group of its own, killed
// whole afterwards so that no browser of it is left, for at most
// crawleeCap.
func crawlCrawlee(b *testing.B, node, bin string, w *testweb.ShellWeb) (int, []string) {
	script, err := filepath.Abs("crawl.mjs")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), crawleeCap)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, w.Seed(), "2", strconv.FormatFloat(delay.Seconds(), 'f', -1, 64))
	cmd.Dir = b.TempDir()
	cmd.Env = append(os.Environ(), "CHROMIUM="+bin, "CRAWLEE_STORAGE_DIR="+cmd.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A file, not a pipe: the browser inherits it, and a pipe would be
	// held open by a browser left behind.
	log, err := os.Create(filepath.Join(cmd.Dir, "crawlee.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	out, rerr := os.ReadFile(log.Name())
	if rerr != nil {
		b.Fatal(rerr)
	}
	if ctx.Err() != nil {
		b.Logf("crawlee cut at %v, unfinished", crawleeCap)
	} else if err != nil {
		b.Fatalf("crawlee: %v\n%s", err, tail(out))
	}
	pages, links := 0, []string(nil)
	for line := range bytes.Lines(out) {
		var p struct {
			Page  string   `json:"page"`
			Links []string `json:"links"`
		}
		if json.Unmarshal(line, &p) == nil && p.Page != "" {
			pages++
			links = append(links, p.Links...)
		}
	}
	return pages, links
}

// crawleeCap is the longest Crawlee is given: a robots.txt that never
// answers stalls it (its RobotsTxtFile.find has no timeout).
const crawleeCap = 12 * time.Minute

func tail(b []byte) []byte { return b[max(0, len(b)-4000):] }
