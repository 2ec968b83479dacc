package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/fakeclock"
	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/heedcrawl/heed/robots/gate"
)

var (
	_ gate.EntryKeeper   = (*Store)(nil)
	_ gate.EntryReplacer = (*Store)(nil)
)

// ReplaceEntry replaces an entry only while it is the one given.
func TestRobotsReplaceEntry(t *testing.T) {
	srv := redistest.Start(t)
	s := mustNew(t, srv, newJob(t), Options{})
	ctx := context.Background()
	const a = "http://h.test"
	if err := s.SaveEntry(ctx, a, []byte("note")); err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceEntry(ctx, a, []byte("other"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.LoadEntry(ctx, a); err != nil || string(v) != "note" {
		t.Fatalf("after a replace of another entry: %q, %v; want note kept", v, err)
	}
	if err := s.ReplaceEntry(ctx, a, []byte("note"), []byte("before")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.LoadEntry(ctx, a); err != nil || string(v) != "before" {
		t.Fatalf("after a replace of the entry: %q, %v; want before", v, err)
	}
	if ttl, err := s.c.TTL(ctx, s.keyPrefix(t, a)+"robots:"+a).Result(); err != nil || ttl <= 24*time.Hour {
		t.Errorf("replaced entry TTL %v, %v", ttl, err)
	}
}

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
	ttl, err := a.c.TTL(ctx, a.keyPrefix(t, "http://h.test")+"robots:http://h.test").Result()
	if err != nil || ttl <= 24*time.Hour || ttl > robotsTTL {
		t.Errorf("entry TTL %v, %v; want about %v", ttl, err, robotsTTL)
	}
}

var _ frontier.ScopeStore = (*Store)(nil)

// The scope is one set for the job: a process sees the seeds another
// process brought, once it asks again.
func TestScopeSharedByProcesses(t *testing.T) {
	srv := redistest.Start(t)
	job := newJob(t)
	ctx := context.Background()
	clock := fakeclock.New(time.Now())
	fa := frontier.New(frontier.Config{Store: mustNew(t, srv, job, Options{}), Poll: time.Second, Clock: clock})
	fb := frontier.New(frontier.Config{Store: mustNew(t, srv, job, Options{}), Poll: time.Second, Clock: clock})
	if err := fa.AddSeed(ctx, "http://a.test/"); err != nil {
		t.Fatal(err)
	}
	if err := fb.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fb.AddSeed(ctx, "http://b.test/"); err != nil {
		t.Fatal(err)
	}
	// a's process started before b's seeds: it learns of b.test when a link
	// there turns up.
	clock.Advance(time.Second) // the scope is read again at most once per poll
	if err := fa.Add(ctx, frontier.Item{URL: "http://b.test/page", Depth: 1}); err != nil {
		t.Errorf("a link to the other process's seed host: %v", err)
	}
	if err := fb.Add(ctx, frontier.Item{URL: "http://a.test/page", Depth: 1}); err != nil {
		t.Errorf("a link to the first process's seed host: %v", err)
	}
	if err := fa.Add(ctx, frontier.Item{URL: "http://c.test/page", Depth: 1}); !errors.Is(err, frontier.ErrScope) {
		t.Errorf("a link outside every seed: %v, want ErrScope", err)
	}
}
