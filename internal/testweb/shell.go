package testweb

// The shell web: application-shell hosts whose pages a browser builds by
// script, for the tests and benchmarks of rendering (fetch/render).

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ShellConfig shapes a ShellWeb.
type ShellConfig struct {
	// Items is how many item pages an app host's index links to (by
	// script); zero means 10.
	Items int
	// CDNDelay is the Crawl-delay of the CDN host, in seconds; zero
	// means 1.
	CDNDelay int
	// Apps is how many application-shell hosts there are; zero means 1.
	Apps int
	// Statics is how many static hosts there are besides the first, each
	// with Items pages linked from its home page in plain HTML.
	Statics int
	// Mixed is how many hosts serve both kinds of page, as real sites
	// do: a home and Items articles built by the server (with an
	// analytics script; every fifth loads a widget whose script adds a
	// link to the article's comments, a static page), and an application
	// under /app/ whose listing builds links to Items detail pages by
	// script and whose detail pages build only their text.
	Mixed int
	// CrossScripts has every app host's pages load a script from the
	// next app host (uncacheable: one request a render), so that two
	// hosts rendered at once each load from the other.
	CrossScripts bool
}

// ShellWeb is a small web of real loopback servers, each a host of its own:
//
//   - Static, a healthy static host whose home page links to every app
//     host's index, its /poll and /scroll pages, and to its own pages;
//   - Apps, application shells: every page is the same shell, whose
//     script (/app.js, cacheable for an hour, shared by all pages) builds
//     the links and the text in the browser, navigates with
//     history.pushState, fetch()es a path robots.txt disallows, asks
//     /api/whoami twice — before and after setting a cookie — and tries
//     to register a service worker that fetches a disallowed path; /poll
//     polls its API forever, /scroll loads more items as it is scrolled;
//   - CDN, whose robots.txt sets a Crawl-delay, serving the shells' script
//     and stylesheet;
//   - Hang, whose robots.txt never answers, serving a script every shell
//     loads (which must therefore be refused).
//
// Every request is recorded in Log; Judge reads it.
type ShellWeb struct {
	Log     *Log
	Static  []*httptest.Server
	Apps    []*httptest.Server
	Mixed   []*httptest.Server
	CDN     *httptest.Server
	Hang    *httptest.Server
	cfg     ShellConfig
	closing chan struct{}

	mu          sync.Mutex
	cookieLeaks int // /api/whoami asked with another page's cookie
	cookiesKept int // /api/whoami asked with its own page's cookie
}

// NewShellWeb starts a shell web. Close it.
func NewShellWeb(cfg ShellConfig) *ShellWeb {
	if cfg.Items <= 0 {
		cfg.Items = 10
	}
	if cfg.CDNDelay <= 0 {
		cfg.CDNDelay = 1
	}
	if cfg.Apps <= 0 {
		cfg.Apps = 1
	}
	w := &ShellWeb{Log: new(Log), cfg: cfg, closing: make(chan struct{})}
	w.CDN = httptest.NewServer(w.logged(http.HandlerFunc(w.serveCDN)))
	w.Hang = httptest.NewServer(w.logged(http.HandlerFunc(w.serveHang)))
	for range cfg.Apps {
		w.Apps = append(w.Apps, httptest.NewServer(w.logged(http.HandlerFunc(w.serveApp))))
	}
	for range cfg.Mixed {
		w.Mixed = append(w.Mixed, httptest.NewServer(w.logged(http.HandlerFunc(w.serveMixed))))
	}
	for range cfg.Statics + 1 {
		w.Static = append(w.Static, httptest.NewServer(w.logged(http.HandlerFunc(w.serveStatic))))
	}
	return w
}

// Close stops the servers, ending the hanging answers first.
func (w *ShellWeb) Close() {
	close(w.closing)
	for _, s := range slices.Concat([]*httptest.Server{w.CDN, w.Hang}, w.Apps, w.Mixed, w.Static) {
		s.CloseClientConnections()
		s.Close()
	}
}

// Seed is the URL to crawl the web from: the first static host's home.
func (w *ShellWeb) Seed() string { return w.Static[0].URL + "/" }

// logged records every request, with its start and end.
func (w *ShellWeb) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		e := Entry{Start: time.Now(), Host: strings.ToLower(r.Host), Method: r.Method, Target: r.URL.RequestURI(), UserAgent: r.UserAgent()}
		if r.Header.Get("Cookie") != "" {
			e.Conditional = true // here: the request carried a cookie
		}
		sw := &statusWriter{ResponseWriter: rw}
		h.ServeHTTP(sw, r)
		e.End, e.Status = time.Now(), sw.status
		w.Log.add(e)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (w *ShellWeb) serveStatic(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		fmt.Fprint(rw, "User-agent: *\nAllow: /\n")
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><head><title>static</title></head><body><h1>A static host</h1>\n")
	if r.URL.Path == "/" {
		for i := range w.cfg.Items {
			fmt.Fprintf(&b, "<a href=\"/page/%d\">page %d</a>\n", i, i)
		}
		if w.Static[0].URL == "http://"+r.Host {
			for _, a := range w.Apps {
				fmt.Fprintf(&b, "<a href=\"%s/\">app</a> <a href=\"%s/poll\">poll</a> <a href=\"%s/scroll\">scroll</a>\n", a.URL, a.URL, a.URL)
			}
			for _, s := range w.Static[1:] {
				fmt.Fprintf(&b, "<a href=\"%s/\">another static host</a>\n", s.URL)
			}
			for _, m := range w.Mixed {
				fmt.Fprintf(&b, "<a href=\"%s/\">a site with an application</a>\n", m.URL)
			}
		}
	}
	fmt.Fprintf(&b, "<p>Static text of %s, long enough to read as content.</p></body></html>", r.URL.Path)
	fmt.Fprint(rw, b.String())
}

func (w *ShellWeb) serveCDN(rw http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/robots.txt":
		fmt.Fprintf(rw, "User-agent: *\nCrawl-delay: %d\nDisallow: /private/\n", w.cfg.CDNDelay)
	case "/lib.js":
		rw.Header().Set("Content-Type", "text/javascript")
		rw.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprint(rw, "window.lib = {title: (s) => 'App: ' + s};\n")
	case "/style.css":
		rw.Header().Set("Content-Type", "text/css")
		rw.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprint(rw, "body { font-family: serif }\n")
	default:
		http.NotFound(rw, r)
	}
}

// serveHang answers nothing, robots.txt included, until the client goes
// away or the web closes.
func (w *ShellWeb) serveHang(rw http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-w.closing:
	}
}

func (w *ShellWeb) serveApp(rw http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/robots.txt":
		fmt.Fprint(rw, "User-agent: *\nDisallow: /private/\n")
	case p == "/app.js":
		rw.Header().Set("Content-Type", "text/javascript")
		rw.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprintf(rw, appJS, w.cfg.Items)
	case p == "/widget.js":
		rw.Header().Set("Content-Type", "text/javascript")
		rw.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(rw, "window.widget = true;\n")
	case p == "/sw.js":
		rw.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(rw, "fetch('/private/from-service-worker');\n")
	case p == "/api/whoami":
		w.whoami(r)
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(rw, `{"ok":true}`)
	case p == "/api/poll":
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(rw, `{"ok":true}`)
	case p == "/api/more":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Cache-Control", "no-store")
		if n >= 5 {
			fmt.Fprint(rw, `[]`)
			return
		}
		fmt.Fprintf(rw, `["s%d-a","s%d-b"]`, n, n)
	case strings.HasPrefix(p, "/private/"):
		fmt.Fprint(rw, "secret")
	default:
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(rw, appShell, w.CDN.URL, w.CDN.URL, w.Hang.URL, w.crossScript(r.Host))
	}
}

// appShell is every page of an app host: no links, no text, until the
// scripts run.
const appShell = `<!DOCTYPE html><html><head><title>app</title>
<link rel="stylesheet" href="%s/style.css">
<script src="%s/lib.js"></script>
<script defer src="/app.js"></script>
<script async src="%s/tracker.js"></script>%s
</head><body><img src="/logo.png"><div id="app">Loading…</div></body></html>`

// crossScript is the tag of the script an app host's pages load from the
// next app host, with CrossScripts.
func (w *ShellWeb) crossScript(host string) string {
	if !w.cfg.CrossScripts {
		return ""
	}
	for i, a := range w.Apps {
		if a.URL == "http://"+host {
			return fmt.Sprintf("\n<script src=\"%s/widget.js\"></script>", w.Apps[(i+1)%len(w.Apps)].URL)
		}
	}
	return ""
}

// appJS builds the page the shell's URL names.
const appJS = `(async () => {
  const items = %d;
  const app = document.getElementById('app');
  const add = (html) => app.insertAdjacentHTML('beforeend', html);
  const path = location.pathname;
  const who = '/api/whoami?page=' + encodeURIComponent(path);
  await fetch(who);
  document.cookie = 'visited=' + encodeURIComponent(path) + '; path=/';
  await fetch(who);
  fetch('/private/data').catch(() => add('<p class="refused">private data refused</p>'));
  if ('serviceWorker' in navigator) navigator.serviceWorker.register('/sw.js').catch(() => {});
  app.textContent = '';
  document.title = (window.lib ? lib.title(path) : path);
  if (path === '/poll') {
    setInterval(() => fetch('/api/poll'), 50);
    add('<p>polling</p>');
    return;
  }
  if (path === '/scroll') {
    let n = 0, busy = false;
    const more = async () => {
      if (busy) return; busy = true;
      const r = await fetch('/api/more?n=' + n++);
      const got = await r.json();
      for (const s of got) add('<a href="/item/' + s + '">' + s + '</a><div style="height:2000px">item ' + s + '</div>');
      busy = false;
    };
    addEventListener('scroll', () => { if (innerHeight + scrollY >= document.body.scrollHeight - 10) more(); });
    await more();
    return;
  }
  if (path === '/') {
    for (let i = 0; i < items; i++) add('<a href="/item/' + i + '" onclick="event.preventDefault(); history.pushState({}, \'\', this.href)">Item ' + i + '</a> ');
    history.pushState({}, '', '/home/');
    add('<a href="about">About (relative to the pushed URL)</a>');
  }
  add('<p>Text the script wrote for ' + path + ': a page of an application that a static crawler sees empty.</p>');
})();
`

// whoami counts the cookie an /api/whoami request carries: its own page's
// (set by script on that page), or another's — carried over from a page
// rendered before, which a fresh browser context per page rules out.
func (w *ShellWeb) whoami(r *http.Request) {
	c, err := r.Cookie("visited")
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, _ := url.QueryUnescape(c.Value); v == r.URL.Query().Get("page") {
		w.cookiesKept++
	} else {
		w.cookieLeaks++
	}
}

// ShellReport is what a crawl did to a ShellWeb, judged from its log.
type ShellReport struct {
	Requests int
	// RobotsViolations lists requests robots.txt forbade: a /private/
	// path, anything but robots.txt on the Hang host.
	RobotsViolations []string
	// PaceViolations lists requests that came sooner after the previous
	// one's answer than the host's delay allows, or while another
	// request to the host was under way.
	PaceViolations []string
	// AppJS counts the fetches of each app host's /app.js.
	AppJS map[string]int
	// CookieLeaks counts requests carrying a cookie another page set;
	// CookiesKept those carrying their own page's.
	CookieLeaks, CookiesKept int
	// Paths counts the requests by host-less target.
	Paths map[string]int
}

// Judge reads the log: minDelay is the crawl's least delay between two
// requests to a host (the CDN's Crawl-delay applies to it).
func (w *ShellWeb) Judge(minDelay time.Duration) *ShellReport {
	rep := &ShellReport{AppJS: map[string]int{}, Paths: map[string]int{}}
	byHost := map[string][]Entry{}
	for _, e := range w.Log.Entries() {
		rep.Requests++
		rep.Paths[e.Target]++
		byHost[e.Host] = append(byHost[e.Host], e)
		path, _, _ := strings.Cut(e.Target, "?")
		if strings.HasPrefix(path, "/private/") || (e.Host == hostOf(w.Hang) && path != "/robots.txt") {
			rep.RobotsViolations = append(rep.RobotsViolations, e.URL())
		}
		if path == "/app.js" {
			rep.AppJS[e.Host]++
		}
	}
	for host, es := range byHost {
		delay := minDelay
		if host == hostOf(w.CDN) {
			delay = max(delay, time.Duration(w.cfg.CDNDelay)*time.Second)
		}
		slices.SortFunc(es, func(a, b Entry) int { return a.Start.Compare(b.Start) })
		for i := 1; i < len(es); i++ {
			prev, e := es[i-1], es[i]
			// The crawler rests from when it read the answer, a little
			// after the server wrote it: a tenth of the delay is slack.
			if e.Start.Before(prev.End) || e.Start.Sub(prev.End) < delay*9/10 {
				rep.PaceViolations = append(rep.PaceViolations, fmt.Sprintf("%s %s after %s (%v)", host, e.Target, prev.Target, e.Start.Sub(prev.End)))
			}
		}
	}
	w.mu.Lock()
	rep.CookieLeaks, rep.CookiesKept = w.cookieLeaks, w.cookiesKept
	w.mu.Unlock()
	return rep
}

func hostOf(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

// Role names rawURL by the part its host plays — "static0", "app1",
// "cdn", "hang" — and its path, so that the URLs of two ShellWebs, on
// other ports, compare.
func (w *ShellWeb) Role(rawURL string) string {
	name := func(prefix string, ss []*httptest.Server) string {
		for i, s := range ss {
			if rest, ok := strings.CutPrefix(rawURL, s.URL); ok {
				return prefix + strconv.Itoa(i) + rest
			}
		}
		return ""
	}
	if r := name("static", w.Static); r != "" {
		return r
	}
	if r := name("app", w.Apps); r != "" {
		return r
	}
	if r := name("mixed", w.Mixed); r != "" {
		return r
	}
	if r := name("cdn", []*httptest.Server{w.CDN}); r != "" {
		return r
	}
	if r := name("hang", []*httptest.Server{w.Hang}); r != "" {
		return r
	}
	return rawURL
}
