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
	"sync"
	"syscall"
	"time"

	"github.com/heedcrawl/heed/crawler"
)

// checkOutputs refuses -o and -log files that would overwrite the seeds, or
// each other, before anything is created.
func checkOutputs(f *flags, seedsName string, stdin io.Reader) error {
	var seeds os.FileInfo
	if seedsName == "-" {
		if sf, ok := stdin.(*os.File); ok {
			seeds, _ = sf.Stat()
		}
	} else {
		seeds, _ = os.Stat(seedsName)
	}
	outputs := []struct{ flag, name string }{{"-o", f.out}, {"-log", f.logFile}}
	for i, o := range outputs {
		if o.name == "" {
			continue
		}
		st, err := os.Stat(o.name)
		if err != nil {
			st = nil // not there yet: it cannot be the seeds
		}
		if st != nil && seeds != nil && !seeds.IsDir() && os.SameFile(st, seeds) {
			return fmt.Errorf("%s %s is the seeds file: refusing to overwrite it", o.flag, o.name)
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
	Error       string    `json:"error,omitempty"`
	Body        *string   `json:"body,omitempty"`
}

// recorder writes records; it is called from many workers at once. The
// first write error is kept, reported once to onFail, and ends all writing.
type recorder struct {
	mu     sync.Mutex
	w      *bufio.Writer
	enc    *json.Encoder
	body   bool
	each   bool // flush after every record
	err    error
	onFail func(error)
}

func newRecorder(w io.Writer, body, each bool) *recorder {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &recorder{w: bw, enc: enc, body: body, each: each}
}

func (r *recorder) write(rec *record) {
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return
	}
	err := r.enc.Encode(rec)
	if err == nil && r.each {
		err = r.w.Flush()
	}
	r.fail(err) // unlocks
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
	if r.body {
		s := string(p.Body)
		rec.Body = &s
	}
	r.write(rec)
}

func (r *recorder) failure(_ context.Context, u string, err error) {
	r.write(&record{URL: u, FetchedAt: time.Now().UTC(), Error: err.Error()})
}
