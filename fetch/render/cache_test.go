package render_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
)

// origin answers like a server with validators: 304 to a matching
// If-None-Match.
type origin struct {
	header   http.Header
	requests []http.Header
}

func (o *origin) Fetch(_ context.Context, req render.Request) (*fetch.Page, error) {
	o.requests = append(o.requests, req.Header)
	if req.Header.Get("If-None-Match") == `"v1"` {
		return &fetch.Page{URL: req.URL, Status: http.StatusNotModified, Header: o.header.Clone()}, nil
	}
	return &fetch.Page{URL: req.URL, Status: http.StatusOK, Header: o.header.Clone(), Body: []byte("body of " + req.URL.Path)}, nil
}

func TestCacheRevalidates(t *testing.T) {
	o := &origin{header: http.Header{"Etag": {`"v1"`}, "Cache-Control": {"no-cache"}}}
	var c render.Cache
	u, _ := url.Parse("http://example.com/app.js")
	ctx := context.Background()
	if _, how, err := c.Fetch(ctx, render.Request{URL: u}, o); err != nil || how != render.Missed {
		t.Fatalf("first: %v %v", how, err)
	}
	p, how, err := c.Fetch(ctx, render.Request{URL: u}, o)
	if err != nil || how != render.Revalidated || string(p.Body) != "body of /app.js" {
		t.Fatalf("second: %v %v %q", how, err, p.Body)
	}
	if len(o.requests) != 2 || o.requests[1].Get("If-None-Match") != `"v1"` {
		t.Errorf("requests: %v", o.requests)
	}
}

func TestCacheKeepsOnlyWhatMayBeKept(t *testing.T) {
	ctx := context.Background()
	for _, h := range []http.Header{
		{"Cache-Control": {"no-store, max-age=600"}},
		{"Cache-Control": {"max-age=600"}, "Set-Cookie": {"a=b"}},
		{"Cache-Control": {"max-age=600"}, "Vary": {"Cookie"}},
		{}, // no lifetime, no validators
	} {
		o := &origin{header: h}
		var c render.Cache
		u, _ := url.Parse("http://example.com/x")
		for range 2 {
			if _, _, err := c.Fetch(ctx, render.Request{URL: u}, o); err != nil {
				t.Fatal(err)
			}
		}
		if len(o.requests) != 2 || c.Len() != 0 {
			t.Errorf("%v: %d requests, %d kept; want 2 and 0", h, len(o.requests), c.Len())
		}
	}
}

func TestCacheBounded(t *testing.T) {
	o := &origin{header: http.Header{"Cache-Control": {"max-age=600"}}}
	c := render.Cache{MaxBytes: 4 << 10}
	ctx := context.Background()
	for i := range 100 {
		u, _ := url.Parse("http://example.com/" + strings.Repeat("p", 10) + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		if _, _, err := c.Fetch(ctx, render.Request{URL: u}, o); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Len(); n == 0 || n >= 100 {
		t.Errorf("%d entries kept in 4 KiB, want some evicted and some kept", n)
	}
}
