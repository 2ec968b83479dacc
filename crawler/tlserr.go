package crawler

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

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
