package fetch_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/fetch"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encoding %q: %v", s, err)
	}
	return b
}

// TestCharsetDecoding serves pages in legacy encodings, declared in each of
// the ways HTML allows, and checks that body and anchor text come out as
// UTF-8.
func TestCharsetDecoding(t *testing.T) {
	cases := []struct {
		name        string
		contentType string
		body        []byte
		wantText    string // anchor text of the single link
		wantCharset string
	}{
		{
			name:        "shift_jis in header",
			contentType: "text/html; charset=Shift_JIS",
			body:        encode(t, japanese.ShiftJIS, `<html><body><a href="/jp">こんにちは世界</a></body></html>`),
			wantText:    "こんにちは世界",
			wantCharset: "shift_jis",
		},
		{
			name:        "windows-1251 in meta charset",
			contentType: "text/html",
			body:        encode(t, charmap.Windows1251, `<html><head><meta charset="windows-1251"></head><body><a href="/ru">Привет, мир</a></body></html>`),
			wantText:    "Привет, мир",
			wantCharset: "windows-1251",
		},
		{
			// WHATWG maps the ISO-8859-1 label to windows-1252.
			name:        "iso-8859-1 in header",
			contentType: "text/html; charset=ISO-8859-1",
			body:        encode(t, charmap.ISO8859_1, `<a href="/fr">Café crème à la française</a>`),
			wantText:    "Café crème à la française",
			wantCharset: "windows-1252",
		},
		{
			name:        "windows-1252 in meta http-equiv",
			contentType: "text/html",
			body:        encode(t, charmap.Windows1252, `<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><a href="/q">“naïve” — quotes</a>`),
			wantText:    "“naïve” — quotes",
			wantCharset: "windows-1252",
		},
		{
			name:        "euc-jp in meta",
			contentType: "text/html",
			body:        encode(t, japanese.EUCJP, `<meta charset="euc-jp"><a href="/e">日本語のリンク</a>`),
			wantText:    "日本語のリンク",
			wantCharset: "euc-jp",
		},
		{
			// The BOM outranks the header.
			name:        "utf-16le by BOM",
			contentType: "text/html; charset=windows-1252",
			body:        encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), `<a href="/u">Ünïcödé</a>`),
			wantText:    "Ünïcödé",
			wantCharset: "utf-16le",
		},
		{
			name:        "utf-8 undeclared",
			contentType: "text/html",
			body:        []byte(`<a href="/8">Grüße</a>`),
			wantText:    "Grüße",
			wantCharset: "utf-8",
		},
	}
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, c := range cases {
			if r.URL.Query().Get("case") == c.name {
				w.Header().Set("Content-Type", c.contentType)
				w.Write(c.body)
			}
		}
	}))
	f := newFetcher(t, nil)
	reg := fetch.NewRegistry()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := f.Fetch(context.Background(), fetch.Request{URL: srv.URL + "/?case=" + strings.ReplaceAll(c.name, " ", "+")})
			if err != nil {
				t.Fatal(err)
			}
			if p.Charset != c.wantCharset {
				t.Errorf("Charset = %q, want %q", p.Charset, c.wantCharset)
			}
			if !strings.Contains(string(p.Body), c.wantText) {
				t.Errorf("body %q does not contain %q", p.Body, c.wantText)
			}
			links, err := reg.Extract(context.Background(), p)
			if err != nil || len(links) != 1 {
				t.Fatalf("links %v, err %v", links, err)
			}
			if links[0].Text != c.wantText {
				t.Errorf("anchor text %q, want %q", links[0].Text, c.wantText)
			}
		})
	}
}

func TestCharsetOfOtherTypes(t *testing.T) {
	latin := encode(t, charmap.ISO8859_1, "Größe")
	cyr := encode(t, charmap.Windows1251, "Данные")
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/plain":
			w.Header().Set("Content-Type", "text/plain; charset=windows-1251")
			w.Write(cyr)
		case "/plain-undeclared":
			w.Header().Set("Content-Type", "text/plain")
			w.Write(latin)
		case "/xml":
			// XML declares its own encoding; decoding here would make the
			// declaration lie to the XML parser.
			w.Header().Set("Content-Type", "application/xml; charset=iso-8859-1")
			w.Write(append([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><a>`), latin...))
		case "/bin":
			w.Header().Set("Content-Type", "image/png")
			w.Write(latin)
		}
	}))
	f := newFetcher(t, nil)
	if p := mustFetch(t, f, srv.URL+"/plain"); string(p.Body) != "Данные" || p.Charset != "windows-1251" {
		t.Errorf("text/plain: %q charset %q", p.Body, p.Charset)
	}
	if p := mustFetch(t, f, srv.URL+"/plain-undeclared"); string(p.Body) != string(latin) || p.Charset != "" {
		t.Errorf("undeclared text/plain changed: %q charset %q", p.Body, p.Charset)
	}
	if p := mustFetch(t, f, srv.URL+"/xml"); !strings.HasSuffix(string(p.Body), string(latin)) || p.Charset != "" {
		t.Errorf("xml changed: %q charset %q", p.Body, p.Charset)
	}
	if p := mustFetch(t, f, srv.URL+"/bin"); string(p.Body) != string(latin) || p.Charset != "" {
		t.Errorf("binary changed: %q charset %q", p.Body, p.Charset)
	}
}
