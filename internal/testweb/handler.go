package testweb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Entry is one request as the server saw it.
type Entry struct {
	Start     time.Time `json:"start"`  // when the request's headers were read
	End       time.Time `json:"end"`    // when the response was written
	Host      string    `json:"host"`   // the Host header, lower case
	Method    string    `json:"method"` // GET, HEAD, …
	Target    string    `json:"target"` // request target as sent: escaped path and raw query
	Status    int       `json:"status"` // 0 if the response never completed: the client went away, or the host cut it off
	UserAgent string    `json:"ua,omitempty"`
	// Conditional and Bytes are recorded by the changing web's handler
	// (NewChanging) only: whether the request carried If-None-Match or
	// If-Modified-Since, and how many body bytes the response sent.
	Conditional bool  `json:"cond,omitempty"`
	Bytes       int64 `json:"bytes,omitempty"`
}

// URL returns the absolute URL of the request as sent.
func (e Entry) URL() string { return "http://" + e.Host + e.Target }

// Log records requests. It is safe for concurrent use; the zero value is
// an empty log. It also remembers which pages of the hosts whose pages fail
// once (HostRateLimited, HostResetting) have been asked for, so Reset
// starts them over: each crawl judged on a fresh log meets the same web.
type Log struct {
	mu       sync.Mutex
	entries  []Entry
	attempts map[string]int // "authority target" → requests so far, for the hosts whose pages fail once
}

// attempt counts a request for key and returns how many came before it.
func (l *Log) attempt(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.attempts == nil {
		l.attempts = make(map[string]int)
	}
	n := l.attempts[key]
	l.attempts[key] = n + 1
	return n
}

func (l *Log) add(e Entry) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

// Entries returns a copy of the recorded requests ordered by Start.
func (l *Log) Entries() []Entry {
	l.mu.Lock()
	out := slices.Clone(l.entries)
	l.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Entry) int { return a.Start.Compare(b.Start) })
	return out
}

// Len returns the number of recorded requests.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Reset forgets every recorded request, and which pages were asked for: a
// page that fails once fails again on its next request.
func (l *Log) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.attempts = nil
	l.mu.Unlock()
}

// WriteLog writes entries as JSON Lines.
func WriteLog(w io.Writer, entries []Entry) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("testweb: writing log: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("testweb: writing log: %w", err)
	}
	return nil
}

// ReadLog reads entries written by WriteLog.
func ReadLog(r io.Reader) ([]Entry, error) {
	var out []Entry
	dec := json.NewDecoder(r)
	for {
		var e Entry
		err := dec.Decode(&e)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("testweb: reading log entry %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
}

// Handler returns the web's HTTP handler. It routes by the Host header,
// waits the configured latency, answers, and records every request in log
// (which may be nil). The robots.txt of HostRobotsHang is answered only when
// the client goes away (Virtual and Loopback also end it when closed); a
// request that reaches HostRefused through it has its connection closed
// unanswered.
func (w *Web) Handler(log *Log) http.Handler { return w.handler(log, nil) }

// handler returns the web's handler; hanging responses also end when quit
// is closed.
func (w *Web) handler(log *Log, quit <-chan struct{}) *handler {
	hd := &handler{web: w, log: log, attempts: log, quit: quit}
	if log == nil {
		hd.attempts = &Log{}
	}
	return hd
}

type handler struct {
	web      *Web
	log      *Log // nil: requests are not recorded
	attempts *Log // counts the requests for pages that fail once
	quit     <-chan struct{}
	mu       sync.Mutex     // orders hanging.Add before wait's Wait
	hanging  sync.WaitGroup // responses held open by HostRobotsHang
	onHang   func()         // tests: called as a response starts to hang
}

// wait waits for every hanging response to end; call it once quit is
// closed: no response starts to hang after that.
func (hd *handler) wait() {
	hd.mu.Lock()
	hd.mu.Unlock() //nolint:staticcheck // an empty critical section: every Add has happened
	hd.hanging.Wait()
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (hd *handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	authority := strings.TrimSuffix(strings.ToLower(r.Host), ":80")
	var finish func()
	status := hd.serve(rw, r, authority, &finish)
	if hd.log != nil {
		hd.log.add(Entry{
			Start: start, End: time.Now(), Host: authority, Method: r.Method,
			Target: r.RequestURI, Status: status, UserAgent: r.UserAgent(),
		})
	}
	if finish != nil {
		// A connection taken over is cut off only once the request is
		// logged: a client that sees the failure finds it in the log.
		finish()
	}
}

// serve answers the request and returns the status written. What must
// happen only once the request is logged it leaves in *finish.
func (hd *handler) serve(rw http.ResponseWriter, r *http.Request, authority string, finish *func()) int {
	if d := hd.web.cfg.Latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return 0
		}
	}
	h := hd.web.byAuthority[authority]
	if h == nil {
		return notFound(rw, "unknown host")
	}
	if h.kind == HostRefused {
		return refuse(rw, finish)
	}
	target := canonicalTarget(r.URL.EscapedPath(), r.URL.RawQuery)
	switch {
	case target == robotsPath:
		switch h.kind {
		case HostRobotsUnavailable:
			rw.Header().Set("Retry-After", strconv.Itoa(int(UnavailableRetryAfter/time.Second)))
			http.Error(rw, "robots.txt temporarily unavailable", http.StatusServiceUnavailable)
			return http.StatusServiceUnavailable
		case HostRobotsRetryDate:
			rw.Header().Set("Retry-After", time.Now().Add(UnavailableRetryAfter).UTC().Format(http.TimeFormat))
			http.Error(rw, "robots.txt temporarily unavailable", http.StatusServiceUnavailable)
			return http.StatusServiceUnavailable
		case HostRobotsHang:
			return hd.hang(rw, r, finish)
		case HostRobotsNotFound:
			return notFound(rw, "no robots.txt here")
		case HostRobotsRedirect:
			return redirect(rw, robotsMovedPath, http.StatusMovedPermanently)
		}
		return write(rw, "text/plain; charset=utf-8", []byte(h.robots))
	case target == robotsMovedPath && h.kind == HostRobotsRedirect:
		return write(rw, "text/plain; charset=utf-8", []byte(h.robots))
	case target == sitemapIndexPath && h.hasSitemaps():
		return write(rw, "application/xml", h.smIndex)
	case target == sitemapGzipPath && h.hasSitemaps():
		return write(rw, "application/gzip", h.smGzip)
	case target == sitemapTextPath && h.hasSitemaps():
		return write(rw, "text/plain; charset=utf-8", h.smText)
	case strings.HasPrefix(target, trapPrefix) && h.index == 0 && hd.web.cfg.Trap:
		return hd.serveTrap(rw, h, target)
	}
	p := h.byTarget[target]
	if p == nil {
		return notFound(rw, "no such page")
	}
	if h.kind.pagesFailOnce() && hd.attempts.attempt(authority+" "+target) == 0 {
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		buf.Reset()
		hd.web.render(buf, p)
		if h.kind == HostRateLimited {
			return rateLimited(rw)
		}
		return resetMidBody(rw, bytes.Clone(buf.Bytes()), finish)
	}
	switch p.kind {
	case kindRedirect:
		return redirect(rw, p.redirect.target, p.status)
	case kindPDF, kindPDFPage:
		return write(rw, "application/pdf", []byte("%PDF-1.4\n% heed testweb "+p.target+"\n%%EOF\n"))
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	hd.web.render(buf, p)
	return write(rw, "text/html; charset=utf-8", buf.Bytes())
}

// hang holds the response until the client goes away or the handler's
// quit channel closes; then it leaves dropping the connection unanswered to
// *finish, so no client ever reads an answer. It returns 0.
func (hd *handler) hang(rw http.ResponseWriter, r *http.Request, finish *func()) int {
	drop := func() {
		if conn, _, err := takeOver(rw); err == nil {
			*finish = func() { conn.Close() }
		}
	}
	hd.mu.Lock()
	select {
	case <-hd.quit: // nil: never
		hd.mu.Unlock()
		drop()
		return 0
	default:
	}
	hd.hanging.Add(1)
	hd.mu.Unlock()
	defer hd.hanging.Done()
	if hd.onHang != nil {
		hd.onHang()
	}
	select {
	case <-r.Context().Done():
	case <-hd.quit:
		drop()
	}
	return 0
}

// refuse takes the connection over and leaves closing it unanswered to
// *finish (where it cannot be taken over, it answers 502). It returns 0, or
// 502.
func refuse(rw http.ResponseWriter, finish *func()) int {
	conn, _, err := takeOver(rw)
	if err != nil {
		http.Error(rw, "testweb: connection refused", http.StatusBadGateway)
		return http.StatusBadGateway
	}
	*finish = func() { conn.Close() }
	return 0
}

// takeOver hijacks the connection of rw.
func takeOver(rw http.ResponseWriter) (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := rw.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("testweb: cannot take over the connection")
	}
	return hj.Hijack()
}

// rateLimited answers 429 with Retry-After RateLimitedRetryAfter.
func rateLimited(rw http.ResponseWriter) int {
	rw.Header().Set("Retry-After", strconv.Itoa(int(RateLimitedRetryAfter/time.Second)))
	http.Error(rw, "too many requests", http.StatusTooManyRequests)
	return http.StatusTooManyRequests
}

// resetMidBody takes the connection over and leaves to *finish sending the
// status line, headers announcing all of body, and its first half, then
// resetting the connection (TCP RST). It returns 0: the response never
// completes. Where the connection cannot be taken over (a ResponseRecorder),
// it writes the half body and returns 0 as well.
func resetMidBody(rw http.ResponseWriter, body []byte, finish *func()) int {
	half := body[:len(body)/2]
	conn, bw, err := takeOver(rw)
	if err != nil {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		rw.WriteHeader(http.StatusOK)
		rw.Write(half) //nolint:errcheck // nothing to do
		return 0
	}
	*finish = func() {
		defer conn.Close()
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n", len(body))
		bw.Write(half) //nolint:errcheck // the flush reports it
		if err := bw.Flush(); err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) //nolint:errcheck // without it the close is a FIN: still cut off mid-body
		}
	}
	return 0
}

func write(rw http.ResponseWriter, contentType string, body []byte) int {
	rw.Header().Set("Content-Type", contentType)
	rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(http.StatusOK)
	rw.Write(body) //nolint:errcheck // the client may go away; nothing to do
	return http.StatusOK
}

func notFound(rw http.ResponseWriter, msg string) int {
	http.Error(rw, msg, http.StatusNotFound)
	return http.StatusNotFound
}

func redirect(rw http.ResponseWriter, location string, status int) int {
	rw.Header().Set("Location", location)
	rw.WriteHeader(status)
	return status
}

func (w *Web) render(buf *bytes.Buffer, p *page) {
	title := fmt.Sprintf("%s page %d", p.host.authority, p.k)
	buf.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>")
	buf.WriteString(html.EscapeString(title))
	buf.WriteString("</title>\n")
	if p.base != "" {
		buf.WriteString(`<base href="` + html.EscapeString(p.base) + "\">\n")
	}
	switch {
	case p.metaNofollow:
		buf.WriteString(`<meta name="robots" content="nofollow">` + "\n")
	case p.noindex:
		buf.WriteString(`<meta name="robots" content="noindex">` + "\n")
	}
	buf.WriteString("</head><body>\n<h1>")
	buf.WriteString(html.EscapeString(title))
	buf.WriteString("</h1>\n<p>")
	if n := len(w.filler); n > 0 {
		off := (p.k * 131) % n
		buf.WriteString(w.filler[off:])
		buf.WriteString(w.filler[:off])
	}
	buf.WriteString("</p>\n<ul>\n")
	for i, l := range p.links {
		buf.WriteString(`<li><a href="`)
		buf.WriteString(html.EscapeString(l.href))
		buf.WriteByte('"')
		if !l.follow {
			if i%2 == 0 {
				buf.WriteString(` rel="nofollow"`)
			} else {
				buf.WriteString(` rel="external nofollow"`)
			}
		}
		buf.WriteString(">link ")
		buf.WriteString(strconv.Itoa(i))
		buf.WriteString("</a></li>\n")
	}
	buf.WriteString("</ul>\n</body></html>\n")
}

// serveTrap serves the infinite calendar: /cal/YYYY/MM links to the previous
// and the next month, forever.
func (hd *handler) serveTrap(rw http.ResponseWriter, h *host, target string) int {
	y, m, ok := parseMonth(strings.TrimPrefix(target, trapPrefix))
	if !ok {
		return notFound(rw, "no such month")
	}
	prevY, prevM := y, m-1
	if prevM == 0 {
		prevY, prevM = y-1, 12
	}
	nextY, nextM := y, m+1
	if nextM == 13 {
		nextY, nextM = y+1, 1
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "<!DOCTYPE html>\n<html><head><title>%s calendar %04d-%02d</title></head><body>\n", h.authority, y, m)
	if prevY >= 1 {
		fmt.Fprintf(&buf, "<a href=\"/cal/%04d/%02d\">previous</a>\n", prevY, prevM)
	}
	if nextY <= 9999 {
		fmt.Fprintf(&buf, "<a href=\"/cal/%04d/%02d\">next</a>\n", nextY, nextM)
	}
	buf.WriteString("<a href=\"/\">home</a>\n</body></html>\n")
	return write(rw, "text/html; charset=utf-8", buf.Bytes())
}

func parseMonth(s string) (year, month int, ok bool) {
	ys, ms, found := strings.Cut(s, "/")
	if !found || len(ys) != 4 || len(ms) != 2 {
		return 0, 0, false
	}
	y, err1 := strconv.Atoi(ys)
	m, err2 := strconv.Atoi(ms)
	if err1 != nil || err2 != nil || y < 1 || m < 1 || m > 12 {
		return 0, 0, false
	}
	return y, m, true
}
