package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

// checkOutputs refuses -o and -log files and a -state directory that
// would overwrite a seeds file ("-": standard input's), or each other,
// before anything is created.
func checkOutputs(f *flags, seedsFiles []string, stdin io.Reader) error {
	var seeds []os.FileInfo
	for _, name := range seedsFiles {
		var st os.FileInfo
		if name == "-" {
			if sf, ok := stdin.(*os.File); ok {
				st, _ = sf.Stat()
			}
		} else {
			st, _ = os.Stat(name)
		}
		if st != nil && !st.IsDir() {
			seeds = append(seeds, st)
		}
	}
	outputs := []struct{ flag, name string }{{"-o", f.out}, {"-log", f.logFile}, {"-state", f.state}}
	for i, o := range outputs {
		if o.name == "" {
			continue
		}
		st, err := os.Stat(o.name)
		if err != nil {
			st = nil // not there yet: it cannot be the seeds
		}
		for _, seed := range seeds {
			if st != nil && os.SameFile(st, seed) {
				return fmt.Errorf("%s %s is the seeds file: refusing to overwrite it", o.flag, o.name)
			}
		}
		for _, p := range outputs[:i] {
			if p.name != "" && sameName(p.name, o.name) {
				return fmt.Errorf("%s and %s both name %s", p.flag, o.flag, o.name)
			}
		}
	}
	return nil
}

// sameName reports whether two file names are one file, existing or not.
func sameName(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// outputFailed is the cause of a crawl cancelled because its output could
// not be written.
type outputFailed struct{ err error }

func (o outputFailed) Error() string { return "writing output: " + o.err.Error() }
func (o outputFailed) Unwrap() error { return o.err }

// outputErrorText says what went wrong with the output: a reader that went
// away (crawl … | head) is no disaster, a full disk is.
func outputErrorText(err error) string {
	if errors.Is(err, syscall.EPIPE) {
		return "output closed by its reader"
	}
	return "writing output: " + err.Error()
}

// record is one line of the JSON Lines output; the README documents it.
type record struct {
	URL         string    `json:"url"`
	FinalURL    string    `json:"final_url,omitempty"`
	Status      int       `json:"status,omitempty"`
	ContentType string    `json:"content_type,omitempty"`
	Depth       int       `json:"depth"`
	Referrer    string    `json:"referrer,omitempty"`
	FetchedAt   time.Time `json:"fetched_at"`
	DurationMS  float64   `json:"duration_ms"`
	Bytes       int       `json:"bytes"`
	Title       string    `json:"title,omitempty"`
	Links       int       `json:"links"`
	Redirect    string    `json:"redirect,omitempty"`
	Truncated   bool      `json:"truncated,omitempty"`
	Noindex     bool      `json:"noindex"`
	Nofollow    bool      `json:"nofollow"`
	revisitFields
	renderFields
	Error   string  `json:"error,omitempty"`
	Skipped string  `json:"skipped,omitempty"`
	Body    *string `json:"body,omitempty"`
}

// recorder writes records; it is called from many workers at once. The
// first write error is kept, reported once to onFail, and ends all writing.
type recorder struct {
	mu      sync.Mutex
	w       *bufio.Writer
	out     countingWriter // under w: what has left the buffer
	enc     *json.Encoder
	body    bool
	revisit bool // -revisit: records say what each fetch found
	each    bool // flush after every record, not only after the first
	err     error
	onFail  func(error)
	records int64 // records written

	// With -state: the output's offset when this run began, its
	// generation (see checkpoint), and how to make what was flushed
	// durable (nil when the output is not a regular file).
	base    int64
	gen     int64
	syncOut func() error
	whole   int64 // bytes flushed, at the end of a record, when checkpoint last flushed
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func newRecorder(w io.Writer, body, each bool) *recorder {
	r := &recorder{body: body, each: each}
	r.out.w = w
	r.w = bufio.NewWriterSize(&r.out, 64<<10)
	r.enc = json.NewEncoder(r.w)
	r.enc.SetEscapeHTML(false)
	return r
}

func (r *recorder) write(rec *record) {
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return
	}
	err := r.enc.Encode(rec)
	if err == nil {
		r.records++
	}
	// The first record goes out at once, so that crawl … | head -1
	// answers as soon as there is an answer; the rest are batched.
	if err == nil && (r.each || r.records == 1) {
		err = r.w.Flush()
	}
	r.fail(err) // unlocks
}

// written returns how many records have been written.
func (r *recorder) written() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records
}

// checkpoint is the crawler's WithCheckpoint: where the output ends with
// every record written so far, as "generation:offset". The crawl stores it
// with each URL's acknowledgement, which the Store writes out at once,
// durably or not: so the records are flushed first, or a crawl killed
// right after would count records it never wrote. A resumed crawl cuts
// the output back to the last checkpoint the Store kept (see
// outputCheckpoint). Once the output has failed, the checkpoint is the end
// of the last record written whole, and err says the acknowledgement must
// not be made: its record is not in the output.
func (r *recorder) checkpoint() (cp []byte, err error) {
	r.mu.Lock()
	if r.err == nil && r.w.Buffered() > 0 {
		if ferr := r.w.Flush(); ferr != nil {
			r.fail(ferr) // unlocks
			r.mu.Lock()
		}
	}
	if r.err == nil {
		r.whole = r.out.n
	}
	off, err := r.base+r.whole, r.err
	r.mu.Unlock()
	cp = strconv.AppendInt(make([]byte, 0, 24), r.gen, 10)
	cp = append(cp, ':')
	return strconv.AppendInt(cp, off, 10), err
}

// durable flushes the output and syncs it to disk: the Store calls it
// before each sync, so that no checkpoint becomes durable before the
// records it counts.
func (r *recorder) durable() error {
	if err := r.flush(); err != nil {
		return err
	}
	if r.syncOut == nil {
		return nil
	}
	err := r.syncOut()
	r.mu.Lock()
	r.fail(err) // unlocks
	return err
}

// flush writes out what is buffered and returns the first write error.
func (r *recorder) flush() error {
	r.mu.Lock()
	if r.err != nil {
		defer r.mu.Unlock()
		return r.err
	}
	err := r.w.Flush()
	r.fail(err) // unlocks
	return err
}

// fail records err, if any, as the first write error and tells onFail. It
// is called with r.mu held and releases it, so that onFail runs unlocked.
func (r *recorder) fail(err error) {
	if err == nil || r.err != nil {
		r.mu.Unlock()
		return
	}
	r.err = err
	r.mu.Unlock()
	if r.onFail != nil {
		r.onFail(err)
	}
}

// flushEvery flushes the output every interval until stop is called; stop
// flushes what is left and returns the first write error.
func (r *recorder) flushEvery(interval time.Duration) (stop func() error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.flush()
			}
		}
	})
	return func() error {
		close(done)
		wg.Wait()
		return r.flush()
	}
}

func (r *recorder) page(_ context.Context, p *crawler.Page) {
	rec := &record{
		URL:         p.URL.String(),
		FinalURL:    p.URL.String(),
		Status:      p.Status,
		ContentType: p.ContentType,
		Depth:       p.Depth,
		Referrer:    p.Referrer,
		FetchedAt:   p.Timings.Start.UTC(),
		DurationMS:  float64(p.Timings.Total.Microseconds()) / 1000,
		Bytes:       len(p.Body),
		Links:       len(p.Links),
		Truncated:   p.Truncated,
	}
	if len(p.RedirectChain) > 0 {
		rec.URL = p.RedirectChain[0]
	}
	if p.Redirect != nil {
		rec.Redirect = p.Redirect.String()
	}
	d := p.Directives()
	rec.Noindex, rec.Nofollow = d.Noindex, d.Nofollow
	// Read from the markup's tokens: no parse tree to build, and no
	// nesting depth that makes the parser give up.
	rec.Title = p.Title()
	if r.revisit {
		rec.revisitFields = revisitRecord(p)
	}
	rec.renderFields = renderRecord(p)
	if p.NotModified() {
		rec.ContentType = "" // what it says of no body is a guess
	}
	if r.body && !p.NotModified() {
		s := string(p.Body)
		rec.Body = &s
	}
	r.write(rec)
}

// failure writes the record of u, which failed or was skipped with err (an
// *crawler.Error with Skipped set names the reason).
func (r *recorder) failure(_ context.Context, u string, err error) {
	rec := &record{URL: u, FetchedAt: time.Now().UTC(), Error: err.Error()}
	if e, ok := errors.AsType[*crawler.Error](err); ok {
		rec.Skipped = string(e.Skipped)
	}
	r.write(rec)
}

// skippedDisallowed is the Skipped of the record of a URL robots.txt rules
// keep out.
const skippedDisallowed = "disallowed"

// disallowed writes the record of u, which robots.txt rules keep out: a
// skip, not an error.
func (r *recorder) disallowed(_ context.Context, u string) {
	r.write(&record{URL: u, FetchedAt: time.Now().UTC(), Skipped: skippedDisallowed})
}
