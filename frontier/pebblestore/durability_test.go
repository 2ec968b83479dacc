package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/heedcrawl/heed/frontier"
)

var (
	t0  = time.Now().Truncate(time.Millisecond)
	opt = frontier.ClaimOptions{PerHost: 1}
)

// never is a sync interval no test outlives: the background loop stays
// out of the way of tests that sync explicitly.
const never = time.Hour

func item(key, path string) frontier.Item {
	return frontier.Item{URL: "http://" + key + path, Key: key}
}

func mustAdd(t *testing.T, s *Store, items ...frontier.Item) {
	t.Helper()
	refused, err := s.Add(ctx, items, frontier.Limits{})
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	for i, err := range refused {
		if err != nil {
			t.Fatalf("Add(%s): %v", items[i].URL, err)
		}
	}
}

func mustClaim(t *testing.T, s *Store, now time.Time, o frontier.ClaimOptions) *frontier.Lease {
	t.Helper()
	c, err := s.Claim(ctx, now, o)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if c.Lease == nil {
		t.Fatalf("Claim: nothing (next %v, idle %v)", c.Next, c.Idle)
	}
	return c.Lease
}

func mustSync(t *testing.T, s *Store) {
	t.Helper()
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

// drainURLs claims and acks everything at a time far enough ahead that no
// key rests, returning the URLs in claim order.
func drainURLs(t *testing.T, s *Store) []string {
	t.Helper()
	now := time.Now().Add(24 * time.Hour)
	var urls []string
	for {
		c, err := s.Claim(ctx, now, opt)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if c.Lease == nil {
			return urls
		}
		urls = append(urls, c.Lease.URL)
		if err := s.Done(ctx, c.Lease, now, frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatalf("Done: %v", err)
		}
	}
}

// crashExact is crashT keeping exactly what was synced.
func crashExact(t *testing.T, s *Store) *Store {
	t.Helper()
	mem := s.opts.FS.(*vfs.MemFS)
	clone := mem.CrashClone(vfs.CrashCloneCfg{})
	s.Close()
	opts := s.opts
	opts.FS = clone
	return openT(t, memDir, opts)
}

func TestLeasesComeBackAtTheFrontAfterACrash(t *testing.T) {
	s := openT(t, memDir, Options{FS: vfs.NewCrashableMem(), SyncInterval: never})
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("a", "/3"), item("a", "/4"), item("b", "/1"))
	two := frontier.ClaimOptions{PerHost: 2}
	// a/1 goes out, comes back with a history, and goes out again: it is
	// leased at the crash with its history, and so is a/2.
	l := mustClaim(t, s, t0, two)
	if l.URL != "http://a/1" {
		t.Fatalf("first claim: %s, want a/1", l.URL)
	}
	l.Retries, l.Redirects = 2, []string{"http://a/0"}
	if err := s.Requeue(ctx, l, t0, frontier.Outcome{Pace: l.Pace}); err != nil {
		t.Fatal(err)
	}
	var claimed []string
	for range 3 {
		l := mustClaim(t, s, t0, two)
		claimed = append(claimed, l.URL)
		if l.Key == "b" {
			if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Checkpoint: []byte("b done")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if i, j := slices.Index(claimed, "http://a/1"), slices.Index(claimed, "http://a/2"); i < 0 || j < i || !slices.Contains(claimed, "http://b/1") {
		t.Fatalf("claimed %v, want a/1 before a/2, and b/1", claimed)
	}
	mustSync(t, s)
	s = crashExact(t, s)
	defer s.Close()

	if cp, err := s.Checkpoint(ctx); err != nil || string(cp) != "b done" {
		t.Errorf("Checkpoint = %q, %v; want the durable one", cp, err)
	}
	c, err := s.Counts(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c.Queued != 4 || c.Leased != 0 || c.Scheduled != 5 {
		t.Errorf("Counts after the crash = %+v, want 4 queued (2 leased at the crash, 2 never claimed), none leased, 5 scheduled", c)
	}
	first := mustClaim(t, s, time.Now().Add(time.Hour), opt)
	if first.URL != "http://a/1" || first.Retries != 2 || !slices.Equal(first.Redirects, []string{"http://a/0"}) {
		t.Errorf("first claim after the crash = %+v, want a/1 with its history", first.Item)
	}
	if err := s.Done(ctx, first, time.Now(), frontier.Outcome{Pace: first.Pace}); err != nil {
		t.Fatal(err)
	}
	if got, want := drainURLs(t, s), []string{"http://a/2", "http://a/3", "http://a/4"}; !slices.Equal(got, want) {
		t.Errorf("after a/1: %v, want %v: the leased items first, in the order they were claimed", got, want)
	}
	if refused, _ := s.Add(ctx, []frontier.Item{item("b", "/1")}, frontier.Limits{}); !errors.Is(refused[0], frontier.ErrSeen) {
		t.Errorf("b/1, done before the crash, re-added: %v", refused[0])
	}
}

func TestOnlyWhatWasSyncedSurvivesACrash(t *testing.T) {
	var before atomic.Int32
	s := openT(t, memDir, Options{FS: vfs.NewCrashableMem(), SyncInterval: never, BeforeSync: func() error {
		before.Add(1)
		return nil
	}})
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("b", "/1"))
	l := mustClaim(t, s, t0, opt)
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Checkpoint: []byte("cp1")}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, s)
	if before.Load() != 1 {
		t.Errorf("BeforeSync called %d times by one Sync, want 1", before.Load())
	}
	mustSync(t, s)
	if before.Load() != 1 {
		t.Errorf("a Sync with nothing written called BeforeSync")
	}
	// Not synced: lost in the crash.
	l = mustClaim(t, s, t0, opt)
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Checkpoint: []byte("cp2")}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, item("c", "/1"))
	s = crashExact(t, s)
	defer s.Close()
	if cp, _ := s.Checkpoint(ctx); string(cp) != "cp1" {
		t.Errorf("Checkpoint after the crash = %q, want cp1, the last synced", cp)
	}
	got := drainURLs(t, s)
	slices.Sort(got)
	if want := []string{"http://a/2", "http://b/1"}; !slices.Equal(got, want) {
		t.Errorf("after the crash: %v, want %v (c/1 and the second Done were not synced)", got, want)
	}
}

func TestBackgroundSync(t *testing.T) {
	synced := make(chan struct{}, 1)
	s := openT(t, memDir, Options{FS: vfs.NewCrashableMem(), SyncInterval: time.Millisecond, BeforeSync: func() error {
		select {
		case synced <- struct{}{}:
		default:
		}
		return nil
	}})
	mustAdd(t, s, item("a", "/1"))
	<-synced // the loop is syncing the Add
	// Wait for that sync to end (no sync call can be under way then).
	s.syncMu.Lock()
	s.syncMu.Unlock() //nolint:staticcheck // an empty critical section: waiting for the loop's sync
	s = crashExact(t, s)
	defer s.Close()
	if got := drainURLs(t, s); !slices.Equal(got, []string{"http://a/1"}) {
		t.Errorf("after the background sync and a crash: %v, want a/1", got)
	}
}

func TestCheckpointWaitsForDurability(t *testing.T) {
	var synced atomic.Bool
	s := openT(t, t.TempDir(), Options{SyncInterval: never, BeforeSync: func() error {
		synced.Store(true)
		return nil
	}})
	defer s.Close()
	mustAdd(t, s, item("a", "/1"))
	l := mustClaim(t, s, t0, opt)
	if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Checkpoint: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if cp, err := s.Checkpoint(ctx); err != nil || string(cp) != "x" || !synced.Load() {
		t.Errorf("Checkpoint = %q, %v (synced: %v); want x, made durable first", cp, err, synced.Load())
	}
}

func TestBeforeSyncFailureFailsTheStore(t *testing.T) {
	boom := errors.New("output disk full")
	s := openT(t, t.TempDir(), Options{SyncInterval: never, BeforeSync: func() error { return boom }})
	defer s.Close()
	mustAdd(t, s, item("a", "/1"))
	if err := s.Sync(); !errors.Is(err, boom) || !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync with a failing BeforeSync: %v", err)
	}
	if _, err := s.Claim(ctx, t0, opt); !errors.Is(err, boom) || !errors.Is(err, ErrFailed) {
		t.Errorf("Claim after the failure: %v, want the failure", err)
	}
}

// TestDiskErrors fails the write-ahead log's writes and syncs under a
// running Store: the Store fails, every call says why, and what was
// durable before opens again.
func TestDiskErrors(t *testing.T) {
	for name, kinds := range map[string][]errorfs.OpKind{
		"write": {errorfs.OpFileWrite, errorfs.OpFileWriteAt},
		"sync":  {errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo},
	} {
		t.Run(name, func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			var armed atomic.Bool
			fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if armed.Load() && slices.Contains(kinds, op.Kind) && strings.HasSuffix(op.Path, ".log") {
					return errorfs.ErrInjected
				}
				return nil
			}))
			s := openT(t, memDir, Options{FS: fs, SyncInterval: never})
			mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("b", "/1"))
			l := mustClaim(t, s, t0, opt)
			if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: l.Pace, Checkpoint: []byte("a/1")}); err != nil {
				t.Fatal(err)
			}
			mustSync(t, s)

			armed.Store(true)
			var first error
			if _, err := s.Add(ctx, []frontier.Item{item("c", "/1")}, frontier.Limits{}); err != nil {
				first = err
			} else {
				first = s.Sync()
			}
			if !errors.Is(first, ErrFailed) || !errors.Is(first, errorfs.ErrInjected) {
				t.Fatalf("first error after the disk failed: %v; want ErrFailed wrapping the injected error", first)
			}
			armed.Store(false) // the disk is back: the Store stays failed
			calls := map[string]error{}
			_, calls["Add"] = s.Add(ctx, []frontier.Item{item("d", "/1")}, frontier.Limits{})
			_, calls["Claim"] = s.Claim(ctx, t0, opt)
			_, _, calls["ClaimKey"] = s.ClaimKey(ctx, "x", t0, opt)
			calls["GiveUp"] = s.GiveUp(ctx, "b")
			_, calls["Counts"] = s.Counts(ctx, t0)
			_, calls["Host"] = s.Host(ctx, "a")
			_, calls["Meta"] = s.Meta(ctx, "m")
			calls["SetMeta"] = s.SetMeta(ctx, "m", []byte("v"))
			_, calls["Checkpoint"] = s.Checkpoint(ctx)
			calls["Sync"] = s.Sync()
			for name, err := range calls {
				if !errors.Is(err, ErrFailed) || !errors.Is(err, errorfs.ErrInjected) {
					t.Errorf("%s after the failure: %v; want ErrFailed wrapping the first failure", name, err)
				}
			}
			s.Close() // may report the failure again; must not hang or panic

			s = openT(t, memDir, Options{FS: mem.CrashClone(vfs.CrashCloneCfg{})})
			defer s.Close()
			if cp, _ := s.Checkpoint(ctx); string(cp) != "a/1" {
				t.Errorf("Checkpoint after reopening = %q, want a/1", cp)
			}
			got := drainURLs(t, s)
			slices.Sort(got)
			if want := []string{"http://a/2", "http://b/1"}; !slices.Equal(got, want) {
				t.Errorf("after reopening: %v, want %v", got, want)
			}
		})
	}
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Open: %v; want ErrLocked naming pid %d", err, os.Getpid())
	}
	host, _ := os.Hostname()
	if !strings.Contains(err.Error(), host) {
		t.Errorf("second Open: %v; want it to name host %s", err, host)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A lock file a dead process left, naming it, does not block.
	if err := os.WriteFile(filepath.Join(dir, lockName), []byte("pid 999999 on host gone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{})
	defer s.Close()
	b, _ := os.ReadFile(filepath.Join(dir, lockName))
	if want := fmt.Sprintf("pid %d on host ", os.Getpid()); !strings.HasPrefix(string(b), want) {
		t.Errorf("lock file holds %q, want %q...", b, want)
	}
}

// A store written in another format (format 2 kept items and pacing state
// in encodings of this package's own, format 1 keyed queue entries by
// sequence number first; 5 is a later one) is refused, naming both
// formats.
func TestOpenRefusesAnotherFormat(t *testing.T) {
	for _, format := range []string{"heed pebblestore 2", "heed pebblestore 5"} {
		dir := t.TempDir()
		s := openT(t, dir, Options{})
		if err := s.db.Set(keyVersion, []byte(format), nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, Options{})
		if err == nil || !strings.Contains(err.Error(), `"`+format+`"`) || !strings.Contains(err.Error(), `"heed pebblestore 4"`) {
			t.Errorf("Open of a store in format %q: %v", format, err)
		}
	}
}

// A store in format 3, which is format 4 without revisits, opens with its
// items, leases and counters, and is format 4 from then on.
func TestOpenReadsFormat3(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("a", "/3"), item("b", "/1"))
	l := mustClaim(t, s, t0, opt) // leased at the stop: back to the front
	if err := s.Done(ctx, mustClaim(t, s, t0, opt), t0, frontier.Outcome{Checkpoint: []byte("cp")}); err != nil {
		t.Fatal(err)
	}
	// What format 3 wrote: records without the run's Due or a due part
	// (items without a Due), and its version.
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		if k := it.Key(); k[0] == prefixDue || k[0] == prefixKey && it.Value()[0]&^recGivenUp != 0 {
			t.Fatalf("a store of items without a Due holds %q = %x, which format 3 did not write", k, it.Value())
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(keyVersion, []byte(formatVersion3), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, dir, Options{})
	if v, err := s.get(keyVersion); err != nil || string(v) != formatVersion {
		t.Errorf("version after opening format 3: %q, %v; want %q", v, err, formatVersion)
	}
	if cp, err := s.Checkpoint(ctx); err != nil || string(cp) != "cp" {
		t.Errorf("Checkpoint = %q, %v; want cp", cp, err)
	}
	defer s.Close()
	if c, err := s.Counts(ctx, t0); err != nil || c.Scheduled != 4 || c.Queued != 3 {
		t.Errorf("Counts = %+v, %v; want 3 queued, 4 scheduled", c, err)
	}
	if got, want := drainURLs(t, s), []string{l.URL, "http://a/2", "http://a/3"}; !slices.Equal(got, want) {
		t.Errorf("format 3's queue drained as %v, want %v", got, want)
	}
}

func TestOpenRefusesAnotherDatabase(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	if err := s.db.Set([]byte("zzz"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Delete(keyVersion, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "not a heed store") {
		t.Errorf("Open of a pebble database without the store's version: %v", err)
	}
}

func TestClosed(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Add(ctx, []frontier.Item{item("a", "/1")}, frontier.Limits{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	if err := s.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: %v", err)
	}
}

// TestCountersSurviveForgetting: the Schedule forgets an idle key with its
// counters, yet the counts on disk add up, so that after reopening the
// crawl's totals (what Limits.MaxPages bounds) are whole.
func TestCountersSurviveForgetting(t *testing.T) {
	s := openT(t, t.TempDir(), Options{SyncInterval: never})
	mustAdd(t, s, item("a", "/1"), item("a", "/2"), item("b", "/1"))
	drainURLs(t, s)
	// Enough claims for the Schedule to sweep its idle keys.
	for range 10 {
		if _, err := s.Claim(ctx, time.Now().Add(48*time.Hour), opt); err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(t, s, item("a", "/3"))
	s = reopenT(t, s)
	defer s.Close()
	c, err := s.Counts(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c.Scheduled != 4 || c.Queued != 1 {
		t.Errorf("Counts after reopening = %+v, want 4 scheduled, 1 queued", c)
	}
	if refused, _ := s.Add(ctx, []frontier.Item{item("c", "/1")}, frontier.Limits{MaxPages: 4}); !errors.Is(refused[0], frontier.ErrLimit) {
		t.Errorf("a fifth page with MaxPages 4 after reopening: %v, want ErrLimit", refused[0])
	}
}

func TestGiveUpSurvivesReopening(t *testing.T) {
	s := openT(t, t.TempDir(), Options{SyncInterval: never})
	mustAdd(t, s, item("dead", "/1"), item("dead", "/2"), item("live", "/1"))
	if err := s.GiveUp(ctx, "dead"); err != nil {
		t.Fatal(err)
	}
	s = reopenT(t, s)
	defer s.Close()
	if refused, _ := s.Add(ctx, []frontier.Item{item("dead", "/3")}, frontier.Limits{MaxPagesPerHost: 1}); refused[0] != nil {
		t.Errorf("Add to a given-up key after reopening: %v, want it queued, to be reported", refused[0])
	}
	// The items queued when it was given up, and the one added since, are
	// handed out to be reported, at once, though the reopened Store makes
	// every key rest.
	var given, live []string
	for {
		c, err := s.Claim(ctx, t0, opt)
		if err != nil {
			t.Fatal(err)
		}
		if c.Lease == nil {
			break
		}
		if c.Lease.GivenUp {
			given = append(given, c.Lease.URL)
		} else {
			live = append(live, c.Lease.URL)
		}
		if err := s.Done(ctx, c.Lease, t0, frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(given, []string{"http://dead/1", "http://dead/2", "http://dead/3"}) || len(live) != 0 {
		t.Errorf("after reopening: given up %v, others %v; want dead/1, dead/2 and dead/3 given up, live/1 resting", given, live)
	}
}

// TestCrashLosesNothing crashes a Store in the middle of a crawl, with
// background syncs every millisecond and half of what was not synced
// surviving at random (torn writes included), many times: no URL marked
// seen is lost, every checkpoint found is one an Done carried, and keys
// whose Delay survived wait it out.
func TestCrashLosesNothing(t *testing.T) {
	runs := 100
	if testing.Short() {
		runs = 10
	}
	for seed := range uint64(runs) {
		s := openT(t, memDir, Options{FS: vfs.NewCrashableMem(), SyncInterval: time.Millisecond})
		var urls []string
		for k := range 5 {
			for i := range 20 {
				it := item(fmt.Sprintf("h%d", k), fmt.Sprintf("/%d", i))
				mustAdd(t, s, it)
				urls = append(urls, it.URL)
			}
		}
		done := map[string]bool{}
		for range 30 {
			l := mustClaim(t, s, t0, opt)
			host := l.Pace
			host.Delay = time.Hour
			if err := s.Done(ctx, l, t0, frontier.Outcome{Pace: host, Checkpoint: []byte(l.URL)}); err != nil {
				t.Fatal(err)
			}
			done[l.URL] = true
		}
		for range 3 {
			mustClaim(t, s, t0, opt) // leased at the crash
		}
		s = crashT(t, s, seed)

		reopened := time.Now()
		again := map[string]bool{}
		if c, err := s.Claim(ctx, reopened, opt); err != nil {
			t.Fatal(err)
		} else if c.Lease != nil {
			if c.Lease.Pace.Delay > 0 {
				t.Errorf("seed %d: %s claimed at once after the crash; its key's Delay is %v", seed, c.Lease.URL, c.Lease.Pace.Delay)
			}
			again[c.Lease.URL] = true
			if err := s.Done(ctx, c.Lease, reopened, frontier.Outcome{Pace: c.Lease.Pace}); err != nil {
				t.Fatal(err)
			}
		}
		for _, u := range drainURLs(t, s) {
			again[u] = true
		}
		if cp, _ := s.Checkpoint(ctx); cp != nil && !done[string(cp)] {
			t.Errorf("seed %d: Checkpoint after the crash is %q, which no Done carried", seed, cp)
		}
		var lost []string
		for _, u := range urls {
			refused, err := s.Add(ctx, []frontier.Item{{URL: u, Key: u[len("http://"):len("http://h0")]}}, frontier.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if errors.Is(refused[0], frontier.ErrSeen) && !again[u] && !done[u] {
				lost = append(lost, u)
			}
		}
		if len(lost) > 0 {
			t.Errorf("seed %d: marked seen, yet neither done nor handed out after the crash: %v", seed, lost)
		}
		s.Close()
	}
}

// TestBatchOverManyKeys: one Add over many keys, some of them several
// times, writes every key's record, so that all its items are there after
// a crash.
func TestBatchOverManyKeys(t *testing.T) {
	s := openT(t, memDir, Options{FS: vfs.NewCrashableMem(), SyncInterval: never})
	var batch []frontier.Item
	for i := range 100 {
		batch = append(batch, item(fmt.Sprintf("k%d", i%40), fmt.Sprintf("/%d", i)))
	}
	mustAdd(t, s, batch...)
	mustSync(t, s)
	s = crashExact(t, s)
	defer s.Close()
	if got := drainURLs(t, s); len(got) != len(batch) {
		t.Errorf("after the crash, %d items of %d", len(got), len(batch))
	}
}

// walSyncHookFS calls onSync before each sync of a write-ahead log.
type walSyncHookFS struct {
	vfs.FS
	onSync func()
}

type walSyncHookFile struct {
	vfs.File
	onSync func()
}

func (fs walSyncHookFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return walSyncHookFile{f, fs.onSync}, nil
}

func (fs walSyncHookFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

func (fs walSyncHookFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrap(newname, f, err)
}

func (f walSyncHookFile) Sync() error     { f.onSync(); return f.File.Sync() }
func (f walSyncHookFile) SyncData() error { f.onSync(); return f.File.SyncData() }
func (f walSyncHookFile) SyncTo(n int64) (bool, error) {
	f.onSync()
	return f.File.SyncTo(n)
}

// A SetMeta whose value a sync under way made durable does not sync
// again, though other writes came after that sync committed: SetMetas
// among a crawl's acks (its robots.txt entries) share their syncs.
func TestSetMetaSharesSyncs(t *testing.T) {
	var syncs atomic.Int32
	var hooked atomic.Bool
	inBefore, inSync, resume := make(chan struct{}), make(chan struct{}), make(chan struct{})
	fs := walSyncHookFS{FS: vfs.NewCrashableMem(), onSync: func() {
		if hooked.CompareAndSwap(true, false) {
			inSync <- struct{}{}
			<-resume
		}
	}}
	s := openT(t, memDir, Options{FS: fs, SyncInterval: never, BeforeSync: func() error {
		if syncs.Add(1) == 1 {
			inBefore <- struct{}{}
			<-resume
		}
		return nil
	}})
	defer s.Close()
	errs := make(chan error, 2)
	go func() { errs <- s.SetMeta(ctx, "a", []byte("A")) }()
	<-inBefore // a's sync is about to commit
	go func() { errs <- s.SetMeta(ctx, "b", []byte("B")) }()
	for { // until b's value is written; b then waits for a's sync
		s.mu.Lock()
		v, _ := s.get(metaKey(nil, "b"))
		s.mu.Unlock()
		if v != nil {
			break
		}
		runtime.Gosched()
	}
	hooked.Store(true)
	resume <- struct{}{} // a's sync commits, b's value with a's
	<-inSync             // and waits for the disk
	mustAdd(t, s, item("h", "/after"))
	close(resume)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := syncs.Load(); got != 1 {
		t.Errorf("two SetMetas whose values one sync made durable made %d syncs, want 1", got)
	}
}
