package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/storetest"
)

var ctx = context.Background()

// openT opens a Store in dir, failing t if it cannot.
func openT(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// reopenT closes s cleanly and opens its directory again.
func reopenT(t *testing.T, s *Store) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openT(t, s.dir, s.opts)
}

// memDir is where the stores on a crashable MemFS live.
const memDir = "/crawl"

// crashT simulates the death of s's process: what s's file system held
// when last synced survives, with a seeded share of what was not (torn
// writes included), and a Store opens on that. s itself is closed on the
// file system it had, which the new Store does not see.
func crashT(t *testing.T, s *Store, seed uint64) *Store {
	t.Helper()
	mem := s.opts.FS.(*vfs.MemFS)
	clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(seed, seed))})
	s.Close()
	opts := s.opts
	opts.FS = clone
	return openT(t, memDir, opts)
}

func TestContractOnDisk(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) frontier.Store { return openT(t, t.TempDir(), Options{}) },
		Reopen: func(t *testing.T, s frontier.Store) frontier.Store {
			return reopenT(t, s.(*Store))
		},
	})
}

// Without the seen cache and the read-ahead, every lookup and claim reads
// pebble: the paths those skip keep the contract too.
func TestContractNoCaches(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) frontier.Store {
			return openT(t, t.TempDir(), Options{SeenCache: -1, ReadAhead: -1})
		},
		Reopen: func(t *testing.T, s frontier.Store) frontier.Store {
			return reopenT(t, s.(*Store))
		},
	})
}

func TestContractCrash(t *testing.T) {
	var seed uint64
	storetest.Run(t, storetest.Harness{
		// A short sync interval, so that syncs fall anywhere in the
		// suite's operations, and a crash finds some of them durable.
		Open: func(t *testing.T) frontier.Store {
			return openT(t, memDir, Options{FS: vfs.NewCrashableMem(), SyncInterval: time.Millisecond})
		},
		Reopen: func(t *testing.T, s frontier.Store) frontier.Store {
			return reopenT(t, s.(*Store))
		},
		Crash: func(t *testing.T, s frontier.Store) frontier.Store {
			// The suite's crash test claims once after reopening and keeps
			// that lease: if the crash lost the Done that gave the key its
			// Delay, the claim succeeds and its key's other items never
			// drain, and are reported lost. Until the suite returns that
			// lease, the crash comes after a sync, so that the Done calls
			// survive; TestCrashLosesNothing crashes anywhere.
			if err := s.(*Store).Sync(); err != nil {
				t.Fatal(err)
			}
			seed++
			return crashT(t, s.(*Store), seed)
		},
	})
}

// Claims and adds read pebble outside the Store's lock; Close waits for
// those reads, and those that come after it fail with ErrClosed, never
// with a panic of a closed pebble.
func TestCloseDuringReads(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		mustAdd(t, s, item(fmt.Sprintf("h%d", i%20), fmt.Sprintf("/%d", i)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				c, err := s.Claim(ctx, time.Now(), frontier.ClaimOptions{PerHost: 4})
				if err == nil && c.Lease != nil {
					_, err = s.DoneAdding(ctx, c.Lease, time.Now(), frontier.Outcome{Pace: c.Lease.Pace},
						[]frontier.Item{item(c.Lease.Key, "/"), item(c.Lease.Key, fmt.Sprintf("/w%d/%d", w, i))}, frontier.Limits{})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("a call during Close: %v, want ErrClosed", err)
		}
	}
}
