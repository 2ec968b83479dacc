package ratelimit

import (
	"fmt"
	"net/http"
)

// Failure is how a request ended, as far as pacing, retrying and counting
// care: with an answer that says nothing against the host (FailureNone),
// with the host asking for less or failing (FailureThrottled,
// FailureServerError), or with no usable answer, and why. It is computed
// once per request — fetch.Classify knows the fetcher's errors;
// StatusFailure reads a status alone — and that one value is what
// Policy.Observe paces by, what the crawler retries by and what names the
// kind it counts a failed URL under, so that none of them can disagree.
type Failure uint8

// Ways a request ends. The names String returns are the kinds the
// crawler's Stats.Errors counts fetch failures under.
const (
	FailureNone        Failure = iota // an answer: any status but 429 and 5xx
	FailureThrottled                  // 429 Too Many Requests or 503 Service Unavailable: Retry-After is honoured
	FailureServerError                // another 5xx
	FailureTimeout                    // the answer (headers or body) did not come in time
	FailureDNS                        // the host's name did not resolve
	FailureConnection                 // the connection was refused, reset or otherwise failed
	FailureTLS                        // the TLS handshake or the certificate check failed
	FailureRedirect                   // too many redirects, or a loop
	FailureEncoding                   // the Content-Encoding is unknown or the body does not decode
	FailureForbidden                  // the host is, or resolves to, an address the fetcher may not reach
	FailureInvalidURL                 // the URL cannot be requested: no request was made
	FailureCanceled                   // the caller gave up on the request: its doing, not the host's
	FailureOther                      // anything else
	failureCount
)

// failureTraits are what each Failure means for pacing and retrying.
type failureTraits struct {
	name      string
	answered  bool // a response arrived: its round trip counts in the host's RTT
	retryable bool // another try may go differently
	backsOff  bool // counts against the host: a consecutive failure, a longer delay
	network   bool // the network failed, not the site
}

var traits = [failureCount]failureTraits{
	FailureNone:        {name: "none", answered: true},
	FailureThrottled:   {name: "throttled", answered: true, retryable: true, backsOff: true},
	FailureServerError: {name: "server-error", answered: true, retryable: true, backsOff: true},
	FailureTimeout:     {name: "timeout", retryable: true, backsOff: true, network: true},
	FailureDNS:         {name: "dns", retryable: true, backsOff: true, network: true},
	FailureConnection:  {name: "connection", retryable: true, backsOff: true, network: true},
	FailureTLS:         {name: "tls", retryable: true, backsOff: true},
	// The same chain gives the same answer: not worth another try, but
	// the host was asked, and its answers count.
	FailureRedirect: {name: "redirect", backsOff: true},
	// A body that does not decode will not decode next time either.
	FailureEncoding: {name: "encoding", backsOff: true},
	// The host's address was looked up, which is what keeps it resting.
	FailureForbidden: {name: "forbidden-address", backsOff: true},
	// Nothing was asked of the host: it is neither failing nor well.
	FailureInvalidURL: {name: "invalid-url"},
	FailureCanceled:   {name: "canceled"},
	FailureOther:      {name: "other", retryable: true, backsOff: true},
}

// String returns f's kind name: "timeout", "dns", "connection", "tls",
// "redirect", "encoding", "other"… — the name the crawler counts a fetch
// failure under.
func (f Failure) String() string {
	if f >= failureCount {
		return fmt.Sprintf("Failure(%d)", uint8(f))
	}
	return traits[f].name
}

// Retryable reports whether a request that ended so is worth another try:
// throttling, server errors and failures of the road to the host are;
// answers, a body that does not decode, a redirect chain, a forbidden
// address, an invalid URL and the caller's cancellation are not.
func (f Failure) Retryable() bool { return f < failureCount && traits[f].retryable }

// BacksOff reports whether f counts against the host: Policy.Observe
// counts it in HostState.Failures and doubles the host's delay (or, for
// FailureThrottled with a Retry-After, pauses the host). FailureNone is a
// success, which undoes back-off; FailureCanceled and FailureInvalidURL
// say nothing of the host and change nothing.
func (f Failure) BacksOff() bool { return f < failureCount && traits[f].backsOff }

// Network reports whether the network failed rather than the site: a name
// that did not resolve, a connection refused or reset, a timeout. A crawl
// whose every request ended so is likely offline.
func (f Failure) Network() bool { return f < failureCount && traits[f].network }

// answered reports whether a response arrived, so that its round trip
// tells how fast the host answers.
func (f Failure) answered() bool { return f < failureCount && traits[f].answered }

// informative reports whether f tells anything of the host.
func (f Failure) informative() bool {
	return f < failureCount && f != FailureCanceled && f != FailureInvalidURL
}

// StatusFailure classifies a response by its status alone: 429 and 503 are
// FailureThrottled, other statuses from 500 up FailureServerError, and the
// rest — redirects and other 4xx included — FailureNone.
func StatusFailure(status int) Failure {
	switch {
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		return FailureThrottled
	case status >= 500:
		return FailureServerError
	}
	return FailureNone
}
