// Package rawserver is an HTTP/1.1 server for tests whose answers are the
// bytes the test writes, status line and framing included, so that a test
// knows exactly what went over the wire: what fetch records and what a
// WARC file must hold, malformed or unusual answers (103 Early Hints, a
// body ended by closing the connection) included. It listens on loopback
// only.
package rawserver

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Responder writes the answer to a request for path and says whether the
// connection may serve another request.
type Responder func(path string, w *bufio.Writer) (keep bool)

// Server is a running server; the test's cleanup closes it.
type Server struct {
	// URL is the server's base URL: http:// and its loopback address.
	URL string

	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]bool
	respond Responder
}

// New starts a server answering with respond, and closes it, with its
// connections, when t ends.
func New(t testing.TB, respond Responder) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln, conns: map[net.Conn]bool{}, respond: respond}
	s.URL = "http://" + ln.Addr().String()
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.close)
	return s
}

// Connections returns how many connections the server has accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			br, bw := bufio.NewReader(c), bufio.NewWriter(c)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				keep := s.respond(req.URL.Path, bw)
				if bw.Flush() != nil || !keep {
					return
				}
			}
		}()
	}
}

func (s *Server) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Canned answers with the raw responses of m by path, and an empty 404
// for other paths; the connection stays open unless the response says
// Connection: close.
func Canned(m map[string]string) Responder {
	return func(path string, w *bufio.Writer) bool {
		r, ok := m[path]
		if !ok {
			r = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
		}
		w.WriteString(r)
		return !strings.Contains(r, "Connection: close")
	}
}
