package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterTimeout bounds how long a cluster may take to form, or to
// promote a replica after its primary died.
const clusterTimeout = 60 * time.Second

// nodeTimeout is the cluster's cluster-node-timeout: how long a primary
// may be unreachable before its replica takes over.
const nodeTimeout = 1000 * time.Millisecond

// Cluster is a Redis Cluster started for a test: Primaries primaries, each
// with Replicas replicas, every node persisting as Start's server does
// (appendonly yes, appendfsync always) on a loopback port in a temporary
// directory. The test's cleanup stops every node.
type Cluster struct {
	// Nodes are the cluster's servers, primaries first as the cluster was
	// created; KillPrimary changes which of them is a primary.
	Nodes []*Server

	t testing.TB
}

// ClusterOptions shape a Cluster.
type ClusterOptions struct {
	// Primaries is the number of primaries; zero means 3, the fewest
	// Redis Cluster accepts.
	Primaries int
	// Replicas is the number of replicas of each primary; zero means
	// none, NoReplicas too.
	Replicas int
}

// StartCluster starts a cluster as o says and waits until every slot is
// served and every replica is in sync with its primary.
func StartCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	cli := lookPath(t, "redis-cli")
	if o.Primaries == 0 {
		o.Primaries = 3
	}
	c := &Cluster{t: t}
	for range o.Primaries * (1 + o.Replicas) {
		port, err := freeClusterPort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		c.Nodes = append(c.Nodes, StartWith(t, Options{Port: port, Args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(nodeTimeout / time.Millisecond)),
		}}))
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(o.Replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.waitHealthy(nil); err != nil {
		t.Fatalf("redistest: cluster did not form: %v", err)
	}
	return c
}

// freeClusterPort returns a loopback port no one listens on, nor on its
// cluster bus port (the port plus 10000).
func freeClusterPort() (int, error) {
	for range 100 {
		p, err := freePort()
		if err != nil {
			return 0, err
		}
		if p+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, errors.New("no free port with a free cluster bus port")
}

// Addrs returns the addresses of the nodes still running.
func (c *Cluster) Addrs() []string {
	var addrs []string
	for _, n := range c.Nodes {
		if n.running() {
			addrs = append(addrs, n.Addr)
		}
	}
	return addrs
}

// URL returns the cluster in go-redis's cluster URL form,
// redis://h1:p1?addr=h2:p2&addr=h3:p3, naming every node still running.
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	u := "redis://" + addrs[0]
	for i, a := range addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + a
	}
	return u
}

// Client returns a cluster client of c, closed when the test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	c.t.Cleanup(func() { cc.Close() })
	return cc
}

// Primaries returns the nodes that are primaries now.
func (c *Cluster) Primaries() []*Server {
	var ps []*Server
	for _, n := range c.Nodes {
		if !n.running() {
			continue
		}
		if role, err := n.role(); err == nil && role == "master" {
			ps = append(ps, n)
		}
	}
	return ps
}

// KillPrimary kills the primary that serves key's slot with SIGKILL, as a
// crash would, and waits until a replica has taken its slots over and the
// cluster serves every slot again. It returns the killed node, which
// Restart brings back (as a replica of whoever took over).
func (c *Cluster) KillPrimary(key string) *Server {
	c.t.Helper()
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer cc.Close()
	var victim *Server
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		c.t.Fatalf("redistest: CLUSTER KEYSLOT: %v", err)
	}
	for _, n := range c.Primaries() {
		if n.serves(int(slot)) {
			victim = n
		}
	}
	if victim == nil {
		c.t.Fatalf("redistest: no primary serves slot %d", slot)
	}
	victim.Kill()
	if err := c.waitHealthy(victim); err != nil {
		c.t.Fatalf("redistest: no replica took over from %s: %v", victim.Addr, err)
	}
	return victim
}

// waitHealthy waits until every running node but dead reports the cluster
// ok, with every slot served by a running primary and every running
// replica's link to its primary up.
func (c *Cluster) waitHealthy(dead *Server) error {
	// The nodes are other processes: their state can only be polled.
	deadline := time.Now().Add(clusterTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.healthy(dead)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		<-tick.C
	}
}

// healthy says why the cluster is not yet healthy, or nil.
func (c *Cluster) healthy(dead *Server) error {
	served := 0
	for _, n := range c.Nodes {
		if n == dead || !n.running() {
			continue
		}
		info, err := n.command("CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state not ok", n.Addr)
		}
		role, err := n.role()
		if err != nil {
			return err
		}
		repl, err := n.command("INFO", "replication")
		if err != nil {
			return err
		}
		if role == "slave" && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Errorf("%s: replica's link to its primary is down", n.Addr)
		}
		if role == "master" {
			served += n.slotCount()
		}
	}
	if served != 16384 {
		return fmt.Errorf("running primaries serve %d of 16384 slots", served)
	}
	return nil
}

// running reports whether the node's process is running.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// command runs one command on the node alone and returns its reply as text.
func (s *Server) command(args ...any) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil {
		return "", fmt.Errorf("%s: %v: %w", s.Addr, args, err)
	}
	return fmt.Sprint(v), nil
}

// role is the node's replication role: "master" or "slave".
func (s *Server) role() (string, error) {
	info, err := s.command("INFO", "replication")
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "role:"); ok {
			return r, nil
		}
	}
	return "", fmt.Errorf("%s: no role in INFO replication", s.Addr)
}

// slotRanges returns the slot ranges the node serves, from CLUSTER NODES.
func (s *Server) slotRanges() [][2]int {
	nodes, err := s.command("CLUSTER", "NODES")
	if err != nil {
		return nil
	}
	var ranges [][2]int
	for line := range strings.SplitSeq(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "myself") {
			continue
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated
			}
			lo, hi, found := strings.Cut(r, "-")
			if !found {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				ranges = append(ranges, [2]int{a, b})
			}
		}
	}
	return ranges
}

// slotCount is the number of slots the node serves.
func (s *Server) slotCount() int {
	n := 0
	for _, r := range s.slotRanges() {
		n += r[1] - r[0] + 1
	}
	return n
}

// serves reports whether the node serves slot.
func (s *Server) serves(slot int) bool {
	for _, r := range s.slotRanges() {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}
