// Package redistest starts a real redis-server for tests: on a free
// loopback port, in a temporary directory, with the append-only file
// fsynced on every write, so that a test can kill it with SIGKILL, start it
// again on the same directory and find everything it acknowledged.
//
// In CI (the environment variable CI is "true") a missing redis-server fails
// the test; elsewhere the test is skipped with a message saying how to
// install it.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds how long a starting server may take to answer PING.
const startTimeout = 20 * time.Second

// Server is a redis-server started for a test. Start returns it running;
// the test's cleanup stops it.
type Server struct {
	// Addr is the server's host:port on 127.0.0.1.
	Addr string

	t    testing.TB
	bin  string
	dir  string
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Options change how the server persists what it is told.
type Options struct {
	// NoPersistence starts the server with neither snapshots nor an
	// append-only file: a restart loses everything.
	NoPersistence bool
	// Port is the port to listen on; zero picks a free one.
	Port int
	// Args are more redis-server arguments, after the package's own.
	Args []string
}

// Start starts a redis-server for t, with the append-only file fsynced on
// every write (appendfsync always), and stops it when t ends.
func Start(t testing.TB) *Server {
	return StartWith(t, Options{})
}

// StartWith starts a redis-server for t as o says.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	s := &Server{t: t, bin: lookPath(t, "redis-server"), dir: t.TempDir()}
	port := o.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			t.Fatalf("redistest: %v", err)
		}
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", s.dir,
		"--save", "", "--protected-mode", "yes", "--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"),
	}
	if o.NoPersistence {
		args = append(args, "--appendonly", "no")
	} else {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	s.args = append(args, o.Args...)
	s.start()
	t.Cleanup(s.stop)
	return s
}

// lookPath finds a Redis program or ends the test: a failure in CI, where
// .ci/run installs it, a skip elsewhere.
func lookPath(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		msg := name + " not found (install it: apt-get install -y redis-server)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// freePort returns a loopback TCP port no one listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() {
	s.t.Helper()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: starting redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := s.waitReady(done); err != nil {
		s.Kill()
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		s.t.Fatalf("redistest: redis-server on %s: %v\n%s", s.Addr, err, log)
	}
}

// waitReady waits until the server answers PING, it exits, or
// startTimeout passes.
func (s *Server) waitReady(exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to PING after %v: %w", startTimeout, err)
		}
		select {
		case <-exited:
			return errors.New("exited before answering PING")
		case <-tick.C:
		}
	}
}

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// URL returns the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr }

// Kill kills the server with SIGKILL, as a crash would, and waits for it to
// exit.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart starts the server again, on the same port and directory, after
// Kill; what it persisted is loaded before it answers PING.
func (s *Server) Restart() {
	s.t.Helper()
	s.start()
}

// stop ends the server at the test's end.
func (s *Server) stop() { s.Kill() }
