package testweb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
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
}

// NewVirtual generates the web described by cfg with VirtualAuthorities
// host names and starts serving it. Call Close when done.
func NewVirtual(cfg Config) (*Virtual, error) {
	w, err := New(cfg, VirtualAuthorities(cfg.Hosts))
	if err != nil {
		return nil, err
	}
	v := &Virtual{Web: w, Log: &Log{}}
	v.Server = httptest.NewServer(w.Handler(v.Log))
	return v, nil
}

// DialContext connects to the server for any "host:80" address of the web
// and fails with ErrUnknownHost for every other address.
func (v *Virtual) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "80" || v.Web.byAuthority[strings.ToLower(host)] == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownHost, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", v.Server.Listener.Addr().String())
}

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

// Close stops the server and waits for outstanding requests.
func (v *Virtual) Close() { v.Server.Close() }

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
	listeners []net.Listener
	wg        sync.WaitGroup
}

// ListenLoopback generates the web described by cfg with one listener per
// host on LoopbackAddr(i):port (port 0 picks a free port per listener) and
// starts serving it. Server errors such as failed accepts go to logger (nil
// discards them). Call Close when done.
func ListenLoopback(cfg Config, port int, logger *slog.Logger) (*Loopback, error) {
	if cfg.Hosts < 1 || cfg.Hosts > maxLoopbackHosts {
		return nil, fmt.Errorf("%w: %d hosts; loopback webs have 1 to %d", ErrConfig, cfg.Hosts, maxLoopbackHosts)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Loopback{Log: &Log{}}
	authorities := make([]string, cfg.Hosts)
	for i := range cfg.Hosts {
		ln, err := net.Listen("tcp4", net.JoinHostPort(LoopbackAddr(i), strconv.Itoa(port)))
		if err != nil {
			l.closeListeners()
			return nil, fmt.Errorf("testweb: listening for host %d of %d: %w", i, cfg.Hosts, err)
		}
		l.listeners = append(l.listeners, ln)
		authorities[i] = ln.Addr().String()
	}
	w, err := New(cfg, authorities)
	if err != nil {
		l.closeListeners()
		return nil, err
	}
	l.Web = w
	l.srv = &http.Server{
		Handler:           w.Handler(l.Log),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	for _, ln := range l.listeners {
		l.wg.Go(func() { l.srv.Serve(ln) }) //nolint:errcheck // Serve returns ErrServerClosed after Close
	}
	return l, nil
}

func (l *Loopback) closeListeners() {
	for _, ln := range l.listeners {
		ln.Close()
	}
}

// Close stops every listener, closes all connections and waits for the
// serving goroutines to end.
func (l *Loopback) Close() error {
	err := l.srv.Close()
	l.wg.Wait()
	return err
}
