package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

// A worker crawling a toy site. Next hands out a lease of an item whose
// host may be fetched now; the worker fetches it, adds its links in one
// AddAll (canonicalised, deduplicated and kept to the seed's host), and
// ends the lease with Done, saying how long the host must now rest (a
// crawler asks package ratelimit). Next reports ErrExhausted once nothing
// is queued or leased.
func Example() {
	ctx := context.Background()
	fr := frontier.New(frontier.Config{MaxDepth: 1})
	if err := fr.AddSeed(ctx, "HTTP://Example.COM:80/./index.html#top"); err != nil {
		fmt.Println(err)
	}
	site := map[string][]string{
		"http://example.com/index.html": {
			"http://example.com/about",
			"http://EXAMPLE.com/index.html", // the seed again
			"mailto:info@example.com",
			"http://other.example/",
		},
		"http://example.com/about": {"http://example.com/team"}, // too deep
	}
	for {
		lease, err := fr.Next(ctx)
		if errors.Is(err, frontier.ErrExhausted) {
			fmt.Println("crawl done")
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("fetch %s (key %s, depth %d)\n", lease.URL, lease.Key, lease.Depth)
		var links []frontier.Item
		for _, link := range site[lease.URL] {
			links = append(links, lease.Child(link))
		}
		refused, err := fr.AddAll(ctx, links)
		if err != nil {
			fmt.Println(err) // the Store failed
			return
		}
		for i, err := range refused {
			if err != nil {
				fmt.Printf("  skip %s: %v\n", links[i].URL, err)
			}
		}
		// The host's pacing state travels with the lease; the policy
		// updates it and says how long the host rests from now.
		host, rest := lease.Pace, 10*time.Millisecond
		if err := fr.Done(ctx, lease, frontier.Outcome{Pace: host, Rest: rest}); err != nil {
			fmt.Println(err)
		}
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
	c := frontier.Canonicalizer{StripParam: frontier.TrackingParam}
	s, _ := c.Canonical("https://shop.example/item?utm_source=news&size=m&color=red&gclid=x")
	fmt.Println(s)
	base, _ := url.Parse("https://shop.example/catalogue/shoes/")
	s, _ = c.CanonicalRef(base, "../hats/?b=2&a=1#reviews")
	fmt.Println(s)
	// Output:
	// https://shop.example/item?color=red&size=m
	// https://shop.example/catalogue/hats/?a=1&b=2
}

// A crawl stopped and started again on the same Store carries on where it
// was: its queue, its seen-set and, after Resume, its seeds' scope. With
// MemoryStore that needs the same process; pebblestore keeps it on disk.
func ExampleFrontier_Resume() {
	ctx := context.Background()
	store := new(frontier.MemoryStore)
	first := frontier.New(frontier.Config{Store: store})
	first.AddSeed(ctx, "http://example.com/")
	lease, _ := first.Next(ctx)
	first.Add(ctx, lease.Child("http://example.com/b"))
	first.Done(ctx, lease, frontier.Outcome{Pace: lease.Pace})
	first.Close() // the process stops

	again := frontier.New(frontier.Config{Store: store})
	if err := again.Resume(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(again.Add(ctx, frontier.Item{URL: "http://example.com/c"}))
	fmt.Println(again.Add(ctx, frontier.Item{URL: "http://example.com/b"}))
	for {
		lease, err := again.Next(ctx)
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Println("fetch", lease.URL)
		again.Done(ctx, lease, frontier.Outcome{Pace: lease.Pace})
	}
	// Output:
	// <nil>
	// frontier: already seen
	// fetch http://example.com/b
	// fetch http://example.com/c
	// frontier: exhausted
}
