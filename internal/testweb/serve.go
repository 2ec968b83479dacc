package testweb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrUnknownHost is returned (wrapped) by Virtual.DialContext for an address
// that is not a host of the web, so a crawler under test can never reach
// beyond loopback.
var ErrUnknownHost = errors.New("testweb: not a host of this web")

// Virtual is a web served by name from one loopback httptest.Server: every
// host ("h000.test", …, port 80) is reached through DialContext, Transport or
// Client, which send all of them to the one listener; the handler routes by
// the Host header. It is the form for end-to-end tests.
type Virtual struct {
	Web    *Web
	Log    *Log
	Server *httptest.Server

	hd      *handler
	quit    chan struct{}
	closing sync.Once
}

// NewVirtual generates the web described by cfg with VirtualAuthorities
// host names (New names the broken hosts after the first cfg.Hosts) and
// starts serving it. Call Close when done.
func NewVirtual(cfg Config) (*Virtual, error) {
	w, err := New(cfg, VirtualAuthorities(cfg.Hosts))
	if err != nil {
		return nil, err
	}
	v := &Virtual{Web: w, Log: &Log{}, quit: make(chan struct{})}
	v.hd = w.handler(v.Log, v.quit)
	v.Server = httptest.NewServer(v.hd)
	return v, nil
}

// DialContext connects to the server for any "host:80" address of the web
// and fails with ErrUnknownHost for every other address. It refuses the
// HostRefused host as a server without a listener would: the error wraps
// syscall.ECONNREFUSED.
func (v *Virtual) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialWeb(ctx, v.Web, network, addr, v.Server.Listener.Addr().String())
}

// dialWeb connects to target for "host:80" of a host of w, refusing the
// HostRefused host; other addresses fail with ErrUnknownHost.
func dialWeb(ctx context.Context, w *Web, network, addr, target string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	h := w.byAuthority[strings.ToLower(host)]
	if err != nil || port != "80" || h == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownHost, addr)
	}
	if h.kind == HostRefused {
		return nil, refused(network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

// refused is the error a dial to a port nothing listens on returns.
func refused(network, addr string) error {
	return &net.OpError{Op: "dial", Net: network, Addr: stringAddr{network, addr},
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// stringAddr is a net.Addr given as strings.
type stringAddr struct{ network, addr string }

func (a stringAddr) Network() string { return a.network }
func (a stringAddr) String() string  { return a.addr }

// Transport returns a new transport that reaches the web's hosts through
// DialContext and never uses a proxy.
func (v *Virtual) Transport() *http.Transport {
	return &http.Transport{
		DialContext:         v.DialContext,
		MaxIdleConns:        1000,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}
}

// Client returns a client using Transport with the default redirect policy.
func (v *Virtual) Client() *http.Client {
	return &http.Client{Transport: v.Transport(), Timeout: time.Minute}
}

// Truth is v.Web.Truth with the default options: every home page is a seed,
// all hosts are in scope, sitemaps are read.
func (v *Virtual) Truth() (*Truth, error) { return v.Web.Truth(TruthOptions{}) }

// Close stops the server, ends the responses that hang, and waits for
// outstanding requests.
func (v *Virtual) Close() {
	v.closing.Do(func() {
		close(v.quit)
		v.Server.Close()
		v.hd.wait()
	})
}

// maxLoopbackHosts is how many hosts LoopbackAddr can number.
const maxLoopbackHosts = 254 * 250

// LoopbackAddr returns the IPv4 loopback address of the i-th host of a
// Loopback web: 127.0.1.1, 127.0.1.2, … 127.0.1.250, 127.0.2.1, … Linux
// routes all of 127.0.0.0/8 to the loopback interface without aliases.
func LoopbackAddr(i int) string {
	return "127.0." + strconv.Itoa(1+i/250) + "." + strconv.Itoa(1+i%250)
}

// Loopback is a web whose hosts each listen on their own loopback address
// (LoopbackAddr) and are addressed by IP:port, so no name resolution is
// involved and a crawler in another process can reach them. It is the form
// for benchmarks.
type Loopback struct {
	Web *Web
	Log *Log

	srv       *http.Server
	hd        *handler
	quit      chan struct{}
	listeners []net.Listener
	wg        sync.WaitGroup
	closing   sync.Once
	closeErr  error
}

// ListenLoopback generates the web described by cfg with one listener per
// host on LoopbackAddr(i):port (port 0 picks a free port per listener) and
// starts serving it; the HostRefused host's address has no listener (it is
// listened on once, to check it is free and learn a port, and closed).
// Server errors such as failed accepts go to logger (nil discards them).
// Call Close when done.
func ListenLoopback(cfg Config, port int, logger *slog.Logger) (*Loopback, error) {
	total := cfg.TotalHosts()
	if cfg.Hosts < 1 || total > maxLoopbackHosts {
		return nil, fmt.Errorf("%w: %d hosts; loopback webs have 1 to %d", ErrConfig, total, maxLoopbackHosts)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Loopback{Log: &Log{}, quit: make(chan struct{})}
	authorities := make([]string, total)
	for i := range total {
		ln, err := net.Listen("tcp4", net.JoinHostPort(LoopbackAddr(i), strconv.Itoa(port)))
		if err != nil {
			l.closeListeners()
			return nil, fmt.Errorf("testweb: listening for host %d of %d: %w", i, total, err)
		}
		authorities[i] = ln.Addr().String()
		if cfg.hasBroken() && i == cfg.Hosts+int(HostRefused-HostRobotsRetryDate) {
			ln.Close() // HostRefused: nothing listens there
			continue
		}
		l.listeners = append(l.listeners, ln)
	}
	w, err := New(cfg, authorities)
	if err != nil {
		l.closeListeners()
		return nil, err
	}
	if h, ok := w.HostOfKind(HostRefused); ok && h.Authority != authorities[cfg.Hosts+int(HostRefused-HostRobotsRetryDate)] {
		l.closeListeners()
		return nil, fmt.Errorf("testweb: internal error: the refused host is %s", h.Authority)
	}
	l.Web = w
	l.hd = w.handler(l.Log, l.quit)
	l.srv = serveAll(l.hd, l.listeners, &l.wg, logger)
	return l, nil
}

// serveAll serves h on every listener, each in a goroutine of wg, with
// one server, which it returns for Close.
func serveAll(h http.Handler, listeners []net.Listener, wg *sync.WaitGroup, logger *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	for _, ln := range listeners {
		wg.Go(func() { srv.Serve(ln) }) //nolint:errcheck // Serve returns ErrServerClosed after Close
	}
	return srv
}

func (l *Loopback) closeListeners() {
	for _, ln := range l.listeners {
		ln.Close()
	}
}

// Close stops every listener, closes all connections, ends the responses
// that hang and waits for the serving goroutines to end.
func (l *Loopback) Close() error {
	l.closing.Do(func() {
		close(l.quit)
		l.closeErr = l.srv.Close()
		l.wg.Wait()
		l.hd.wait()
	})
	return l.closeErr
}
