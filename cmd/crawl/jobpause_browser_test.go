package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heedcrawl/heed/frontier/redisstore"
	"github.com/heedcrawl/heed/internal/chromiumtest"
	"github.com/heedcrawl/heed/internal/redistest"
)

// hitLog is an endless site's log of requests: when, and from which
// process (its User-Agent).
type hitLog struct {
	mu   sync.Mutex
	hits []hit
}

type hit struct {
	at time.Time
	ua string
}

func (l *hitLog) since(at time.Time) (n int, uas []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range l.hits {
		if h.at.After(at) {
			n++
			if !slices.Contains(uas, h.ua) {
				uas = append(uas, h.ua)
			}
		}
	}
	return n, uas
}

// endlessSite serves pages that each link to the next, logging every
// request in log.
func endlessSite(t *testing.T, log *hitLog) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.mu.Lock()
		log.hits = append(log.hits, hit{time.Now(), r.UserAgent()})
		log.mu.Unlock()
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<title>%d</title><a href="/p/%d">next</a><a href="/q/%d">other</a>`, n, n+1, n)
	}))
	t.Cleanup(s.Close)
	return s
}

// Pausing a -redis job from the job view of crawl status -ui, in a real
// browser: no process of the job makes a request while it is paused, for
// longer than their liveness timeout, and every process stays a live
// member of the job — none is declared dead, so no lease of theirs is
// taken back; resuming restarts them all.
func TestJobPauseInBrowser(t *testing.T) {
	chromium := chromiumtest.Path(t)
	bin := buildCrawl(t)
	srv := redistest.Start(t)
	var log hitLog
	seeds := writeSeeds(t, endlessSite(t, &log).URL+"/p/0", endlessSite(t, &log).URL+"/p/0", endlessSite(t, &log).URL+"/p/0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const lease = 3 * time.Second
	dir := t.TempDir()
	var runs []*crawlRun
	for _, p := range []string{"p1", "p2"} {
		runs = append(runs, startCrawl(t, ctx, bin, "-redis", srv.URL(), "-job", "jp", "-process", p, "-ua", "heed-pause-test/"+p,
			"-delay", "50ms", "-sitemaps=false", "-scope", "any", "-lease", lease.String(), "-progress", "off",
			"-o", filepath.Join(dir, p+".jsonl"), seeds))
	}
	untilTrue(t, "both processes to fetch", runs, func() bool { _, uas := log.since(time.Time{}); return len(uas) == 2 })

	viewErr := newWatchWriter("job view on http://")
	view := startCrawlTo(t, ctx, nil, viewErr, bin, "status", "-redis", srv.URL(), "-job", "jp", "-ui", "127.0.0.1:0")
	waitOrFail(t, viewErr.seen, "the job view's address")
	pageURL := regexp.MustCompile(`http://\S+/#token=[0-9a-f]+`).FindString(viewErr.String())
	if pageURL == "" {
		t.Fatalf("no address in %q", viewErr.String())
	}
	runs = append(runs, view)

	client, store := openJob(t, srv.URL(), "jp")
	members := func() []redisstore.Member {
		ms, err := store.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}

	b := startChromium(t, chromium)
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, stop := context.WithTimeout(b, 20*time.Second)
		defer stop()
		if err := chromedp.Do(c, actions...); err != nil {
			t.Fatalf("browser: %v", err)
		}
	}
	js := func(expr string) string {
		t.Helper()
		c, stop := context.WithTimeout(b, 20*time.Second)
		defer stop()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		return v
	}
	text := func(id string) string { return js(`document.getElementById("` + id + `").textContent`) }
	do(chromedp.Navigate(pageURL))
	untilTrue(t, "the job view to list both processes", runs, func() bool {
		procs := text("procs")
		return strings.Contains(procs, "p1") && strings.Contains(procs, "p2")
	})
	// The frontier panel of the whole job: the endless sites keep URLs
	// queued, and the panel shows them by due time.
	untilTrue(t, "the job view's frontier panel to show queued URLs", runs, func() bool {
		rows := js(`document.getElementById("frontier-panel").hidden ? "hidden" :
			Array.from(document.querySelectorAll("#frontier tbody tr")).map(r => r.dataset.count).join(",")`)
		return queuedShown(rows) && strings.Contains(text("frontier-note"), "queued")
	})
	before := members()
	do(chromedp.Click(chromedp.ID("pause")))
	untilTrue(t, "the job view to say paused", runs, func() bool { return text("state") == "paused" })

	// Every process reads the mark after its first heartbeat past it, and
	// its fetch in flight then ends: from each one's second heartbeat past
	// the mark, none may start.
	untilTrue(t, "two heartbeats of each process after the pause", runs, beatsPast(t, ctx, client, "jp", "p1", "p2"))
	quiet := time.Now()
	quietRedis, err := client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The window in which no request may come: longer than the liveness
	// timeout, so that a process that stopped beating would be declared
	// dead in it by one still beating — and, if none beats any more, would
	// have no heartbeat in it.
	untilTrue(t, "the quiet window", runs, func() bool { return time.Since(quiet) > 2*lease })
	if n, uas := log.since(quiet); n != 0 {
		t.Fatalf("job paused, yet the sites got %d requests from %v", n, uas)
	}
	after := members()
	ids := func(ms []redisstore.Member) (alive []int64, dead int) {
		for _, m := range ms {
			if m.Dead {
				dead++
			} else {
				alive = append(alive, m.ID)
			}
		}
		slices.Sort(alive)
		return alive, dead
	}
	was, _ := ids(before)
	now, dead := ids(after)
	if dead != 0 || !slices.Equal(was, now) || len(now) != 2 {
		t.Fatalf("paused past the liveness timeout, the members went from %v to %v, %d dead: leases were taken back", was, now, dead)
	}
	for _, m := range after {
		if !m.LastBeat.After(quietRedis) {
			t.Errorf("member %d's last heartbeat %v is older than the quiet window (from %v, %v long): paused, it stopped beating",
				m.ID, m.LastBeat, quietRedis, 2*lease)
		}
	}

	do(chromedp.Click(chromedp.ID("resume")))
	resumed := time.Now()
	untilTrue(t, "requests from both processes after resume", runs, func() bool { _, uas := log.since(resumed); return len(uas) == 2 })
	if _, dead := ids(members()); dead != 0 {
		t.Errorf("%d members dead after resume", dead)
	}
}

// queuedShown says whether the frontier panel's rows, their counts joined
// by commas ("hidden" if the panel is), are the seven buckets with some
// URL in one.
func queuedShown(counts string) bool {
	cs := strings.Split(counts, ",")
	return len(cs) == 7 && slices.ContainsFunc(cs, func(c string) bool { n, _ := strconv.Atoi(c); return n > 0 })
}

// startChromium starts a headless chromium for the test and returns its
// context.
func startChromium(t *testing.T, bin string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
	})
	// The first action starts the browser, bound to the context it gets:
	// this one, not a caller's with a deadline.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}
