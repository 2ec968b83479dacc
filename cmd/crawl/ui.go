package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/heedcrawl/heed/crawler/live"
)

// listenUI takes the -ui address: loopback when it names no host.
func (c *crawlCmd) listenUI(context.Context) refusal {
	if c.f.ui == "" {
		return notRefused
	}
	ln, err := listenLoopback(c.f.ui)
	if err != nil {
		fmt.Fprintf(c.stderr, "crawl: -ui: %v\n", err)
		return badUsage
	}
	c.later(func() { ln.Close() }) // on the early returns; stopping the page closes it otherwise
	c.uiLn = ln
	if c.f.uiToken == "" {
		c.f.uiToken = live.NewToken()
	}
	return notRefused
}

// listenLoopback listens on addr, on 127.0.0.1 when addr names no host
// (":8080"): the live page is served to this machine unless told otherwise.
func listenLoopback(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.Listen("tcp", net.JoinHostPort(host, port))
}

// newLivePage makes the -ui page's handler, before Run: its recorder
// hears the crawl through hooks from their registration on. Its stop
// control stops the crawl as SIGTERM does, once crawl has set uiStop.
func (c *crawlCmd) newLivePage(metrics http.Handler) http.Handler {
	return live.NewHandler(live.NewRecorder(c.crawler), live.Options{
		Token:   c.f.uiToken,
		Metrics: metrics,
		Stop: func() {
			c.uiStopMu.Lock()
			stop := c.uiStop
			c.uiStopMu.Unlock()
			if stop != nil {
				stop()
			}
		},
	})
}

// stopFromPage is the live page's stop: the crawl's cancellation with the
// cause SIGTERM gives, so that it ends, and exits, as SIGTERM would have.
func stopFromPage(cancel context.CancelCauseFunc, stderr io.Writer) func() {
	return func() {
		cancel(signalled{syscall.SIGTERM})
		fmt.Fprintln(stderr, "\ncrawl: stop asked on the live page: finishing fetches in flight")
	}
}

// servePage serves h on ln until stop is called, and says where, with
// the controls' token.
func servePage(ln net.Listener, h http.Handler, token string, stderr io.Writer) (stop func()) {
	stop = serveOn(ln, h, "-ui", stderr)
	fmt.Fprintf(stderr, "crawl: live page on http://%s/#token=%s\n", ln.Addr(), token)
	return stop
}
