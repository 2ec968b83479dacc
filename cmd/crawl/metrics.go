package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// metricsShutdown bounds how long the end of a crawl waits for the requests
// in progress on its servers (scrapes, the live page's) before it closes
// their connections.
const metricsShutdown = 5 * time.Second

// serveMetrics serves h, a crawl's Prometheus metrics, at /metrics on ln
// until stop is called. A server that fails while the crawl goes on says
// so on stderr; the crawl is not stopped for it.
func serveMetrics(ln net.Listener, h http.Handler, stderr io.Writer) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	return serveOn(ln, mux, "-metrics", stderr)
}

// serveOn serves h on ln, the listener of the flag named flagName, until
// stop is called. A server that fails while the crawl goes on says so on
// stderr; the crawl is not stopped for it.
func serveOn(ln net.Listener, h http.Handler, flagName string, stderr io.Writer) (stop func()) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "crawl: %s: %v\n", flagName, err)
		}
	})
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), metricsShutdown)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		wg.Wait()
	}
}
