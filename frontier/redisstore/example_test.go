package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/redisstore"
)

// One process of a distributed crawl: every process runs this with the
// same job name and its own checkpoint name. The crawl ends for all of
// them when nothing is queued and no process holds a lease. (A crawler
// takes the Store with crawler.WithStore, and polls it by PollInterval
// itself.)
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	host, _ := os.Hostname()
	store, err := redisstore.New(client, "news", redisstore.Options{Checkpoint: host})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close() // gives back the leases this process still holds

	fr := frontier.New(frontier.Config{
		Store: store,
		Poll:  store.PollInterval(), // other processes change the queues
		Claim: frontier.ClaimOptions{Lease: 2 * time.Minute},
	})
	if err := fr.Resume(ctx); err != nil { // the seeds' scope, if the job ran before
		fmt.Println(err)
		return
	}
	if err := fr.AddSeed(ctx, "https://example.com/"); err != nil && !errors.Is(err, frontier.ErrSeen) {
		fmt.Println(err)
		return
	}
	for {
		lease, err := fr.Next(ctx)
		if errors.Is(err, frontier.ErrExhausted) {
			break
		}
		if err != nil {
			fmt.Println(err) // Redis failed beyond Options.RetryFor: stop
			return
		}
		if !time.Now().Before(lease.Expires) {
			continue // never fetch on an expired lease; Redis takes it back
		}
		fmt.Println("fetch", lease.URL)
		// ... fetch, AddAll the links ...
		if err := fr.Done(ctx, lease, frontier.Outcome{Pace: lease.Pace, Rest: time.Second}); err != nil {
			fmt.Println(err) // ErrLeaseLost: it expired, someone else has it
		}
	}
}
