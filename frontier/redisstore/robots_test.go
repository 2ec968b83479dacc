package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/heedcrawl/heed/robots"
)

var _ robots.EntryKeeper = (*Store)(nil)

// Robots.txt entries are shared by the processes of a job and expire.
func TestRobotsEntries(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	a, b := mustNew(t, srv, job, Options{}), mustNew(t, srv, job, Options{})
	ctx := context.Background()
	if v, err := a.LoadEntry(ctx, "http://h.test"); err != nil || v != nil {
		t.Fatalf("LoadEntry before any save = %q, %v", v, err)
	}
	if err := a.SaveEntry(ctx, "http://h.test", []byte(`{"outcome":1}`)); err != nil {
		t.Fatal(err)
	}
	if v, err := b.LoadEntry(ctx, "http://h.test"); err != nil || string(v) != `{"outcome":1}` {
		t.Fatalf("another process reads %q, %v", v, err)
	}
	ttl, err := a.c.TTL(ctx, a.prefix+"robots:http://h.test").Result()
	if err != nil || ttl <= 24*time.Hour || ttl > robotsTTL {
		t.Errorf("entry TTL %v, %v; want about %v", ttl, err, robotsTTL)
	}
}
