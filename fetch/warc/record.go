package warc

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heedcrawl/heed/fetch"
)

// RevisitProfile is the WARC-Profile of the revisit records Dedup writes.
const RevisitProfile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"

// header is a record's named fields in the order they are written;
// Content-Length is added by writeRecord.
type header [][2]string

// writeRecord writes one record: version line, named fields, block and
// the two CRLFs that end it.
func writeRecord(w io.Writer, h header, block []byte) {
	bw := bufio.NewWriterSize(w, 1024)
	bw.WriteString("WARC/1.1\r\n")
	for _, f := range h {
		bw.WriteString(f[0])
		bw.WriteString(": ")
		bw.WriteString(f[1])
		bw.WriteString("\r\n")
	}
	bw.WriteString("Content-Length: ")
	bw.WriteString(strconv.Itoa(len(block)))
	bw.WriteString("\r\n\r\n")
	bw.Write(block)
	bw.WriteString("\r\n\r\n")
	bw.Flush()
}

// digest labels the SHA-1 of b in base32, as WARC-Block-Digest and
// WARC-Payload-Digest carry it.
func digest(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// newRecordID returns a WARC-Record-ID: a random (version 4) UUID URN in
// angle brackets.
func newRecordID() string {
	var u [16]byte
	rand.Read(u[:]) // never fails on the platforms Go supports
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// formatDate writes a WARC-Date: UTC, to the microsecond.
func formatDate(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

// checkField refuses a warcinfo field that would not read back as one
// named field.
func checkField(name, value string) error {
	if name == "" {
		return errors.New("empty name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return fmt.Errorf("name %q is not a token", name)
		}
	}
	if err := checkValue(value); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// checkValue refuses a field value that is not one line of UTF-8 text.
func checkValue(v string) error {
	if !utf8.ValidString(v) {
		return errors.New("value is not UTF-8")
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return fmt.Errorf("value %q has a control character", v)
		}
	}
	return nil
}

// exchange is a fetch.Exchange with what its records need worked out.
type exchange struct {
	x             *fetch.Exchange
	reqID, respID string
	date          string
	reqPayload    string // digest; "" when the request does not parse
	respPayload   string // digest; "" when the response does not parse
	respBodyLen   int
	respHeaderEnd int // length of the response's header, interim responses included
}

func parseExchange(x *fetch.Exchange) *exchange {
	ex := &exchange{x: x, reqID: newRecordID(), respID: newRecordID(), date: formatDate(x.Start)}
	if body, ok := requestPayload(x.Request); ok {
		ex.reqPayload = digest(body)
	}
	if end, body, ok := responsePayload(x.Response); ok {
		ex.respPayload, ex.respBodyLen, ex.respHeaderEnd = digest(body), len(body), end
	}
	return ex
}

// dedupable reports whether the response may be stored as, or referred
// to by, a revisit: a whole, non-empty payload.
func (ex *exchange) dedupable() bool {
	return ex.x.Truncated == "" && ex.respPayload != "" && ex.respBodyLen > 0
}

// common returns the fields every record of the exchange has.
func (ex *exchange) common(typ, id string) header {
	h := header{
		{"WARC-Type", typ},
		{"WARC-Record-ID", id},
		{"WARC-Date", ex.date},
		{"WARC-Target-URI", ex.x.URL},
	}
	if a := ex.x.RemoteAddr; a.IsValid() {
		h = append(h, [2]string{"WARC-IP-Address", a.WithZone("").String()})
	}
	return h
}

// exchangeMembers appends the request and response records.
func (w *Writer) exchangeMembers(out *bytes.Buffer, ex *exchange) {
	w.requestMember(out, ex)
	h := append(ex.common("response", ex.respID),
		[2]string{"WARC-Concurrent-To", ex.reqID},
		[2]string{"WARC-Block-Digest", digest(ex.x.Response)})
	if ex.respPayload != "" {
		h = append(h, [2]string{"WARC-Payload-Digest", ex.respPayload})
	}
	if ex.x.Truncated != "" {
		h = append(h, [2]string{"WARC-Truncated", ex.x.Truncated})
	}
	h = append(h, [2]string{"Content-Type", "application/http;msgtype=response"})
	w.member(out, h, ex.x.Response)
}

// revisitMembers appends the request record and a revisit record that
// keeps the response's header and refers to orig for the payload.
func (w *Writer) revisitMembers(out *bytes.Buffer, ex *exchange, orig original) {
	w.requestMember(out, ex)
	block := ex.x.Response[:ex.respHeaderEnd]
	h := append(ex.common("revisit", ex.respID),
		[2]string{"WARC-Concurrent-To", ex.reqID},
		[2]string{"WARC-Profile", RevisitProfile},
		[2]string{"WARC-Refers-To", orig.id},
		[2]string{"WARC-Refers-To-Target-URI", orig.uri},
		[2]string{"WARC-Refers-To-Date", orig.date},
		[2]string{"WARC-Block-Digest", digest(block)},
		[2]string{"WARC-Payload-Digest", ex.respPayload},
		[2]string{"WARC-Truncated", fetch.TruncatedLength},
		[2]string{"Content-Type", "application/http;msgtype=response"})
	w.member(out, h, block)
}

func (w *Writer) requestMember(out *bytes.Buffer, ex *exchange) {
	h := append(ex.common("request", ex.reqID),
		[2]string{"WARC-Concurrent-To", ex.respID},
		[2]string{"WARC-Block-Digest", digest(ex.x.Request)})
	if ex.reqPayload != "" {
		h = append(h, [2]string{"WARC-Payload-Digest", ex.reqPayload})
	}
	h = append(h, [2]string{"Content-Type", "application/http;msgtype=request"})
	w.member(out, h, ex.x.Request)
}

// requestPayload returns the entity body of an HTTP request message,
// its transfer coding removed, cut where b ends.
func requestPayload(b []byte) ([]byte, bool) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil, false
	}
	body, _ := io.ReadAll(req.Body) // a cut body is still its payload, cut
	return body, true
}

// responsePayload returns where the header of the final response in b
// ends (after any interim 1xx responses) and its entity body: transfer
// coding removed, content coding kept, cut where b ends.
func responsePayload(b []byte) (headerEnd int, body []byte, ok bool) {
	rd := bytes.NewReader(b)
	br := bufio.NewReader(rd)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, nil, false
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		headerEnd = len(b) - rd.Len() - br.Buffered() // what br has read of b, less what it holds
		body, _ = io.ReadAll(resp.Body)
		return headerEnd, body, true
	}
}
