package testweb_test

import (
	"fmt"
	"io"

	"github.com/heedcrawl/heed/internal/testweb"
)

// A test serves a small web, lets a crawler loose on it through the
// Virtual's http.Client, then judges the crawl from the server's log.
func ExampleNewVirtual() {
	v, err := testweb.NewVirtual(testweb.Config{Hosts: 4, PagesPerHost: 20, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close()

	client := v.Client() // what the crawler under test would use
	for _, u := range []string{"http://h000.test/robots.txt", "http://h000.test/", "http://h000.test/private/5", "http://h000.test/p/%32"} {
		resp, err := client.Get(u)
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	truth, err := v.Truth()
	if err != nil {
		fmt.Println(err)
		return
	}
	r := truth.Analyze(v.Log.Entries(), testweb.AnalyzeOptions{})
	fmt.Printf("fetched %d of %d reachable pages\n", r.ReachableFetched, r.ReachableTotal)
	fmt.Println("robots violations:", r.RobotsViolations)
	fmt.Println(testweb.Canonical("HTTP://H000.test:80/p/%32?#top"))
	// Output:
	// fetched 2 of 60 reachable pages
	// robots violations: [http://h000.test/private/5]
	// http://h000.test/p/2 <nil>
}
