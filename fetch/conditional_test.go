package fetch_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
)

func TestValidators(t *testing.T) {
	lm := "Tue, 03 Nov 2026 10:00:00 GMT"
	lmTime, _ := http.ParseTime(lm)
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   fetch.Validators
	}{
		{"none", nil, fetch.Validators{}},
		{"strong", map[string]string{"ETag": `"v1"`}, fetch.Validators{ETag: `"v1"`}},
		{"weak", map[string]string{"ETag": `W/"v1"`}, fetch.Validators{ETag: `W/"v1"`}},
		{"unquoted", map[string]string{"ETag": `v1`}, fetch.Validators{}},
		{"quote inside", map[string]string{"ETag": `"a"b"`}, fetch.Validators{}},
		{"date", map[string]string{"Last-Modified": lm}, fetch.Validators{LastModified: lmTime}},
		{"date before Date", map[string]string{"Last-Modified": lm, "Date": "Wed, 04 Nov 2026 10:00:00 GMT"}, fetch.Validators{LastModified: lmTime}},
		{"date after Date", map[string]string{"Last-Modified": lm, "Date": "Mon, 02 Nov 2026 10:00:00 GMT"}, fetch.Validators{}},
		{"bad date", map[string]string{"Last-Modified": "yesterday"}, fetch.Validators{}},
		{"both", map[string]string{"ETag": `"x"`, "Last-Modified": lm}, fetch.Validators{ETag: `"x"`, LastModified: lmTime}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fetch.Page{Header: http.Header{}}
			for k, v := range tc.header {
				p.Header.Set(k, v)
			}
			if got := p.Validators(); got != tc.want {
				t.Errorf("Validators() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidatorsHeader(t *testing.T) {
	if h := (fetch.Validators{}).Header(); h != nil {
		t.Errorf("zero Validators: Header() = %v, want nil", h)
	}
	lm := time.Date(2026, 11, 3, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	h := fetch.Validators{ETag: `W/"v1"`, LastModified: lm}.Header()
	if got := h.Get("If-None-Match"); got != `W/"v1"` {
		t.Errorf("If-None-Match = %q", got)
	}
	if got := h.Get("If-Modified-Since"); got != "Tue, 03 Nov 2026 09:00:00 GMT" {
		t.Errorf("If-Modified-Since = %q, want the date in GMT", got)
	}
}

func TestDigest(t *testing.T) {
	html := func(body string) *fetch.Page {
		return &fetch.Page{ContentType: "text/html", Body: []byte(body)}
	}
	base := html(`<html><body><h1>Prices</h1><p>Tea   3.20</p><script>var nonce="a1"</script></body></html>`)
	same := []*fetch.Page{
		html(`<html><body><h1 class="x">Prices</h1>` + "\n" + `<p data-token="zz">Tea 3.20</p><script>var nonce="b2"</script></body></html>`),
		html(`<html><head><style>p{color:red}</style></head><body><h1>Prices</h1><p>Tea` + "\t\n" + `3.20</p></body></html>`),
	}
	changed := []*fetch.Page{
		html(`<html><body><h1>Prices</h1><p>Tea 3.30</p></body></html>`),
		html(`<html><body><h1>Prices</h1><p>Tea3.20</p></body></html>`),
	}
	for i, p := range same {
		if p.Digest() != base.Digest() {
			t.Errorf("same[%d]: digest differs; only markup, scripts and spacing changed", i)
		}
	}
	for i, p := range changed {
		if p.Digest() == base.Digest() {
			t.Errorf("changed[%d]: digest equal; the text changed", i)
		}
	}
	a := &fetch.Page{ContentType: "application/pdf", Body: []byte("%PDF-1 a")}
	b := &fetch.Page{ContentType: "application/pdf", Body: []byte("%PDF-1  a")}
	if a.Digest() == b.Digest() {
		t.Errorf("non-HTML bodies that differ have one digest")
	}
	// Stores keep digests: the value must never change between versions.
	// (FNV-1a; an HTML page's text is hashed the same way.)
	if got, want := (&fetch.Page{ContentType: "text/plain", Body: []byte("hello world")}).Digest(), uint64(0x779a65e7023cd2e7); got != want {
		t.Errorf("digest of hello world = %#x, want %#x (FNV-1a of \"hello world\")", got, want)
	}
}

// A revisit with the validators of the first fetch gets a 304 without a
// body from a server that honours them.
func TestConditionalRevisit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v7"`)
		w.Header().Set("Last-Modified", "Tue, 03 Nov 2026 10:00:00 GMT")
		if r.Header.Get("If-None-Match") == `"v7"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<p>version 7</p>")
	}))
	defer srv.Close()
	f := &fetch.Fetcher{}
	defer f.CloseIdleConnections()
	ctx := context.Background()
	first, err := f.Fetch(ctx, fetch.Request{URL: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	v := first.Validators()
	if first.NotModified() || v.ETag != `"v7"` || v.LastModified.IsZero() {
		t.Fatalf("first fetch: status %d, validators %+v", first.Status, v)
	}
	again, err := f.Fetch(ctx, fetch.Request{URL: srv.URL + "/", Header: v.Header()})
	if err != nil {
		t.Fatal(err)
	}
	if !again.NotModified() || len(again.Body) != 0 {
		t.Errorf("revisit: status %d, %d body bytes; want 304 and none", again.Status, len(again.Body))
	}
}

// A revisit sends back what the first answer said identifies its version.
func ExampleValidators() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"2026-11-26"`)
		if r.Header.Get("If-None-Match") == `"2026-11-26"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		io.WriteString(w, "today's news")
	}))
	defer srv.Close()
	f := &fetch.Fetcher{}
	defer f.CloseIdleConnections()

	p, _ := f.Fetch(context.Background(), fetch.Request{URL: srv.URL})
	v := p.Validators()
	fmt.Println(p.Status, v.ETag)

	p, _ = f.Fetch(context.Background(), fetch.Request{URL: srv.URL, Header: v.Header()})
	fmt.Println(p.Status, p.NotModified(), len(p.Body))
	// Output:
	// 200 "2026-11-26"
	// 304 true 0
}
