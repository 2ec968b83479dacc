package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/crawler/live"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/redisstore"
	"github.com/heedcrawl/heed/internal/redistest"
)

// The job view of crawl status -ui lists every process of a -redis job,
// as their heartbeats in Redis say, with the job's counts.
func TestJobViewListsProcesses(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client, store := openJob(t, srv.URL(), "news")
	if err := store.SetMeta(ctx, metaSettings, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Add(ctx, []frontier.Item{{URL: "http://a.test/", Key: "a.test"}, {URL: "http://b.test/", Key: "b.test"}}, frontier.Limits{}); err != nil {
		t.Fatal(err)
	}
	now, err := client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for name, hb := range map[string]heartbeat{
		"alpha": {Seen: now, Started: now.Add(-time.Minute), Host: "m1", PID: 11, Pages: 30, Errors: 1, State: "crawling"},
		"beta":  {Seen: now.Add(-10 * time.Second), Started: now.Add(-2 * time.Minute), Host: "m2", PID: 22, Pages: 12, State: "crawling"},
		"gamma": {Seen: now.Add(-time.Hour), Started: now.Add(-2 * time.Hour), Host: "m3", PID: 33, Pages: 5, State: "done"},
	} {
		b, _ := json.Marshal(hb)
		if err := client.HSet(ctx, metaKey("news"), metaProcess+name, b).Err(); err != nil {
			t.Fatal(err)
		}
	}
	page := httptest.NewServer(jobView(client, store, "news", ""))
	defer page.Close()
	resp, err := http.Get(page.URL + "/api/job")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j live.Job
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		t.Fatal(err)
	}
	if j.Name != "news" || j.State != "running" || j.Counts.Queued != 2 || j.Pages != 47 || j.Errors != 1 {
		t.Errorf("job view %+v", j)
	}
	var names []string
	for _, p := range j.Processes {
		names = append(names, p.Name+"/"+p.State)
	}
	if len(names) != 3 || names[0] != "alpha/crawling" || names[1] != "beta/crawling" || names[2] != "gamma/done" {
		t.Errorf("processes %v, want alpha, beta, gamma, the last seen first", names)
	}
	for _, path := range []string{"/", "/job.js", "/app.css", "/frontier.js"} {
		r, err := http.Get(page.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 200 || r.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s = %d, CSP %q", path, r.StatusCode, r.Header.Get("Content-Security-Policy"))
		}
	}
}

// The job view of crawl status -ui has the frontier panel of the whole
// job: its queued URLs by due time, from its Store, the one overdue
// longest named as JSON text however built to break out of markup, and
// the Store asked at most every 5 s.
func TestJobViewFrontier(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client, store := openJob(t, srv.URL(), "news")
	hostile := `http://x.test/a?q="><img src=x onerror=alert(1)>`
	now := time.Now()
	items := []frontier.Item{
		{URL: hostile, Key: "x.test"}, // due at once
		{URL: "http://y.test/soon", Key: "y.test", Due: now.Add(30 * time.Second)},
		{URL: "http://y.test/later", Key: "y.test", Due: now.Add(10 * time.Minute)},
		{URL: "http://z.test/tomorrow", Key: "z.test", Due: now.Add(24 * time.Hour)},
	}
	if _, err := store.Add(ctx, items, frontier.Limits{}); err != nil {
		t.Fatal(err)
	}
	page := httptest.NewServer(jobView(client, store, "news", ""))
	defer page.Close()
	get := func() (live.Frontier, string) {
		t.Helper()
		resp, err := http.Get(page.URL + "/api/frontier")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var f live.Frontier
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &f) != nil {
			t.Fatalf("GET /api/frontier = %d %s", resp.StatusCode, body)
		}
		return f, string(body)
	}
	asked := time.Now()
	f, body := get()
	var counts []int
	for _, b := range f.Buckets {
		counts = append(counts, b.Count)
	}
	if want := []int{1, 1, 0, 1, 0, 0, 1}; !slices.Equal(counts, want) || f.Queued != 4 || f.Approximate || f.Error != "" {
		t.Errorf("frontier counts %v, want %v; %s", counts, want, body)
	}
	if f.OldestURL != hostile || f.OldestKey != "x.test" {
		t.Errorf("oldest %q of %q, want the hostile URL of x.test", f.OldestURL, f.OldestKey)
	}
	if strings.ContainsAny(body, "<>") {
		t.Errorf("markup characters unescaped in %s", body)
	}
	if _, err := store.Add(ctx, []frontier.Item{{URL: "http://w.test/", Key: "w.test"}}, frontier.Limits{}); err != nil {
		t.Fatal(err)
	}
	again, _ := get()
	if time.Since(asked) < 5*time.Second && (again.Queued != 4 || !again.At.Equal(f.At)) {
		t.Errorf("asked again within 5 s: queued %d at %v, want the answer of %v kept", again.Queued, again.At, f.At)
	}
}

// openJob opens job's Store on the Redis at url as crawl status does,
// closed at the test's end.
func openJob(t *testing.T, url, job string) (redis.UniversalClient, *redisstore.Store) {
	t.Helper()
	client, store, err := redisClient(context.Background(), url, job, redisstore.Options{}, new(redisLog))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		store.Close()
		client.Close()
	})
	return client, store
}

// beatsPast returns a condition that holds once each of procs, processes
// of job, has recorded two heartbeats since now (on Redis's clock): past
// the first it has read the job's marks (followPause comes after each
// beat), so past the second it has acted on them.
func beatsPast(t *testing.T, ctx context.Context, client redis.UniversalClient, job string, procs ...string) func() bool {
	t.Helper()
	now, err := client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	beats := map[string]map[time.Time]bool{}
	for _, p := range procs {
		beats[p] = map[time.Time]bool{}
	}
	return func() bool {
		hbs, err := heartbeats(ctx, client, job)
		if err != nil {
			t.Fatal(err)
		}
		for _, hb := range hbs {
			if seen := beats[hb.name]; seen != nil && hb.Seen.After(now) {
				seen[hb.Seen] = true
			}
		}
		for _, seen := range beats {
			if len(seen) < 2 {
				return false
			}
		}
		return true
	}
}

// The job view's pause pauses every process of the job within a
// heartbeat — the site gets no request — and its resume restarts them.
func TestJobPause(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	var hits []time.Time
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, time.Now())
		mu.Unlock()
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<title>%d</title><a href="/p/%d">next</a>`, n, n+1) // endless
	}))
	defer site.Close()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(hits) }
	since := func(at time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, h := range hits {
			if h.After(at) {
				n++
			}
		}
		return n
	}
	seeds := writeSeeds(t, site.URL+"/p/0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var out, errb bytes.Buffer
		done <- run(ctx, []string{"-redis", srv.URL(), "-job", "p", "-process", "w1", "-delay", "50ms", "-sitemaps=false",
			"-progress", "off", "-o", filepath.Join(t.TempDir(), "out.jsonl"), seeds}, strings.NewReader(""), &out, &errb)
	}()
	defer func() { cancel(); <-done }()
	client, store := openJob(t, srv.URL(), "p")
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil("the crawl to fetch", func() bool { return count() >= 3 })
	// The job view's control, as crawl status -ui wires it.
	page := httptest.NewServer(jobView(client, store, "p", "t"))
	defer page.Close()
	control := func(what string) {
		req, _ := http.NewRequest(http.MethodPost, page.URL+"/api/"+what, nil)
		req.Header.Set(live.TokenHeader, "t")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("POST /api/%s: %v %v", what, resp, err)
		}
		resp.Body.Close()
	}
	control("pause")
	// At its second heartbeat past the mark the process has read it, and
	// its fetch in flight then (one at a time: -per-host 1) has ended.
	waitUntil("two heartbeats after the pause", beatsPast(t, ctx, client, "p", "w1"))
	quiet := time.Now()
	time.Sleep(1500 * time.Millisecond) // the window in which no request may come
	if n := since(quiet); n != 0 {
		t.Fatalf("job paused, yet the site got %d requests", n)
	}
	resp, err := http.Get(page.URL + "/api/job")
	if err != nil {
		t.Fatal(err)
	}
	var j live.Job
	json.NewDecoder(resp.Body).Decode(&j)
	resp.Body.Close()
	if !j.Paused {
		t.Errorf("job view %+v does not say paused", j)
	}
	control("resume")
	resumed := time.Now()
	waitUntil("requests after resume", func() bool { return since(resumed) > 0 })
}
