package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/redistest"
)

// brokenHost is a host whose robots.txt answers 503 with an hour's
// Retry-After, logging every request; nothing else of it may be fetched.
type brokenHost struct {
	*httptest.Server
	asked chan struct{} // closed at the first request
	mu    sync.Mutex
	log   []string
}

func newBrokenHost(t *testing.T) *brokenHost {
	t.Helper()
	b := &brokenHost{asked: make(chan struct{})}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.log = append(b.log, r.URL.RequestURI())
		if len(b.log) == 1 {
			close(b.asked)
		}
		b.mu.Unlock()
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(b.Close)
	return b
}

// requests returns the request targets the host received.
func (b *brokenHost) requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.log...)
}

// checkBroken fails the test unless the broken host was asked for its
// robots.txt once and for nothing else.
func checkBroken(t *testing.T, b *brokenHost) {
	t.Helper()
	if got := b.requests(); len(got) != 1 || got[0] != "/robots.txt" {
		t.Errorf("requests to the host whose robots.txt is unreachable: %v, want its robots.txt once", got)
	}
}

// bLinks returns links to n pages of b, from first on, as HTML.
func bLinks(b string, first, n int) (html string, urls []string) {
	var sb strings.Builder
	for i := first; i < first+n; i++ {
		u := fmt.Sprintf("%s/b%d", b, i)
		urls = append(urls, u)
		fmt.Fprintf(&sb, `<a href="%s">b%d</a> `, u, i)
	}
	return sb.String(), urls
}

// TestStateUnreachableRobotsAcrossRestart: a -state crawl stopped
// (SIGTERM) after it found a host's robots.txt unreachable resumes with
// that verdict: the host's URLs found after the restart are reported at
// once, without a new robots.txt request or a wait for the host's rest (a
// minute), and over both runs each of its URLs has one record in the
// output.
func TestStateUnreachableRobotsAcrossRestart(t *testing.T) {
	bin := buildCrawl(t)
	b := newBrokenHost(t)
	first, before := bLinks(b.URL, 0, 3)
	later, after := bLinks(b.URL, 3, 3)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a := newSite(t, map[string]http.HandlerFunc{
		"/":     page(`<title>A</title><a href="/next">next</a> ` + first),
		"/next": blockingPage(entered, release, `<title>Next</title>`+later),
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out.jsonl")
	args := []string{"-state", state, "-o", out, "-scope", "any", "-delay", "0s", "-max-delay", "1m", "-sitemaps=false", "-progress", "off", writeSeeds(t, a.URL+"/")}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startCrawl(t, ctx, bin, args...)
	waitOrFail(t, entered, "the request for /next")
	// /next is held while B's first URLs are reported; the crawl is
	// stopped once their records are out, its verdict on B taken.
	untilInFile(t, out, before...)
	r.signal(t, syscall.SIGTERM)
	if code := exitCode(<-r.exited); code != 143 {
		t.Fatalf("exit %d after SIGTERM, want 143; stderr:\n%s", code, r.stderr)
	}
	once.Do(func() { close(release) })

	start := time.Now()
	code, stderr := runBin(t, bin, args...)
	if code != 0 {
		t.Fatalf("rerun: exit %d; stderr:\n%s", code, stderr)
	}
	// Generous: B rests a minute, and each of its URLs used to wait that.
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the resumed crawl took %v: it waited for the broken host", took)
	}
	checkBroken(t, b)
	checkOnce(t, out, append(append([]string{a.URL + "/", a.URL + "/next"}, before...), after...)...)
	if !strings.Contains(stderr, "robots-unavailable") {
		t.Errorf("the summary does not name robots-unavailable:\n%s", stderr)
	}
}

// TestRedisUnreachableRobotsShared: three processes of a -redis job share
// one verdict on a host whose robots.txt is unreachable: it is asked for
// once for the job, and each of the host's URLs is reported once, by
// whichever process holds it, without waiting for the host's rest.
func TestRedisUnreachableRobotsShared(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildCrawl(t)
	b := newBrokenHost(t)
	var all []string
	routes := map[string]http.HandlerFunc{}
	home := `<title>A</title>`
	for i := range 6 {
		links, urls := bLinks(b.URL, i*4, 4)
		all = append(all, urls...)
		p := fmt.Sprintf("/p%d", i)
		routes[p] = page(`<title>P</title>` + links)
		home += fmt.Sprintf(`<a href="%s">p</a> `, p)
	}
	routes["/"] = page(home)
	a := newSite(t, routes)
	dir := t.TempDir()
	seeds := writeSeeds(t, a.URL+"/")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	var runs []*crawlRun
	var outs []string
	for i := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("out%d.jsonl", i))
		outs = append(outs, out)
		runs = append(runs, startCrawl(t, ctx, bin, "-redis", srv.URL(), "-job", "broken", "-process", fmt.Sprintf("p%d", i),
			"-scope", "any", "-delay", "0s", "-max-delay", "1m", "-sitemaps=false", "-progress", "off", "-o", out, seeds))
	}
	for i, r := range runs {
		if err := <-r.exited; exitCode(err) != 0 {
			t.Errorf("process %d: exit %v; stderr:\n%s", i, err, r.stderr)
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the job took %v: it waited for the broken host", took)
	}
	checkBroken(t, b)
	counts := map[string]int{}
	for _, out := range outs {
		for u, n := range readOutputKeys(t, out).count {
			counts[u] += n
		}
	}
	for _, u := range all {
		if counts[u] != 1 {
			t.Errorf("%d records of %s across the processes, want 1", counts[u], u)
		}
	}
}

// untilInFile waits until the file name holds every one of texts. Polling
// the file is the only way to see it grow.
func untilInFile(t *testing.T, name string, texts ...string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		data, _ := os.ReadFile(name)
		missing := ""
		for _, s := range texts {
			if !strings.Contains(string(data), s) {
				missing = s
				break
			}
		}
		if missing == "" {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s does not hold %s after 30 s", name, missing)
		}
	}
}
