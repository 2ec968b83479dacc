package harness

import (
	"io"
	"net"
	"net/http"
	"time"
)

// heedUIArgs serve the crawl's live page (-ui) on a free loopback port,
// and start watching it as a browser showing it would: the page once, then
// every two seconds its status, chart, last fetches, errors, frontier and a
// page of the host table, until the crawl's server goes away.
func heedUIArgs(w Workload, env RunEnv) []string {
	addr := "127.0.0.1:0"
	if ln, err := net.Listen("tcp", addr); err == nil {
		addr = ln.Addr().String()
		ln.Close()
	}
	go watchLivePage("http://" + addr)
	return append(heedFlags(w, env), "-ui", addr, env.SeedsFile)
}

// livePagePeriod is how often the live page asks for its data.
const livePagePeriod = 2 * time.Second

// watchLivePage polls base as the live page does until it stops answering
// (after answering once), or for an hour at most.
func watchLivePage(base string) {
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) bool {
		resp, err := client.Get(base + path)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return true
	}
	up := false
	deadline := time.Now().Add(time.Hour)
	for time.Now().Before(deadline) {
		if !up {
			up = get("/") && get("/app.js") && get("/app.css")
			if !up {
				time.Sleep(50 * time.Millisecond) // the crawl's server is not up yet
				continue
			}
		}
		for _, p := range []string{"/api/status", "/api/chart", "/api/log", "/api/errors", "/api/frontier", "/api/hosts?sort=key&offset=0&limit=50"} {
			if !get(p) {
				return // the crawl ended
			}
		}
		time.Sleep(livePagePeriod)
	}
}
