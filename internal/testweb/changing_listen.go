package testweb

import (
	"context"
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

// ChangingVirtual is a changing web served by name from one loopback
// httptest.Server, as Virtual serves the static one: every host
// ("h000.test", …, port 80) is reached through DialContext, Transport or
// Client. It is the form for crawler tests in this process.
type ChangingVirtual struct {
	Web    *ChangingWeb
	Log    *Log
	Server *httptest.Server
}

// NewChangingVirtual generates the changing web cfg describes, with
// VirtualAuthorities host names, and starts serving it. Call Close when
// done.
func NewChangingVirtual(cfg ChangingConfig) (*ChangingVirtual, error) {
	w, err := NewChanging(cfg, VirtualAuthorities(cfg.Hosts))
	if err != nil {
		return nil, err
	}
	v := &ChangingVirtual{Web: w, Log: &Log{}}
	v.Server = httptest.NewServer(w.Handler(v.Log))
	return v, nil
}

// DialContext connects to the server for any "host:80" address of the web
// and fails with ErrUnknownHost for every other address.
func (v *ChangingVirtual) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "80" || v.Web.byAuthority[strings.ToLower(host)] == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownHost, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", v.Server.Listener.Addr().String())
}

// Transport returns a new transport that reaches the web's hosts through
// DialContext and never uses a proxy.
func (v *ChangingVirtual) Transport() *http.Transport {
	return &http.Transport{
		DialContext:         v.DialContext,
		MaxIdleConns:        1000,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}
}

// Client returns a client using Transport that does not follow redirects:
// a moved page's 301 is the answer to judge.
func (v *ChangingVirtual) Client() *http.Client {
	return &http.Client{
		Transport:     v.Transport(),
		Timeout:       time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Judge is v.Web.Judge of the requests logged so far.
func (v *ChangingVirtual) Judge(opts FreshnessOptions) (*FreshnessReport, error) {
	return v.Web.Judge(v.Log.Entries(), opts)
}

// Close stops the server and waits for outstanding requests.
func (v *ChangingVirtual) Close() { v.Server.Close() }

// ChangingLoopback is a changing web whose hosts each listen on their own
// loopback address (LoopbackAddr), addressed by IP:port, as Loopback serves
// the static web: the form for crawlers in other processes and benchmarks.
type ChangingLoopback struct {
	Web *ChangingWeb
	Log *Log

	srv       *http.Server
	listeners []net.Listener
	wg        sync.WaitGroup
	closing   sync.Once
	closeErr  error
}

// ListenChangingLoopback generates the changing web cfg describes with one
// listener per host on LoopbackAddr(i):port (port 0 picks a free port per
// listener) and starts serving it. Server errors go to logger (nil discards
// them). Call Close when done.
func ListenChangingLoopback(cfg ChangingConfig, port int, logger *slog.Logger) (*ChangingLoopback, error) {
	if cfg.Hosts < 1 || cfg.Hosts > maxLoopbackHosts {
		return nil, fmt.Errorf("%w: %d hosts; loopback webs have 1 to %d", ErrConfig, cfg.Hosts, maxLoopbackHosts)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &ChangingLoopback{Log: &Log{}}
	authorities := make([]string, cfg.Hosts)
	for i := range authorities {
		ln, err := net.Listen("tcp4", net.JoinHostPort(LoopbackAddr(i), strconv.Itoa(port)))
		if err != nil {
			l.closeListeners()
			return nil, fmt.Errorf("testweb: listening for host %d of %d: %w", i, cfg.Hosts, err)
		}
		authorities[i] = ln.Addr().String()
		l.listeners = append(l.listeners, ln)
	}
	w, err := NewChanging(cfg, authorities)
	if err != nil {
		l.closeListeners()
		return nil, err
	}
	l.Web = w
	l.srv = serveAll(w.Handler(l.Log), l.listeners, &l.wg, logger)
	return l, nil
}

func (l *ChangingLoopback) closeListeners() {
	for _, ln := range l.listeners {
		ln.Close()
	}
}

// Judge is l.Web.Judge of the requests logged so far.
func (l *ChangingLoopback) Judge(opts FreshnessOptions) (*FreshnessReport, error) {
	return l.Web.Judge(l.Log.Entries(), opts)
}

// Close stops every listener, closes all connections and waits for the
// serving goroutines to end.
func (l *ChangingLoopback) Close() error {
	l.closing.Do(func() {
		l.closeErr = l.srv.Close()
		l.wg.Wait()
	})
	return l.closeErr
}
