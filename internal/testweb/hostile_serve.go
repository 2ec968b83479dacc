package testweb

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
)

// track counts a response that outlives the HTTP server's own bookkeeping
// (a hijacked connection) so Close can wait for it. It returns false once
// Close has begun.
func (hw *Hostile) track() bool {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	select {
	case <-hw.done:
		return false
	default:
	}
	hw.handlers.Add(1)
	return true
}

// drip takes over the connection, writes prompt at once and then slow one
// byte per DripInterval; if endless, it goes on with blanks until the
// client leaves or the web closes. It returns 200 only if the whole of slow
// was written and the response was not endless: the log's status 0 means
// the response never completed.
func (hw *Hostile) drip(rw http.ResponseWriter, prompt, slow []byte, endless bool) int {
	hj, ok := rw.(http.Hijacker)
	if !ok {
		http.Error(rw, "testweb: cannot take over the connection", http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	if !hw.track() {
		return 0
	}
	defer hw.handlers.Done()
	conn, _, err := hj.Hijack()
	if err != nil {
		return 0
	}
	defer conn.Close()
	if len(prompt) > 0 {
		if _, err := conn.Write(prompt); err != nil {
			return 0
		}
	}
	tick := time.NewTicker(hw.cfg.DripInterval)
	defer tick.Stop()
	for i := 0; endless || i < len(slow); i++ {
		select {
		case <-hw.done:
			return 0
		case <-tick.C:
		}
		b := byte(' ')
		if i < len(slow) {
			b = slow[i]
		}
		// A bounded write: a client that stopped reading without closing
		// must not pin this goroutine past Close.
		conn.SetWriteDeadline(time.Now().Add(time.Second)) //nolint:errcheck // the write reports it
		if _, err := conn.Write([]byte{b}); err != nil {
			return 0
		}
	}
	return http.StatusOK
}

// bombChunk is how many blanks one repeated unit of a compression bomb
// decodes to.
const bombChunk = 1 << 20

// bomb is a compression bomb in three parts: head decodes to the prefix and
// bombChunk blanks, body (repeated at will) to bombChunk more blanks, and
// tail(n), after n bodies, ends the stream validly.
type bomb struct {
	head, body []byte
	tail       func(n int64) []byte
}

// bombCache builds each bomb once per web, on first use.
type bombCache struct {
	mu sync.Mutex
	m  map[string]*bomb
}

func (c *bombCache) get(coding, prefix string) (*bomb, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := coding + "\x00" + prefix
	if b := c.m[key]; b != nil {
		return b, nil
	}
	b, err := makeBomb(coding, prefix)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*bomb{}
	}
	c.m[key] = b
	return b, nil
}

// MakeBomb returns a compressed stream in the given coding ("gzip",
// "deflate" in its zlib form, or "br") that decodes to prefix followed by
// blanks, size bytes in all (rounded up to whole MiB of blanks past the
// prefix). It is how the hostile web's bombs are built, for tests that
// want to check one.
func MakeBomb(coding, prefix string, size int64) ([]byte, error) {
	b, err := makeBomb(coding, prefix)
	if err != nil {
		return nil, err
	}
	n := bombBodies(size, len(prefix))
	out := bytes.Clone(b.head)
	for range n {
		out = append(out, b.body...)
	}
	return append(out, b.tail(n)...), nil
}

// bombBodies is how many bodies follow the head for a bomb of size bytes.
func bombBodies(size int64, prefix int) int64 {
	rest := size - int64(prefix) - bombChunk
	if rest <= 0 {
		return 0
	}
	return (rest + bombChunk - 1) / bombChunk
}

func makeBomb(coding, prefix string) (*bomb, error) {
	blanks := bytes.Repeat([]byte{' '}, bombChunk)
	switch coding {
	case "gzip":
		// Concatenated gzip members are one valid gzip stream.
		return &bomb{
			head: gzipBytes(append([]byte(prefix), blanks...)),
			body: gzipBytes(blanks),
			tail: func(int64) []byte { return nil },
		}, nil
	case "deflate":
		// A zlib header, deflate blocks each ended by a sync flush (so
		// every body starts on a byte boundary with 32 KiB of blanks
		// behind it, and decodes the same wherever it is repeated), the
		// final block, and the Adler-32 of everything decoded.
		var buf bytes.Buffer
		buf.Write([]byte{0x78, 0xDA})
		fw, err := flate.NewWriter(&buf, flate.BestCompression)
		if err != nil {
			return nil, fmt.Errorf("testweb: deflate bomb: %w", err)
		}
		head, body, final := bombSegments(fw, &buf, prefix, blanks)
		start := adler32.Checksum([]byte(prefix))
		return &bomb{head: head, body: body, tail: func(n int64) []byte {
			sum := adlerAppend(start, ' ', uint64(n+1)*bombChunk)
			return binary.BigEndian.AppendUint32(bytes.Clone(final), sum)
		}}, nil
	case "br":
		// Brotli streams do not concatenate, but a flushed meta-block of
		// blanks after blanks repeats: it only copies from distance 1.
		var buf bytes.Buffer
		head, body, tail := bombSegments(brotli.NewWriterLevel(&buf, 5), &buf, prefix, blanks)
		return &bomb{head: head, body: body, tail: func(int64) []byte { return tail }}, nil
	}
	return nil, fmt.Errorf("%w: unknown coding %q for a compression bomb", ErrConfig, coding)
}

// flushWriter is a compressor whose output can be cut where it flushes.
type flushWriter interface {
	io.WriteCloser
	Flush() error
}

// bombSegments compresses with w, which writes to buf, prefix and blanks
// then blanks again, and returns buf's content cut at the flushes: the
// head (with whatever buf held before), the body, which decodes to blanks
// wherever it is repeated after the head, and what Close adds.
func bombSegments(w flushWriter, buf *bytes.Buffer, prefix string, blanks []byte) (head, body, end []byte) {
	w.Write([]byte(prefix)) //nolint:errcheck // writes to a bytes.Buffer do not fail
	w.Write(blanks)         //nolint:errcheck
	w.Flush()               //nolint:errcheck
	head = bytes.Clone(buf.Bytes())
	buf.Reset()
	w.Write(blanks) //nolint:errcheck
	w.Flush()       //nolint:errcheck
	body = bytes.Clone(buf.Bytes())
	buf.Reset()
	w.Close() //nolint:errcheck
	return head, body, bytes.Clone(buf.Bytes())
}

// adlerMod is the Adler-32 modulus.
const adlerMod = 65521

// adlerAppend returns the Adler-32 of data whose checksum is sum followed by
// n copies of the byte v, without reading them: after n bytes v,
// a grows by n·v and b by n·a + v·n(n+1)/2.
func adlerAppend(sum uint32, v byte, n uint64) uint32 {
	a, b := uint64(sum&0xFFFF), uint64(sum>>16)
	var tri uint64 // n(n+1)/2 mod adlerMod, halving the even factor first
	if n%2 == 0 {
		tri = (n / 2 % adlerMod) * ((n + 1) % adlerMod) % adlerMod
	} else {
		tri = (n % adlerMod) * ((n + 1) / 2 % adlerMod) % adlerMod
	}
	nm := n % adlerMod
	b = (b + nm*a + uint64(v)*tri) % adlerMod
	a = (a + nm*uint64(v)) % adlerMod
	return uint32(b<<16 | a)
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	zw.Write(b)                                              //nolint:errcheck // writes to a bytes.Buffer do not fail
	zw.Close()                                               //nolint:errcheck
	return buf.Bytes()
}

// serveBomb streams the bomb of coding that decodes to prefix and blanks,
// BombSize bytes in all. contentEncoding is sent as Content-Encoding unless
// empty (a .gz file is served as itself). It stops when the client leaves or
// the web closes, and returns 200 only if the whole bomb was written.
func (hw *Hostile) serveBomb(rw http.ResponseWriter, coding, contentEncoding, contentType, prefix string) int {
	b, err := hw.bombs.get(coding, prefix)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	if contentEncoding != "" {
		rw.Header().Set("Content-Encoding", contentEncoding)
	}
	rw.Header().Set("Content-Type", contentType)
	rw.WriteHeader(http.StatusOK)
	if _, err := rw.Write(b.head); err != nil {
		return 0
	}
	n := bombBodies(hw.cfg.BombSize, len(prefix))
	for range n {
		select {
		case <-hw.done:
			return 0
		default:
		}
		if _, err := rw.Write(b.body); err != nil {
			return 0
		}
	}
	if _, err := rw.Write(b.tail(n)); err != nil {
		return 0
	}
	return http.StatusOK
}
