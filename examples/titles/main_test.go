package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLocalSite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, nil, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, &stderr)
	}

	rows, err := csv.NewReader(&stdout).ReadAll()
	if err != nil {
		t.Fatalf("output is not CSV: %v\n%s", err, stdout.String())
	}
	if len(rows) == 0 || !slices.Equal(rows[0], []string{"url", "status", "title"}) {
		t.Fatalf("header = %q, want url,status,title", rows)
	}
	// The order of rows is the crawl's; compare them by path.
	var got []string
	for _, r := range rows[1:] {
		u, err := url.Parse(r[0])
		if err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		got = append(got, u.Path+" "+r[1]+" "+r[2])
	}
	slices.Sort(got)
	want := []string{
		"/ 200 Home",
		"/about 200 About us",
		"/blog/ 200 Blog",
		"/blog/first-post 200 Hello, world",
		"/blog/second-post 200 Second post",
		"/contact 200 Contact",
		"/no-such-page 404 ",
		"/old-contact 301 ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows (sorted by path):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := stderr.String(); !strings.Contains(s, "titles: 8 pages in ") || !strings.Contains(s, "1 disallowed by robots.txt, 0 errors") {
		t.Errorf("summary on stderr:\n%s\nwant 8 pages, 1 disallowed (/private/admin), 0 errors", s)
	}
}

// TestInterruptKeepsWhatWasFetched cancels the crawl while the home page is
// being served, as ctrl-C would: that fetch finishes and its row is written.
// It crawls testSite by URL, so at the default 1 s delay (robots.txt first,
// then the page).
func TestInterruptKeepsWhatWasFetched(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	site := testSite()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			cancel()
		}
		site.ServeHTTP(w, r)
	}))
	defer srv.Close()

	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{srv.URL + "/"}, &stdout, &stderr)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run interrupted = %v, want context.Canceled", err)
	}
	want := "url,status,title\n" + srv.URL + "/,200,Home\n"
	if got := stdout.String(); got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if !strings.Contains(stderr.String(), "titles: 1 pages in ") {
		t.Errorf("stderr = %q, want a summary of 1 page", stderr.String())
	}
}

func TestTooManyArguments(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"http://a.example/", "http://b.example/"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "at most one URL") {
		t.Errorf("run with two URLs = %v, want an error saying at most one URL", err)
	}
}
