package redisstore

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/storetest"
	"github.com/heedcrawl/heed/internal/redistest"
)

// jobs numbers the jobs of a test binary, so that tests sharing a server
// never share a job.
var jobs atomic.Int64

func newJob(t *testing.T) string {
	return fmt.Sprintf("test%d", jobs.Add(1))
}

func mustNew(t *testing.T, srv *redistest.Server, job string, o Options) *Store {
	t.Helper()
	s, err := New(srv.Client(), job, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestContract runs the Store contract on a real redis-server. The suite
// steps its own clock ahead of the real one, so the Store decides on the
// caller's clock (CallerClock); the tests of this package check Redis's.
// A crash kills redis-server with SIGKILL and starts it again on its
// append-only file (appendfsync always): the same Store goes on, as a crawl
// process would, and must find everything it was told and make every key
// rest a full Delay.
func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	o := Options{CallerClock: true}
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) frontier.Store { return mustNew(t, srv, newJob(t), o) },
		Reopen: func(t *testing.T, s frontier.Store) frontier.Store {
			job := s.(*Store).Job()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return mustNew(t, srv, job, o)
		},
		Crash: func(t *testing.T, s frontier.Store) frontier.Store {
			srv.Kill()
			srv.Restart()
			return s
		},
	})
}

// TestContractExactSeen runs the contract with a seen-set of URLs.
func TestContractExactSeen(t *testing.T) {
	srv := redistest.Start(t)
	o := Options{CallerClock: true, ExactSeen: true}
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) frontier.Store { return mustNew(t, srv, newJob(t), o) },
	})
}

func TestMain(m *testing.M) {
	// go-redis logs failed dials to stderr; the tests that kill Redis
	// cause them on purpose.
	redis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
