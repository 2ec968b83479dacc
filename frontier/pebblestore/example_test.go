package pebblestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/pebblestore"
)

// A crawl's state on disk: what was added and not done is still there
// after the Store is closed and opened again — or after the process died,
// for what the last sync made durable.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "crawl")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	s.Add(ctx, []frontier.Item{
		{URL: "https://example.com/", Key: "example.com"},
		{URL: "https://example.com/about", Key: "example.com"},
	}, frontier.Limits{})
	now := time.Now()
	c, _ := s.Claim(ctx, now, frontier.ClaimOptions{})
	// The page is fetched and written out; the Done records the output's
	// offset with it, in one step.
	s.Done(ctx, c.Lease, now, frontier.Outcome{Pace: c.Lease.Pace, Checkpoint: []byte("offset 1234")})
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	// A second process could not open it meanwhile: the directory is locked.
	s, err = pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	cp, _ := s.Checkpoint(ctx)
	fmt.Printf("resuming at %s\n", cp)
	refused, _ := s.Add(ctx, []frontier.Item{{URL: "https://example.com/", Key: "example.com"}}, frontier.Limits{})
	fmt.Println("the home page again:", refused[0])
	c, _ = s.Claim(ctx, time.Now(), frontier.ClaimOptions{})
	fmt.Println("next:", c.Lease.URL)
	// Output:
	// resuming at offset 1234
	// the home page again: frontier: already seen
	// next: https://example.com/about
}
