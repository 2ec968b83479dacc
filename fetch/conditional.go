package fetch

import (
	"bytes"
	"hash/fnv"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Validators are what a server said identifies the version of a page it
// sent (RFC 9110 §8.8): its entity tag, strong or weak (W/"…"), and its
// Last-Modified date. A revisit sends them back (Header) so that a page
// that has not changed costs the server a 304 and no body.
type Validators struct {
	// ETag is the ETag header as sent, quotes and W/ prefix included, or
	// empty.
	ETag string
	// LastModified is the Last-Modified date, or zero.
	LastModified time.Time
}

// IsZero reports whether v holds no validator.
func (v Validators) IsZero() bool { return v.ETag == "" && v.LastModified.IsZero() }

// Header returns the request headers that make a GET conditional on v:
// If-None-Match with the entity tag, If-Modified-Since with the date. A
// server that honours If-None-Match ignores If-Modified-Since (RFC 9110
// §13.2.2), so sending both costs nothing and helps a server that only
// knows dates. It returns nil for zero Validators.
func (v Validators) Header() http.Header {
	if v.IsZero() {
		return nil
	}
	h := make(http.Header, 2)
	if v.ETag != "" {
		h.Set("If-None-Match", v.ETag)
	}
	if !v.LastModified.IsZero() {
		h.Set("If-Modified-Since", v.LastModified.UTC().Format(http.TimeFormat))
	}
	return h
}

// Validators returns the validators of p's response: its ETag, if it is
// a well-formed entity tag, and its Last-Modified, if it parses and is not
// after the response's Date (a date in the future is no validator, RFC
// 9110 §8.8.2.1). A 304 carries the validators of the version the client
// holds, which the server may have updated.
func (p *Page) Validators() Validators {
	var v Validators
	if tag := strings.TrimSpace(p.Header.Get("ETag")); validETag(tag) {
		v.ETag = tag
	}
	if lm, err := http.ParseTime(p.Header.Get("Last-Modified")); err == nil {
		date, err := http.ParseTime(p.Header.Get("Date"))
		if err != nil || !lm.After(date) {
			v.LastModified = lm
		}
	}
	return v
}

// validETag reports whether tag is an entity tag: an opaque quoted string,
// optionally weak (RFC 9110 §8.8.3).
func validETag(tag string) bool {
	tag = strings.TrimPrefix(tag, "W/")
	if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' {
		return false
	}
	return !strings.ContainsAny(tag[1:len(tag)-1], "\"\x00\r\n")
}

// NotModified reports whether p is a 304 Not Modified: the server says
// the version the client holds, named by the validators it sent, is
// current. Such a page has no body.
func (p *Page) NotModified() bool { return p.Status == http.StatusNotModified }

// Digest returns a 64-bit digest of p's content for telling whether a page
// changed when its validators cannot be trusted (or there are none): for
// HTML the text a reader sees — element text outside script, style,
// noscript and template, with tags and runs of white space made one
// space — so that
// markup that changes on every response (nonces, cache-busting query
// strings, session tokens in attributes) does not count as a change; for
// any other type the body. Pages of equal digest are taken as the same
// version. The digest is FNV-1a, stable across processes and versions of
// heed, since stores keep it.
func (p *Page) Digest() uint64 {
	h := fnv.New64a()
	if !p.IsHTML() {
		h.Write(p.Body)
		return h.Sum64()
	}
	z := html.NewTokenizer(bytes.NewReader(p.Body))
	skip := 0 // depth inside elements whose text is not content
	space := false
	// A tag counts as white space, so that "<h1>A</h1>\n<p>B" and
	// "<h1>A</h1><p>B" are one text.
	tagBreak := []byte{' '}
	for {
		switch z.Next() {
		case html.ErrorToken:
			return h.Sum64()
		case html.StartTagToken:
			if hidden(z) {
				skip++
			}
			space = writeText(h, tagBreak, space)
		case html.EndTagToken:
			if skip > 0 && hidden(z) {
				skip--
			}
			space = writeText(h, tagBreak, space)
		case html.TextToken:
			if skip == 0 {
				space = writeText(h, z.Text(), space)
			}
		}
	}
}

// hidden reports whether the tag the tokenizer is on holds no text a
// reader sees.
func hidden(z *html.Tokenizer) bool {
	name, _ := z.TagName()
	switch atom.Lookup(name) {
	case atom.Script, atom.Style, atom.Noscript, atom.Template:
		return true
	}
	return false
}

// writeText writes text to h with each run of white space, across calls
// too (space says the last byte written was one), as one space.
func writeText(h interface{ Write([]byte) (int, error) }, text []byte, space bool) bool {
	start := 0
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRune(text[i:])
		if unicode.IsSpace(r) {
			h.Write(text[start:i])
			if !space {
				h.Write([]byte{' '})
			}
			space = true
			start = i + n
		} else {
			space = false
		}
		i += n
	}
	h.Write(text[start:])
	return space
}
