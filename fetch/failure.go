package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"

	"github.com/heedcrawl/heed/ratelimit"
)

// Error is the error of a request that Fetch or Stream made, or refused
// to make, for URL: its cause, with the URL apart, so that a caller who
// shows the URL already can show the cause alone (errors.As), and tell
// what kind of failure it is with Classify.
type Error struct {
	// URL is the URL requested.
	URL string
	// Err is the cause: a transport error (*url.Error), a timeout
	// (ErrTimeout, ErrHeaderTimeout), ErrContentEncoding, an address the
	// fetcher may not reach (ErrForbiddenAddress), ErrRecord…
	Err error
}

// Error returns "fetch URL: cause".
func (e *Error) Error() string { return "fetch " + e.URL + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Classify tells how a request ended from its response's status and its
// error (nil when a response arrived): the one classification that pacing
// (ratelimit.Policy.Observe), retrying and the crawler's error kinds all
// read. With an error, the error decides, whatever wraps it; without, the
// status (ratelimit.StatusFailure).
//
// The caller's cancellation comes first, since a request it abandoned says
// nothing of the host; then the fetcher's refusals (a forbidden address,
// an invalid URL), which no request or a DNS lookup alone preceded; then
// timeouts, ours or the network's, DNS, decoding, redirects, TLS and
// connection failures; anything else is FailureOther.
func Classify(status int, err error) ratelimit.Failure {
	if err == nil {
		return ratelimit.StatusFailure(status)
	}
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return ratelimit.FailureCanceled
	case errors.Is(err, ErrForbiddenAddress):
		return ratelimit.FailureForbidden
	case errors.Is(err, ErrInvalidURL):
		return ratelimit.FailureInvalidURL
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrHeaderTimeout), errors.Is(err, context.DeadlineExceeded):
		return ratelimit.FailureTimeout
	case errors.As(err, &dnsErr):
		return ratelimit.FailureDNS
	case errors.Is(err, ErrContentEncoding):
		return ratelimit.FailureEncoding
	case errors.Is(err, ErrTooManyRedirects), errors.Is(err, ErrRedirectLoop):
		return ratelimit.FailureRedirect
	case errors.As(err, &netErr) && netErr.Timeout():
		return ratelimit.FailureTimeout
	case isTLS(err):
		return ratelimit.FailureTLS
	case errors.As(err, new(*net.OpError)):
		return ratelimit.FailureConnection
	}
	return ratelimit.FailureOther
}

// isTLS reports whether err comes from a TLS handshake or certificate check.
func isTLS(err error) bool {
	var recordErr tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &recordErr) || errors.As(err, &certErr) || errors.As(err, &unknownAuth) ||
		errors.As(err, &hostErr) || errors.As(err, &invalid)
}
