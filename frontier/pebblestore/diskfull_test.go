package pebblestore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/heedcrawl/heed/frontier"
)

// TestDiskErrorsUnderLoad fails every write of the log while a Store keeps
// adding, so that pebble meets the error wherever it comes (a commit,
// which makes pebble panic; its log rotating; a sync): the Store fails,
// without a panic or a hang, and what was synced before opens again.
func TestDiskErrorsUnderLoad(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var armed atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasSuffix(op.Path, ".log") {
			return errorfs.ErrInjected
		}
		return nil
	}))
	// The background loop syncs too, concurrently with the Adds.
	s := openT(t, memDir, Options{FS: fs, SyncInterval: time.Millisecond})
	mustAdd(t, s, item("a", "/0"))
	mustSync(t, s)
	armed.Store(true)
	var err error
	for i := 1; err == nil && i < 1000; i++ {
		batch := make([]frontier.Item, 100)
		for j := range batch {
			batch[j] = item(fmt.Sprintf("h%d", j), fmt.Sprintf("/%d/%s", i, strings.Repeat("x", 200)))
		}
		_, err = s.Add(ctx, batch, frontier.Limits{})
		if err == nil {
			// Before pebble's first memtable (256 KB) fills: pebble
			// cannot survive a log failing as it moves to a new one (see
			// Failures in the package documentation), which this test is
			// not about.
			err = s.Sync()
		}
	}
	if !errors.Is(err, ErrFailed) || !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("adding with the log failing: %v; want ErrFailed wrapping the injected error", err)
	}
	s.Close()
	armed.Store(false)
	s = openT(t, memDir, Options{FS: mem.CrashClone(vfs.CrashCloneCfg{})})
	defer s.Close()
	if got := drainURLs(t, s); !slices.Contains(got, "http://a/0") {
		t.Errorf("after reopening, %d items, without a/0, which was synced", len(got))
	}
}
