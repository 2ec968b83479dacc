package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/internal/redistest"
)

// TestRedisCluster crawls a job on a Redis Cluster named by go-redis's
// cluster URL, then asks for its status by the plain URL of one node: the
// crawl completes with each page once, and status finds the job.
func TestRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":  page(`<title>Home</title><a href="/a">a</a> <a href="/b">b</a>`),
		"/a": page("<title>A</title>"),
		"/b": page("<title>B</title>"),
	})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code, _, stderr := runCmd(t, "", "-redis", c.URL(), "-job", "cl", "-delay", "0s", "-sitemaps=false", "-progress", "off", "-o", out, writeSeeds(t, s.URL+"/"))
	if code != 0 {
		t.Fatalf("crawl on the cluster: exit %d, stderr:\n%s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/a", "/b"} {
		if n := strings.Count(string(data), `"url":"`+s.URL+p+`"`); n != 1 {
			t.Errorf("%s: %d records, want 1:\n%s", p, n, data)
		}
	}
	node := "redis://" + c.Nodes[2].Addr
	code, stdout, stderr := runCmd(t, "", "status", "-redis", node, "-job", "cl")
	if want := "job cl on " + node + ": complete\n"; code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("status by one node: exit %d, stdout:\n%s\nstderr %q; want %q", code, stdout, stderr, want)
	}
	code, _, stderr = runCmd(t, "", "status", "-redis", node, "-job", "nope")
	if want := "the jobs on " + node + ": cl\n"; code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("status of no job on a cluster: exit %d, stderr %q lacks %q", code, stderr, want)
	}
}
