package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/redisstore"
	"github.com/heedcrawl/heed/internal/redistest"
)

// TestStatusNoSuchJob asks for the status of jobs a real Redis does not
// hold: exit 2 (a name given wrong, as a seeds file that does not exist),
// nothing on stdout, and on stderr the job and the Redis named, the jobs
// the Redis does hold, and how to start the job. Asking writes nothing to
// Redis.
func TestStatusNoSuchJob(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	url := srv.URL()
	noJob := func(job, at string) string {
		return "crawl status: there is no job " + job + " on " + at + ": no process has started a job of that name there\n"
	}
	toStart := func(job, at string) string {
		return "crawl status: to start it: crawl -redis " + at + " -job " + job + " seeds.txt\n"
	}
	check := func(what string, args []string, want string) {
		t.Helper()
		code, stdout, stderr := runCmd(t, "", append([]string{"status"}, args...)...)
		if code != 2 || stdout != "" || stderr != want {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant exit 2, no stdout, stderr:\n%s", what, code, stdout, stderr, want)
		}
	}

	check("a Redis without jobs", []string{"-redis", url, "-job", "never-used"},
		noJob("never-used", url)+
			"crawl status: "+url+" holds no job at all (database 0): is it the right server and database?\n"+
			toStart("never-used", url))
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("after crawl status of no job, Redis holds %d keys (%v); want none", n, err)
	}

	// A job crawl started (its settings in its meta hash), and one a
	// program queued a URL in through the Store alone (its counters).
	client, store, err := redisClient(context.Background(), url, "news", redisstore.Options{}, new(redisLog))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetMeta(ctx, metaSettings, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	store.Close()
	client.Close()
	client, store, err = redisClient(context.Background(), url, "library", redisstore.Options{}, new(redisLog))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Add(ctx, []frontier.Item{{URL: "http://a.test/", Key: "a.test"}}, frontier.Limits{}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	client.Close()
	keys, err := rdb.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}

	check("a Redis with two other jobs", []string{"-redis", url, "-job", "newz"},
		noJob("newz", url)+
			"crawl status: the jobs on "+url+": library, news\n"+
			toStart("newz", url))
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != keys {
		t.Errorf("after crawl status of no job, Redis holds %d keys (%v); want the %d it held", n, err, keys)
	}
	for _, job := range []string{"news", "library"} {
		if code, _, stderr := runCmd(t, "", "status", "-redis", url, "-job", job); code != 0 || stderr != "" {
			t.Errorf("status of job %s, which exists: exit %d, stderr %q", job, code, stderr)
		}
	}

	// A name and a URL a shell would split or expand are quoted in the
	// command suggested.
	odd := url + "/0?max_retries=-1&protocol=3"
	check("a name to quote", []string{"-redis", odd, "-job", "Bob's crawl"},
		noJob("Bob's crawl", odd)+
			"crawl status: the jobs on "+odd+": library, news\n"+
			"crawl status: to start it: crawl -redis '"+odd+"' -job 'Bob'\\''s crawl' seeds.txt\n")

	// The same server, another database: the jobs are not there.
	db3 := url + "/3"
	check("another database", []string{"-redis", db3, "-job", "news"},
		noJob("news", db3)+
			"crawl status: "+db3+" holds no job at all (database 3): is it the right server and database?\n"+
			toStart("news", db3))

	// Many jobs: the first listJobsMax names, then an ellipsis.
	var names []string
	for i := range listJobsMax + 5 {
		name := fmt.Sprintf("job%02d", i)
		names = append(names, name)
		if err := rdb.HSet(ctx, metaKey(name), metaSettings, "{}").Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Sorted, job00 … job24 come before library and news.
	check("many jobs", []string{"-redis", url, "-job", "nope"},
		noJob("nope", url)+
			"crawl status: the jobs on "+url+": "+strings.Join(names[:listJobsMax], ", ")+", …\n"+
			toStart("nope", url))
}
