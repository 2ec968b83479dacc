package crawler

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/robots"
	"github.com/heedcrawl/heed/robots/gate"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
)

// The robots gate decodes nothing: robots.txt is decompressed, decoded and
// cut to size by the page fetcher it is given (robotsGet), as pages are.
// These are the cases the gate's own decoding was tested on, read the way a
// crawl reads them, through Crawler.RobotsEntry.

// compressBytes returns text compressed with coding (gzip, deflate, br).
func compressBytes(t *testing.T, coding, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "deflate":
		w = zlib.NewWriter(&b)
	case "br":
		w = brotli.NewWriter(&b)
	default:
		t.Fatalf("coding %q", coding)
	}
	if _, err := w.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// encodedSite answers /robots.txt with body in the Content-Encoding given,
// whatever the request asked for.
func encodedSite(t *testing.T, coding string, body []byte) *httptest.Server {
	t.Helper()
	return robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", coding)
		w.Write(body)
	})
}

func TestRobotsEntryCodings(t *testing.T) {
	for _, coding := range []string{"gzip", "deflate", "br"} {
		t.Run(coding, func(t *testing.T) {
			wantPrivateDisallowed(t, robotsEntry(t, encodedSite(t, coding, compressBytes(t, coding, robotsFetchRules))))
		})
	}
}

// robotsLate is a robots.txt whose last rule, Disallow: /late, lies past
// robots.MaxSize bytes: it must not apply.
func robotsLate() string {
	head := "User-agent: *\nDisallow: /early\n"
	filler := strings.Repeat("# filler line to push the next rules past the limit\n", 2*robots.MaxSize/52)
	return head + filler + "Disallow: /late\n"
}

func wantEarlyOnly(t *testing.T, e *gate.Entry) {
	t.Helper()
	if e.Outcome != gate.OutcomeOK || e.Group.Allowed("/early") || !e.Group.Allowed("/late") {
		t.Fatalf("entry %+v: want /early disallowed and /late, past robots.MaxSize, allowed", e)
	}
}

// The cap is on decoded bytes: a small compressed body that decodes to
// twice robots.MaxSize is read up to the cap, not refused nor read whole.
func TestRobotsEntryCapIsOnDecodedBytes(t *testing.T) {
	for _, coding := range []string{"gzip", "deflate", "br"} {
		t.Run(coding, func(t *testing.T) {
			body := compressBytes(t, coding, robotsLate())
			if len(body) >= robots.MaxSize {
				t.Fatalf("compressed body of %d bytes: the test needs one under the cap", len(body))
			}
			wantEarlyOnly(t, robotsEntry(t, encodedSite(t, coding, body)))
		})
	}
}

// countingTransport counts the response body bytes read through it.
type countingTransport struct{ read atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// A plain robots.txt of twice robots.MaxSize: the rules past the cap do
// not apply, and the rest of the body is not downloaded.
func TestRobotsEntryOversizeBody(t *testing.T) {
	text := robotsLate()
	srv := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(text)))
		io.WriteString(w, text)
	})
	ct := &countingTransport{}
	wantEarlyOnly(t, robotsEntry(t, srv, WithTransport(ct)))
	// The fetcher may read a buffer's worth past the cap to see that the
	// body goes on, no more.
	if n := ct.read.Load(); n > robots.MaxSize+64<<10 || n >= int64(len(text)) {
		t.Fatalf("read %d body bytes of %d, want about robots.MaxSize+1 = %d", n, len(text), robots.MaxSize+1)
	}
}

// A body in a coding the fetcher does not know, or one that does not
// decode, makes robots.txt unreachable: its bytes are not read as rules.
func TestRobotsEntryBadContentEncodingIsUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name, coding, body string
	}{
		{"unknown coding", "x-unknown", "User-agent: *\nAllow: /\n"},
		{"corrupt gzip", "gzip", "this is not gzip at all"},
		{"corrupt br", "br", "\x1b\x00 not brotli either"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := robotsEntry(t, encodedSite(t, tc.coding, []byte(tc.body)))
			if e.Outcome != gate.OutcomeUnreachable || !errors.Is(e.Err, fetch.ErrContentEncoding) {
				t.Fatalf("entry %+v: want unreachable with fetch.ErrContentEncoding", e)
			}
		})
	}
}

// UTF-16 with a byte order mark, either order, is decoded to UTF-8, so that
// a rule with a non-ASCII path matches the URL's percent-encoded path;
// robots.txt is text even when its server says application/octet-stream.
func TestRobotsEntryUTF16NonASCIIRule(t *testing.T) {
	const text = "User-agent: *\r\nDisallow: /privé\r\n"
	for name, enc := range map[string]*encoding.Encoder{
		"LE": unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder(),
		"BE": unicode.UTF16(unicode.BigEndian, unicode.UseBOM).NewEncoder(),
	} {
		body, err := enc.Bytes([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, ctype := range []string{"text/plain", "application/octet-stream"} {
			t.Run(name+" "+ctype, func(t *testing.T) {
				srv := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", ctype)
					w.Write(body)
				})
				e := robotsEntry(t, srv)
				if e.Outcome != gate.OutcomeOK || e.Group.Allowed("/priv%C3%A9/x") || !e.Group.Allowed("/public") {
					t.Fatalf("entry %+v: want /privé (as /priv%%C3%%A9) disallowed, /public allowed", e)
				}
			})
		}
	}
}

func TestRobotsFromUTF16(t *testing.T) {
	le := []byte{0xff, 0xfe, 'A', 0, 0xfc, 0, 0x3d, 0xd8, 0x00, 0xde, '\n', 0} // "Aü😀\n"
	if got := string(robotsFromUTF16(le)); got != "Aü😀\n" {
		t.Errorf("UTF-16LE = %q", got)
	}
	be := []byte{0xfe, 0xff, 0, 'A', 0, 0xfc}
	if got := string(robotsFromUTF16(be)); got != "Aü" {
		t.Errorf("UTF-16BE = %q", got)
	}
	// A body cut in the middle of a code unit keeps what came before it.
	if got := string(robotsFromUTF16([]byte{0xff, 0xfe, 'A', 0, 'x'})); !strings.HasPrefix(got, "A") || strings.Contains(got, "x") {
		t.Errorf("cut UTF-16LE = %q", got)
	}
	for _, plain := range []string{"User-agent: *\n", "\xef\xbb\xbfUser-agent: *\n", "", "\xff"} {
		if got := string(robotsFromUTF16([]byte(plain))); got != plain {
			t.Errorf("robotsFromUTF16(%q) = %q, want it unchanged", plain, got)
		}
	}
}

// The header timeout is for the headers: a body that takes longer is
// still read.
func TestRobotsEntryHeaderTimeoutSparesSlowBody(t *testing.T) {
	const header = 100 * time.Millisecond
	srv := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("User-agent: *\n"))
		w.(http.Flusher).Flush()
		time.Sleep(3 * header) // a slow server, not synchronisation
		w.Write([]byte("Disallow: /private\n"))
	})
	wantPrivateDisallowed(t, robotsEntry(t, srv, WithHeaderTimeout(header), WithFetchTimeout(time.Minute)))
}

// A robots.txt that breaks off before its Content-Length is unreachable,
// not a file with its last rules missing.
func TestRobotsEntryBrokenBodyIsUnreachable(t *testing.T) {
	srv := robotsSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "User-agent: *\nDisallow: /\n") // then the connection drops
	})
	e := robotsEntry(t, srv)
	if e.Outcome != gate.OutcomeUnreachable || !errors.Is(e.Err, io.ErrUnexpectedEOF) {
		t.Fatalf("entry %+v: want unreachable after a 200 whose body broke off", e)
	}
}
