package fetch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"sync"
	"time"
)

// Recorder archives the HTTP exchanges of a Fetcher byte for byte, as they
// crossed the connection; a WARC writer is one (package fetch/warc).
type Recorder interface {
	// Record is called once for every exchange that got a response header,
	// when the response has been read to its end or abandoned (its body
	// closed). It is called by the goroutine that closes the body,
	// concurrently with other exchanges. x is not used by the Fetcher
	// afterwards. An error fails the fetch with ErrRecord.
	Record(ctx context.Context, x *Exchange) error
}

// Exchange is one HTTP request and its response as the connection carried
// them: over TLS, the plaintext inside the tunnel.
type Exchange struct {
	// URL is the URL requested.
	URL string
	// Start is when the request was about to be sent.
	Start time.Time
	// RemoteAddr is the IP address connected to; the zero Addr if the
	// connection did not say.
	RemoteAddr netip.Addr
	// Request is every byte written for the request: request line,
	// headers and body.
	Request []byte
	// Response is every byte read for the response: status line,
	// headers, then the body with its transfer coding (chunked) and its
	// content coding (gzip, …) as sent, up to the end of the message or
	// to where reading stopped. Interim 1xx responses the transport
	// skipped come first.
	Response []byte
	// Truncated is "" when Response holds the whole message, otherwise why
	// it does not: TruncatedLength, TruncatedTime, TruncatedDisconnect or
	// TruncatedUnspecified.
	Truncated string
}

// Reasons an Exchange's Response is incomplete; they are WARC-Truncated's.
const (
	// TruncatedLength: the Fetcher stopped reading, because of its body
	// limit, its cap on what it drains of a redirect, or an Accept filter
	// that turned the response down.
	TruncatedLength = "length"
	// TruncatedTime: a timeout ended the fetch.
	TruncatedTime = "time"
	// TruncatedDisconnect: the connection failed.
	TruncatedDisconnect = "disconnect"
	// TruncatedUnspecified: the caller cancelled the fetch.
	TruncatedUnspecified = "unspecified"
)

// ErrRecord is wrapped by the error of a fetch whose exchange a Recorder
// could not record, or could not be given: with a Recorder, the Fetcher
// must connect through a transport from CrawlTransport.
var ErrRecord = errors.New("fetch: recording failed")

// recordOn makes tr capture the bytes of its connections for f.Recorder:
// every connection it dials, plain or TLS, is wrapped so that what is
// written and read is appended to the exchange that holds the connection.
// A connection carries one exchange at a time, which HTTP/1.1 without
// pipelining guarantees, so HTTP/2 is switched off. TLS is done here
// rather than by the transport, so that the capture sits inside the tunnel.
// Proxies are not used: through one, the bytes of an https exchange would
// be the tunnel's ciphertext.
func recordOn(tr *http.Transport) {
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return newRecordingConn(c, c), nil
	}
	tr.DialTLSContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		raw, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		cfg := tr.TLSClientConfig.Clone() // read now: callers may set it after CrawlTransport
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				raw.Close()
				return nil, err
			}
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(raw, cfg)
		hctx := ctx
		if tr.TLSHandshakeTimeout > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, tr.TLSHandshakeTimeout)
			defer cancel()
		}
		if err := tc.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, err
		}
		return newRecordingConn(tc, raw), nil
	}
	tr.Proxy = nil
	tr.ForceAttemptHTTP2 = false
	var protos http.Protocols
	protos.SetHTTP1(true)
	tr.Protocols = &protos
}

// recordingConn copies what crosses a connection into the exchange that
// currently holds it.
type recordingConn struct {
	net.Conn
	addr netip.Addr

	mu  sync.Mutex
	cur *capture
}

// newRecordingConn wraps c; raw is the TCP connection under it, whose
// remote address is the one recorded.
func newRecordingConn(c, raw net.Conn) *recordingConn {
	rc := &recordingConn{Conn: c}
	if ta, ok := raw.RemoteAddr().(*net.TCPAddr); ok {
		rc.addr = ta.AddrPort().Addr().Unmap()
	}
	return rc
}

func (c *recordingConn) current() *capture {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if x := c.current(); x != nil {
			x.add(c, &x.resp, p[:n])
		}
	}
	return n, err
}

// Write records p before writing it: once it is on the wire the response
// may be read, and the exchange closed, before this goroutine runs again.
func (c *recordingConn) Write(p []byte) (int, error) {
	x := c.current()
	if x != nil {
		x.add(c, &x.req, p)
	}
	n, err := c.Conn.Write(p)
	if n < len(p) && x != nil {
		x.unwrite(c, len(p)-n)
	}
	return n, err
}

// capture collects the bytes of one exchange. The transport's read loop
// appends to it while the fetch's goroutine closes it, hence the lock.
type capture struct {
	mu     sync.Mutex
	conn   *recordingConn // the connection it holds; nil before GotConn
	sealed bool
	req    []byte
	resp   []byte
}

// attach gives c the exchange; called when the transport hands the
// connection to the request, before anything is written. A retry on a new
// connection starts over, so only the bytes of the attempt that answered
// are kept.
func (x *capture) attach(c *recordingConn) {
	x.mu.Lock()
	old := x.conn
	x.conn, x.req, x.resp = c, nil, nil
	x.mu.Unlock()
	if old != nil && old != c {
		old.mu.Lock()
		if old.cur == x {
			old.cur = nil
		}
		old.mu.Unlock()
	}
	c.mu.Lock()
	c.cur = x
	c.mu.Unlock()
}

func (x *capture) add(c *recordingConn, buf *[]byte, p []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.conn == c && !x.sealed {
		*buf = append(*buf, p...)
	}
}

// unwrite takes back the last n request bytes, which were not written.
func (x *capture) unwrite(c *recordingConn, n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.conn == c && !x.sealed && n <= len(x.req) {
		x.req = x.req[:len(x.req)-n]
	}
}

// trace returns ctx with a ClientTrace that attaches x to the connection
// the transport chooses.
func (x *capture) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if rc, ok := info.Conn.(*recordingConn); ok {
				x.attach(rc)
			}
		},
	})
}

// captured reports whether the exchange went over a recording connection.
func (x *capture) captured() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.conn != nil
}

// recordedBody is the response body of a recorded exchange; closing it
// hands the exchange to the Recorder.
type recordedBody struct {
	io.ReadCloser
	x        *capture
	recorder Recorder
	ctx      context.Context
	url      string
	start    time.Time
	eof      bool
	err      error
	closed   bool
}

func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil && b.err == nil:
		b.err = err
	}
	return n, err
}

// Close closes the body and records the exchange. It returns only the
// Recorder's error, wrapped in ErrRecord: an HTTP/1 body's own Close has
// nothing to report.
func (b *recordedBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	b.ReadCloser.Close()

	x := b.x
	x.mu.Lock()
	x.sealed = true
	req, resp, addr := x.req, x.resp, x.conn.addr
	x.mu.Unlock()

	end, whole := responseEnd(resp, b.eof)
	ex := &Exchange{URL: b.url, Start: b.start, RemoteAddr: addr, Request: req, Response: resp[:end]}
	if !whole {
		ex.Truncated = b.truncation()
	}
	if err := b.recorder.Record(context.WithoutCancel(b.ctx), ex); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRecord, b.url, err)
	}
	return nil
}

// truncation says why a response was not read to its end.
func (b *recordedBody) truncation() string {
	cause := context.Cause(b.ctx)
	switch {
	case errors.Is(cause, ErrTimeout) || errors.Is(cause, ErrHeaderTimeout) || errors.Is(cause, context.DeadlineExceeded):
		return TruncatedTime
	case cause != nil:
		return TruncatedUnspecified
	case b.err != nil:
		return TruncatedDisconnect
	}
	return TruncatedLength
}

// responseEnd returns the length of the HTTP response message (interim 1xx
// responses included) at the start of b, and whether b holds all of it. A
// body delimited by the end of the connection is whole when eof says the
// connection got there.
func responseEnd(b []byte, eof bool) (int, bool) {
	rd := bytes.NewReader(b)
	br := bufio.NewReader(rd)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return len(b), false
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		_, err = io.Copy(io.Discard, resp.Body)
		if err != nil {
			return len(b), false
		}
		if resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 && resp.Body != http.NoBody {
			return len(b), eof
		}
		return len(b) - rd.Len() - br.Buffered(), true // what br has read of b, less what it holds
	}
}
