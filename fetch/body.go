package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
)

// countingReader counts the bytes read off the connection and remembers the
// connection's error, so that decoder failures can be told from transport
// failures.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }

// decodeBody stacks decompressors for a Content-Encoding value. Codings are
// listed in the order they were applied, so they are undone in reverse.
func decodeBody(r io.Reader, contentEncoding string) (io.ReadCloser, error) {
	rc := io.ReadCloser(nopCloser{r})
	codings := strings.Split(contentEncoding, ",")
	for i := len(codings) - 1; i >= 0; i-- {
		coding := strings.ToLower(strings.TrimSpace(codings[i]))
		var next io.ReadCloser
		switch coding {
		case "", "identity":
			continue
		case "gzip", "x-gzip":
			next = &lazyReader{open: func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }, src: rc}
		case "deflate":
			next = &lazyReader{open: openDeflate, src: rc}
		case "br":
			next = &lazyReader{open: func(r io.Reader) (io.ReadCloser, error) { return nopCloser{brotli.NewReader(r)}, nil }, src: rc}
		default:
			return nil, fmt.Errorf("%w: unsupported coding %q", ErrContentEncoding, coding)
		}
		rc = next
	}
	return rc, nil
}

// lazyReader defers creating a decompressor to the first Read, because
// gzip.NewReader reads the header, which must happen under the body's
// timeout and error accounting rather than while headers are processed.
type lazyReader struct {
	open func(io.Reader) (io.ReadCloser, error)
	src  io.ReadCloser
	dec  io.ReadCloser
	err  error
}

func (l *lazyReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.dec == nil {
		dec, err := l.open(l.src)
		if err != nil {
			// open may return a typed nil reader with its error.
			l.err = err
			if l.err == io.EOF {
				// An empty compressed body is an empty body.
				return 0, io.EOF
			}
			return 0, l.err
		}
		l.dec = dec
	}
	return l.dec.Read(p)
}

func (l *lazyReader) Close() error {
	if l.dec != nil {
		l.dec.Close()
	}
	return l.src.Close()
}

// openDeflate accepts both forms servers send as "deflate": the zlib
// wrapper RFC 9110 specifies and the raw deflate stream old servers emit.
func openDeflate(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(2)
	if err != nil {
		if len(head) == 0 {
			return nil, io.EOF
		}
		return nil, err
	}
	if head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
		return zlib.NewReader(br)
	}
	return flate.NewReader(br), nil
}

// bodyReader is the body a Stream hands out: decompressed, capped at limit,
// and tied to the fetch's context.
type bodyReader struct {
	page          *Page
	wire          *countingReader
	raw           io.Closer
	dec           io.ReadCloser
	limit         int64
	n             int64
	contentLength int64
	tooLarge      bool
	closed        bool
	release       func()
	ctx           context.Context
	start         time.Time
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("fetch: read on closed body")
	}
	if b.n >= b.limit {
		if b.tooLarge {
			return 0, ErrBodyTooLarge
		}
		// One byte more tells "exactly at the limit" from "over it", and is
		// all that is ever read past the limit.
		var one [1]byte
		n, err := io.ReadFull(b.dec, one[:])
		if n > 0 {
			b.tooLarge = true
			return 0, ErrBodyTooLarge
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, io.EOF
		}
		return 0, b.explain(err)
	}
	if rest := b.limit - b.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.dec.Read(p)
	b.n += int64(n)
	if err != nil && err != io.EOF {
		err = b.explain(err)
	}
	return n, err
}

// explain classifies a read error: our timeouts, the connection's own
// failures, or a body that does not decode.
func (b *bodyReader) explain(err error) error {
	if cause := context.Cause(b.ctx); cause != nil && (errors.Is(cause, ErrHeaderTimeout) || errors.Is(cause, ErrTimeout)) {
		return cause
	}
	if b.wire.err != nil {
		return err
	}
	return fmt.Errorf("%w: %w", ErrContentEncoding, err)
}

// Close releases the connection and records transfer size and total time.
func (b *bodyReader) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	b.dec.Close()
	err := b.raw.Close()
	b.release()
	b.page.TransferSize = b.wire.n
	b.page.Timings.Total = time.Since(b.start)
	return err
}

// decodeCharset converts a body to UTF-8 when it is text whose encoding can
// be known: HTML by header, BOM and <meta> (the WHATWG sniffing algorithm),
// other text by header charset or BOM. XML is left alone because it declares
// its encoding inside the document, where the XML decoder will act on it;
// decoding here would make that declaration lie. It returns the body and the
// name of the encoding it was decoded from ("" when left as is).
func decodeCharset(body []byte, mt, contentType string) ([]byte, string) {
	switch {
	case isHTMLType(mt):
		e, name, _ := charset.DetermineEncoding(body, contentType)
		return decodeFrom(body, e, name)
	case strings.HasPrefix(mt, "text/") && !isXMLType(mt):
		label := ""
		if _, params, err := mime.ParseMediaType(contentType); err == nil {
			label = params["charset"]
		}
		switch {
		case bytes.HasPrefix(body, []byte("\xef\xbb\xbf")):
			label = "utf-8"
		case bytes.HasPrefix(body, []byte("\xff\xfe")):
			label = "utf-16le"
		case bytes.HasPrefix(body, []byte("\xfe\xff")):
			label = "utf-16be"
		}
		if label == "" {
			return body, ""
		}
		e, name := charset.Lookup(label)
		if e == nil {
			return body, ""
		}
		return decodeFrom(body, e, name)
	}
	return body, ""
}

// decodeFrom decodes body from e, the encoding called name, to UTF-8, and
// returns it with name, or body as it is and "" if it does not decode.
// UTF-8, and ASCII in an encoding that extends it, are returned as they are
// (less a byte order mark).
func decodeFrom(body []byte, e encoding.Encoding, name string) ([]byte, string) {
	body = trimBOM(body, name)
	if name == "utf-8" || (asciiCompatible(name) && isASCII(body)) {
		return body, name
	}
	out, err := e.NewDecoder().Bytes(body)
	if err != nil {
		return body, ""
	}
	return out, name
}

func trimBOM(body []byte, name string) []byte {
	switch name {
	case "utf-8":
		return bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	case "utf-16le":
		return bytes.TrimPrefix(body, []byte("\xff\xfe"))
	case "utf-16be":
		return bytes.TrimPrefix(body, []byte("\xfe\xff"))
	}
	return body
}

// asciiCompatible reports whether pure ASCII bytes mean the same text in the
// named encoding, so that decoding can be skipped.
func asciiCompatible(name string) bool {
	switch name {
	case "utf-16le", "utf-16be", "iso-2022-jp", "replacement":
		return false
	}
	return true
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func isHTMLType(mt string) bool {
	return mt == "text/html" || mt == "application/xhtml+xml"
}

func isXMLType(mt string) bool {
	return mt == "text/xml" || mt == "application/xml" || strings.HasSuffix(mt, "+xml")
}
