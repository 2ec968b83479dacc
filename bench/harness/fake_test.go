package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

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
