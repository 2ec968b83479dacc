package warc_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/warc"
	"github.com/heedcrawl/heed/internal/rawserver"
	"github.com/heedcrawl/heed/robots"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// "Hello", gzip-compressed.
const gzHello = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\xf2\x48\xcd\xc9\xc9\x07\x04\x00\x00\xff\xff\x82\x89\xd1\xf7\x05\x00\x00\x00"

func newWriter(t *testing.T, dir string, opts warc.Options) *warc.Writer {
	t.Helper()
	w, err := warc.NewWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// pair is the request and response (or revisit) records of one exchange.
type pair struct{ req, resp *jsRecord }

// pairs links records by WARC-Concurrent-To, failing the test unless
// every request and response names exactly its partner and the two agree
// on target, date and address. The pairs are in the order of their
// requests.
func pairs(t *testing.T, recs []jsRecord) []pair {
	t.Helper()
	byID := map[string]*jsRecord{}
	for i := range recs {
		id := recs[i].Get("WARC-Record-ID")
		if byID[id] != nil {
			t.Errorf("record ID %s used twice", id)
		}
		byID[id] = &recs[i]
	}
	var out []pair
	for i := range recs {
		req := &recs[i]
		if req.Get("WARC-Type") != "request" {
			continue
		}
		resp := byID[req.Get("WARC-Concurrent-To")]
		if resp == nil || (resp.Get("WARC-Type") != "response" && resp.Get("WARC-Type") != "revisit") {
			t.Errorf("request %s: WARC-Concurrent-To %s is no response", req.Get("WARC-Record-ID"), req.Get("WARC-Concurrent-To"))
			continue
		}
		if resp.Get("WARC-Concurrent-To") != req.Get("WARC-Record-ID") {
			t.Errorf("response %s: WARC-Concurrent-To %s, want its request %s", resp.Get("WARC-Record-ID"), resp.Get("WARC-Concurrent-To"), req.Get("WARC-Record-ID"))
		}
		for _, f := range []string{"WARC-Target-URI", "WARC-Date", "WARC-IP-Address"} {
			if req.Get(f) != resp.Get(f) {
				t.Errorf("%s: request has %q, response %q", f, req.Get(f), resp.Get(f))
			}
		}
		if req.File != resp.File {
			t.Errorf("%s: request in %s, response in %s", req.Get("WARC-Target-URI"), req.File, resp.File)
		}
		out = append(out, pair{req, resp})
	}
	n := 0
	for _, r := range recs {
		if typ := r.Get("WARC-Type"); typ == "response" || typ == "revisit" {
			n++
		}
	}
	if n != len(out) {
		t.Errorf("%d responses for %d requests", n, len(out))
	}
	return out
}

// byURL returns the exchanges of recs by target URI, failing the test if
// a URI was recorded twice.
func byURL(t *testing.T, recs []jsRecord) map[string]pair {
	t.Helper()
	out := map[string]pair{}
	for _, p := range pairs(t, recs) {
		u := p.req.Get("WARC-Target-URI")
		if _, dup := out[u]; dup {
			t.Errorf("%s: recorded twice", u)
		}
		out[u] = p
	}
	return out
}

// checkWarcinfo checks that every file begins with its warcinfo record and
// has no other.
func checkWarcinfo(t *testing.T, recs []jsRecord, want ...string) {
	t.Helper()
	prev := ""
	for _, r := range recs {
		first := r.File != prev
		prev = r.File
		isInfo := r.Get("WARC-Type") == "warcinfo"
		if first != isInfo {
			t.Errorf("%s at %d: %s record (first in file: %v)", filepath.Base(r.File), r.Offset, r.Get("WARC-Type"), first)
		}
		if !isInfo {
			continue
		}
		if r.Offset != 0 || r.Get("WARC-Filename") != filepath.Base(r.File) || r.Get("Content-Type") != "application/warc-fields" {
			t.Errorf("warcinfo of %s: offset %d, WARC-Filename %q, Content-Type %q", r.File, r.Offset, r.Get("WARC-Filename"), r.Get("Content-Type"))
		}
		for _, line := range append([]string{"software: ", "format: WARC File Format 1.1\r\n", "conformsTo: "}, want...) {
			if !bytes.Contains(r.Block, []byte(line)) {
				t.Errorf("warcinfo of %s lacks %q:\n%s", r.File, line, r.Block)
			}
		}
	}
}

func TestExchangesReadByWarcio(t *testing.T) {
	sitemap := `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>/a</loc></url></urlset>`
	responses := map[string]string{
		"/":            okResponse("<title>home</title>"),
		"/robots.txt":  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 25\r\n\r\nUser-agent: *\nDisallow: /",
		"/sitemap.xml": "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(sitemap), sitemap),
		// No trailer: warcio's dechunker takes one for payload.
		"/chunked": "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n",
		"/gzip":    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nContent-Length: 29\r\n\r\n" + gzHello,
		"/gzip-chunked": "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"a\r\n" + gzHello[:10] + "\r\n13\r\n" + gzHello[10:] + "\r\n0\r\n\r\n",
		"/moved":   "HTTP/1.1 301 Moved Permanently\r\nLocation: /\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nmoved",
		"/gone":    "HTTP/1.1 410 Gone\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\ngone",
		"/error":   "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Length: 0\r\n\r\n",
		"/closing": "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nread until the end",
	}
	payloads := map[string]string{ // entity bodies: chunking removed, gzip kept
		"/":             "<title>home</title>",
		"/robots.txt":   "User-agent: *\nDisallow: /",
		"/sitemap.xml":  sitemap,
		"/chunked":      "hello",
		"/gzip":         gzHello,
		"/gzip-chunked": gzHello,
		"/moved":        "moved",
		"/gone":         "gone",
		"/error":        "",
		"/closing":      "read until the end",
	}
	srv := rawserver.New(t, rawserver.Canned(responses))
	dir := t.TempDir()
	w := newWriter(t, dir, warc.Options{Info: []warc.Field{{"robots", "classic"}, {"http-header-user-agent", fetch.DefaultUserAgent}}})
	f := recordingFetcher(t, w)

	ctx := context.Background()
	for _, p := range []string{"/", "/chunked", "/gzip", "/gzip-chunked", "/moved", "/gone", "/error", "/closing"} {
		mustFetch(t, f, fetch.Request{URL: srv.URL + p})
	}
	// robots.txt as the robots gate asks for it.
	mustFetch(t, f, fetch.Request{URL: srv.URL + "/robots.txt", MaxBodySize: robots.MaxSize + 1})
	// A sitemap as the crawler streams it.
	p, body, err := f.Stream(ctx, fetch.Request{URL: srv.URL + "/sitemap.xml", MaxBodySize: fetch.MaxSitemapBytes})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fetch.ParseSitemap(body, p.URL, fetch.SitemapOptions{}, func(fetch.SitemapEntry) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := body.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	files := w.Files()
	if len(files) != 1 {
		t.Fatalf("files %v, want 1", files)
	}
	if !regexp.MustCompile(`^heed-\d{14}-00000\.warc\.gz$`).MatchString(filepath.Base(files[0])) {
		t.Errorf("file name %s", files[0])
	}
	recs := mustReadWARC(t, files...)
	checkWarcinfo(t, recs, "robots: classic\r\n", "http-header-user-agent: "+fetch.DefaultUserAgent+"\r\n")
	got := byURL(t, recs)
	if len(got) != len(responses) {
		t.Errorf("%d exchanges recorded, want %d", len(got), len(responses))
	}
	for path, raw := range responses {
		x, ok := got[srv.URL+path]
		if !ok {
			t.Errorf("%s: not recorded", path)
			continue
		}
		if x.resp.Get("WARC-Type") != "response" {
			t.Errorf("%s: %s record", path, x.resp.Get("WARC-Type"))
		}
		if string(x.resp.Block) != raw {
			t.Errorf("%s: response block\n%q\nwant what the server sent\n%q", path, x.resp.Block, raw)
		}
		if string(x.resp.Payload) != payloads[path] {
			t.Errorf("%s: payload %q, want %q", path, x.resp.Payload, payloads[path])
		}
		if !bytes.HasPrefix(x.req.Block, []byte("GET "+path+" HTTP/1.1\r\nHost: "+strings.TrimPrefix(srv.URL, "http://")+"\r\n")) {
			t.Errorf("%s: request block %q", path, x.req.Block)
		}
		if len(x.resp.All("WARC-Truncated")) != 0 {
			t.Errorf("%s: WARC-Truncated on a whole response", path)
		}
		if x.resp.Get("WARC-IP-Address") != "127.0.0.1" {
			t.Errorf("%s: WARC-IP-Address %q", path, x.resp.Get("WARC-IP-Address"))
		}
		d, err := time.Parse(time.RFC3339Nano, x.resp.Get("WARC-Date"))
		if err != nil || !strings.HasSuffix(x.resp.Get("WARC-Date"), "Z") || time.Since(d) > time.Minute || time.Since(d) < 0 {
			t.Errorf("%s: WARC-Date %q: %v", path, x.resp.Get("WARC-Date"), err)
		}
	}
}

// Over https the records hold the plaintext, and the exchange is HTTP/1.1
// even with a server that offers HTTP/2.
func TestTLSReadByWarcio(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Date", "Thu, 01 Jan 2026 00:00:00 GMT")
		w.Header().Set("Content-Length", "8")
		fmt.Fprint(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	w := newWriter(t, t.TempDir(), warc.Options{})
	f := recordingFetcher(t, w)
	tr := f.CrawlTransport()
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	f.Transport = tr
	mustFetch(t, f, fetch.Request{URL: srv.URL + "/secure"})
	w.Close()

	recs := mustReadWARC(t, w.Files()...)
	x, ok := byURL(t, recs)[srv.URL+"/secure"]
	if !ok {
		t.Fatal("not recorded")
	}
	want := "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nContent-Type: text/plain\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\n\r\nHTTP/1.1"
	if string(x.resp.Block) != want {
		t.Errorf("response block %q, want %q", x.resp.Block, want)
	}
	if x.resp.Get("WARC-Target-URI") != srv.URL+"/secure" || x.resp.Get("WARC-IP-Address") != "127.0.0.1" {
		t.Errorf("target %q, IP %q", x.resp.Get("WARC-Target-URI"), x.resp.Get("WARC-IP-Address"))
	}
}

func TestTruncatedReadByWarcio(t *testing.T) {
	big := strings.Repeat("0123456789", 20000)
	chunked := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
	// Many chunks, so that the cut falls past the first: warcio reads a
	// block whose first chunk is cut as not chunked at all.
	for range 200 {
		chunked += fmt.Sprintf("%x\r\n%s\r\n", 1000, big[:1000])
	}
	chunked += "0\r\n\r\n"
	responses := map[string]string{
		"/big":     okResponse(big),
		"/chunked": chunked,
		"/small":   okResponse("fits"),
	}
	srv := rawserver.New(t, rawserver.Canned(responses))
	w := newWriter(t, t.TempDir(), warc.Options{})
	f := recordingFetcher(t, w)
	f.MaxBodySize = 5000
	for _, p := range []string{"/big", "/chunked", "/small"} {
		page := mustFetch(t, f, fetch.Request{URL: srv.URL + p})
		if page.Truncated != (p != "/small") {
			t.Fatalf("%s: Page.Truncated %v", p, page.Truncated)
		}
	}
	w.Close()

	got := byURL(t, mustReadWARC(t, w.Files()...))
	for _, p := range []string{"/big", "/chunked"} {
		x := got[srv.URL+p]
		if x.resp == nil {
			t.Fatalf("%s: not recorded", p)
		}
		if tr := x.resp.Get("WARC-Truncated"); tr != "length" {
			t.Errorf("%s: WARC-Truncated %q, want length", p, tr)
		}
		raw := responses[p]
		if !strings.HasPrefix(raw, string(x.resp.Block)) || len(x.resp.Block) >= len(raw) {
			t.Errorf("%s: block of %d bytes is not a cut of the %d sent", p, len(x.resp.Block), len(raw))
		}
		if len(x.resp.Payload) < 5000 || !strings.HasPrefix(big, string(x.resp.Payload)) {
			t.Errorf("%s: payload of %d bytes is not the start of the body", p, len(x.resp.Payload))
		}
	}
	if x := got[srv.URL+"/small"]; x.resp == nil || len(x.resp.All("WARC-Truncated")) != 0 {
		t.Errorf("/small: truncated or missing")
	}
}

func TestRevisitReadByWarcio(t *testing.T) {
	page := "<p>the same page</p>"
	responses := map[string]string{
		"/a":       okResponse(page),
		"/b":       "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Other: yes\r\nContent-Length: 20\r\n\r\n" + page,
		"/c":       okResponse("<p>another page</p>"),
		"/empty1":  "HTTP/1.1 204 No Content\r\n\r\n",
		"/empty2":  "HTTP/1.1 204 No Content\r\n\r\n",
		"/chunked": "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(page), page),
	}
	order := []string{"/a", "/b", "/c", "/empty1", "/empty2", "/chunked", "/a"}
	srv := rawserver.New(t, rawserver.Canned(responses))

	for _, dedup := range []bool{false, true} {
		w := newWriter(t, t.TempDir(), warc.Options{Dedup: dedup})
		f := recordingFetcher(t, w)
		for _, p := range order {
			mustFetch(t, f, fetch.Request{URL: srv.URL + p})
		}
		w.Close()
		recs := mustReadWARC(t, w.Files()...)

		var resps []*jsRecord
		for i := range recs {
			if typ := recs[i].Get("WARC-Type"); typ == "response" || typ == "revisit" {
				resps = append(resps, &recs[i])
			}
		}
		pairs(t, recs)
		if len(resps) != len(order) {
			t.Fatalf("dedup %v: %d responses, want %d", dedup, len(resps), len(order))
		}
		first := resps[0]
		for i, r := range resps {
			wantRevisit := dedup && (i == 1 || i == 5 || i == 6) // /b, /chunked and /a again carry /a's payload
			if (r.Get("WARC-Type") == "revisit") != wantRevisit {
				t.Errorf("dedup %v: %s is a %s record", dedup, order[i], r.Get("WARC-Type"))
				continue
			}
			if !wantRevisit {
				if string(r.Block) != responses[order[i]] {
					t.Errorf("dedup %v: %s: block %q", dedup, order[i], r.Block)
				}
				continue
			}
			raw := responses[order[i]]
			head := raw[:strings.Index(raw, "\r\n\r\n")+4]
			if string(r.Block) != head {
				t.Errorf("%s: revisit block %q, want the response header %q", order[i], r.Block, head)
			}
			checks := map[string]string{
				"WARC-Profile":              warc.RevisitProfile,
				"WARC-Refers-To":            first.Get("WARC-Record-ID"),
				"WARC-Refers-To-Target-URI": srv.URL + "/a",
				"WARC-Refers-To-Date":       first.Get("WARC-Date"),
				"WARC-Payload-Digest":       first.Get("WARC-Payload-Digest"),
				"WARC-Truncated":            "length",
				"WARC-Target-URI":           srv.URL + order[i],
				"Content-Type":              "application/http;msgtype=response",
			}
			for k, v := range checks {
				if got := r.Get(k); got != v {
					t.Errorf("%s: %s %q, want %q", order[i], k, got, v)
				}
			}
			if len(r.Payload) != 0 {
				t.Errorf("%s: revisit carries a payload of %d bytes", order[i], len(r.Payload))
			}
		}
	}
}

func TestRotationReadByWarcio(t *testing.T) {
	srv := rawserver.New(t, func(path string, w *bufio.Writer) bool {
		w.WriteString(okResponse(strings.Repeat(path, 300))) // about 1.5 KB, compresses poorly enough
		return true
	})
	const maxSize = 4 << 10
	dir := t.TempDir()
	w := newWriter(t, dir, warc.Options{MaxSize: maxSize})
	f := recordingFetcher(t, w)
	const n = 30
	for i := range n {
		// Paths that differ enough to keep the members from shrinking to
		// nothing.
		mustFetch(t, f, fetch.Request{URL: fmt.Sprintf("%s/%d-%x", srv.URL, i, i*7919*7919)})
	}
	w.Close()

	files := w.Files()
	if len(files) < 3 {
		t.Fatalf("%d files for %d exchanges at MaxSize %d", len(files), n, maxSize)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(files) {
		t.Errorf("%d files in the directory, Files says %d", len(entries), len(files))
	}
	for i, path := range files {
		if want := fmt.Sprintf("-%05d.warc.gz", i); !strings.HasSuffix(path, want) {
			t.Errorf("file %d is %s, want serial %s", i, filepath.Base(path), want)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		members := readMembers(t, path)
		if st.Size() > maxSize && len(members) > 3 {
			t.Errorf("%s: %d bytes in %d records, over MaxSize with more than one exchange", path, st.Size(), len(members))
		}
	}
	recs := mustReadWARC(t, files...)
	checkWarcinfo(t, recs)
	got := byURL(t, recs)
	if len(got) != n {
		t.Errorf("%d exchanges across the files, want %d", len(got), n)
	}
	for u, x := range got {
		path := strings.TrimPrefix(u, srv.URL)
		if string(x.resp.Payload) != strings.Repeat(path, 300) {
			t.Errorf("%s: payload is not its own", path)
		}
	}
}

func TestConcurrentReadByWarcio(t *testing.T) {
	srv := rawserver.New(t, func(path string, w *bufio.Writer) bool {
		w.WriteString(okResponse(strings.Repeat(path, 200)))
		return true
	})
	w := newWriter(t, t.TempDir(), warc.Options{MaxSize: 64 << 10})
	f := recordingFetcher(t, w)
	const n = 60
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := f.Fetch(context.Background(), fetch.Request{URL: fmt.Sprintf("%s/page-%d", srv.URL, i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	w.Close()
	files := w.Files()
	for _, path := range files {
		readMembers(t, path) // one record per gzip member, none interleaved
	}
	recs := mustReadWARC(t, files...)
	checkWarcinfo(t, recs)
	got := byURL(t, recs)
	if len(got) != n {
		t.Errorf("%d exchanges, want %d", len(got), n)
	}
	for u, x := range got {
		path := strings.TrimPrefix(u, srv.URL)
		if string(x.resp.Block) != okResponse(strings.Repeat(path, 200)) {
			t.Errorf("%s: response block is not its own", path)
		}
		if !bytes.HasPrefix(x.req.Block, []byte("GET "+path+" ")) {
			t.Errorf("%s: request block %q", path, x.req.Block)
		}
	}
}

// A file cut anywhere, as a kill -9 might leave it, still reads up to its
// last complete record.
func TestCutFileReadByWarcio(t *testing.T) {
	srv := rawserver.New(t, func(path string, w *bufio.Writer) bool {
		w.WriteString(okResponse(strings.Repeat("page "+path+" ", 50)))
		return true
	})
	dir := t.TempDir()
	w := newWriter(t, dir, warc.Options{})
	f := recordingFetcher(t, w)
	for i := range 6 {
		mustFetch(t, f, fetch.Request{URL: fmt.Sprintf("%s/%d", srv.URL, i)})
	}
	w.Close()
	path := w.Files()[0]
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	members := readMembers(t, path)
	if len(members) != 13 {
		t.Fatalf("%d records, want warcinfo and 6 pairs", len(members))
	}

	// Cuts at every member boundary, one byte either side of it, and in
	// the middle of every member.
	cuts := map[int64]bool{}
	prev := int64(0)
	for _, m := range members {
		for _, c := range []int64{m.End - 1, m.End, m.End + 1, (prev + m.End) / 2, prev + 10} {
			if c > 0 && c < int64(len(data)) {
				cuts[c] = true
			}
		}
		prev = m.End
	}
	cutDir := t.TempDir()
	var files []string
	wantRecords := map[string]int{}
	for c := range cuts {
		name := filepath.Join(cutDir, fmt.Sprintf("cut-%06d.warc.gz", c))
		if err := os.WriteFile(name, data[:c], 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
		complete := 0
		for _, m := range members {
			if m.End <= c {
				complete++
			}
		}
		wantRecords[name] = complete
	}

	recs := readWARC(t, files...)
	byFile := map[string][]jsRecord{}
	for _, r := range recs {
		byFile[r.File] = append(byFile[r.File], r)
	}
	for _, name := range files {
		want := wantRecords[name]
		var whole int
		for i, r := range byFile[name] {
			if r.Error != "" {
				continue
			}
			if len(r.Block) != r.ContentLength || r.BlockDigest != r.Get("WARC-Block-Digest") {
				// The record the cut fell in: warcio hands out what it
				// has; it must be the last and incomplete.
				if i < want {
					t.Errorf("%s: record %d is damaged, though whole in the file", filepath.Base(name), i)
				}
				continue
			}
			if i >= want {
				t.Errorf("%s: record %d reads as whole, but the cut fell in it", filepath.Base(name), i)
				continue
			}
			checkRecord(t, &r)
			whole++
		}
		if whole != want {
			t.Errorf("%s: warcio read %d whole records, want the %d before the cut", filepath.Base(name), whole, want)
		}
	}
}

// A second Writer on the same directory, as a resumed crawl makes, starts
// a new file and leaves the old ones alone.
func TestResumeStartsNewFile(t *testing.T) {
	dir := t.TempDir()
	srv := rawserver.New(t, rawserver.Canned(map[string]string{"/": okResponse("home")}))
	var all []string
	for run := range 3 {
		w, err := warc.NewWriter(dir, warc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f := recordingFetcher(t, w)
		mustFetch(t, f, fetch.Request{URL: srv.URL + "/"})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		files := w.Files()
		if len(files) != 1 || !strings.HasSuffix(files[0], fmt.Sprintf("-%05d.warc.gz", run)) {
			t.Fatalf("run %d wrote %v", run, files)
		}
		all = append(all, files...)
	}
	recs := mustReadWARC(t, all...)
	checkWarcinfo(t, recs)
	if got := pairs(t, recs); len(got) != 3 {
		t.Errorf("%d exchanges in 3 runs of one", len(got))
	}
	if len(recs) != 9 {
		t.Errorf("%d records in 3 files, want 9: an earlier file was overwritten", len(recs))
	}
}

func TestNewWriterRefusesBadOptions(t *testing.T) {
	for name, opts := range map[string]warc.Options{
		"prefix with a slash": {Prefix: "a/b"},
		"field name":          {Info: []warc.Field{{"bad name", "v"}}},
		"empty field name":    {Info: []warc.Field{{"", "v"}}},
		"newline in value":    {Info: []warc.Field{{"description", "two\r\nWARC-Type: lies"}}},
		"newline in software": {Software: "heed\n"},
	} {
		if _, err := warc.NewWriter(t.TempDir(), opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := warc.NewWriter(file, warc.Options{}); err == nil {
		t.Error("a file as the directory: no error")
	}
}

func TestRecordAfterClose(t *testing.T) {
	w := newWriter(t, t.TempDir(), warc.Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	x := &fetch.Exchange{URL: "http://127.0.0.1/", Start: time.Now(), Request: []byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), Response: []byte(okResponse("x"))}
	if err := w.Record(context.Background(), x); !errors.Is(err, warc.ErrClosed) {
		t.Errorf("Record after Close: %v, want ErrClosed", err)
	}
	if err := w.Record(context.Background(), &fetch.Exchange{URL: "http://x/\r\nWARC-Type: lies"}); err == nil {
		t.Error("a target URI with a line break: no error")
	}
}

// Go's own multi-member gzip reader sees one WARC stream: the file is an
// ordinary .warc.gz.
func TestFileIsOneGzipStream(t *testing.T) {
	w := newWriter(t, t.TempDir(), warc.Options{})
	x := &fetch.Exchange{URL: "http://127.0.0.1/", Start: time.Now(), Request: []byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), Response: []byte(okResponse("x"))}
	if err := w.Record(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, _ := os.ReadFile(w.Files()[0])
	zr, err := gzipReader(data)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for rest := all; len(rest) > 0; {
		rec, r, err := parseRecord(rest)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, rec.Header.Get("WARC-Type"))
		rest = r
	}
	if strings.Join(types, " ") != "warcinfo request response" {
		t.Errorf("records %v", types)
	}
}

func sha1Base32(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// The payload digest is over the entity body: chunking (trailers
// included) removed, content coding kept, interim 1xx responses skipped;
// a response that does not parse as HTTP gets none.
func TestPayloadDigest(t *testing.T) {
	for name, c := range map[string]struct{ response, payload string }{
		"length":    {okResponse("hello"), "hello"},
		"chunked":   {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n", "hello"},
		"trailer":   {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\nX-Sum: 1\r\n\r\n", "hello"},
		"cut chunk": {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n20\r\nlo", "hello"},
		"gzip":      {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 29\r\n\r\n" + gzHello, gzHello},
		"interim":   {"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok"},
		"no body":   {"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", ""},
		"garbage":   {"not http at all", "-"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWriter(t, t.TempDir(), warc.Options{})
			req := "POST /form HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\na=b"
			x := &fetch.Exchange{URL: "http://127.0.0.1/form", Start: time.Now(), Request: []byte(req), Response: []byte(c.response)}
			if err := w.Record(context.Background(), x); err != nil {
				t.Fatal(err)
			}
			w.Close()
			recs := readMembers(t, w.Files()[0])
			if len(recs) != 3 {
				t.Fatalf("%d records", len(recs))
			}
			reqRec, resp := recs[1], recs[2]
			if got := reqRec.Header.Get("WARC-Payload-Digest"); got != sha1Base32([]byte("a=b")) {
				t.Errorf("request payload digest %q", got)
			}
			want := sha1Base32([]byte(c.payload))
			if c.payload == "-" {
				want = ""
			}
			if got := resp.Header.Get("WARC-Payload-Digest"); got != want {
				t.Errorf("response payload digest %q, want %q", got, want)
			}
			if got := resp.Header.Get("WARC-Block-Digest"); got != sha1Base32([]byte(c.response)) || string(resp.Block) != c.response {
				t.Errorf("block digest %q or block %q", got, resp.Block)
			}
		})
	}
}

// With Sync, files are synced after every exchange; what is written reads
// back the same.
func TestSyncOption(t *testing.T) {
	srv := rawserver.New(t, rawserver.Canned(map[string]string{"/": okResponse("home")}))
	w := newWriter(t, t.TempDir(), warc.Options{Sync: true, MaxSize: 1})
	f := recordingFetcher(t, w)
	for range 3 {
		mustFetch(t, f, fetch.Request{URL: srv.URL + "/"})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(w.Files()); n != 3 {
		t.Errorf("%d files at MaxSize 1, want one per exchange", n)
	}
	recs := mustReadWARC(t, w.Files()...)
	checkWarcinfo(t, recs)
	if n := len(pairs(t, recs)); n != 3 {
		t.Errorf("%d exchanges", n)
	}
}
