package runner_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heedcrawl/heed/bench/runner"
	"github.com/heedcrawl/heed/internal/testweb"
)

// Run colly on a virtual web and ask the server's log what it did.
func ExampleColly() {
	v, err := testweb.NewVirtual(testweb.Config{Hosts: 4, PagesPerHost: 20, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close()
	_, err = runner.Colly(context.Background(), runner.Options{
		Seeds: v.Web.Seeds(), Agent: "heedbench", UserAgent: "heedbench/1.0", Transport: v.Transport(),
		HeaderTimeout: time.Second, // the web's robots.txt that never answers costs this
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	truth, err := v.Truth()
	if err != nil {
		fmt.Println(err)
		return
	}
	r := truth.Analyze(v.Log.Entries(), testweb.AnalyzeOptions{})
	fmt.Println("sitemap-only pages fetched:", r.SitemapOnlyFetched)
	fmt.Println("fetched pages of the 503 host:", len(r.UnavailableHostFetches) > 0)
	// Output:
	// sitemap-only pages fetched: 0
	// fetched pages of the 503 host: true
}
