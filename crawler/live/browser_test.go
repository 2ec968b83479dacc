package live_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/crawler/live"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/testweb"
)

// chromiumPath returns the chromium binary: in CI (CI=true) its absence
// fails the test, elsewhere it skips it, naming the Debian package.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium not found (install it: apt-get install -y chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser is a headless chromium for one test, and what its pages said:
// console errors, uncaught exceptions and dialogs. The test's cleanup
// ends the chromium process.
type browser struct {
	ctx     context.Context
	mu      sync.Mutex
	errs    []string
	dialogs atomic.Int32
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	var watching sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
		watching.Wait()
	})
	b := &browser{ctx: ctx}
	enableLog := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cdplog.Enable, cdp.Empty{})
		return err
	})
	if err := chromedp.Do(ctx, enableLog); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	console := chromedp.Console(ctx)
	watching.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.note(m.String() + " " + m.URL)
			}
		}
	})
	err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			b.dialogs.Add(1)
			go chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
				_, err := cdp.Call(ctx, t, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
				return err
			}))
		}
	})
	if err != nil {
		t.Fatalf("listening to chromium: %v", err)
	}
	return b
}

func (b *browser) note(s string) {
	b.mu.Lock()
	b.errs = append(b.errs, s)
	b.mu.Unlock()
}

func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.errs)
}

// run runs actions, failing the test on error.
func (b *browser) run(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval returns the value of the JavaScript expression js on the page.
func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("browser: evaluating %s: %v", js, err)
	}
	return v
}

// typeInto sets the value of the input id and tells the page, as typing
// would.
func typeInto(id, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(e => { e.value = %q; e.dispatchEvent(new Event("input")) })(document.getElementById(%q))`, value, id))
}

// waitFor polls cond on the page until it holds, failing the test after a
// generous deadline; it is the page's refresh the test waits for.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hostile serves a page whose title is a script and which links to a URL
// built to break out of an attribute, and an attacker's server that
// counts every request: a page that ran the script, or loaded the image,
// would call it.
type hostile struct {
	site, attacker *httptest.Server
	attacked       atomic.Int32
}

const hostileTitle = `<script>fetch("%[1]s/title")</script><img src="%[1]s/img" onerror="alert(1)">`

func newHostile(t *testing.T) *hostile {
	h := &hostile{}
	h.attacker = httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { h.attacked.Add(1) }))
	t.Cleanup(h.attacker.Close)
	title := strings.ReplaceAll(fmt.Sprintf(hostileTitle, h.attacker.URL), "<", "&lt;")
	h.site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		// Each page links to the next, so that hostile pages keep coming
		// into the live log as long as the crawl runs.
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		href := fmt.Sprintf(`/x?n=%d&q="><img src=%s/url onerror=alert(2)>`, n+1, h.attacker.URL)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>%s</title></head><body><a href='%s'>x</a></body></html>", title, href)
	}))
	t.Cleanup(h.site.Close)
	return h
}

// liveCrawl is a crawl of the test web, with its broken hosts and a
// hostile site, served by the live page.
type liveCrawl struct {
	v       *testweb.Virtual
	c       *crawler.Crawler
	page    *httptest.Server
	token   string
	stopped atomic.Bool
	hostile *hostile
	broken  map[string]testweb.HostKind
}

func startLiveCrawl(t *testing.T) *liveCrawl {
	t.Helper()
	v, err := testweb.NewVirtual(testweb.Config{Hosts: 6, PagesPerHost: 60, Seed: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	lc := &liveCrawl{v: v, hostile: newHostile(t), broken: map[string]testweb.HostKind{}, token: live.NewToken()}
	tr := v.Transport()
	var direct net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "127.0.0.1:") {
			return direct.DialContext(ctx, network, addr)
		}
		return v.DialContext(ctx, network, addr)
	}
	lc.c, err = crawler.New(crawler.WithTransport(tr), crawler.WithDelay(150*time.Millisecond),
		crawler.WithHeaderTimeout(time.Second), crawler.WithScope(frontier.ScopeAny), crawler.WithGracePeriod(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	rec := live.NewRecorder(lc.c)
	lc.page = httptest.NewServer(live.NewHandler(rec, live.Options{Token: lc.token, Stop: func() { lc.stopped.Store(true); stop() }}))
	seeds := []string{lc.hostile.site.URL + "/"}
	for _, h := range v.Web.Hosts() {
		if h.Kind.Broken() {
			lc.broken[h.Authority] = h.Kind
		} else {
			seeds = append(seeds, "http://"+h.Authority+"/")
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		lc.c.Run(ctx, seeds...)
	}()
	t.Cleanup(func() {
		stop()
		<-done
		lc.page.Close()
	})
	return lc
}

// The live page of a crawl of the test web in a real browser: it loads
// with no error, its chart grows, its host table shows the broken hosts
// in their states and sorts and searches, its controls pause and resume
// the crawl (and need the token), and crawled text stays text.
func TestLivePageInBrowser(t *testing.T) {
	b := newBrowser(t)
	lc := startLiveCrawl(t)
	b.run(t, chromedp.Navigate(lc.page.URL+"/"))
	waitFor(t, "the page to show a running crawl", func() bool { return eval[string](t, b, `document.getElementById("state").textContent`) == "running" })

	t.Run("chart grows", func(t *testing.T) {
		points := func() int {
			return eval[int](t, b, `+document.querySelector('#chart polyline[data-series="2xx"]').getAttribute("data-points")`)
		}
		first := points()
		waitFor(t, "more chart points", func() bool { return points() > first })
		if got := eval[int](t, b, `document.querySelectorAll("#chart polyline").length`); got != 6 {
			t.Errorf("chart has %d series, want 6", got)
		}
	})

	t.Run("frontier", func(t *testing.T) {
		counts := func() []int {
			return eval[[]int](t, b, `Array.from(document.querySelectorAll("#frontier tbody tr")).map(r => +r.dataset.count)`)
		}
		waitFor(t, "the frontier panel to show queued URLs", func() bool {
			c := counts()
			return len(c) == 7 && c[0] > 0
		})
		if note := eval[string](t, b, `document.getElementById("frontier-note").textContent`); !strings.Contains(note, "queued") {
			t.Errorf("frontier note %q", note)
		}
		waitFor(t, "the oldest overdue URL", func() bool {
			return strings.HasPrefix(eval[string](t, b, `document.getElementById("oldest").textContent`), "oldest overdue: http")
		})
	})

	t.Run("broken hosts", func(t *testing.T) {
		for auth, kind := range lc.broken {
			want := ""
			switch kind {
			case testweb.HostRobotsRetryDate, testweb.HostRobotsHang, testweb.HostRefused:
				want = live.StateRobotsUnrch
			case testweb.HostRateLimited:
				want = "429" // its state moves on once the Retry-After is over; its 429 stays counted
			default:
				continue
			}
			b.run(t, typeInto("search", auth))
			row := func() []string {
				return eval[[]string](t, b, `Array.from(document.querySelectorAll("#hosts tbody tr")).map(r => Array.from(r.cells).map(c => c.textContent).join("|"))`)
			}
			waitFor(t, fmt.Sprintf("%s (%v) in the table as %s", auth, kind, want), func() bool {
				rows := row()
				if len(rows) != 1 || !strings.HasPrefix(rows[0], auth+"|") {
					return false
				}
				cells := strings.Split(rows[0], "|")
				if want == "429" {
					return cells[8] != "0"
				}
				return cells[1] == want
			})
		}
		b.run(t, typeInto("search", ""))
	})

	t.Run("sort and search", func(t *testing.T) {
		b.run(t, chromedp.Click(chromedp.CSS(`#hosts th[data-sort="requests"]`)))
		requests := func() []int {
			return eval[[]int](t, b, `Array.from(document.querySelectorAll("#hosts tbody tr")).map(r => +r.cells[4].textContent.replace(/,/g, ""))`)
		}
		waitFor(t, "hosts sorted by requests, most first", func() bool {
			r := requests()
			return len(r) > 3 && slices.IsSortedFunc(r, func(a, b int) int { return b - a }) && r[0] > r[len(r)-1]
		})
		b.run(t, typeInto("search", "h002"))
		waitFor(t, "only h002 hosts", func() bool {
			keys := eval[[]string](t, b, `Array.from(document.querySelectorAll("#hosts tbody tr")).map(r => r.cells[0].textContent)`)
			return len(keys) == 1 && strings.HasPrefix(keys[0], "h002")
		})
	})

	var refusedErrs []string // the browser logs the refusal's 403 as a failed load: expected
	t.Run("controls need the token", func(t *testing.T) {
		before := len(b.errors())
		defer func() { refusedErrs = b.errors()[before:] }()
		b.run(t, typeInto("token", "wrong"), chromedp.Click(chromedp.ID("pause")))
		waitFor(t, "the refusal", func() bool {
			return strings.Contains(eval[string](t, b, `document.getElementById("control-msg").textContent`), "token")
		})
		if lc.c.Paused() {
			t.Fatal("a pause with a wrong token paused the crawl")
		}
	})

	t.Run("pause and resume", func(t *testing.T) {
		b.run(t, typeInto("token", lc.token), chromedp.Click(chromedp.ID("pause")))
		waitFor(t, "the page to show the pause", func() bool { return eval[string](t, b, `document.getElementById("state").textContent`) == "paused" })
		waitFor(t, "fetches in flight to end", func() bool {
			st, err := lc.c.Stats(context.Background())
			return err == nil && st.InFlight == 0
		})
		quiet := time.Now()
		n := lc.v.Log.Len()
		time.Sleep(1500 * time.Millisecond) // the window in which no request may come
		for _, e := range lc.v.Log.Entries()[n:] {
			if e.Start.After(quiet) {
				t.Errorf("paused, yet the server got %s %s at %v", e.Host, e.Target, e.Start)
			}
		}
		b.run(t, chromedp.Click(chromedp.ID("resume")))
		waitFor(t, "requests again after resume", func() bool { return lc.v.Log.Len() > n })
	})

	t.Run("crawled text stays text", func(t *testing.T) {
		title := fmt.Sprintf(hostileTitle, lc.hostile.attacker.URL)
		waitFor(t, "the hostile page's title in the log", func() bool {
			return eval[bool](t, b, fmt.Sprintf(`Array.from(document.querySelectorAll("#log td")).some(td => td.textContent === %q)`, title))
		})
		waitFor(t, "the hostile URL in the log", func() bool {
			return eval[bool](t, b, `Array.from(document.querySelectorAll("#log td")).some(td => td.textContent.includes("/x?n=") && td.textContent.includes("img"))`)
		})
		if n := eval[int](t, b, `document.querySelectorAll("main script, main img, #log img, #hosts img").length`); n != 0 {
			t.Errorf("%d elements made of crawled text", n)
		}
		if d, a := b.dialogs.Load(), lc.hostile.attacked.Load(); d != 0 || a != 0 {
			t.Errorf("crawled text ran: %d dialogs, %d requests to the attacker", d, a)
		}
	})

	t.Run("stop", func(t *testing.T) {
		b.run(t, chromedp.Click(chromedp.ID("stop")))
		waitFor(t, "the crawl to stop", func() bool { return lc.stopped.Load() && !lc.c.Running() })
	})
	errs := slices.DeleteFunc(b.errors(), func(e string) bool {
		return slices.Contains(refusedErrs, e) && strings.Contains(e, "403") && strings.Contains(e, "/api/pause")
	})
	if len(errs) > 0 {
		t.Errorf("the page logged errors: %q", errs)
	}
}

// hostileJobURL is a queued URL built to break out of markup.
const hostileJobURL = `http://x.test/a?q="><img src=x onerror=alert(1)>`

// The job view lists every process of the job it is given, and its
// frontier panel, as text.
func TestJobViewInBrowser(t *testing.T) {
	b := newBrowser(t)
	now := time.Now()
	var polls atomic.Int32
	page := httptest.NewServer(live.NewJobHandler(func(context.Context) (live.Job, error) {
		n := polls.Add(1)
		j := live.Job{Name: "news", State: "running", Now: now.Add(time.Duration(n) * 2 * time.Second), Pages: 100 * int64(n)}
		for i, name := range []string{"alpha", "beta", `<img src=x onerror=alert(1)>`} {
			j.Processes = append(j.Processes, live.JobProcess{Name: name, State: "crawling", Seen: now, Started: now.Add(-time.Minute),
				Host: "m" + strconv.Itoa(i), PID: 100 + i, Pages: int64(10 * i)})
		}
		return j, nil
	}, live.JobOptions{Frontier: func(_ context.Context, edges []time.Duration) (frontier.DueCounts, error) {
		d := frontier.NewDueCounts(edges)
		d.Add(now.UnixNano(), now.Add(-time.Minute).UnixNano(), 3, "x.test", hostileJobURL)
		d.Add(now.UnixNano(), now.Add(10*time.Minute).UnixNano(), 2, "y.test", "")
		d.Scale(5)
		return d, nil
	}}))
	t.Cleanup(page.Close)
	b.run(t, chromedp.Navigate(page.URL+"/"))
	names := func() []string {
		return eval[[]string](t, b, `Array.from(document.querySelectorAll("#procs tbody tr")).map(r => r.cells[0].textContent)`)
	}
	waitFor(t, "the job's processes", func() bool { return len(names()) == 3 })
	if got := names(); !slices.Equal(got, []string{"alpha", "beta", `<img src=x onerror=alert(1)>`}) {
		t.Errorf("processes listed %q", got)
	}
	waitFor(t, "a rate from two polls", func() bool {
		return eval[string](t, b, `document.getElementById("rate").textContent`) == "50.0"
	})
	waitFor(t, "the job's frontier panel", func() bool {
		return eval[string](t, b, `Array.from(document.querySelectorAll("#frontier tbody tr")).map(r => r.dataset.count).join(",")`) == "3,0,0,2,0,0,0" &&
			!eval[bool](t, b, `document.getElementById("frontier-panel").hidden`)
	})
	if got := eval[string](t, b, `document.getElementById("oldest").textContent`); !strings.Contains(got, hostileJobURL) {
		t.Errorf("oldest overdue %q, want the hostile URL as text", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll("#procs img, #frontier-panel img").length`); n != 0 || b.dialogs.Load() != 0 {
		t.Errorf("a process name ran as markup: %d images, %d dialogs", n, b.dialogs.Load())
	}
	if errs := b.errors(); len(errs) > 0 {
		t.Errorf("the job view logged errors: %q", errs)
	}
}
