package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRevisitFlagErrors(t *testing.T) {
	seeds := writeSeeds(t, "https://example.invalid/")
	for _, tc := range []struct {
		name string
		args []string
		want string // the whole of stderr
	}{
		{"min without revisit", []string{"-min-revisit", "1m", seeds}, "crawl: -min-revisit is for a crawl with -revisit; see crawl -h"},
		{"max without revisit", []string{"-max-revisit", "1h", seeds}, "crawl: -max-revisit is for a crawl with -revisit; see crawl -h"},
		{"zero min", []string{"-revisit", "-min-revisit", "0s", seeds}, "crawl: -min-revisit must be positive, got 0s; see crawl -h"},
		{"negative min", []string{"-revisit", "-min-revisit", "-1s", seeds}, "crawl: -min-revisit must be positive, got -1s; see crawl -h"},
		{"max below min", []string{"-revisit", "-min-revisit", "2h", "-max-revisit", "1h", seeds}, "crawl: -max-revisit 1h0m0s is below -min-revisit 2h0m0s; see crawl -h"},
		{"max below default min", []string{"-revisit", "-max-revisit", "1m", seeds}, "crawl: -max-revisit 1m0s is below -min-revisit 1h0m0s; see crawl -h"},
		{"negative for", []string{"-for", "-1s", seeds}, "crawl: -for must not be negative, got -1s; see crawl -h"},
		{"for without unit", []string{"-for", "5", seeds}, `crawl: invalid value "5" for -for: missing unit, e.g. 5s; see crawl -h`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "", tc.args...)
			if code != 2 || stderr != tc.want+"\n" || stdout != "" {
				t.Errorf("exit %d, stderr:\n%s\nstdout %q\nwant exit 2 and the one line:\n%s", code, stderr, stdout, tc.want)
			}
		})
	}
}

// -for stops a crawl that would not end by itself as an interrupt does,
// but with exit 0 and the summary; with -state the crawl is resumed by the
// same command. Without -revisit, records are as they always were.
func TestForStopsCrawl(t *testing.T) {
	srv := chainSite(t)
	dir := t.TempDir()
	out, state := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "state")
	args := []string{"-for", "300ms", "-delay", "10ms", "-progress", "off", "-sitemaps=false", "-state", state, "-o", out, writeSeeds(t, srv.URL+"/p/0")}
	for run := 1; run <= 2; run++ {
		began := time.Now()
		code, stdout, stderr := runCmd(t, "", args...)
		if took := time.Since(began); took < 300*time.Millisecond {
			t.Errorf("run %d ended after %v, before its -for", run, took)
		}
		if code != 0 {
			t.Fatalf("run %d: exit %d, want 0; stderr:\n%s", run, code, stderr)
		}
		for _, want := range []string{
			"crawl: -for 300ms is up: finishing fetches in flight\n",
			"crawl: state kept in " + state + ": rerun the same command to resume\n",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("run %d: stderr lacks %q:\n%s", run, want, stderr)
			}
		}
		if !regexp.MustCompile(`(?s)-for 300ms is up.*\ncrawl: [1-9][0-9]* pages, `).MatchString(stderr) {
			t.Errorf("run %d: no summary of fetched pages after the -for line on stderr:\n%s", run, stderr)
		}
		if resumed := strings.Contains(stderr, "crawl: resuming the crawl in "+state); resumed != (run == 2) {
			t.Errorf("run %d: resumed %v; stderr:\n%s", run, resumed, stderr)
		}
		if strings.Contains(stderr, "revisits:") || stdout != "" {
			t.Errorf("run %d: a revisit line without -revisit, or stdout %q:\n%s", run, stdout, stderr)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	keys := readOutputKeys(t, out)
	for u, n := range keys.count {
		if n != 1 {
			t.Errorf("%d records of %s across the two runs", n, u)
		}
	}
	for _, field := range []string{`"change"`, `"etag"`, `"digest"`, `"previous_fetch"`} {
		if bytes.Contains(data, []byte(field)) {
			t.Errorf("records without -revisit have %s", field)
		}
	}
}

// revisitSite serves, for TestRevisitRecords, a home page linking to a
// page with validators that answers 304 to them (/etag), one that changes
// on every request without validators (/changing), one that never changes
// without validators (/static), one gone (/gone) and one that moved
// (/moved), and logs the conditional headers of each request.
func revisitSite(t *testing.T, lastMod time.Time) (*site, func(path string) []http.Header) {
	t.Helper()
	var mu sync.Mutex
	conds := map[string][]http.Header{}
	n := 0
	s := newSite(t, map[string]http.HandlerFunc{
		"/": page(`<title>Home</title><a href="/etag">e</a> <a href="/changing">c</a> <a href="/static">s</a> <a href="/gone">g</a> <a href="/moved">m</a>`),
		"/etag": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			conds["/etag"] = append(conds["/etag"], r.Header.Clone())
			mu.Unlock()
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Last-Modified", lastMod.Format(http.TimeFormat))
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			page("<title>E</title><p>a page worth keeping</p>")(w, r)
		},
		"/changing": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			v := n
			mu.Unlock()
			page(fmt.Sprintf("<title>C</title><p>version %d</p>", v))(w, r)
		},
		"/static": page("<title>S</title><p>the same text</p>"),
		"/moved": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/static", http.StatusMovedPermanently)
		},
	})
	return s, func(path string) []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return conds[path]
	}
}

// A revisiting crawl's records say what each fetch found, with the
// validators and digest of the version held and when it was fetched
// before; a 304's record has no body, even with -body. The summary counts
// the revisits.
func TestRevisitRecords(t *testing.T) {
	lastMod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, conds := revisitSite(t, lastMod)
	bin := buildCrawl(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startCrawl(t, ctx, bin, "-revisit", "-min-revisit", "50ms", "-max-revisit", "200ms", "-delay", "5ms", "-sitemaps=false", "-body", "-progress", "off", "-o", out, writeSeeds(t, s.URL+"/"))
	untilTrue(t, "four requests of each revisited page", []*crawlRun{r}, func() bool {
		return s.requested("/etag") >= 4 && s.requested("/changing") >= 4 && s.requested("/static") >= 4 && s.requested("/gone") >= 3
	})
	r.signal(t, os.Interrupt)
	if err := <-r.exited; exitCode(err) != 130 {
		t.Fatalf("exit %v, want 130; stderr:\n%s", err, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]record{}
	eachRecord(t, data, func(_ int, rec record) {
		u, err := url.Parse(rec.FinalURL)
		if err != nil || rec.Error != "" {
			t.Fatalf("record %+v", rec)
		}
		byPath[u.Path] = append(byPath[u.Path], rec)
	})
	for path, recs := range byPath {
		checkChain(t, path, recs, 0)
	}

	etag := byPath["/etag"]
	if len(etag) < 3 {
		t.Fatalf("%d records of /etag, want at least 3", len(etag))
	}
	for i, rec := range etag {
		wantStatus, wantChange := http.StatusNotModified, "unchanged"
		if i == 0 {
			wantStatus, wantChange = http.StatusOK, "new"
		}
		if rec.Status != wantStatus || rec.Change != wantChange || rec.ETag != `"v1"` || rec.LastModified == nil || !rec.LastModified.Equal(lastMod) || rec.Digest != etag[0].Digest {
			t.Errorf("/etag record %d: status %d change %q etag %q last_modified %v digest %q; want %d %q, \"v1\", %v, %s",
				i, rec.Status, rec.Change, rec.ETag, rec.LastModified, rec.Digest, wantStatus, wantChange, lastMod, etag[0].Digest)
		}
		if hasBody := rec.Body != nil; hasBody != (i == 0) || (i > 0 && (rec.Bytes != 0 || rec.ContentType != "")) {
			t.Errorf("/etag record %d (status %d): body %v, %d bytes, content type %q", i, rec.Status, hasBody, rec.Bytes, rec.ContentType)
		}
	}
	if _, err := strconv.ParseUint(etag[0].Digest, 16, 64); err != nil || len(etag[0].Digest) != 16 {
		t.Errorf("digest %q is not 16 hex digits", etag[0].Digest)
	}
	for i, h := range conds("/etag") {
		inm, ims := h.Get("If-None-Match"), h.Get("If-Modified-Since")
		if (i > 0) != (inm == `"v1"` && ims == lastMod.Format(http.TimeFormat)) || i == 0 && (inm != "" || ims != "") {
			t.Errorf("request %d of /etag: If-None-Match %q, If-Modified-Since %q", i, inm, ims)
		}
	}

	changing, static := byPath["/changing"], byPath["/static"]
	for i := 1; i < len(changing); i++ {
		if rec := changing[i]; rec.Change != "changed" || rec.Digest == changing[i-1].Digest || rec.ETag != "" || rec.LastModified != nil {
			t.Errorf("/changing record %d: change %q digest %q (before %q) etag %q last_modified %v", i, rec.Change, rec.Digest, changing[i-1].Digest, rec.ETag, rec.LastModified)
		}
	}
	for i := 1; i < len(static); i++ {
		if rec := static[i]; rec.Change != "unchanged" || rec.Status != http.StatusOK || rec.Digest != static[0].Digest || rec.Body == nil {
			t.Errorf("/static record %d: status %d change %q digest %q (first %q)", i, rec.Status, rec.Change, rec.Digest, static[0].Digest)
		}
	}
	for i, rec := range byPath["/gone"] {
		if rec.Status != http.StatusNotFound || rec.Change != "gone" || rec.Digest != "" {
			t.Errorf("/gone record %d: status %d change %q digest %q", i, rec.Status, rec.Change, rec.Digest)
		}
	}
	if got := byPath["/gone"]; len(got) != 3 {
		t.Errorf("%d records of /gone, want 3: revisited until gone 3 times in a row, then dropped", len(got))
	}
	if moved := byPath["/moved"]; len(moved) != 1 || moved[0].Change != "moved" || moved[0].Redirect == "" {
		t.Errorf("/moved: %+v, want one record, moved, with its redirect", moved)
	}

	var revisits, changed, notModified int
	var saved string
	m := regexp.MustCompile(`(?m)^crawl: revisits: (\d+), (\d+) found changed, (\d+) answered 304 Not Modified \(about (.+) not transferred against unconditional refetches\); 1 page no longer revisited`).FindStringSubmatch(r.stderr.String())
	if m == nil {
		t.Fatalf("no revisit summary line (with 1 page dropped: /gone; /moved was never held) on stderr:\n%s", r.stderr)
	}
	revisits, _ = strconv.Atoi(m[1])
	changed, _ = strconv.Atoi(m[2])
	notModified, _ = strconv.Atoi(m[3])
	saved = m[4]
	count := func(f func(record) bool) (n int) {
		for _, recs := range byPath {
			for _, rec := range recs {
				if f(rec) {
					n++
				}
			}
		}
		return n
	}
	if want := count(func(r record) bool { return r.PreviousFetch != nil }); revisits != want {
		t.Errorf("summary: %d revisits; the records show %d", revisits, want)
	}
	if want := count(func(r record) bool { return r.Change == "changed" }); changed != want {
		t.Errorf("summary: %d changed; the records show %d", changed, want)
	}
	if want := count(func(r record) bool { return r.Status == http.StatusNotModified }); notModified != want || saved == "0 B" {
		t.Errorf("summary: %d 304s, %s saved; the records show %d 304s", notModified, saved, want)
	}
}

// checkChain checks that recs, one URL's records in the order written,
// are one record per fetch, none lost and none twice: the first is the
// page's first fetch, and each later one's previous_fetch is the end of
// the fetch of the record before it (within slack of its fetched_at plus
// its duration), and so never that of a record missing or of one written
// twice.
func checkChain(t *testing.T, u string, recs []record, slack time.Duration) {
	t.Helper()
	if slack == 0 {
		slack = 50 * time.Millisecond
	}
	for i, rec := range recs {
		if i == 0 {
			if rec.Change != "new" && rec.Change != "moved" && rec.Change != "gone" || rec.PreviousFetch != nil {
				t.Errorf("%s: first record: change %q, previous_fetch %v; want the first fetch", u, rec.Change, rec.PreviousFetch)
			}
			continue
		}
		prev := recs[i-1]
		end := prev.FetchedAt.Add(time.Duration(prev.DurationMS * float64(time.Millisecond)))
		switch {
		case rec.PreviousFetch == nil:
			t.Errorf("%s: record %d (fetched %v) has no previous_fetch", u, i, rec.FetchedAt)
		case rec.PreviousFetch.Before(prev.FetchedAt) || rec.PreviousFetch.After(end.Add(slack)):
			t.Errorf("%s: record %d's previous_fetch %v is not the fetch of record %d (%v to %v): a record lost or written twice",
				u, i, rec.PreviousFetch.Format(time.StampMicro), i-1, prev.FetchedAt.Format(time.StampMicro), end.Format(time.StampMicro))
		case !rec.FetchedAt.After(*rec.PreviousFetch):
			t.Errorf("%s: record %d fetched %v, before its previous_fetch %v", u, i, rec.FetchedAt, rec.PreviousFetch)
		}
	}
}
