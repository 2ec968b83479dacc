package fetch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// DefaultUserAgent is the User-Agent header sent when Fetcher.UserAgent is
// empty: product token, version and a contact URL.
const DefaultUserAgent = "heed/0.1 (+https://github.com/heedcrawl/heed)"

// Defaults used by the zero Fetcher.
const (
	DefaultConnectTimeout      = 10 * time.Second
	DefaultHeaderTimeout       = 15 * time.Second
	DefaultTimeout             = 60 * time.Second
	DefaultMaxBodySize         = 10 << 20
	DefaultMaxIdleConnsPerHost = 4
	DefaultMaxRedirects        = 10
	// NoRedirects, as a MaxRedirects, follows no redirect: zero there
	// means DefaultMaxRedirects, as a zero Fetcher should.
	NoRedirects = -1
)

// acceptHeader prefers HTML but takes anything, so sitemaps, feeds and
// user-handled types are not refused by content negotiation.
const acceptHeader = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// acceptEncoding lists exactly the codings decodeBody understands; the
// transport's transparent gzip is switched off so that every coding goes
// through the same size cap.
const acceptEncoding = "gzip, deflate, br"

// Errors returned by Fetch and Stream. Test with errors.Is.
var (
	// ErrHeaderTimeout: the response headers did not arrive within
	// Fetcher.HeaderTimeout.
	ErrHeaderTimeout = errors.New("fetch: timeout awaiting response headers")
	// ErrTimeout: the whole fetch, body included, took longer than
	// Fetcher.Timeout.
	ErrTimeout = errors.New("fetch: timeout")
	// ErrBodyTooLarge is returned by a Stream body once the size limit has
	// been reached and more data remains. Fetch turns it into
	// Page.Truncated instead.
	ErrBodyTooLarge = errors.New("fetch: body exceeds size limit")
	// ErrContentEncoding: the Content-Encoding is unknown or the body does
	// not decode.
	ErrContentEncoding = errors.New("fetch: bad content encoding")
	// ErrInvalidURL: the request URL is not an absolute http or https URL.
	ErrInvalidURL = errors.New("fetch: invalid URL")
)

// Request is one URL to fetch and what the crawler knows about how it got
// there.
type Request struct {
	// URL is the absolute http or https URL to GET.
	URL string
	// Depth is the link distance from a seed; it is carried to the Page
	// unchanged (a redirect hop does not add depth).
	Depth int
	// Referrer is the URL of the page that linked here, or empty. It is
	// carried to the Page; it is sent as a Referer header only when
	// Fetcher.SendReferer is set.
	Referrer string
	// Header holds extra request headers; they override the Fetcher's.
	Header http.Header
	// RedirectChain lists the URLs already fetched on the way here, oldest
	// first, each of which answered with a redirect. Page.RedirectRequest
	// fills it in.
	RedirectChain []string
	// MaxBodySize overrides Fetcher.MaxBodySize for this request when
	// positive (a sitemap may be as large as the protocol's 50 MiB).
	MaxBodySize int64
}

// Timings records when a fetch started and how long its phases took.
type Timings struct {
	Start   time.Time     // the request was about to be sent
	Headers time.Duration // from Start until the response headers arrived
	Total   time.Duration // from Start until the body was read and closed
}

// Fetcher performs HTTP GETs for a crawler. Redirects are never followed
// inside the client: a redirect comes back as a Page whose Redirect is set,
// so that the caller can send the target through canonicalisation, dedup,
// robots rules and the host's pacing like any other URL (see
// Page.RedirectRequest and Fetcher.Follow).
//
// The zero value is ready to use with the defaults documented on each field.
// Fields must not be changed after the first fetch, and a Fetcher must not be
// copied after first use. A Fetcher is safe for concurrent use.
type Fetcher struct {
	// UserAgent is sent on every request; empty means DefaultUserAgent.
	UserAgent string
	// Header holds extra headers sent on every request.
	Header http.Header
	// SendReferer makes Fetch send Request.Referrer as the Referer header.
	// Off by default: crawlers conventionally do not, and it leaks the
	// referring URL to third parties.
	SendReferer bool

	// Client, if non-nil, is the HTTP client to use. It is copied and its
	// CheckRedirect replaced, so redirects are still returned rather than
	// followed; Transport and Jar are then ignored.
	Client *http.Client
	// Transport, if non-nil and Client is nil, is the round tripper to use;
	// nil means CrawlTransport().
	Transport http.RoundTripper
	// Jar, if non-nil and Client is nil, stores cookies between requests.
	Jar http.CookieJar

	// ConnectTimeout bounds the TCP connect and the TLS handshake of the
	// default transport; zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for response headers once the request
	// has been sent; zero means DefaultHeaderTimeout. It applies to any
	// Client or Transport.
	HeaderTimeout time.Duration
	// Timeout bounds a whole fetch, body included; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxIdleConnsPerHost is the keep-alive pool size per host of the
	// default transport; zero means DefaultMaxIdleConnsPerHost.
	MaxIdleConnsPerHost int
	// MaxConnsPerHost caps simultaneous connections per host of the default
	// transport; zero means no cap (the crawler's pacing governs politeness).
	MaxConnsPerHost int

	// MaxBodySize is the largest body, after decompression, that is
	// downloaded; bytes past it are not read and the Page is marked
	// Truncated. Zero means DefaultMaxBodySize.
	MaxBodySize int64
	// MaxRedirects bounds the redirect chains Follow walks; zero means
	// DefaultMaxRedirects, and NoRedirects (any negative number) that no
	// redirect is followed.
	MaxRedirects int

	// Accept, if non-nil, is asked about every non-redirect response once
	// its headers have arrived (the Page has no body yet). If it returns
	// false the body is not read and the Page comes back with Filtered set.
	// See AcceptMediaTypes.
	Accept func(p *Page) bool

	// Directives says which page-level robots directives are honoured. It
	// is copied into every Page.
	Directives DirectivePolicy

	// Addresses, if non-nil, says which IP addresses may be connected to;
	// nil means any. A URL whose host is an IP literal (or localhost) of a
	// refused class is refused before any request, whatever the Client or
	// Transport. The default transport (CrawlTransport) also resolves host
	// names itself and connects only to allowed addresses, checking the
	// very address it dials, so a redirect or a DNS answer cannot send a
	// crawl to a cloud metadata service or into the local network.
	// Refusals wrap ErrForbiddenAddress; see AddressError. Proxies from the
	// environment are connected to whatever their address (the names they
	// are asked for are resolved by them, out of our sight).
	Addresses *AddressPolicy
	// Resolver looks up host names for the default transport when
	// Addresses is set, and for HostClasses; nil means net.DefaultResolver.
	Resolver Resolver

	// Recorder, if non-nil, is given every exchange (request and response
	// bytes as they crossed the connection) of every fetch, for a web
	// archive. It needs the transport CrawlTransport builds, which then
	// speaks HTTP/1.1 only, does TLS itself and uses no proxy; a fetch
	// through any other Client or Transport fails with ErrRecord. An
	// exchange is recorded when its body is closed, so Fetch returns after
	// the Recorder; a fetch that got no response header records nothing.
	Recorder Recorder

	// wrapDial, set by tests, wraps the function that finally connects,
	// so a test can fail if any address but loopback reaches it.
	wrapDial func(dialFunc) dialFunc

	once   sync.Once
	client *http.Client
}

func (f *Fetcher) init() {
	f.once.Do(func() {
		switch {
		case f.Client != nil:
			c := *f.Client
			f.client = &c
		default:
			rt := f.Transport
			if rt == nil {
				rt = f.CrawlTransport()
			}
			f.client = &http.Client{Transport: rt, Jar: f.Jar}
		}
		f.client.CheckRedirect = func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}
		// Our own context covers the whole fetch; a client-level timeout
		// would only duplicate it with a less useful error.
		f.client.Timeout = 0
	})
}

// CrawlTransport returns a new transport configured from f's fields:
// connect and TLS handshake timeouts, keep-alive pools sized per host,
// HTTP/2 where the server offers it, proxies from the environment
// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) and no transparent decompression.
// With Addresses set, its dialer resolves names through Resolver and
// connects only to addresses the policy allows. With Recorder set, it
// captures the bytes of its connections (inside TLS), speaks HTTP/1.1 only
// and uses no proxy. Callers may adjust it (for instance TLSClientConfig) and set it as
// f.Transport before first use.
func (f *Fetcher) CrawlTransport() *http.Transport {
	connect := orDuration(f.ConnectTimeout, DefaultConnectTimeout)
	idle := f.MaxIdleConnsPerHost
	if idle <= 0 {
		idle = DefaultMaxIdleConnsPerHost
	}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   connect,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   connect,
		MaxIdleConns:          0, // no global cap: the per-host caps are what matters
		MaxIdleConnsPerHost:   idle,
		MaxConnsPerHost:       f.MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
	if f.Addresses != nil {
		d := newGuardedDialer(f, connect)
		tr.DialContext = d.DialContext
		tr.Proxy = d.proxy(tr.Proxy)
	}
	if f.Recorder != nil {
		recordOn(tr)
	}
	return tr
}

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (f *Fetcher) maxBody(req Request) int64 {
	if req.MaxBodySize > 0 {
		return req.MaxBodySize
	}
	if f.MaxBodySize > 0 {
		return f.MaxBodySize
	}
	return DefaultMaxBodySize
}

func (f *Fetcher) maxRedirects() int {
	if f.MaxRedirects != 0 {
		return f.MaxRedirects
	}
	return DefaultMaxRedirects
}

// Fetch GETs req.URL and returns the Page with its body read (at most the
// size limit, decompressed and, for text, decoded to UTF-8).
//
// A redirect response (3xx with a Location) is not followed: the Page has
// Redirect set and no body. A response rejected by Accept has Filtered set
// and no body. Non-2xx responses are Pages too; only transport failures,
// timeouts and undecodable bodies are errors.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Page, error) {
	p, body, err := f.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return p, nil
	}
	b := body.(*bodyReader)
	var buf bytes.Buffer
	if n := b.contentLength; n > 0 && n <= b.limit {
		buf.Grow(int(n))
	}
	_, err = buf.ReadFrom(b)
	truncated := errors.Is(err, ErrBodyTooLarge)
	if truncated {
		err = nil
	}
	if cerr := b.Close(); errors.Is(cerr, ErrRecord) {
		return nil, cerr
	}
	if err != nil {
		return nil, &Error{URL: p.URL.String(), Err: fmt.Errorf("reading body: %w", err)}
	}
	p.Truncated = truncated
	p.Body, p.Charset = decodeCharset(buf.Bytes(), p.ContentType, p.Header.Get("Content-Type"))
	return p, nil
}

// Stream GETs req.URL like Fetch but leaves the body to the caller: it
// returns the Page (headers, no Body) and a reader of the decompressed body,
// which yields at most the size limit and then fails with ErrBodyTooLarge if
// more remains. The caller must Close it; Close sets Page.TransferSize and
// Page.Timings.Total, and returns the Recorder's error (ErrRecord), if any.
// The body is not charset-decoded.
//
// For a redirect or a Filtered response the body is nil.
func (f *Fetcher) Stream(ctx context.Context, req Request) (*Page, io.ReadCloser, error) {
	f.init()
	u, err := f.requestURL(req.URL)
	if err != nil {
		return nil, nil, err
	}

	ctx, cancelTotal := context.WithTimeoutCause(ctx, orDuration(f.Timeout, DefaultTimeout), ErrTimeout)
	ctx, cancel := context.WithCancelCause(ctx)
	release := func() { cancel(nil); cancelTotal() }

	hr, err := f.newRequest(ctx, u, req)
	if err != nil {
		release()
		return nil, nil, err
	}
	start := time.Now()
	resp, err := f.roundTrip(ctx, cancel, hr, u, start)
	if err != nil {
		release()
		return nil, nil, err
	}

	p := &Page{
		URL:           u,
		Status:        resp.StatusCode,
		Proto:         resp.Proto,
		Header:        resp.Header,
		RedirectChain: req.RedirectChain,
		Depth:         req.Depth,
		Referrer:      req.Referrer,
		Policy:        f.Directives,
		Timings:       Timings{Start: start, Headers: time.Since(start)},
	}
	p.ContentType = mediaType(resp.Header.Get("Content-Type"))

	if target := redirectTarget(u, resp); target != nil {
		return redirected(p, target, resp, release)
	}
	body, err := f.openBody(ctx, p, req, resp, release, start)
	if err != nil {
		release()
		return nil, nil, err
	}
	if f.Accept != nil && !f.Accept(p) {
		p.Filtered = true
		if cerr := body.Close(); errors.Is(cerr, ErrRecord) {
			return nil, nil, cerr
		}
		return p, nil, nil
	}
	return p, body, nil
}

// requestURL parses rawURL, which must be an absolute http(s) URL whose
// host the Fetcher's Addresses allow.
func (f *Fetcher) requestURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q is not an absolute http(s) URL", ErrInvalidURL, rawURL)
	}
	if f.Addresses != nil {
		if err := f.Addresses.checkHost(u.Hostname()); err != nil {
			return nil, &Error{URL: u.String(), Err: err}
		}
	}
	return u, nil
}

// newRequest builds the GET of u with the Fetcher's and req's headers.
func (f *Fetcher) newRequest(ctx context.Context, u *url.URL, req Request) (*http.Request, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	ua := f.UserAgent
	if ua == "" {
		ua = DefaultUserAgent
	}
	hr.Header.Set("User-Agent", ua)
	hr.Header.Set("Accept", acceptHeader)
	if f.SendReferer && req.Referrer != "" {
		hr.Header.Set("Referer", req.Referrer)
	}
	for k, vs := range f.Header {
		hr.Header[http.CanonicalHeaderKey(k)] = vs
	}
	for k, vs := range req.Header {
		hr.Header[http.CanonicalHeaderKey(k)] = vs
	}
	// Set last: decodeBody must understand whatever was asked for.
	hr.Header.Set("Accept-Encoding", acceptEncoding)
	return hr, nil
}

// roundTrip sends hr, cancelling it (ErrHeaderTimeout) if the response's
// headers take longer than the header timeout, and, with a Recorder, has
// the exchange captured from start. On failure the caller releases ctx.
func (f *Fetcher) roundTrip(ctx context.Context, cancel context.CancelCauseFunc, hr *http.Request, u *url.URL, start time.Time) (*http.Response, error) {
	var rec *capture
	if f.Recorder != nil {
		rec = new(capture)
		hr = hr.WithContext(rec.trace(ctx))
	}
	headerTimer := time.AfterFunc(orDuration(f.HeaderTimeout, DefaultHeaderTimeout), func() {
		cancel(ErrHeaderTimeout)
	})
	resp, err := f.client.Do(hr)
	headerTimer.Stop()
	if err != nil {
		return nil, fetchError(ctx, u, err)
	}
	if rec != nil {
		if !rec.captured() {
			resp.Body.Close()
			return nil, &Error{URL: u.String(), Err: fmt.Errorf("%w: the connection was not captured; a Fetcher with a Recorder must use a transport from CrawlTransport", ErrRecord)}
		}
		resp.Body = &recordedBody{ReadCloser: resp.Body, x: rec, recorder: f.Recorder, ctx: ctx, url: u.String(), start: start}
	}
	return resp, nil
}

// redirected ends the exchange of a redirect response, whose Page p
// points to target and has no body.
func redirected(p *Page, target *url.URL, resp *http.Response, release func()) (*Page, io.ReadCloser, error) {
	p.Redirect = target
	// A little draining lets the connection be reused; a redirect body
	// is never worth more.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	cerr := resp.Body.Close()
	release()
	if errors.Is(cerr, ErrRecord) {
		return nil, nil, cerr
	}
	p.Timings.Total = time.Since(p.Timings.Start)
	return p, nil, nil
}

// openBody returns the reader of resp's decompressed body, and sniffs
// p's content type from it when resp declares none. On failure the caller
// releases ctx.
func (f *Fetcher) openBody(ctx context.Context, p *Page, req Request, resp *http.Response, release func(), start time.Time) (*bodyReader, error) {
	wire := &countingReader{r: resp.Body}
	dec, err := decodeBody(wire, resp.Header.Get("Content-Encoding"))
	if err != nil {
		resp.Body.Close()
		return nil, &Error{URL: p.URL.String(), Err: err}
	}
	body := &bodyReader{
		page:          p,
		wire:          wire,
		raw:           resp.Body,
		dec:           dec,
		limit:         f.maxBody(req),
		contentLength: resp.ContentLength,
		release:       release,
		ctx:           ctx,
		start:         start,
	}
	if resp.Header.Get("Content-Encoding") != "" {
		body.contentLength = -1
	}
	if p.ContentType == "" {
		// No declared type: sniff like a browser so HTML still reaches the
		// HTML extractor.
		br := bufio.NewReaderSize(dec, 512)
		head, _ := br.Peek(512)
		p.ContentType = mediaType(http.DetectContentType(head))
		body.dec = readCloser{br, dec}
	}
	return body, nil
}

// fetchError explains a failed round trip, preferring our own timeout causes
// over the transport's generic "context canceled".
func fetchError(ctx context.Context, u *url.URL, err error) error {
	if cause := context.Cause(ctx); cause != nil && (errors.Is(cause, ErrHeaderTimeout) || errors.Is(cause, ErrTimeout)) {
		return &Error{URL: u.String(), Err: cause}
	}
	return &Error{URL: u.String(), Err: err}
}

// redirectTarget returns the absolute target of a redirect response, or nil
// if resp is not a usable redirect (a 3xx without a valid http(s) Location is
// delivered as an ordinary response).
func redirectTarget(base *url.URL, resp *http.Response) *url.URL {
	loc := strings.TrimSpace(resp.Header.Get("Location"))
	if loc == "" || !isRedirect(resp.StatusCode) {
		return nil
	}
	target, err := base.Parse(loc)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil
	}
	target.Fragment, target.RawFragment = "", ""
	return target
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMultipleChoices, http.StatusMovedPermanently, http.StatusFound,
		http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// mediaType returns the lower-case media type of a Content-Type value
// without parameters, or "" if there is none.
func mediaType(contentType string) string {
	if contentType == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		// Keep what precedes the parameters so "text/html; charset" with a
		// broken parameter still counts as HTML.
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt
}

// AcceptMediaTypes returns an Accept filter that admits pages whose media
// type matches one of patterns: an exact type ("text/html"), a type with any
// subtype ("text/*") or anything ("*/*"). Matching is case-insensitive.
func AcceptMediaTypes(patterns ...string) func(*Page) bool {
	ps := make([]string, len(patterns))
	for i, s := range patterns {
		ps[i] = strings.ToLower(strings.TrimSpace(s))
	}
	return func(p *Page) bool {
		for _, pat := range ps {
			if matchMediaType(pat, p.ContentType) {
				return true
			}
		}
		return false
	}
}

func matchMediaType(pattern, mt string) bool {
	if pattern == "*/*" || pattern == "*" || pattern == mt {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		typ, _, _ := strings.Cut(mt, "/")
		return typ == prefix
	}
	return false
}

// CloseIdleConnections closes the keep-alive connections the Fetcher holds,
// for a crawler that is shutting down or pausing.
func (f *Fetcher) CloseIdleConnections() {
	f.init()
	f.client.CloseIdleConnections()
}

// Follow fetches req and, while the answer is a redirect, the next hop,
// up to MaxRedirects hops and stopping at loops. Before each hop it calls
// check (if non-nil) with the next request: this is where a caller puts
// its robots gate and its pacing. If check or the redirect bounds refuse
// a hop, Follow returns the last redirect Page together with the error, so
// that the caller still sees where the chain was heading.
//
// Crawlers that schedule through a frontier should not use Follow; they
// should use Page.RedirectRequest and enqueue the result.
func (f *Fetcher) Follow(ctx context.Context, req Request, check func(ctx context.Context, next Request) error) (*Page, error) {
	for {
		p, err := f.Fetch(ctx, req)
		if err != nil {
			return nil, err
		}
		if p.Redirect == nil {
			return p, nil
		}
		next, err := p.RedirectRequest(f.maxRedirects())
		if err != nil {
			return p, err
		}
		if check != nil {
			if err := check(ctx, next); err != nil {
				return p, fmt.Errorf("fetch: redirect to %s refused: %w", next.URL, err)
			}
		}
		req = next
	}
}
