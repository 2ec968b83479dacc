package live

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

//go:embed assets/index.html assets/app.js assets/app.css assets/job.html assets/job.js assets/frontier.js
var assets embed.FS

// TokenHeader is the request header that carries the control token.
const TokenHeader = "X-Heed-Token"

// apiTimeout bounds what one API request asks of the crawler (its Store
// may be remote).
const apiTimeout = 2 * time.Second

// Options configure a Handler.
type Options struct {
	// Token is the secret controls need; empty disables the controls.
	// NewToken makes one.
	Token string
	// Stop stops the crawl gracefully, as SIGTERM would; nil disables
	// the stop control.
	Stop func()
	// Metrics, if not nil, is served at /metrics (a crawl's Prometheus
	// handler, package crawler/metrics).
	Metrics http.Handler
}

// Handler serves the live page of the crawl a Recorder records, its JSON
// and its controls. Make one with NewHandler.
type Handler struct {
	r        *Recorder
	opt      Options
	mux      *http.ServeMux
	stopping atomic.Bool
}

// NewHandler returns the Handler of r's crawl.
func NewHandler(r *Recorder, opt Options) *Handler {
	h := &Handler{r: r, opt: opt, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", asset("assets/index.html", "text/html; charset=utf-8"))
	h.mux.HandleFunc("GET /app.js", asset("assets/app.js", "text/javascript; charset=utf-8"))
	h.mux.HandleFunc("GET /app.css", asset("assets/app.css", "text/css; charset=utf-8"))
	h.mux.HandleFunc("GET /frontier.js", asset("assets/frontier.js", "text/javascript; charset=utf-8"))
	h.mux.HandleFunc("GET /api/status", h.status)
	h.mux.HandleFunc("GET /api/chart", h.chart)
	h.mux.HandleFunc("GET /api/hosts", h.hosts)
	h.mux.HandleFunc("GET /api/host", h.host)
	h.mux.HandleFunc("GET /api/frontier", serveFrontier(h.r.Frontier))
	h.mux.HandleFunc("GET /api/errors", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, h.r.Errors()) })
	h.mux.HandleFunc("GET /api/log", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, h.r.Log()) })
	h.mux.HandleFunc("POST /api/pause", h.control(func() { h.r.c.Pause() }))
	h.mux.HandleFunc("POST /api/resume", h.control(func() { h.r.c.Resume() }))
	if opt.Stop != nil {
		h.mux.HandleFunc("POST /api/stop", h.control(func() {
			if !h.stopping.Swap(true) {
				opt.Stop()
			}
		}))
	}
	if opt.Metrics != nil {
		h.mux.Handle("GET /metrics", opt.Metrics)
	}
	return h
}

// NewToken returns a random control token.
func NewToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ServeHTTP serves the page, its API and its controls.
func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	setSecurityHeaders(w)
	h.mux.ServeHTTP(w, req)
}

// setSecurityHeaders says the page runs no inline script and loads nothing
// from elsewhere: whatever crawled text slipped into it could not run nor
// call out; nor may another site frame it.
func setSecurityHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

func asset(name, ctype string) http.HandlerFunc {
	body, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: cannot happen
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(body)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

func (h *Handler) status(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), apiTimeout)
	defer cancel()
	writeJSON(w, h.r.Status(ctx, h.stopping.Load()))
}

func (h *Handler) chart(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), apiTimeout)
	defer cancel()
	st, _ := h.r.c.Stats(ctx)
	writeJSON(w, h.r.Chart(st.Started))
}

func (h *Handler) hosts(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	atoi := func(name string) int { n, _ := strconv.Atoi(q.Get(name)); return n }
	ctx, cancel := context.WithTimeout(req.Context(), apiTimeout)
	defer cancel()
	writeJSON(w, h.r.Hosts(ctx, HostQuery{
		Search: q.Get("q"), State: q.Get("state"), Sort: q.Get("sort"), Desc: q.Get("desc") == "1",
		Offset: atoi("offset"), Limit: atoi("limit"),
	}))
}

func (h *Handler) host(w http.ResponseWriter, req *http.Request) {
	row, journal, ok := h.r.Journal(req.URL.Query().Get("key"))
	if !ok {
		http.Error(w, "no such host", http.StatusNotFound)
		return
	}
	writeJSON(w, struct {
		Host    HostRow        `json:"host"`
		Journal []JournalEvent `json:"journal"`
	}{row, journal})
}

// Errors of the controls.
var (
	// ErrNoToken: the Handler has no token, so no control is allowed.
	ErrNoToken = errors.New("live: controls disabled (no token)")
	// ErrBadToken: the request's X-Heed-Token is missing or wrong.
	ErrBadToken = errors.New("live: missing or wrong token")
	// ErrCrossSite: the request came from another site's page.
	ErrCrossSite = errors.New("live: cross-site request refused")
)

// control wraps do in the checks every control passes (see allowed).
func (h *Handler) control(do func()) http.HandlerFunc {
	return control(h.opt.Token, func(context.Context) error { do(); return nil })
}

// control wraps do in the checks every control passes: the token, and a
// request from the page's own origin. do's error is the server's.
func control(token string, do func(ctx context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if err := allowed(req, token); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), apiTimeout)
		defer cancel()
		if err := do(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// allowed checks a control request: the token must match (in constant
// time), and a browser's request must come from this origin — by
// Sec-Fetch-Site, or Origin where a browser sends no Sec-Fetch-Site.
// Scripts (curl) send neither and are judged by the token alone.
func allowed(req *http.Request, token string) error {
	if token == "" {
		return ErrNoToken
	}
	if subtle.ConstantTimeCompare([]byte(req.Header.Get(TokenHeader)), []byte(token)) != 1 {
		return ErrBadToken
	}
	switch req.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return ErrCrossSite
	}
	if o := req.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != req.Host {
			return ErrCrossSite
		}
	}
	return nil
}
