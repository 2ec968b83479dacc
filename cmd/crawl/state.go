package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier/pebblestore"
)

// Names under which crawl keeps its own records in a -state Store, beside
// the frontier's.
const (
	metaSettings     = "crawl/settings"
	metaComplete     = "crawl/complete"
	metaOutputFailed = "crawl/output-failed"
)

// stateFlags are the flags a -state crawl is bound to: they change which
// URLs are crawled, how they are keyed, or what their records hold, so a
// crawl resumed with other values would not be the crawl it continues.
// Politeness, throughput and logging flags may change between runs, and
// so may -revisit's bounds: a page's next fetch, already scheduled, is
// kept, and later ones follow the new bounds.
var stateFlags = []string{
	"agent", "key", "scope", "include", "exclude", "allow-private", "max-depth", "max-pages", "max-pages-per-host",
	"sitemaps", "max-sitemaps", "max-sitemap-urls", "nofollow", "follow", "max-links", "max-redirects",
	"max-path-segments", "max-segment-repeats", "sort-query", "strip-tracking", "body",
	"revisit",
}

// stateFS is the file system -state lives on; nil means the operating
// system's. Only tests set it, to make the disk fail under a crawl.
var stateFS vfs.FS

// settings is what a -state crawl stores under metaSettings.
type settings struct {
	// Flags holds the values of stateFlags, by name.
	Flags map[string]string `json:"flags"`
	// Output is the absolute name of the -o file, "" for standard output.
	Output string `json:"output"`
	// OutputGen numbers the outputs the crawl has written to: it changes
	// when -state-override moves the crawl to another file, or onto the
	// end of a file cut shorter than the crawl left it. A checkpoint of
	// another generation does not count in this output, which then
	// resumes from OutputStart.
	OutputGen   int64 `json:"output_gen"`
	OutputStart int64 `json:"output_start"`
}

// currentSettings are the settings the command was run with: the values
// of the flags names, and the output.
func currentSettings(fs *flag.FlagSet, names []string, out string) (settings, error) {
	s := settings{Flags: map[string]string{}}
	for _, name := range names {
		s.Flags[name] = fs.Lookup(name).Value.String()
	}
	if out != "" {
		abs, err := filepath.Abs(out)
		if err != nil {
			return s, fmt.Errorf("-o: %w", err)
		}
		s.Output = abs
	}
	return s, nil
}

// differences says how now differs from was in the flags names and the
// output, one item per flag: "-max-depth 2 (now 3)". A flag was lacks (one
// newer than the state) is compared with its default.
func (was settings) differences(fs *flag.FlagSet, names []string, now settings) []string {
	var diffs []string
	for _, name := range names {
		fl := fs.Lookup(name)
		old, ok := was.Flags[name]
		if !ok {
			old = fl.DefValue
		}
		if old != now.Flags[name] {
			diffs = append(diffs, fmt.Sprintf("%s (now %s)", flagSetting(fl, old), shownValue(now.Flags[name])))
		}
	}
	if !sameOutput(was.Output, now.Output) {
		diffs = append(diffs, fmt.Sprintf("%s (now %s)", outputName(was.Output), outputName(now.Output)))
	}
	return diffs
}

// flagSetting shows a flag set to value as it is typed: "-max-depth 2",
// "-sitemaps=false".
func flagSetting(fl *flag.Flag, value string) string {
	if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "-" + fl.Name + "=" + value
	}
	return "-" + fl.Name + " " + shownValue(value)
}

func shownValue(value string) string {
	if value == "" {
		return `""`
	}
	return value
}

func outputName(abs string) string {
	if abs == "" {
		return "standard output"
	}
	return "-o " + abs
}

func sameOutput(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	return sameName(a, b)
}

// crawlState is a crawl's -state directory, open.
type crawlState struct {
	dir   string
	store *pebblestore.Store
	// out is what the Store makes durable before each of its syncs: the
	// recorder, once the output is open.
	out atomic.Pointer[recorder]

	// What the directory held when it was opened: an earlier run
	// (earlier.startedBefore: this run resumes it), and its last durable
	// Checkpoint.
	earlier
	checkpoint  []byte
	diffs       []string // how this run's settings differ from was
	now         settings // this run's
	saveSetting bool     // now must be stored before the crawl
}

// openState opens the Store in dir and reads what an earlier run left
// there. On a refusal it has said why on stderr.
func openState(ctx context.Context, dir string, stderr io.Writer) (*crawlState, refusal) {
	st := &crawlState{dir: dir}
	store, err := pebblestore.Open(dir, pebblestore.Options{
		BeforeSync: st.outputDurable,
		FS:         stateFS,
	})
	if err != nil {
		if errors.Is(err, pebblestore.ErrLocked) {
			fmt.Fprintf(stderr, "crawl: -state %s: %v; is another crawl running on it?\n", dir, err)
		} else {
			fmt.Fprintf(stderr, "crawl: -state %s: %v\n", dir, err)
		}
		return nil, badUsage
	}
	st.store = store
	fail := func(err error) (*crawlState, refusal) {
		fmt.Fprintf(stderr, "crawl: -state %s: %v\n", dir, err)
		store.Close()
		return nil, badUsage
	}
	if st.earlier, err = readEarlier(ctx, store); err != nil {
		return fail(err)
	}
	if st.checkpoint, err = store.Checkpoint(ctx); err != nil {
		return fail(err)
	}
	return st, notRefused
}

// outputDurable is the Store's BeforeSync.
func (st *crawlState) outputDurable() error {
	if rec := st.out.Load(); rec != nil {
		return rec.durable()
	}
	return nil
}

// failStore makes the Store fail because the output did (err): the
// acknowledgement about to be made, whose record could not be written,
// is then refused, and so is every later one, so the crawl stops with its
// state in step with its output. A write makes the Store sync, and
// BeforeSync, finding the output failed, fails the Store.
func (st *crawlState) failStore(err error) {
	st.store.SetMeta(context.Background(), metaOutputFailed, []byte(err.Error()))
}

// check compares this run's flags with those the crawl was started with.
// A difference stops the command unless -state-override is set.
func (st *crawlState) check(_ context.Context, fs *flag.FlagSet, f *flags, _ bool, stderr io.Writer) refusal {
	now, err := currentSettings(fs, stateFlags, f.out)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: %v\n", err)
		return badUsage
	}
	st.now = now
	if !st.startedBefore {
		st.now.OutputGen = 1
		st.saveSetting = true
		return notRefused
	}
	st.now.OutputGen, st.now.OutputStart = st.was.OutputGen, st.was.OutputStart
	st.diffs = st.was.differences(fs, stateFlags, now)
	if len(st.diffs) == 0 {
		return notRefused
	}
	if !f.stateOverride {
		fmt.Fprintf(stderr, "crawl: -state %s holds a crawl started with other settings:\n", st.dir)
		for _, d := range st.diffs {
			fmt.Fprintf(stderr, "crawl:   %s\n", d)
		}
		fmt.Fprintln(stderr, "crawl: rerun with the crawl's own flags to resume it, or add -state-override to go on with these")
		return badUsage
	}
	fmt.Fprintf(stderr, "crawl: -state-override: going on with the crawl in %s with %s\n", st.dir, strings.Join(st.diffs, ", "))
	if !sameOutput(st.was.Output, now.Output) {
		st.now.OutputGen, st.now.OutputStart = st.was.OutputGen+1, 0
	}
	st.saveSetting = true
	return notRefused
}

// options are the crawler's options for the Store: the Store itself, and
// the checkpoint stored with each acknowledgement, which says where the
// output ends (see recorder.checkpoint).
func (st *crawlState) options(*slog.Logger) []crawler.Option {
	return []crawler.Option{crawler.WithStore(st.store), crawler.WithCheckpoint(func() []byte {
		cp, err := st.out.Load().checkpoint()
		if err != nil {
			st.failStore(err)
		}
		return cp
	})}
}

// outputCheckpoint decodes a checkpoint of recorder.checkpoint: the
// output's generation and its length then.
func outputCheckpoint(cp []byte) (gen, offset int64, err error) {
	g, o, ok := strings.Cut(string(cp), ":")
	if ok {
		gen, err = strconv.ParseInt(g, 10, 64)
	}
	if ok && err == nil {
		offset, err = strconv.ParseInt(o, 10, 64)
	}
	if !ok || err != nil || gen < 0 || offset < 0 {
		return 0, 0, fmt.Errorf("checkpoint %q is not an output position", cp)
	}
	return gen, offset, nil
}

// resumeOffset is where this run's -o output takes up: the length it had
// at the last durable checkpoint of its generation, or its generation's
// start when no checkpoint of it is durable.
func (st *crawlState) resumeOffset() (int64, error) {
	if st.checkpoint == nil {
		return st.now.OutputStart, nil
	}
	gen, off, err := outputCheckpoint(st.checkpoint)
	if err != nil {
		return 0, err
	}
	if gen != st.now.OutputGen {
		return st.now.OutputStart, nil
	}
	return off, nil
}

// openOutput opens -o FILE for a -state crawl: cut back to where the last
// durable checkpoint says the records the crawl counts as written end,
// so that the records of pages it will fetch again are not there twice.
// A file shorter than that was cut or replaced by someone else; the
// command stops, unless override, which appends to the file as it is.
func (st *crawlState) openOutput(name string, override bool, stderr io.Writer) (*os.File, int64, refusal) {
	offset, err := st.resumeOffset()
	if err != nil {
		fmt.Fprintf(stderr, "crawl: -state %s: %v\n", st.dir, err)
		return nil, 0, badUsage
	}
	of, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "crawl: -o: %v\n", err)
		return nil, 0, badUsage
	}
	info, err := of.Stat()
	if err != nil {
		of.Close()
		fmt.Fprintf(stderr, "crawl: -o: %v\n", err)
		return nil, 0, badUsage
	}
	if size := info.Size(); info.Mode().IsRegular() && size < offset {
		if !override {
			of.Close()
			fmt.Fprintf(stderr, "crawl: -o %s has %d bytes, fewer than the %d the crawl in %s wrote to it (cut, replaced or deleted?); put it back, or add -state-override to append to it as it is\n", name, size, offset, st.dir)
			return nil, 0, badUsage
		}
		fmt.Fprintf(stderr, "crawl: -state-override: appending to -o %s as it is (%d bytes; the crawl had written %d)\n", name, size, offset)
		st.now.OutputGen, st.now.OutputStart = st.now.OutputGen+1, size
		st.saveSetting = true
		offset = size
	}
	if info.Mode().IsRegular() {
		err = of.Truncate(offset)
		if err == nil {
			_, err = of.Seek(offset, io.SeekStart)
		}
	}
	if err != nil {
		of.Close()
		fmt.Fprintf(stderr, "crawl: -o: %v\n", err)
		return nil, 0, badUsage
	}
	return of, offset, notRefused
}

// begin makes rec the output the Store makes durable before each of its
// syncs, and starts the run: it says so if it resumes a crawl.
func (st *crawlState) begin(ctx context.Context, _ *crawler.Crawler, rec *recorder, _ bool, stderr io.Writer) refusal {
	rec.gen = st.now.OutputGen
	st.out.Store(rec)
	if err := st.start(ctx); err != nil {
		fmt.Fprintf(stderr, "crawl: -state %s: %v\n", st.dir, err)
		return unavailable
	}
	if line := st.resumeLine(); line != "" {
		fmt.Fprintln(stderr, line)
	}
	return notRefused
}

// start stores this run's settings, if they are new, and clears the mark
// of a complete crawl, since this run may add to it: both durably, before
// the crawl changes anything.
func (st *crawlState) start(ctx context.Context) error {
	if st.saveSetting {
		b, err := json.Marshal(st.now)
		if err != nil {
			return err
		}
		if err := st.store.SetMeta(ctx, metaSettings, b); err != nil {
			return err
		}
	}
	if st.complete {
		return st.store.SetMeta(ctx, metaComplete, nil)
	}
	return nil
}

// finish marks the crawl complete: nothing is left to crawl.
func (st *crawlState) finish(ctx context.Context) error {
	b, err := json.Marshal(struct {
		Finished time.Time `json:"finished"`
	}{time.Now().UTC()})
	if err != nil {
		return err
	}
	return st.store.SetMeta(ctx, metaComplete, b)
}

// resumeLine says what the directory held, for the start of a resumed
// run; "" for a new crawl.
func (st *crawlState) resumeLine() string {
	switch {
	case !st.startedBefore:
		return ""
	case st.complete:
		return ""
	}
	return fmt.Sprintf("crawl: resuming the crawl in %s: %d URLs queued, %d scheduled so far", st.dir, st.counts.Queued+st.counts.Leased, st.counts.Scheduled)
}

// storeFailureHint follows the message of a Store that failed.
func storeFailureHint(dir string) string {
	return fmt.Sprintf("crawl: the state in %s is kept as it was last made durable: fix the cause (a full disk?) and rerun the same command to resume", dir)
}

// sync makes what the Store holds durable, as far as it goes: a worker
// may hold the Store.
func (st *crawlState) sync() { st.store.Sync() }

// close ends the run on the directory: when the crawl ran to its end it
// is marked complete, then the Store makes everything durable (the
// output first) and closes. The command closes the output after it.
func (st *crawlState) close(ctx context.Context, o outcome) outcome {
	o.mode, o.started, o.complete = stateMode, st.startedBefore, st.complete
	ctx = context.WithoutCancel(ctx)
	var err error
	if o.ranToEnd() {
		err = st.finish(ctx)
	}
	if cerr := st.store.Close(); err == nil {
		err = cerr
	}
	o.closeErr = err
	return o
}

// release closes the Store; a second Close does nothing.
func (st *crawlState) release() { st.store.Close() }

// report writes what the -state adds to what the command says of a crawl
// that ended how: where the state is kept, and how to go on.
func (st *crawlState) report(w io.Writer, how ending, o outcome) {
	switch how {
	case endComplete:
		fmt.Fprintf(w, "crawl: the crawl in %s is complete: every seed was crawled before and nothing is left to crawl\n", st.dir)
	case endOutputFailed, endStoreFailed:
		fmt.Fprintln(w, storeFailureHint(st.dir))
	case endSignalled, endTimeUp:
		fmt.Fprintf(w, "crawl: state kept in %s: rerun the same command to resume\n", st.dir)
	case endCloseFailed:
		fmt.Fprintf(w, "crawl: -state %s: %v\n%s\n", st.dir, o.closeErr, storeFailureHint(st.dir))
	}
}

// nothingNew reports whether a run did nothing at all: no request, no
// record. A rerun of a complete crawl with no new seed is one.
func nothingNew(s crawler.Stats, rec *recorder) bool {
	return s.Pages == 0 && s.Disallowed == 0 && len(s.RobotsOutcomes) == 0 && s.Sitemaps == 0 && rec.written() == 0
}

// syncFunc returns what makes the data written to w durable: fsync for a
// regular file, nil for anything else (a terminal, a pipe), where there
// is nothing to sync.
func syncFunc(w io.Writer) func() error {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil
	}
	return f.Sync
}
