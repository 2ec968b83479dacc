package warc

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/heedcrawl/heed/fetch"
)

// DefaultMaxSize is the size past which a Writer begins a new file: the
// 1 GB the specification recommends (Annex C), in binary units.
const DefaultMaxSize = 1 << 30

// DefaultPrefix begins the names of the files when Options.Prefix is empty.
const DefaultPrefix = "heed"

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("warc: writer closed")

// Field is one named field of the warcinfo record, such as
// {"robots", "classic"} or {"http-header-user-agent", "heed/0.1"}.
type Field struct {
	Name, Value string
}

// Options configure a Writer. The zero value is usable.
type Options struct {
	// Prefix begins every file name; empty means DefaultPrefix. Letters,
	// digits, '_' and '-' only, so names stay unambiguous.
	Prefix string
	// MaxSize is the size in bytes past which the next file is begun;
	// zero means DefaultMaxSize.
	MaxSize int64
	// Dedup writes a revisit record instead of a response whose payload
	// is identical to that of a response already written by this Writer.
	// It keeps the digest, record ID, target URI and date of every
	// distinct payload in memory, about 200 bytes each.
	Dedup bool
	// Software names the program in the warcinfo record; empty means
	// "heed".
	Software string
	// Info holds further warcinfo fields, written in this order after
	// software, hostname, format and conformsTo: the crawl's settings
	// (agent, delays, scope, seeds file, …). Names are tokens; values are
	// one line of UTF-8.
	Info []Field
	// Sync makes every exchange durable before Record returns (fsync of
	// the file, and of the directory when a file is begun). Off, files are
	// synced only when closed; a crash of the process loses nothing
	// either way, a crash of the machine may lose the newest records.
	Sync bool
}

// original is the record a revisit refers to.
type original struct {
	id, uri, date string
}

// Writer writes WARC files into one directory. It is safe for concurrent
// use. Create one with NewWriter; Close it when the crawl ends.
type Writer struct {
	dir      string
	opts     Options
	hostname string
	zpool    sync.Pool // *gzip.Writer

	mu      sync.Mutex
	f       *os.File
	name    string
	size    int64 // bytes in f
	records int   // exchanges in f
	serial  int   // of the next file
	files   []string
	err     error // sticky: the first failed write
	closed  bool
	seen    map[string]original // payload digest → response record
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// NewWriter creates dir if needed and begins the first file there, so that
// a directory that cannot be written fails here rather than at the first
// fetch.
func NewWriter(dir string, opts Options) (*Writer, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if !prefixRE.MatchString(opts.Prefix) {
		return nil, fmt.Errorf("warc: prefix %q: use letters, digits, '_' and '-'", opts.Prefix)
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Software == "" {
		opts.Software = "heed"
	}
	for _, f := range append([]Field{{"software", opts.Software}}, opts.Info...) {
		if err := checkField(f.Name, f.Value); err != nil {
			return nil, fmt.Errorf("warc: info field: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("warc: %w", err)
	}
	serial, err := nextSerial(dir, opts.Prefix)
	if err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	w := &Writer{dir: dir, opts: opts, hostname: host, serial: serial, seen: map[string]original{}}
	w.zpool.New = func() any { return gzip.NewWriter(nil) }
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.begin(); err != nil {
		return nil, err
	}
	return w, nil
}

// nextSerial returns one more than the largest serial of the prefix's
// files in dir, 0 if there are none.
func nextSerial(dir, prefix string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("warc: %w", err)
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `-\d{14}-(\d+)\.warc(\.gz)?$`)
	next := 0
	for _, e := range entries {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n >= next {
				next = n + 1
			}
		}
	}
	return next, nil
}

// begin opens the next file and writes its warcinfo record. w.mu is held.
func (w *Writer) begin() error {
	now := time.Now().UTC()
	var f *os.File
	var name string
	for {
		name = fmt.Sprintf("%s-%s-%05d.warc.gz", w.opts.Prefix, now.Format("20060102150405"), w.serial)
		var err error
		f, err = os.OpenFile(filepath.Join(w.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			w.serial++ // another writer took it since NewWriter looked
			continue
		}
		if err != nil {
			return fmt.Errorf("warc: %w", err)
		}
		break
	}
	w.serial++
	info := w.warcinfo(name, now)
	if _, err := f.Write(info); err != nil {
		f.Close()
		return fmt.Errorf("warc: %s: %w", name, err)
	}
	if w.opts.Sync {
		if err := syncFileAndDir(f, w.dir); err != nil {
			f.Close()
			return fmt.Errorf("warc: %s: %w", name, err)
		}
	}
	w.f, w.name, w.size, w.records = f, name, int64(len(info)), 0
	w.files = append(w.files, filepath.Join(w.dir, name))
	return nil
}

func syncFileAndDir(f *os.File, dir string) error {
	if err := f.Sync(); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// warcinfo returns the gzip member of a file's warcinfo record.
func (w *Writer) warcinfo(name string, now time.Time) []byte {
	var block bytes.Buffer
	for _, f := range append([]Field{
		{"software", w.opts.Software},
		{"hostname", w.hostname},
		{"format", "WARC File Format 1.1"},
		{"conformsTo", "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"},
	}, w.opts.Info...) {
		if f.Name == "hostname" && f.Value == "" {
			continue
		}
		fmt.Fprintf(&block, "%s: %s\r\n", f.Name, f.Value)
	}
	h := header{
		{"WARC-Type", "warcinfo"},
		{"WARC-Record-ID", newRecordID()},
		{"WARC-Date", formatDate(now)},
		{"WARC-Filename", name},
		{"WARC-Block-Digest", digest(block.Bytes())},
		{"Content-Type", "application/warc-fields"},
	}
	var out bytes.Buffer
	w.member(&out, h, block.Bytes())
	return out.Bytes()
}

// Record writes the exchange as a request record and a response (or
// revisit) record. It implements fetch.Recorder.
func (w *Writer) Record(ctx context.Context, x *fetch.Exchange) error {
	if x == nil {
		return errors.New("warc: nil exchange")
	}
	if err := checkValue(x.URL); err != nil || x.URL == "" {
		return fmt.Errorf("warc: target URI %q: not a URI", x.URL)
	}
	ex := parseExchange(x)

	revisit, ok := original{}, false
	if w.opts.Dedup && ex.dedupable() {
		w.mu.Lock()
		revisit, ok = w.seen[ex.respPayload]
		w.mu.Unlock()
	}
	var buf bytes.Buffer
	if ok {
		w.revisitMembers(&buf, ex, revisit)
	} else {
		w.exchangeMembers(&buf, ex)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if w.f == nil || (w.records > 0 && w.size+int64(buf.Len()) > w.opts.MaxSize) {
		if err := w.rotate(); err != nil {
			w.err = err
			return err
		}
	}
	if _, err := w.f.Write(buf.Bytes()); err != nil {
		w.err = fmt.Errorf("warc: %s: %w", w.name, err)
		return w.err
	}
	w.size += int64(buf.Len())
	w.records++
	if w.opts.Sync {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("warc: %s: %w", w.name, err)
			return w.err
		}
	}
	if !ok && w.opts.Dedup && ex.dedupable() {
		if _, dup := w.seen[ex.respPayload]; !dup {
			w.seen[ex.respPayload] = original{id: ex.respID, uri: x.URL, date: ex.date}
		}
	}
	return nil
}

// rotate closes the current file, if any, and begins the next. w.mu is
// held.
func (w *Writer) rotate() error {
	if w.f != nil {
		if err := closeFile(w.f); err != nil {
			w.f = nil
			return fmt.Errorf("warc: %s: %w", w.name, err)
		}
		w.f = nil
	}
	return w.begin()
}

func closeFile(f *os.File) error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close syncs and closes the current file. Later Records fail with
// ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.f == nil {
		return nil
	}
	err := closeFile(w.f)
	w.f = nil
	if err != nil {
		return fmt.Errorf("warc: %s: %w", w.name, err)
	}
	return nil
}

// Files returns the paths of the files begun so far, oldest first.
func (w *Writer) Files() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.files...)
}

// member appends one record, compressed as a gzip member of its own, to
// out.
func (w *Writer) member(out *bytes.Buffer, h header, block []byte) {
	zw := w.zpool.Get().(*gzip.Writer)
	defer w.zpool.Put(zw)
	zw.Reset(out)
	writeRecord(zw, h, block)
	zw.Close() // writes into a bytes.Buffer cannot fail
}
