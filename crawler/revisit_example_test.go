package crawler_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

// A crawl that keeps its copy of a site fresh for an hour: every page is
// revisited between every 10 minutes and every day, conditionally where
// the site sent validators, and the handler hears what changed.
func ExampleWithRevisit() {
	c, err := crawler.New(crawler.WithRevisit(crawler.Revisit{Min: 10 * time.Minute, Max: 24 * time.Hour}))
	if err != nil {
		log.Fatal(err)
	}
	c.OnPage(func(ctx context.Context, p *crawler.Page) {
		switch p.Change {
		case crawler.ChangeNew, crawler.ChangeChanged:
			fmt.Println(p.Change, p.URL, len(p.Body), "bytes") // store the new version
		case crawler.ChangeUnchanged:
			// A 304 has no body: the copy held is current.
		case crawler.ChangeGone, crawler.ChangeMoved:
			fmt.Println(p.Change, p.URL) // drop the copy
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := c.Run(ctx, "https://example.com/"); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
	st, _ := c.Stats(context.Background())
	fmt.Println(st.Revisits, "revisits,", st.NotModified, "not modified")
}
