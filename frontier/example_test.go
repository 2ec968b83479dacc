package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/heedcrawl/heed/frontier"
)

// A single worker crawling a toy site: links are canonicalised,
// deduplicated and kept to the seed's host, and Next reports ErrExhausted
// once nothing is queued or in flight.
func Example() {
	ctx := context.Background()
	fr := frontier.New(frontier.Config{MaxDepth: 1})
	if err := fr.AddSeed(ctx, "HTTP://Example.COM:80/./index.html#top"); err != nil {
		fmt.Println(err)
	}
	links := map[string][]string{
		"http://example.com/index.html": {
			"http://example.com/about",
			"http://EXAMPLE.com/index.html", // the seed again
			"mailto:info@example.com",
			"http://other.example/",
		},
		"http://example.com/about": {"http://example.com/team"}, // too deep
	}
	for {
		it, err := fr.Next(ctx)
		if errors.Is(err, frontier.ErrExhausted) {
			fmt.Println("crawl done")
			break
		}
		fmt.Printf("fetch %s (key %s, depth %d)\n", it.URL, it.Key, it.Depth)
		for _, link := range links[it.URL] {
			if err := fr.Add(ctx, it.Child(link)); err != nil {
				fmt.Printf("  skip %s: %v\n", link, err)
			}
		}
		fr.Done(it)
	}
	// Output:
	// fetch http://example.com/index.html (key example.com, depth 0)
	//   skip http://EXAMPLE.com/index.html: frontier: already seen
	//   skip mailto:info@example.com: frontier: scheme is not http or https: "mailto"
	//   skip http://other.example/: frontier: out of scope
	// fetch http://example.com/about (key example.com, depth 1)
	//   skip http://example.com/team: frontier: too deep
	// crawl done
}

func ExampleCanonical() {
	for _, raw := range []string{
		"HTTP://Bücher.Example:80/a/./b/../%7euser?q=a b#frag",
		"https://example.com:443?",
		"ftp://example.com/",
	} {
		s, err := frontier.Canonical(raw)
		fmt.Printf("%q %v\n", s, err)
	}
	// Output:
	// "http://xn--bcher-kva.example/a/~user?q=a%20b" <nil>
	// "https://example.com/" <nil>
	// "" frontier: scheme is not http or https: "ftp"
}

func ExampleCanonicalizer() {
	c := frontier.Canonicalizer{SortQuery: true, StripParam: frontier.TrackingParam}
	s, _ := c.Canonical("https://shop.example/item?utm_source=news&size=m&color=red&gclid=x")
	fmt.Println(s)
	base, _ := url.Parse("https://shop.example/catalogue/shoes/")
	s, _ = c.CanonicalRef(base, "../hats/?b=2&a=1#reviews")
	fmt.Println(s)
	// Output:
	// https://shop.example/item?color=red&size=m
	// https://shop.example/catalogue/hats/?a=1&b=2
}
