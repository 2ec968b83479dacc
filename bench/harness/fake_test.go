package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// fakeCrawlerArg as the test binary's first argument makes it a fake
// crawler (see fakeCrawler), so that the harness's plumbing of processes,
// Redis and judgement can be tested without building heed.
const fakeCrawlerArg = "-heedbench.fakecrawler"

// fakeCrawlerArgs calls the test binary as a fake crawler.
func fakeCrawlerArgs(_ Workload, env RunEnv) []string {
	return []string{fakeCrawlerArg, env.SeedsFile, strconv.Itoa(env.Proc), env.RedisURL, env.Job}
}

// fakeCrawler fetches its share of the seeds — process p of fakeProcs takes
// those whose index is p-1 modulo fakeProcs — and, given a Redis, runs one
// script there that increments the job's counter.
func fakeCrawler(args []string) int {
	if len(args) == 6 {
		return fakeRevisitor(args)
	}
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "fake crawler: want seeds, proc, redis URL, job")
		return 2
	}
	proc, err := strconv.Atoi(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake crawler:", err)
		return 2
	}
	f, err := os.Open(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake crawler:", err)
		return 1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 0; sc.Scan(); i++ {
		seed := strings.TrimSpace(sc.Text())
		if seed == "" || i%fakeProcs != proc-1 {
			continue
		}
		resp, err := http.Get(seed)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake crawler:", err)
			return 1
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // the server's log is what counts
		resp.Body.Close()
	}
	if args[2] != "" {
		opt, err := redis.ParseURL(args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake crawler:", err)
			return 2
		}
		c := redis.NewClient(opt)
		defer c.Close()
		if err := c.Eval(context.Background(), "return redis.call('INCR', KEYS[1])", []string{args[3]}).Err(); err != nil {
			fmt.Fprintln(os.Stderr, "fake crawler:", err)
			return 1
		}
	}
	return 0
}

// fakeProcs is how many processes share the seeds in fakeCrawler.
const fakeProcs = 3

// fakeRevisitorArgs calls the test binary as a fake revisiting crawler
// (see fakeRevisitor) for the Continuous workload's For: polite at the
// workload's delay, or rude.
func fakeRevisitorArgs(polite bool) func(Workload, RunEnv) []string {
	return func(w Workload, env RunEnv) []string {
		delay := time.Duration(0)
		if polite {
			delay = w.Delay
		}
		return []string{fakeCrawlerArg, env.SeedsFile, strconv.Itoa(env.Proc), env.RedisURL, env.Job,
			w.Continuous.For.String(), delay.String()}
	}
}

// hrefPattern finds a home page's links, all of them in double quotes.
var hrefPattern = regexp.MustCompile(`href="([^"]+)"`)

// fakeRevisitor crawls each seed's host over and over until its time is
// up, then exits 0 as crawl -for does: robots.txt, the home page, every
// page the home page links to on the same host, in turn, one request at a
// time per host. With a delay it waits that long after each answer and
// sends If-None-Match with each page's last ETag; with none it does
// neither.
func fakeRevisitor(args []string) int {
	seeds, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake revisitor:", err)
		return 1
	}
	length, err1 := time.ParseDuration(args[4])
	delay, err2 := time.ParseDuration(args[5])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "fake revisitor: want durations, got", args[4], args[5])
		return 2
	}
	client := &http.Client{
		Timeout:       time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for _, seed := range strings.Fields(string(seeds)) {
		go revisitHost(client, seed, delay)
	}
	time.Sleep(length) // the fake's -for: its time to crawl, not a synchronisation
	return 0
}

// revisitHost is one host's loop of fakeRevisitor.
func revisitHost(client *http.Client, seed string, delay time.Duration) {
	base, err := url.Parse(seed)
	if err != nil {
		return
	}
	etags := make(map[string]string)  // target → its last ETag
	bodies := make(map[string]string) // target → the body that ETag names
	get := func(target string) string {
		req, err := http.NewRequest(http.MethodGet, base.ResolveReference(&url.URL{Path: target}).String(), nil)
		if err != nil {
			return ""
		}
		if etag := etags[target]; etag != "" && delay > 0 {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := client.Do(req)
		if err != nil {
			time.Sleep(max(delay, 10*time.Millisecond)) // pacing a host that fails
			return ""
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotModified {
			body = []byte(bodies[target])
		} else if etag := resp.Header.Get("ETag"); etag != "" {
			etags[target], bodies[target] = etag, string(body)
		}
		time.Sleep(delay) // pacing the host, as a polite crawler must
		return string(body)
	}
	for {
		get("/robots.txt")
		for _, m := range hrefPattern.FindAllStringSubmatch(get("/"), -1) {
			if u, err := base.Parse(m[1]); err == nil && u.Host == base.Host && u.Path != "/" {
				get(u.Path)
			}
		}
	}
}
