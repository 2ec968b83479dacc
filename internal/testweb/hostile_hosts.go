package testweb

import (
	"bytes"
	"fmt"
	"html"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// allowAllRobots is the robots.txt of hostile hosts whose hostility lies
// elsewhere.
const allowAllRobots = "User-agent: *\nAllow: /\n"

// secretRobots disallows /secret/, the forbidden part of the robots.txt
// scenarios.
const secretRobots = "User-agent: *\nDisallow: /secret/\n"

func hostURL(authority, target string) string { return "http://" + authority + target }

// htmlPage is a small page linking to hrefs, written as given.
func htmlPage(title string, hrefs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</title></head><body>\n<h1>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</h1>\n")
	for _, h := range hrefs {
		b.WriteString(`<a href="`)
		b.WriteString(html.EscapeString(h))
		b.WriteString(`">`)
		b.WriteString(html.EscapeString(h))
		b.WriteString("</a>\n")
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

func writeHTML(rw http.ResponseWriter, body []byte) int {
	return write(rw, "text/html; charset=utf-8", body)
}

func writeText(rw http.ResponseWriter, body string) int {
	return write(rw, "text/plain; charset=utf-8", []byte(body))
}

// forbidPrefix forbids every target under prefix.
func forbidPrefix(prefix, why string) func(string, HostileAnalyzeOptions) string {
	return func(target string, _ HostileAnalyzeOptions) string {
		if strings.HasPrefix(target, prefix) {
			return why
		}
		return ""
	}
}

func (hw *Hostile) makeHosts() []*hostileHost {
	return []*hostileHost{
		hw.dripHost(), hw.hangHost(), hw.silentHost(), hw.bombHost(), hw.robotsBombHost(),
		hw.sitemapsHost(), hw.floodHost(), hw.nestHost(), hw.redirectHost(),
		hw.slowRobotsHost(), hw.paceHost(), hw.robotsGzipHost(), hw.robotsUTF16Host(),
		hw.groupsHost(), hw.privateHost(), hw.staleHost(), hw.pathsHost(),
	}
}

func (hw *Hostile) dripHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: dripHost, Scenario: ScenarioDrip,
		Seeds:    []string{hostURL(dripHost, "/")},
		Required: []string{robotsPath, "/", "/ok"},
		// robots.txt, home, /ok, and each drip tried up to three times.
		Budget: 3 + 2*3 + 2, Retries: true,
	}}
	body := "<!DOCTYPE html>\n<html><head><title>slow</title></head><body><a href=\"/ok\">ok</a></body></html>\n"
	whole := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body)
	endlessHead := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n\r\n<!DOCTYPE html>\n<html><body>")
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, allowAllRobots)
		case "/":
			return writeHTML(rw, htmlPage("drip", "/drip/headers", "/drip/body", "/ok"))
		case "/ok":
			return writeHTML(rw, htmlPage("drip ok"))
		case "/drip/headers":
			return hw.drip(rw, nil, whole, false)
		case "/drip/body":
			return hw.drip(rw, endlessHead, nil, true)
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(string, HostileAnalyzeOptions) string { return "" }
	return h
}

func (hw *Hostile) hangHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: hangHost, Scenario: ScenarioHang,
		Seeds:    []string{hostURL(hangHost, "/")},
		Required: []string{robotsPath, "/", "/ok"},
		Budget:   3 + 3 + 2, Retries: true,
	}}
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, allowAllRobots)
		case "/":
			return writeHTML(rw, htmlPage("hang", "/hang", "/ok"))
		case "/ok":
			return writeHTML(rw, htmlPage("hang ok"))
		case "/hang":
			select {
			case <-r.Context().Done():
			case <-hw.done:
			}
			return 0
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(string, HostileAnalyzeOptions) string { return "" }
	return h
}

// silentHost is served by acceptSilent, never by the HTTP server; serve
// only answers if a request reaches the server by another route.
func (hw *Hostile) silentHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: silentHost, Scenario: ScenarioSilent,
		Seeds: []string{hostURL(silentHost, "/"), hostURL(silentHost, "/page")},
	}}
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		return notFound(rw, "silent.test answers nothing")
	}
	h.forbidden = func(string, HostileAnalyzeOptions) string {
		return "silent.test is only reachable by its silent listener"
	}
	return h
}

func (hw *Hostile) bombHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: bombHost, Scenario: ScenarioBomb,
		Seeds:    []string{hostURL(bombHost, "/")},
		Required: []string{robotsPath, "/", "/ok"},
		Budget:   3 + 3 + 2 + 2,
	}}
	robots := allowAllRobots +
		"Sitemap: " + hostURL(bombHost, "/sitemap-bomb.xml") + "\n" +
		"Sitemap: " + hostURL(bombHost, "/sitemap-bomb.xml.gz") + "\n"
	htmlPrefix := "<!DOCTYPE html>\n<html><head><title>bomb</title></head><body>\n<a href=\"/ok\">ok</a>\n"
	xmlPrefix := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n" +
		"<url><loc>" + hostURL(bombHost, "/ok") + "</loc></url>\n"
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, robots)
		case "/":
			return writeHTML(rw, htmlPage("bomb", "/bomb/gzip", "/bomb/deflate", "/bomb/br", "/ok"))
		case "/ok":
			return writeHTML(rw, htmlPage("bomb ok"))
		case "/bomb/gzip":
			return hw.serveBomb(rw, "gzip", "gzip", "text/html; charset=utf-8", htmlPrefix)
		case "/bomb/deflate":
			return hw.serveBomb(rw, "deflate", "deflate", "text/html; charset=utf-8", htmlPrefix)
		case "/bomb/br":
			return hw.serveBomb(rw, "br", "br", "text/html; charset=utf-8", htmlPrefix)
		case "/sitemap-bomb.xml":
			return hw.serveBomb(rw, "gzip", "gzip", "application/xml", xmlPrefix)
		case "/sitemap-bomb.xml.gz":
			// A gzip file, not a gzip-encoded response: the sitemap
			// reader must bound what it decompresses itself.
			return hw.serveBomb(rw, "gzip", "", "application/gzip", xmlPrefix)
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(string, HostileAnalyzeOptions) string { return "" }
	return h
}

func (hw *Hostile) robotsBombHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: robotsBombHost, Scenario: ScenarioRobotsBomb,
		Seeds:    []string{hostURL(robotsBombHost, "/")},
		Required: []string{robotsPath, "/", "/ok"},
		Budget:   3 + 3,
	}}
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return hw.serveBomb(rw, "gzip", "gzip", "text/plain; charset=utf-8", secretRobots)
		case "/":
			return writeHTML(rw, htmlPage("robots bomb", "/secret/x", "/ok"))
		case "/ok", "/secret/x":
			return writeHTML(rw, htmlPage("robots bomb "+target))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = forbidPrefix("/secret/", "disallowed by the first lines of a robots.txt compression bomb")
	return h
}

func (hw *Hostile) sitemapsHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: sitemapsHost, Scenario: ScenarioSitemapChain,
		Seeds: []string{hostURL(sitemapsHost, "/")},
		Required: []string{robotsPath, "/", "/ok", "/chain/0.xml", "/leaf/0.xml", "/page/0",
			"/self.xml", "/leaf/self.xml", "/page/self"},
		Budget: 3 + 3*(MaxSitemapChain+1) + 4,
	}}
	robots := allowAllRobots +
		"Sitemap: " + hostURL(sitemapsHost, "/chain/0.xml") + "\n" +
		"Sitemap: " + hostURL(sitemapsHost, "/self.xml") + "\n"
	index := func(locs ...string) []byte {
		var b bytes.Buffer
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
		for _, l := range locs {
			b.WriteString("<sitemap><loc>" + hostURL(sitemapsHost, l) + "</loc></sitemap>\n")
		}
		b.WriteString("</sitemapindex>\n")
		return b.Bytes()
	}
	urlset := func(loc string) []byte {
		return []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
			`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n" +
			"<url><loc>" + hostURL(sitemapsHost, loc) + "</loc></url>\n</urlset>\n")
	}
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, robots)
		case "/":
			return writeHTML(rw, htmlPage("sitemaps", "/ok"))
		case "/ok":
			return writeHTML(rw, htmlPage("sitemaps ok"))
		case "/self.xml":
			return write(rw, "application/xml", index("/self.xml", "/leaf/self.xml"))
		case "/leaf/self.xml":
			return write(rw, "application/xml", urlset("/page/self"))
		}
		if n, ok := numbered(target, "/chain/", ".xml"); ok {
			return write(rw, "application/xml", index("/chain/"+strconv.Itoa(n+1)+".xml", "/leaf/"+strconv.Itoa(n)+".xml"))
		}
		if n, ok := numbered(target, "/leaf/", ".xml"); ok {
			return write(rw, "application/xml", urlset("/page/"+strconv.Itoa(n)))
		}
		if _, ok := numbered(target, "/page/", ""); ok || target == "/page/self" {
			return writeHTML(rw, htmlPage("sitemaps "+target))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(target string, _ HostileAnalyzeOptions) string {
		if n, ok := numbered(target, "/chain/", ".xml"); ok && n > MaxSitemapChain {
			return fmt.Sprintf("link %d of an endless sitemap index chain (at most %d)", n, MaxSitemapChain)
		}
		return ""
	}
	return h
}

// numbered parses target as prefix, a non-negative decimal, suffix.
func numbered(target, prefix, suffix string) (int, bool) {
	s, ok := strings.CutPrefix(target, prefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, suffix); !ok || s == "" || len(s) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

func (hw *Hostile) floodHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: floodHost, Scenario: ScenarioLinkFlood,
		Seeds:    []string{hostURL(floodHost, "/")},
		Required: []string{robotsPath, "/", "/ok"},
		Budget:   3 + DefaultLinkCap,
	}}
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, allowAllRobots)
		case "/":
			return writeHTML(rw, hw.floodPage())
		case "/ok":
			return writeHTML(rw, htmlPage("flood ok"))
		}
		if n, ok := numbered(target, "/l/", ""); ok && n < hw.cfg.FloodLinks {
			return writeHTML(rw, []byte("<!DOCTYPE html>\n<html><body>leaf</body></html>\n"))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(string, HostileAnalyzeOptions) string { return "" }
	return h
}

// floodPage builds flood.test's home page once, on first use: it is several
// MiB, and most tests never ask for it.
func (hw *Hostile) floodPage() []byte {
	hw.floodMu.Lock()
	defer hw.floodMu.Unlock()
	if hw.flood == nil {
		var b bytes.Buffer
		b.Grow(hw.cfg.FloodLinks*24 + 256)
		b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>flood</title></head><body>\n<a href=\"/ok\">ok</a>\n")
		for i := range hw.cfg.FloodLinks {
			b.WriteString(`<a href="/l/`)
			b.WriteString(strconv.Itoa(i))
			b.WriteString("\">.</a>\n")
		}
		b.WriteString("</body></html>\n")
		hw.flood = b.Bytes()
	}
	return hw.flood
}

func (hw *Hostile) nestHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: nestHost, Scenario: ScenarioDeepNesting,
		Seeds:    []string{hostURL(nestHost, "/")},
		Required: []string{robotsPath, "/", "/ok", "/nofollow-deep", "/deep-ok"},
		Budget:   5 + 4 + 3,
	}}
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, allowAllRobots)
		case "/":
			return writeHTML(rw, htmlPage("nest", "/nofollow-deep", "/deep-ok", "/ok"))
		case "/ok":
			return writeHTML(rw, htmlPage("nest ok"))
		case "/nofollow-deep":
			nf, _ := hw.nestPages()
			return writeHTML(rw, nf)
		case "/deep-ok":
			_, ok := hw.nestPages()
			return writeHTML(rw, ok)
		}
		if _, ok := numbered(target, "/deep/", ""); ok {
			return writeHTML(rw, htmlPage("nest "+target))
		}
		if _, ok := numbered(target, "/found/", ""); ok {
			return writeHTML(rw, htmlPage("nest "+target))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = forbidPrefix("/deep/", "linked only from a page whose robots meta tag says nofollow")
	return h
}

// nestPages builds nest.test's deep pages: Nesting <div>s, with links near
// the top, past the 512th level, at the bottom and after the nesting.
func (hw *Hostile) nestPages() (nofollow, follow []byte) {
	hw.nestOnce.Do(func() {
		build := func(meta, dir string) []byte {
			var b bytes.Buffer
			b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>deep</title>\n")
			b.WriteString(meta)
			b.WriteString("</head><body>\n")
			n := hw.cfg.Nesting
			marks := map[int]int{5: 0, 600: 1, n: 2}
			for i := 1; i <= n; i++ {
				b.WriteString("<div>")
				if k, ok := marks[i]; ok {
					fmt.Fprintf(&b, "<a href=\"/%s/%d\">%s %d</a>", dir, k, dir, k)
				}
			}
			b.WriteString(strings.Repeat("</div>", n))
			fmt.Fprintf(&b, "\n<a href=\"/%s/3\">%s 3</a>\n</body></html>\n", dir, dir)
			return b.Bytes()
		}
		hw.nestNF = build(`<meta name="robots" content="noindex,nofollow">`+"\n", "deep")
		hw.nestOK = build("", "found")
	})
	return hw.nestNF, hw.nestOK
}

func (hw *Hostile) redirectHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: redirectHost, Scenario: ScenarioRedirects,
		Seeds: []string{hostURL(redirectHost, "/")},
		Required: []string{robotsPath, "/", "/ok", "/loop/a", "/loop/b", "/self", "/nolocation",
			"/to-private", "/to-private-abs", "/chain/0", "/chain/1"},
		Budget: 9 + hw.cfg.RedirectChain + 2,
	}}
	robots := "User-agent: *\nDisallow: /private/\n"
	chain := hw.cfg.RedirectChain
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, robots)
		case "/":
			return writeHTML(rw, htmlPage("redirects", "/loop/a", "/self", "/nolocation", "/to-private", "/to-private-abs", "/chain/0", "/ok"))
		case "/ok":
			return writeHTML(rw, htmlPage("redirects ok"))
		case "/loop/a":
			return redirect(rw, "/loop/b", http.StatusFound)
		case "/loop/b":
			return redirect(rw, "/loop/a", http.StatusFound)
		case "/self":
			return redirect(rw, "/self", http.StatusMovedPermanently)
		case "/nolocation":
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			rw.WriteHeader(http.StatusMovedPermanently)
			rw.Write([]byte("<!DOCTYPE html>\n<html><body>moved, but where?</body></html>\n")) //nolint:errcheck // the client may go away
			return http.StatusMovedPermanently
		case "/to-private":
			return redirect(rw, "/private/secret", http.StatusFound)
		case "/to-private-abs":
			return redirect(rw, hostURL(redirectHost, "/private/other"), http.StatusTemporaryRedirect)
		}
		if strings.HasPrefix(target, "/private/") {
			return writeHTML(rw, htmlPage("private "+target))
		}
		if n, ok := numbered(target, "/chain/", ""); ok && n <= chain {
			if n == chain {
				return writeHTML(rw, htmlPage("end of the chain"))
			}
			return redirect(rw, "/chain/"+strconv.Itoa(n+1), http.StatusFound)
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(target string, opts HostileAnalyzeOptions) string {
		if strings.HasPrefix(target, "/private/") {
			return "disallowed by robots.txt (reached through a redirect)"
		}
		if n, ok := numbered(target, "/chain/", ""); ok && n > opts.maxRedirects() {
			return fmt.Sprintf("hop %d of a redirect chain, past max-redirects %d", n, opts.maxRedirects())
		}
		return ""
	}
	return h
}

func (hw *Hostile) slowRobotsHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: slowRobotsHost, Scenario: ScenarioRobotsRedirectSlow,
		Seeds:    []string{hostURL(slowRobotsHost, "/"), hostURL(paceHost, "/")},
		Required: []string{robotsPath, "/", "/ok"},
		Budget:   3 + 2,
	}}
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return redirect(rw, hostURL(paceHost, "/robots/slowrobots.txt"), http.StatusMovedPermanently)
		case "/":
			return writeHTML(rw, htmlPage("slow robots", "/secret/x", "/ok"))
		case "/ok", "/secret/x":
			return writeHTML(rw, htmlPage("slow robots "+target))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = forbidPrefix("/secret/", "disallowed by the robots.txt reached through a cross-host redirect")
	return h
}

func (hw *Hostile) paceHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: paceHost, Scenario: ScenarioRobotsRedirectSlow,
		Required:   []string{robotsPath, "/robots/slowrobots.txt", "/", "/p/1", "/p/2"},
		CrawlDelay: hw.cfg.PaceCrawlDelay,
		Budget:     5 + 2,
	}}
	robots := "User-agent: *\n" + crawlDelayLine(hw.cfg.PaceCrawlDelay) + "Allow: /\n"
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, robots)
		case "/robots/slowrobots.txt":
			return writeText(rw, secretRobots)
		case "/":
			return writeHTML(rw, htmlPage("pace", "/p/1", "/p/2"))
		case "/p/1", "/p/2":
			return writeHTML(rw, htmlPage("pace "+target))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(string, HostileAnalyzeOptions) string { return "" }
	return h
}

func (hw *Hostile) robotsGzipHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: gzRobotsHost, Scenario: ScenarioRobotsGzip,
		Seeds:    []string{hostURL(gzRobotsHost, "/")},
		Required: []string{robotsPath, "/", "/ok"},
		Budget:   3 + 2,
	}}
	gz := gzipBytes([]byte(secretRobots))
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			rw.Header().Set("Content-Encoding", "gzip")
			return write(rw, "text/plain; charset=utf-8", gz)
		case "/":
			return writeHTML(rw, htmlPage("gzip robots", "/secret/x", "/ok"))
		case "/ok", "/secret/x":
			return writeHTML(rw, htmlPage("gzip robots "+target))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = forbidPrefix("/secret/", "disallowed by a gzip-encoded robots.txt")
	return h
}

// utf16LE encodes s as UTF-16LE after a byte order mark.
func utf16LE(s string) []byte {
	out := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u), byte(u>>8))
	}
	return out
}

func (hw *Hostile) robotsUTF16Host() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: utf16Host, Scenario: ScenarioRobotsUTF16,
		Seeds:    []string{hostURL(utf16Host, "/")},
		Required: []string{robotsPath, "/", "/ok"},
		Budget:   3 + 2,
	}}
	body := utf16LE(strings.ReplaceAll(secretRobots, "\n", "\r\n"))
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return write(rw, "text/plain", body)
		case "/":
			return writeHTML(rw, htmlPage("utf-16 robots", "/secret/x", "/ok"))
		case "/ok", "/secret/x":
			return writeHTML(rw, htmlPage("utf-16 robots "+target))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = forbidPrefix("/secret/", "disallowed by a UTF-16LE robots.txt with a byte order mark")
	return h
}

func (hw *Hostile) groupsHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: groupsHost, Scenario: ScenarioRobotsGroups,
		Seeds:      []string{hostURL(groupsHost, "/")},
		Required:   []string{robotsPath},
		CrawlDelay: time.Second,
		Budget:     2,
	}}
	robots := "User-agent: *\nCrawl-delay: 1\n\nUser-agent: BadBot\nDisallow: /\n"
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, robots)
		case "/":
			return writeHTML(rw, htmlPage("groups", "/ok"))
		case "/ok":
			return writeHTML(rw, htmlPage("groups ok"))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(target string, _ HostileAnalyzeOptions) string {
		if target == robotsPath {
			return ""
		}
		return `disallowed: "User-agent: *" and "User-agent: BadBot" share one group with "Disallow: /"`
	}
	return h
}

func (hw *Hostile) privateHost() *hostileHost {
	_, port, _ := net.SplitHostPort(hw.Server.Listener.Addr().String())
	targets := map[string]string{
		"/r/metadata": "http://169.254.169.254/latest/meta-data/",
		"/r/ten":      "http://10.0.0.1/",
		"/r/192":      "http://192.168.1.1/",
		"/r/zero":     "http://0.0.0.0:" + port + "/",
	}
	direct := []string{"http://10.0.0.2/direct", "http://169.254.169.254/latest/user-data/"}
	h := &hostileHost{HostileHost: HostileHost{
		Authority: privateHost, Scenario: ScenarioPrivateRedirect,
		Seeds:    []string{hostURL(privateHost, "/")},
		Required: []string{robotsPath, "/", "/ok", "/r/metadata", "/r/ten", "/r/192", "/r/zero"},
		Budget:   7 + 2,
	}}
	for _, k := range []string{"/r/metadata", "/r/ten", "/r/192", "/r/zero"} {
		h.Unreachable = append(h.Unreachable, targets[k])
	}
	h.Unreachable = append(h.Unreachable, direct...)
	links := append([]string{"/r/metadata", "/r/ten", "/r/192", "/r/zero"}, direct...)
	links = append(links, "/ok")
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, allowAllRobots)
		case "/":
			return writeHTML(rw, htmlPage("private", links...))
		case "/ok":
			return writeHTML(rw, htmlPage("private ok"))
		}
		if to, ok := targets[target]; ok {
			return redirect(rw, to, http.StatusFound)
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(string, HostileAnalyzeOptions) string { return "" }
	return h
}

// staleRetryAfter is the Retry-After of stale.test's 429 answers.
const staleRetryAfter = 3600

func (hw *Hostile) staleHost() *hostileHost {
	h := &hostileHost{HostileHost: HostileHost{
		Authority: staleHost, Scenario: ScenarioStaleRobots,
		Seeds:    []string{hostURL(staleHost, "/")},
		Required: []string{robotsPath, "/", "/p/1", "/p/2", "/p/3"},
		Budget:   4 + 4 + 2,
	}, retryAfter: staleRetryAfter * time.Second}
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			if hw.staleRobots.Add(1) == 1 {
				rw.Header().Set("Cache-Control", "max-age=60")
				return writeText(rw, secretRobots)
			}
			rw.Header().Set("Retry-After", strconv.Itoa(staleRetryAfter))
			http.Error(rw, "slow down", http.StatusTooManyRequests)
			return http.StatusTooManyRequests
		case "/":
			return writeHTML(rw, htmlPage("stale", "/p/1", "/p/2", "/p/3", "/secret/x"))
		case "/p/1", "/p/2", "/p/3", "/secret/x":
			return writeHTML(rw, htmlPage("stale "+target))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = forbidPrefix("/secret/", "disallowed by the stale copy of robots.txt")
	return h
}

func (hw *Hostile) pathsHost() *hostileHost {
	var deep strings.Builder
	deep.WriteString("/d/")
	for i := 1; i <= hw.cfg.DeepPathSegments; i++ {
		fmt.Fprintf(&deep, "s%04d/", i)
	}
	deepPath := deep.String()
	h := &hostileHost{HostileHost: HostileHost{
		Authority: pathsHost, Scenario: ScenarioPaths,
		Seeds:    []string{hostURL(pathsHost, "/")},
		Required: []string{robotsPath, "/", "/ok", "/a/", "/x/y/"},
		Budget:   3 + 2*(RepeatLimit+1) + 1 + 4,
	}}
	h.serve = func(rw http.ResponseWriter, r *http.Request, target string) int {
		switch target {
		case robotsPath:
			return writeText(rw, allowAllRobots)
		case "/":
			return writeHTML(rw, htmlPage("paths", "/a/", "/x/y/", deepPath, "/ok"))
		case "/ok", deepPath:
			return writeHTML(rw, htmlPage("paths ok"))
		}
		if repeats(target, "a/") {
			return writeHTML(rw, htmlPage("a", "a/", "/ok"))
		}
		if repeats(target, "x/y/") {
			return writeHTML(rw, htmlPage("xy", "x/y/", "/ok"))
		}
		return notFound(rw, "no such page")
	}
	h.forbidden = func(target string, _ HostileAnalyzeOptions) string {
		if n := longestRepeat(target); n > RepeatLimit {
			return fmt.Sprintf("a path segment or pair repeated %d times in a row (at most %d)", n, RepeatLimit)
		}
		return ""
	}
	return h
}

// repeats reports whether target is "/" followed by unit one or more times.
func repeats(target, unit string) bool {
	s, ok := strings.CutPrefix(target, "/")
	if !ok || s == "" || len(s)%len(unit) != 0 {
		return false
	}
	return strings.Repeat(unit, len(s)/len(unit)) == s
}

// longestRepeat returns the longest run of one path segment, or of one pair
// of segments, repeated back to back in target's path.
func longestRepeat(target string) int {
	path, _, _ := strings.Cut(target, "?")
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best := 0
	for width := 1; width <= 2; width++ {
		for start := range segs {
			run := 1
			for i := start + width; i+width <= len(segs); i += width {
				if !equalSegs(segs[i:i+width], segs[start:start+width]) {
					break
				}
				run++
			}
			best = max(best, run)
		}
	}
	return best
}

func equalSegs(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
