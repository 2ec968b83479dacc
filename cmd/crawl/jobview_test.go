package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler/live"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
)

// The job view of crawl status -ui lists every process of a -redis job,
// as their heartbeats in Redis say, with the job's counts.
func TestJobViewListsProcesses(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client, store, err := redisClient(ctx, srv.URL(), "news", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	defer store.Close()
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
	page := httptest.NewServer(live.NewJobHandler(func(ctx context.Context) (live.Job, error) {
		j, err := readJob(ctx, client, store, "news")
		return j.view("news"), err
	}))
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
	for _, path := range []string{"/", "/job.js", "/app.css"} {
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
