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
// state through it: on a free loopback port, without persistence unless
// RedisOptions.Fsync asks for it (the benchmark measures the crawl, not
// Redis's disk).
type Redis struct {
	// Addr is the server's host:port on 127.0.0.1.
	Addr string

	cmd    *exec.Cmd
	done   chan struct{}
	client *redis.Client
	nodes  []*Redis // a cluster's primaries; nil for a single server
}

// RedisOptions say how the harness starts redis-server.
type RedisOptions struct {
	// CPUs, if set, is the list of CPUs (taskset -c) redis-server runs on:
	// a core of its own, as a deployment that gives Redis its own machine
	// has, so that the crawl and the web server do not share it. Run the
	// harness itself on the other CPUs (taskset -c 0 go run …).
	CPUs string
	// Fsync, if set, turns the append-only file on with this appendfsync
	// policy (always, everysec, no): what a deployment that keeps every
	// acknowledged write pays for it. Empty: no persistence.
	Fsync string
}

// StartRedis starts a redis-server in dir and waits until it answers.
func StartRedis(ctx context.Context, dir string, opt RedisOptions) (*Redis, error) {
	return startRedis(ctx, dir, opt)
}

// StartRedisCluster starts a Redis Cluster of primaries nodes (no
// replicas, no persistence, as StartRedis's server), each in a directory
// of its own under dir, and waits until it serves every slot. Its URL is
// go-redis's cluster URL, which crawl -redis takes. Redis Cluster forms
// from 3 primaries at the fewest (fewer are raised to 3), except that
// primaries 1 is a cluster of one node holding every slot, which
// redis-cli will not create: the Store's cluster code on one process, to
// part what that code costs from what several primaries sharing a
// machine's cores cost.
func StartRedisCluster(ctx context.Context, dir string, primaries int, opt RedisOptions) (*Redis, error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("harness: %w", ErrNoRedisServer)
	}
	c := &Redis{}
	args := []string{"--cluster", "create"}
	n := max(primaries, 3)
	if primaries == 1 {
		n = 1
	}
	for i := range n {
		d := filepath.Join(dir, "node"+strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.Close()
			return nil, fmt.Errorf("harness: %w", err)
		}
		n, err := startRedis(ctx, d, opt, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
		if err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		args = append(args, n.Addr)
	}
	c.Addr = c.nodes[0].Addr
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if n == 1 {
		host, port, _ := net.SplitHostPort(c.Addr)
		args = []string{"-h", host, "-p", port, "cluster", "addslotsrange", "0", "16383"}
	}
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		c.Close()
		return nil, fmt.Errorf("harness: redis-cli --cluster create: %w\n%s", err, out)
	}
	// The nodes agree on the slots by gossip: their state can only be
	// polled.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, n := range c.nodes {
		for {
			info, err := n.client.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			select {
			case <-ctx.Done():
				c.Close()
				return nil, fmt.Errorf("harness: cluster node %s not ok: %w", n.Addr, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return c, nil
}

// startRedis starts a redis-server in dir with more arguments and waits
// until it answers.
func startRedis(ctx context.Context, dir string, opt RedisOptions, more ...string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("harness: %w", ErrNoRedisServer)
	}
	var pin []string
	if opt.CPUs != "" {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			return nil, fmt.Errorf("harness: pinning redis-server to CPUs %s: %w", opt.CPUs, err)
		}
		pin = []string{taskset, "-c", opt.CPUs}
	}
	port, err := freeRedisPort()
	if err != nil {
		return nil, err
	}
	r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), done: make(chan struct{})}
	argv := append(append(pin, bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--protected-mode", "yes", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log")), more...)
	if opt.Fsync != "" {
		argv = append(argv, "--appendonly", "yes", "--appendfsync", opt.Fsync)
	} else {
		argv = append(argv, "--appendonly", "no")
	}
	r.cmd = exec.Command(argv[0], argv[1:]...)
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

// freeRedisPort returns a free loopback port whose cluster bus port (the
// port plus 10000) is free too.
func freeRedisPort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("harness: a port for redis-server: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("harness: no free port for redis-server with a free cluster bus port")
}

// URL is the server's redis:// URL, as crawl -redis takes it: a cluster's
// in go-redis's cluster form, redis://h1:p1?addr=h2:p2&addr=h3:p3.
func (r *Redis) URL() string {
	u := "redis://" + r.Addr
	for i, n := range r.nodes[min(1, len(r.nodes)):] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + n.Addr
	}
	return u
}

// Flush empties the server, so that a run starts on nothing a run before
// left.
func (r *Redis) Flush(ctx context.Context) error {
	for _, n := range r.nodes {
		if err := n.Flush(ctx); err != nil {
			return err
		}
	}
	if r.nodes != nil {
		return nil
	}
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
	// ScriptTime is the time spent running scripts (EVAL, EVALSHA, FCALL), the
	// commands they ran included: the rest of CPU is reading requests,
	// writing replies and the event loop.
	ScriptTime time.Duration
	// Time is the time Redis spent running each command (commandstats'
	// usec), by name; a script's includes the commands it ran, which are
	// counted under their own names too.
	Time map[string]time.Duration
}

// Stats reads the server's command and CPU counters (INFO commandstats,
// INFO cpu).
func (r *Redis) Stats(ctx context.Context) (RedisStats, error) {
	if r.nodes != nil {
		sum := RedisStats{Calls: make(map[string]int64), Time: make(map[string]time.Duration)}
		for _, n := range r.nodes {
			st, err := n.Stats(ctx)
			if err != nil {
				return RedisStats{}, err
			}
			for cmd, k := range st.Calls {
				sum.Calls[cmd] += k
			}
			for cmd, d := range st.Time {
				sum.Time[cmd] += d
			}
			sum.CPU += st.CPU
			sum.ScriptTime += st.ScriptTime
		}
		return sum, nil
	}
	info, err := r.client.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return RedisStats{}, fmt.Errorf("harness: INFO: %w", err)
	}
	return parseRedisInfo(info)
}

// parseRedisInfo reads the lines of INFO commandstats and INFO cpu.
func parseRedisInfo(info string) (RedisStats, error) {
	st := RedisStats{Calls: make(map[string]int64), Time: make(map[string]time.Duration)}
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if cmd, ok := strings.CutPrefix(name, "cmdstat_"); ok {
			calls, rest, _ := strings.Cut(value, ",")
			n, err := strconv.ParseInt(strings.TrimPrefix(calls, "calls="), 10, 64)
			if err != nil {
				return RedisStats{}, fmt.Errorf("harness: INFO line %q: %w", line, err)
			}
			st.Calls[cmd] = n
			usec, _, _ := strings.Cut(rest, ",")
			us, err := strconv.ParseInt(strings.TrimPrefix(usec, "usec="), 10, 64)
			if err != nil {
				return RedisStats{}, fmt.Errorf("harness: INFO line %q: %w", line, err)
			}
			st.Time[cmd] = time.Duration(us) * time.Microsecond
			if isScript(cmd) {
				st.ScriptTime += st.Time[cmd]
			}
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
	// ScriptTime is the part of it spent running scripts.
	ScriptTime time.Duration
	// Time is the time spent running each command, by name, as in
	// RedisStats.
	Time map[string]time.Duration
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
	return perPage(u.Calls, pages, 0.05)
}

// TimePerPage lists the µs each command took per page of pages, most
// first: where a page's Redis time goes. A script's time includes that of
// the commands it ran, which are listed too.
func (u RedisUse) TimePerPage(pages float64) string {
	us := make(map[string]float64, len(u.Time))
	for cmd, d := range u.Time {
		us[cmd] = float64(d) / float64(time.Microsecond)
	}
	return perPage(us, pages, 0.1)
}

// perPage lists each name's value per page, most first, leaving out those
// under least a page.
func perPage[N int64 | float64](by map[string]N, pages, least float64) string {
	names := make([]string, 0, len(by))
	for name := range by {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if by[names[i]] != by[names[j]] {
			return by[names[i]] > by[names[j]]
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	for _, name := range names {
		if n := float64(by[name]) / pages; n >= least {
			fmt.Fprintf(&b, "%s %.2f ", name, n)
		}
	}
	return strings.TrimSpace(b.String())
}

// Scripts is the script calls (EVALSHA, EVAL): one round trip each.
func (u RedisUse) Scripts() int64 {
	var n int64
	for cmd, k := range u.Calls {
		if isScript(cmd) {
			n += k
		}
	}
	return n
}

// isScript reports whether the command (commandstats' lower-case name)
// runs a script.
func isScript(cmd string) bool {
	switch cmd {
	case "evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// Sub returns what happened between before and after, two readings of
// Stats: the INFO that read before is left out (Redis counts a command once
// it has answered; the INFO that read after is not counted yet).
func (after RedisStats) Sub(before RedisStats) RedisUse {
	u := RedisUse{Calls: make(map[string]int64), Time: make(map[string]time.Duration),
		CPU: after.CPU - before.CPU, ScriptTime: after.ScriptTime - before.ScriptTime}
	for cmd, d := range after.Time {
		if d -= before.Time[cmd]; d > 0 && cmd != "info" {
			u.Time[cmd] = d
		}
	}
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

// Close stops the server, or every node of a cluster.
func (r *Redis) Close() error {
	if r.cmd == nil {
		for _, n := range r.nodes {
			n.Close()
		}
		return nil
	}
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
