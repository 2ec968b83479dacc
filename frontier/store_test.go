package frontier_test

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
)

var _ frontier.Store = (*frontier.MemoryStore)(nil)

func TestMemoryStoreQueue(t *testing.T) {
	var s frontier.MemoryStore
	if _, ok, err := s.Pop("a"); ok || err != nil {
		t.Fatalf("Pop of empty queue = %v, %v", ok, err)
	}
	// Interleave pushes, front pushes and pops so the ring wraps and grows
	// while wrapped; compare with a plain slice.
	var model []string
	n := 0
	for round := range 300 {
		for range round%7 + 1 {
			u := fmt.Sprintf("http://a/%d", n)
			n++
			if err := s.Push(frontier.Item{URL: u, Key: "a"}); err != nil {
				t.Fatal(err)
			}
			model = append(model, u)
		}
		if round%5 == 0 {
			u := fmt.Sprintf("http://a/front%d", round)
			if err := s.PushFront(frontier.Item{URL: u, Key: "a"}); err != nil {
				t.Fatal(err)
			}
			model = append([]string{u}, model...)
		}
		for range round % 6 {
			it, ok, err := s.Pop("a")
			if !ok || err != nil {
				t.Fatalf("Pop: %v, %v with %d queued", ok, err, len(model))
			}
			if it.URL != model[0] || it.Key != "a" {
				t.Fatalf("Pop = %q (key %q), want %q", it.URL, it.Key, model[0])
			}
			model = model[1:]
		}
		if s.Len("a") != len(model) {
			t.Fatalf("Len = %d, want %d", s.Len("a"), len(model))
		}
	}
	// Drain: the ring shrinks on the way and the queue disappears.
	for len(model) > 0 {
		it, ok, _ := s.Pop("a")
		if !ok || it.URL != model[0] {
			t.Fatalf("drain: Pop = %q, %v; want %q", it.URL, ok, model[0])
		}
		model = model[1:]
	}
	if _, ok, _ := s.Pop("a"); ok || s.Len("a") != 0 {
		t.Error("queue not empty after drain")
	}
	// Queues are independent.
	s.Push(frontier.Item{URL: "http://b/", Key: "b"})
	s.Push(frontier.Item{URL: "http://c/", Key: "c"})
	if it, _, _ := s.Pop("c"); it.URL != "http://c/" {
		t.Errorf("Pop(c) = %q", it.URL)
	}
}

func TestMemoryStoreFields(t *testing.T) {
	var s frontier.MemoryStore
	lastmod := time.Date(2024, 2, 29, 23, 59, 58, 999, time.FixedZone("Y", -7200))
	in := []frontier.Item{
		{URL: "http://a/1", Key: "k", Referrer: "http://r/", Depth: 1<<19 - 1, Kind: frontier.KindSitemap, Priority: 0.8, Lastmod: lastmod,
			SitemapDepth: 3, Retries: 2, Redirects: []string{"http://a/0", "http://a/00"}, BlockedSince: lastmod},
		{URL: "http://a/2", Key: "k", Priority: 1.5},                                        // clamped to 1
		{URL: "http://a/3", Key: "k", Priority: float32(math.NaN())},                        // dropped
		{URL: "http://a/4", Key: "k", Lastmod: time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC)}, // dropped
		{URL: "http://a/5", Key: "k", Priority: 0.123456, FromSitemap: true},
	}
	for _, it := range in {
		if err := s.Push(it); err != nil {
			t.Fatal(err)
		}
	}
	want := []frontier.Item{
		{URL: "http://a/1", Key: "k", Referrer: "http://r/", Depth: 1<<19 - 1, Kind: frontier.KindSitemap, Priority: 0.8,
			Lastmod: lastmod.Truncate(time.Second).UTC(), SitemapDepth: 3, Retries: 2,
			Redirects: []string{"http://a/0", "http://a/00"}, BlockedSince: lastmod},
		{URL: "http://a/2", Key: "k", Priority: 1},
		{URL: "http://a/3", Key: "k"},
		{URL: "http://a/4", Key: "k"},
		{URL: "http://a/5", Key: "k", Priority: 0.123, FromSitemap: true},
	}
	for _, w := range want {
		got, ok, err := s.Pop("k")
		if !ok || err != nil {
			t.Fatalf("Pop: %v, %v", ok, err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("Pop = %+v\n want %+v", got, w)
		}
	}
	if err := s.Push(frontier.Item{URL: "http://a/deep", Key: "k", Depth: 1 << 19}); err == nil {
		t.Error("depth 2^19 accepted")
	}
	if err := s.Push(frontier.Item{URL: "http://a/kind", Key: "k", Kind: 4}); err == nil {
		t.Error("kind 4 accepted")
	}
}

func TestMemoryStoreSeen(t *testing.T) {
	for _, exact := range []bool{false, true} {
		s := &frontier.MemoryStore{ExactSeen: exact}
		for i := range 1000 {
			u := fmt.Sprintf("http://a/%d", i)
			if isNew, err := s.MarkSeen(u); !isNew || err != nil {
				t.Fatalf("exact=%v: first MarkSeen(%q) = %v, %v", exact, u, isNew, err)
			}
		}
		for i := range 1000 {
			u := fmt.Sprintf("http://a/%d", i)
			if isNew, _ := s.MarkSeen(u); isNew {
				t.Fatalf("exact=%v: second MarkSeen(%q) = new", exact, u)
			}
		}
	}
}
