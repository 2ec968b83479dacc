package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoRedisServer is why crawlers that keep their state in Redis are left
// out when redis-server is not installed.
var ErrNoRedisServer = errors.New("redis-server not found (apt-get install -y redis-server)")

// Redis is a redis-server the harness started for crawlers that share their
// state through it: on a free loopback port, without persistence (the
// benchmark measures the crawl, not Redis's disk).
type Redis struct {
	// Addr is the server's host:port on 127.0.0.1.
	Addr string

	cmd    *exec.Cmd
	done   chan struct{}
	client *redis.Client
}

// StartRedis starts a redis-server in dir and waits until it answers.
func StartRedis(ctx context.Context, dir string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("harness: %w", ErrNoRedisServer)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("harness: a port for redis-server: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), done: make(chan struct{})}
	r.cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"))
	r.cmd.Dir = dir
	dieWithParent(r.cmd)
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("harness: starting redis-server: %w", err)
	}
	go func() {
		r.cmd.Wait() //nolint:errcheck // Close kills it; how it ended does not matter
		close(r.done)
	}()
	r.client = redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: time.Second})
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		err := r.client.Ping(ctx).Err()
		if err == nil {
			return r, nil
		}
		select {
		case <-r.done:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			r.client.Close()
			return nil, fmt.Errorf("harness: redis-server exited before answering PING: %s", strings.TrimSpace(string(log)))
		case <-ctx.Done():
			r.Close()
			return nil, fmt.Errorf("harness: redis-server on %s: %w (last: %w)", r.Addr, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// URL is the server's redis:// URL, as crawl -redis takes it.
func (r *Redis) URL() string { return "redis://" + r.Addr }

// Flush empties the server, so that a run starts on nothing a run before
// left.
func (r *Redis) Flush(ctx context.Context) error {
	if err := r.client.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("harness: FLUSHALL: %w", err)
	}
	return nil
}

// RedisStats are a server's counters at one moment.
type RedisStats struct {
	// Calls counts the commands run by name (lower case), those that
	// scripts run included: Redis counts both alike.
	Calls map[string]int64
	// CPU is the server's user and system time.
	CPU time.Duration
}

// Stats reads the server's command and CPU counters (INFO commandstats,
// INFO cpu).
func (r *Redis) Stats(ctx context.Context) (RedisStats, error) {
	info, err := r.client.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return RedisStats{}, fmt.Errorf("harness: INFO: %w", err)
	}
	return parseRedisInfo(info)
}

// parseRedisInfo reads the lines of INFO commandstats and INFO cpu.
func parseRedisInfo(info string) (RedisStats, error) {
	st := RedisStats{Calls: make(map[string]int64)}
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if cmd, ok := strings.CutPrefix(name, "cmdstat_"); ok {
			calls, _, _ := strings.Cut(value, ",")
			n, err := strconv.ParseInt(strings.TrimPrefix(calls, "calls="), 10, 64)
			if err != nil {
				return RedisStats{}, fmt.Errorf("harness: INFO line %q: %w", line, err)
			}
			st.Calls[cmd] = n
			continue
		}
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			secs, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return RedisStats{}, fmt.Errorf("harness: INFO line %q: %w", line, err)
			}
			st.CPU += time.Duration(secs * float64(time.Second))
		}
	}
	return st, nil
}

// RedisUse is what one run asked of Redis.
type RedisUse struct {
	// Calls counts the commands by name, those run inside scripts included,
	// the harness's reading of the counters left out.
	Calls map[string]int64
	// CPU is the server's CPU time during the run.
	CPU time.Duration
}

// Commands is every command run, scripts' included.
func (u RedisUse) Commands() int64 {
	var n int64
	for _, c := range u.Calls {
		n += c
	}
	return n
}

// PerPage lists the commands run per page of pages, most first: where a
// page's Redis work goes.
func (u RedisUse) PerPage(pages float64) string {
	names := make([]string, 0, len(u.Calls))
	for cmd := range u.Calls {
		names = append(names, cmd)
	}
	sort.Slice(names, func(i, j int) bool { return u.Calls[names[i]] > u.Calls[names[j]] })
	var b strings.Builder
	for _, cmd := range names {
		if n := float64(u.Calls[cmd]) / pages; n >= 0.05 {
			fmt.Fprintf(&b, "%s %.2f ", cmd, n)
		}
	}
	return strings.TrimSpace(b.String())
}

// Scripts is the script calls (EVALSHA, EVAL): one round trip each.
func (u RedisUse) Scripts() int64 {
	return u.Calls["evalsha"] + u.Calls["eval"] + u.Calls["evalsha_ro"] + u.Calls["eval_ro"]
}

// Sub returns what happened between before and after, two readings of
// Stats: the INFO that read before is left out (Redis counts a command once
// it has answered; the INFO that read after is not counted yet).
func (after RedisStats) Sub(before RedisStats) RedisUse {
	u := RedisUse{Calls: make(map[string]int64), CPU: after.CPU - before.CPU}
	for cmd, n := range after.Calls {
		d := n - before.Calls[cmd]
		if cmd == "info" {
			d-- // scripts may call INFO too: only the harness's own is left out
		}
		if d > 0 {
			u.Calls[cmd] = d
		}
	}
	return u
}

// Close stops the server.
func (r *Redis) Close() error {
	r.client.Close()
	select {
	case <-r.done:
		return nil
	default:
	}
	r.cmd.Process.Kill() //nolint:errcheck // it may have exited already
	<-r.done
	return nil
}
