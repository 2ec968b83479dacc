package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestURLArguments runs the built command as a newcomer first does, with a
// URL and the flags after it, then with a mix of URLs, a seeds file and
// standard input, flags between them and "--": every seed is crawled,
// once, and the flags after the arguments apply (-o writes the file;
// -max-pages 1 and -follow=false keep to the seeds; the link past
// -max-pages has its skip record).
func TestURLArguments(t *testing.T) {
	bin := buildCrawl(t)
	s := newSite(t, map[string]http.HandlerFunc{
		"/":       page(`<title>Home</title><a href="/linked">linked</a>`),
		"/linked": page(`<title>Linked</title>`),
		"/file":   page(`<title>File</title>`),
		"/stdin":  page(`<title>Stdin</title>`),
	})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code, stderr := runBin(t, bin, s.URL+"/", "-delay", "0s", "-sitemaps=false", "-max-pages", "1", "-o", out, "-progress", "off")
	if code != 0 {
		t.Fatalf("crawl URL -flags…: exit %d; stderr:\n%s", code, stderr)
	}
	checkOnce(t, out, s.URL+"/", s.URL+"/linked") // the link past -max-pages is a skip record
	if data, err := os.ReadFile(out); err != nil || readRecords(t, data)[s.URL+"/linked"].Skipped != "max-pages" || s.requested("/linked") != 0 {
		t.Errorf("/linked: not a max-pages skip, unfetched (%v):\n%s", err, data)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-delay", "0s", s.URL+"/", writeSeeds(t, s.URL+"/file"), "-sitemaps=false",
		"-", "-follow=false", "-progress", "off", "--", s.URL+"/linked")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(s.URL+"/stdin\n"), &stdout, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("crawl URL FILE - -- URL: %v; stderr:\n%s", err, &errb)
	}
	recs := readRecords(t, stdout.Bytes())
	for path, title := range map[string]string{"/": "Home", "/file": "File", "/stdin": "Stdin", "/linked": "Linked"} {
		if recs[s.URL+path].Title != title {
			t.Errorf("no record of %s among the records:\n%s", path, &stdout)
		}
	}
	if n := strings.Count(stdout.String(), "\n"); n != 4 {
		t.Errorf("%d records, want 4 (one per seed; -follow=false after the seeds applies):\n%s", n, &stdout)
	}
}
