package testweb_test

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/heedcrawl/heed/internal/testweb"
)

// A test serves a changing web on a clock of its own, lets a crawler revisit
// it, then judges how fresh the crawler kept its copy.
func ExampleNewChangingVirtual() {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	cfg := testweb.ChangingConfig{Hosts: 1, PagesPerHost: 3, Seed: 1, Clock: clock,
		MinChangeInterval: time.Hour, MaxChangeInterval: time.Hour, CrawlDelay: time.Second}
	v, err := testweb.NewChangingVirtual(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close()

	client := v.Client() // what the crawler under test would use
	get := func(url, etag string) (status int, newTag string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, ""
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		advance(time.Second) // the host's Crawl-delay
		return resp.StatusCode, resp.Header.Get("ETag")
	}
	get("http://h000.test/robots.txt", "")
	_, tag := get("http://h000.test/p/0", "")
	status, _ := get("http://h000.test/p/0", tag)
	fmt.Println("revisit:", status)

	r, err := v.Judge(testweb.FreshnessOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("changes %+v, conditional share %.0f, politeness violations %d\n",
		r.Changes, r.ConditionalShare, len(r.PolitenessViolations))
	// Output:
	// revisit: 304
	// changes {New:1 Changed:0 Unchanged:1 Gone:0 Moved:0}, conditional share 1, politeness violations 0
}
