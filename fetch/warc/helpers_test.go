package warc_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/heedcrawl/heed/fetch"
)

// okResponse is a 200 response with a Content-Length.
func okResponse(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// recordingFetcher returns a Fetcher that records into w.
func recordingFetcher(t *testing.T, w fetch.Recorder) *fetch.Fetcher {
	t.Helper()
	f := &fetch.Fetcher{Recorder: w}
	t.Cleanup(f.CloseIdleConnections)
	return f
}

func mustFetch(t *testing.T, f *fetch.Fetcher, req fetch.Request) *fetch.Page {
	t.Helper()
	p, err := f.Fetch(context.Background(), req)
	if err != nil {
		t.Fatalf("Fetch(%s): %v", req.URL, err)
	}
	return p
}

// jsRecord is one record as warcio read it (testdata/warcio/read.mjs).
type jsRecord struct {
	File           string      `json:"file"`
	Offset         int64       `json:"offset"`
	Version        string      `json:"version"`
	Headers        [][2]string `json:"headers"`
	ContentLength  int         `json:"contentLength"`
	Block          []byte      `json:"block"`
	BlockDigest    string      `json:"blockDigest"`
	HTTPStatusline string      `json:"httpStatusline"`
	HTTPHeaders    [][2]string `json:"httpHeaders"`
	Payload        []byte      `json:"payload"`
	PayloadDigest  string      `json:"payloadDigest"`
	Error          string      `json:"error"`
}

// Get returns the first value of a WARC header field.
func (r *jsRecord) Get(name string) string {
	for _, f := range r.Headers {
		if strings.EqualFold(f[0], name) {
			return f[1]
		}
	}
	return ""
}

// All returns every value of a WARC header field.
func (r *jsRecord) All(name string) []string {
	var vs []string
	for _, f := range r.Headers {
		if strings.EqualFold(f[0], name) {
			vs = append(vs, f[1])
		}
	}
	return vs
}

var (
	warcioOnce sync.Once
	warcioErr  error
)

// warcioScript returns the path of the warcio reader script, installing
// warcio (npm ci, pinned by package-lock.json) into testdata/warcio if it
// is missing. Without node or warcio the test is skipped, except in CI
// (CI=true), where it fails: there the independent reader must run.
func warcioScript(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "warcio"))
	if err != nil {
		t.Fatal(err)
	}
	warcioOnce.Do(func() {
		if _, err := exec.LookPath("node"); err != nil {
			warcioErr = fmt.Errorf("node not found (Debian: apt-get install nodejs npm): %w", err)
			return
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "warcio", "package.json")); err == nil {
			return
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			warcioErr = fmt.Errorf("warcio is not installed in %s and npm is not found (Debian: apt-get install npm): %w", dir, err)
			return
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			warcioErr = fmt.Errorf("npm ci in %s: %w\n%s", dir, err, out)
		}
	})
	if warcioErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the independent WARC reader is required in CI: %v", warcioErr)
		}
		t.Skipf("independent WARC reader unavailable: %v", warcioErr)
	}
	return filepath.Join(dir, "read.mjs")
}

// readWARC reads files with warcio and returns their records in order.
// A file warcio could not read to its end yields a record with Error set.
func readWARC(t *testing.T, files ...string) []jsRecord {
	t.Helper()
	script := warcioScript(t)
	cmd := exec.Command("node", append([]string{script}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.Bytes())
	}
	var recs []jsRecord
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var r jsRecord
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("warcio output: %v", err)
		}
		recs = append(recs, r)
	}
	return recs
}

// mustReadWARC reads files with warcio and fails the test if any could not
// be read to its end, or if any record's digests do not verify.
func mustReadWARC(t *testing.T, files ...string) []jsRecord {
	t.Helper()
	recs := readWARC(t, files...)
	for _, r := range recs {
		if r.Error != "" {
			t.Fatalf("warcio could not read %s: %s", r.File, r.Error)
		}
		checkRecord(t, &r)
	}
	return recs
}

// checkRecord checks what every record must satisfy, as warcio read it.
func checkRecord(t *testing.T, r *jsRecord) {
	t.Helper()
	id := r.Get("WARC-Record-ID")
	if r.Version != "WARC/1.1" {
		t.Errorf("%s: version %q", id, r.Version)
	}
	for _, name := range []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "Content-Length"} {
		if n := len(r.All(name)); n != 1 {
			t.Errorf("%s: %d %s fields, want 1", id, n, name)
		}
	}
	if !strings.HasPrefix(id, "<urn:uuid:") || !strings.HasSuffix(id, ">") || len(id) != len("<urn:uuid:>")+36 {
		t.Errorf("record ID %q is not a urn:uuid", id)
	}
	if r.ContentLength != len(r.Block) {
		t.Errorf("%s: Content-Length %d, block of %d bytes", id, r.ContentLength, len(r.Block))
	}
	if got := r.Get("WARC-Block-Digest"); got != r.BlockDigest {
		t.Errorf("%s: WARC-Block-Digest %q, block's is %q", id, got, r.BlockDigest)
	}
	switch typ := r.Get("WARC-Type"); typ {
	case "request", "response":
		if got := r.Get("WARC-Payload-Digest"); got != r.PayloadDigest {
			t.Errorf("%s (%s): WARC-Payload-Digest %q, payload's is %q", id, typ, got, r.PayloadDigest)
		}
		if want := "application/http;msgtype=" + typ; r.Get("Content-Type") != want {
			t.Errorf("%s: Content-Type %q", id, r.Get("Content-Type"))
		}
		if r.Get("WARC-Target-URI") == "" || r.Get("WARC-IP-Address") == "" || len(r.All("WARC-Concurrent-To")) != 1 {
			t.Errorf("%s (%s): target %q, IP %q, concurrent %q", id, typ, r.Get("WARC-Target-URI"), r.Get("WARC-IP-Address"), r.All("WARC-Concurrent-To"))
		}
	}
}

// goRecord is one record as the test's own reader parsed it.
type goRecord struct {
	Header http.Header
	Block  []byte
	End    int64 // offset in the file just past its gzip member
}

// readMembers reads a .warc.gz file one gzip member at a time and checks
// that each member holds exactly one whole record.
func readMembers(t *testing.T, path string) []goRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []goRecord
	rd := bytes.NewReader(data)
	br := bufio.NewReader(rd)
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return recs
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			t.Fatalf("%s: member %d: %v", path, len(recs), err)
		}
		zr.Multistream(false)
		member, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: member %d: %v", path, len(recs), err)
		}
		rec, rest, err := parseRecord(member)
		if err != nil {
			t.Fatalf("%s: member %d: %v", path, len(recs), err)
		}
		if len(rest) != 0 {
			t.Fatalf("%s: member %d holds %d bytes past its record", path, len(recs), len(rest))
		}
		rec.End = int64(len(data) - rd.Len() - br.Buffered())
		recs = append(recs, rec)
	}
}

// parseRecord parses one uncompressed record at the start of b.
func parseRecord(b []byte) (goRecord, []byte, error) {
	line, rest, ok := bytes.Cut(b, []byte("\r\n"))
	if !ok || string(line) != "WARC/1.1" {
		return goRecord{}, nil, fmt.Errorf("version line %q", line)
	}
	head, rest, ok := bytes.Cut(rest, []byte("\r\n\r\n"))
	if !ok {
		return goRecord{}, nil, errors.New("header does not end")
	}
	h := http.Header{}
	for _, l := range strings.Split(string(head), "\r\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return goRecord{}, nil, fmt.Errorf("field %q", l)
		}
		h.Add(k, strings.TrimSpace(v))
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if err != nil || n > len(rest) {
		return goRecord{}, nil, fmt.Errorf("Content-Length %q with %d bytes left", h.Get("Content-Length"), len(rest))
	}
	if !bytes.HasPrefix(rest[n:], []byte("\r\n\r\n")) {
		return goRecord{}, nil, errors.New("block not followed by CRLF CRLF")
	}
	return goRecord{Header: h, Block: rest[:n]}, rest[n+4:], nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func gzipReader(b []byte) (io.Reader, error) { return gzip.NewReader(bytes.NewReader(b)) }
