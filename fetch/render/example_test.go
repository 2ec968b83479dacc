package render_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
)

// A Cache shared by the pages of a crawl fetches a script once, however
// many pages load it.
func ExampleCache() {
	fetches := 0
	pol := render.PolicyFunc(func(ctx context.Context, req render.Request) (*fetch.Page, error) {
		fetches++
		return &fetch.Page{URL: req.URL, Status: http.StatusOK, Body: []byte("app()"),
			Header: http.Header{"Cache-Control": {"max-age=3600"}}}, nil
	})
	var c render.Cache
	u, _ := url.Parse("https://example.com/app.js")
	for range 10 {
		if _, _, err := c.Fetch(context.Background(), render.Request{URL: u}, pol); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("fetched", fetches, "time(s) for 10 pages")
	// Output: fetched 1 time(s) for 10 pages
}

// A Renderer renders the pages a crawler fetched, every request the page
// makes answered by the crawler's Policy.
func ExampleRenderer() {
	r := &render.Renderer{Tabs: 2}
	defer r.Close()
	f := new(fetch.Fetcher)
	ctx := context.Background()
	doc, err := f.Fetch(ctx, fetch.Request{URL: "https://example.com/"})
	if err != nil {
		return
	}
	res, err := r.Render(ctx, doc, render.PolicyFunc(func(ctx context.Context, req render.Request) (*fetch.Page, error) {
		// Check robots.txt and wait for the host's pace here.
		return f.Fetch(ctx, fetch.Request{URL: req.URL.String(), Header: req.Header})
	}))
	if err != nil {
		return
	}
	fmt.Println(len(res.Page.Body) > 0, res.Requests, res.Refused)
}
