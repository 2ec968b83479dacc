package testweb

import (
	"bytes"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Handler returns the changing web's HTTP handler. It routes by the Host
// header and answers GET and HEAD from the schedule at the web's clock's
// time: robots.txt, /sitemap.xml, the home page "/" and the content pages,
// with validators and 304s as each page's Validators say. Every request is
// recorded in log (nil: none are), stamped by the web's clock, with whether
// it was conditional and how many body bytes were sent.
func (w *ChangingWeb) Handler(log *Log) http.Handler { return &changingHandler{web: w, log: log} }

type changingHandler struct {
	web *ChangingWeb
	log *Log
}

func (hd *changingHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := hd.web
	// One reading of the clock decides the version served and stamps the
	// log, so the judge recomputes exactly what each response carried.
	now := w.Now()
	authority := strings.TrimSuffix(strings.ToLower(r.Host), ":80")
	rw.Header().Set("Date", now.UTC().Format(http.TimeFormat))
	status, n := hd.serve(rw, r, authority, now)
	if hd.log != nil {
		hd.log.add(Entry{
			Start: now, End: w.Now(), Host: authority, Method: r.Method, Target: r.RequestURI,
			Status: status, UserAgent: r.UserAgent(), Bytes: n,
			Conditional: r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "",
		})
	}
}

// serve answers the request and returns the status and the body bytes sent.
func (hd *changingHandler) serve(rw http.ResponseWriter, r *http.Request, authority string, now time.Time) (int, int64) {
	w := hd.web
	h := w.byAuthority[authority]
	if h == nil {
		return sendText(rw, r, http.StatusNotFound, "unknown host")
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rw.Header().Set("Allow", "GET, HEAD")
		return sendText(rw, r, http.StatusMethodNotAllowed, "method not allowed")
	}
	off := w.offset(now)
	target := canonicalTarget(r.URL.EscapedPath(), r.URL.RawQuery)
	switch target {
	case robotsPath:
		return send(rw, r, http.StatusOK, "text/plain; charset=utf-8", []byte(w.robotsTxt(h, off)))
	case changingSitemapPath:
		return send(rw, r, http.StatusOK, "application/xml", w.sitemap(h, off, now))
	case "/":
		return w.serveHome(rw, r, h, off)
	}
	h.grow(off)
	a, ok := h.parseAddress(target)
	if !ok {
		return sendText(rw, r, http.StatusNotFound, "no such page")
	}
	return w.servePage(rw, r, a, off, now)
}

// send writes a complete response (no body for HEAD) and returns its status
// and the body bytes sent.
func send(rw http.ResponseWriter, r *http.Request, status int, contentType string, body []byte) (int, int64) {
	rw.Header().Set("Content-Type", contentType)
	rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(status)
	if r.Method == http.MethodHead {
		return status, 0
	}
	n, _ := rw.Write(body) // the client may go away; what was sent is logged
	return status, int64(n)
}

func sendText(rw http.ResponseWriter, r *http.Request, status int, msg string) (int, int64) {
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	return send(rw, r, status, "text/plain; charset=utf-8", []byte(msg+"\n"))
}

// servePage answers for a content URL: 404 before it appears, 404 or 410
// once gone, 301 once moved, else its version at off, or 304.
func (w *ChangingWeb) servePage(rw http.ResponseWriter, r *http.Request, a address, off time.Duration, now time.Time) (int, int64) {
	v := a.version(off)
	switch v {
	case VersionAbsent:
		return sendText(rw, r, http.StatusNotFound, "no such page")
	case VersionGone:
		if a.c.goneStatus == http.StatusGone {
			return sendText(rw, r, http.StatusGone, "gone")
		}
		return sendText(rw, r, http.StatusNotFound, "no such page")
	case VersionMoved:
		rw.Header().Set("Location", address{c: a.c, moved: true}.target())
		rw.WriteHeader(http.StatusMovedPermanently)
		return http.StatusMovedPermanently, 0
	}
	etag, lastMod, honest := w.validators(a.c, v, now)
	if etag != "" {
		rw.Header().Set("ETag", etag)
	}
	if !lastMod.IsZero() {
		rw.Header().Set("Last-Modified", lastMod.UTC().Format(http.TimeFormat))
	}
	if honest && notModified(r, etag, lastMod) {
		rw.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified, 0
	}
	var buf bytes.Buffer
	w.renderPage(&buf, a, v)
	return send(rw, r, http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
}

// validators returns the ETag and Last-Modified that page c sends with
// version v at now (empty, zero: none), and whether they are true.
func (w *ChangingWeb) validators(c *content, v int, now time.Time) (etag string, lastMod time.Time, honest bool) {
	switch c.validators {
	case StrongETag:
		return `"` + c.tag + "-" + strconv.Itoa(v) + `"`, w.at(c.changeTime(v)), true
	case WeakETag:
		return `W/"` + c.tag + "-" + strconv.Itoa(v) + `"`, w.at(c.changeTime(v)), true
	case LyingLastModified:
		return "", now, false
	case LyingETag:
		return `"r` + strconv.FormatInt(w.lyingTags.Add(1), 36) + `"`, time.Time{}, false
	}
	return "", time.Time{}, false
}

// notModified evaluates a GET or HEAD's preconditions against the current
// representation's validators as RFC 9110 §13.2.2 orders them: If-None-Match
// when present (weak comparison; "*" matches any current representation),
// else If-Modified-Since, true when Last-Modified is no later.
func notModified(r *http.Request, etag string, lastMod time.Time) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 {
		return etagListMatches(strings.Join(inm, ","), etag)
	}
	ims := r.Header.Get("If-Modified-Since")
	if ims == "" || lastMod.IsZero() {
		return false
	}
	t, err := http.ParseTime(ims)
	if err != nil {
		return false // an invalid date is ignored (RFC 9110 §13.1.3)
	}
	return !lastMod.Truncate(time.Second).After(t)
}

// etagListMatches reports whether an If-None-Match field value matches etag
// by weak comparison. A malformed list matches nothing.
func etagListMatches(field, etag string) bool {
	if strings.TrimSpace(field) == "*" {
		return true
	}
	want, _, ok := nextETag(etag)
	if !ok {
		return false
	}
	for rest := field; ; {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" {
			return false
		}
		tag, after, ok := nextETag(rest)
		if !ok {
			return false
		}
		if tag == want {
			return true
		}
		rest = after
	}
}

// nextETag parses the entity-tag at the start of s and returns its opaque
// tag (quotes included, W/ dropped) and what follows it.
func nextETag(s string) (opaque, rest string, ok bool) {
	s = strings.TrimPrefix(s, "W/")
	if len(s) < 2 || s[0] != '"' {
		return "", "", false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", "", false
	}
	return s[:end+2], s[end+2:], true
}

// renderPage writes version v of a's content: the version is in the text,
// and the filler is rotated by it, so every version's digest differs.
func (w *ChangingWeb) renderPage(buf *bytes.Buffer, a address, v int) {
	title := html.EscapeString(fmt.Sprintf("%s page %d", a.c.host.authority, a.c.k))
	buf.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>")
	buf.WriteString(title)
	buf.WriteString("</title></head><body>\n<h1>")
	buf.WriteString(title)
	buf.WriteString("</h1>\n<p class=\"version\">version ")
	buf.WriteString(strconv.Itoa(v))
	buf.WriteString("</p>\n<p>")
	if n := len(w.filler); n > 0 {
		off := (a.c.k*131 + v*977) % n
		buf.WriteString(w.filler[off:])
		buf.WriteString(w.filler[:off])
	}
	buf.WriteString("</p>\n<p><a href=\"/\">home</a></p>\n</body></html>\n")
}

// bodySize is the length of version v of a's content.
func (w *ChangingWeb) bodySize(a address, v int) int64 {
	var buf bytes.Buffer
	w.renderPage(&buf, a, v)
	return int64(buf.Len())
}

// homeFirstMod is the Last-Modified of a home page before anything happens
// on its host.
const homeFirstMod = -time.Hour

// home returns what h's home page holds at off: the targets it links to
// (every page that has appeared and is not gone, a moved one by its new
// URL), its version (one more with every page that appears, goes or moves)
// and when that version appeared.
func (w *ChangingWeb) home(h *changingHost, off time.Duration) (targets []string, version int, lastMod time.Duration) {
	lastMod = homeFirstMod
	for _, c := range h.grow(off) {
		if c.k >= w.cfg.PagesPerHost {
			version++
			lastMod = max(lastMod, c.born)
		}
		a := address{c: c}
		if c.fate != FateNone && c.fateAt <= off {
			version++
			lastMod = max(lastMod, c.fateAt)
			if c.fate == FateGone {
				continue
			}
			a.moved = true
		}
		targets = append(targets, a.target())
	}
	return targets, version, lastMod
}

// serveHome answers for h's home page, with a true strong ETag and
// Last-Modified.
func (w *ChangingWeb) serveHome(rw http.ResponseWriter, r *http.Request, h *changingHost, off time.Duration) (int, int64) {
	targets, v, lm := w.home(h, off)
	etag := `"home-` + strconv.Itoa(v) + `"`
	lastMod := w.at(lm)
	rw.Header().Set("ETag", etag)
	rw.Header().Set("Last-Modified", lastMod.UTC().Format(http.TimeFormat))
	if notModified(r, etag, lastMod) {
		rw.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified, 0
	}
	var buf bytes.Buffer
	title := html.EscapeString(h.authority + " home")
	fmt.Fprintf(&buf, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n<h1>%s</h1>\n", title, title)
	fmt.Fprintf(&buf, "<p class=\"version\">version %d</p>\n<ul>\n", v)
	for _, t := range targets {
		fmt.Fprintf(&buf, "<li><a href=\"%s\">%s</a></li>\n", t, t)
	}
	buf.WriteString("</ul>\n</body></html>\n")
	return send(rw, r, http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
}

// robotsTxt is h's robots.txt at off.
func (w *ChangingWeb) robotsTxt(h *changingHost, off time.Duration) string {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	if d := w.cfg.CrawlDelay; d > 0 {
		b.WriteString(crawlDelayLine(d))
	}
	if w.robotsChanged(off) {
		b.WriteString("Disallow: " + w.cfg.RobotsDisallow + "\n")
	} else {
		b.WriteString("Disallow:\n")
	}
	b.WriteString("\nSitemap: http://" + h.authority + changingSitemapPath + "\n")
	return b.String()
}

// lastmodSpread is how far back a LastmodRandom sitemap's dates reach.
const lastmodSpread = 30 * 24 * time.Hour

// sitemap is h's sitemap at off: every page that has appeared and is not
// gone (a moved one by its new URL), with a <lastmod> as h.lastmod says.
func (w *ChangingWeb) sitemap(h *changingHost, off time.Duration, now time.Time) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for _, c := range h.grow(off) {
		a := address{c: c}
		v := a.version(off)
		switch v {
		case VersionGone:
			continue
		case VersionMoved:
			a.moved = true
			v = a.version(off)
		}
		var lastmod time.Time
		switch h.lastmod {
		case LastmodTrue:
			lastmod = w.at(c.changeTime(v))
		case LastmodNow:
			lastmod = now
		case LastmodRandom:
			r := mix64(w.cfg.Seed, uint64(h.index), uint64(c.k), uint64(now.Unix()))
			lastmod = now.Add(-time.Duration(r % uint64(lastmodSpread)))
		}
		fmt.Fprintf(&b, "<url><loc>%s</loc><lastmod>%s</lastmod></url>\n", a.url(), lastmod.UTC().Format(time.RFC3339))
	}
	b.WriteString("</urlset>\n")
	return b.Bytes()
}
