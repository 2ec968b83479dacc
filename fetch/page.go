package fetch

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/PuerkitoBio/goquery"

	"github.com/heedcrawl/heed/internal/hostid"
	"github.com/heedcrawl/heed/robots/gate"
)

// Errors about redirect chains, returned by Page.RedirectRequest and
// Fetcher.Follow.
var (
	// ErrNotRedirect: the Page is not a redirect.
	ErrNotRedirect = errors.New("fetch: page is not a redirect")
	// ErrRedirectLoop: the redirect target was already visited in this
	// chain.
	ErrRedirectLoop = errors.New("fetch: redirect loop")
	// ErrTooManyRedirects: following the redirect would exceed the bound.
	// It is gate.ErrTooManyRedirects, so that a crawler tests one value
	// whichever stage gave up on a chain.
	ErrTooManyRedirects = gate.ErrTooManyRedirects
)

// Page is the outcome of one fetch: a response and what the crawler knew
// about the request. Fetch fills in every field it can; a Page may also be
// built by hand (for tests or for content obtained elsewhere), in which case
// URL, ContentType and Body are what extraction needs.
//
// A Page must not be modified once it is shared; its methods are safe for
// concurrent use.
type Page struct {
	// URL is the URL that was fetched. Redirects are not followed, so it is
	// also the URL the response belongs to.
	URL *url.URL
	// Status is the HTTP status code.
	Status int
	// Proto is the response protocol, e.g. "HTTP/1.1" or "HTTP/2.0".
	Proto string
	// Header holds the response headers.
	Header http.Header
	// ContentType is the lower-case media type without parameters, from
	// the Content-Type header or, when that is absent, sniffed from the body.
	ContentType string
	// Body is the response body: decompressed, at most the size limit, and
	// for text types decoded to UTF-8 (see Charset). It is empty for
	// redirects and Filtered pages.
	Body []byte
	// Charset names the encoding Body was decoded from ("utf-8" if it was
	// UTF-8 already), or is empty if Body was left as received: non-text
	// types, XML (which declares its own encoding), text of unknown charset.
	Charset string
	// Truncated reports that the body was longer than the size limit and
	// only its first part was downloaded.
	Truncated bool
	// Filtered reports that Fetcher.Accept rejected the response, so the
	// body was not read.
	Filtered bool
	// TransferSize is the number of body bytes read off the connection,
	// before decompression.
	TransferSize int64

	// Redirect is the absolute target of a 3xx response's Location header
	// (fragment removed), or nil if the response is not a redirect.
	Redirect *url.URL
	// RedirectChain lists the URLs that redirected to this one, oldest
	// first; it is copied from Request.RedirectChain.
	RedirectChain []string
	// Depth is copied from Request.Depth.
	Depth int
	// Referrer is copied from Request.Referrer.
	Referrer string

	// Timings records when the fetch started and how long it took.
	Timings Timings

	// Policy says which page-level robots directives are honoured; Fetch
	// copies it from Fetcher.Directives.
	Policy DirectivePolicy

	docOnce sync.Once
	doc     *goquery.Document
	docErr  error

	dirOnce    sync.Once
	directives Directives

	outlineOnce sync.Once
	out         outline
}

// IsHTML reports whether the page's media type is HTML or XHTML.
func (p *Page) IsHTML() bool { return isHTMLType(p.ContentType) }

// Document returns the body parsed as HTML. It is parsed at most once, on
// the first call, however many extractors or goroutines ask. It fails on a
// page nested deeper than 512 elements (the limit of golang.org/x/net/html);
// Directives, Title and HTMLExtractor do not need the tree and still work.
func (p *Page) Document() (*goquery.Document, error) {
	p.docOnce.Do(func() {
		doc, err := goquery.NewDocumentFromReader(bytes.NewReader(p.Body))
		if err != nil {
			p.docErr = fmt.Errorf("fetch: parsing %s: %w", p.URL, err)
			return
		}
		doc.Url = p.URL
		p.doc = doc
	})
	return p.doc, p.docErr
}

// Directives returns the page-level robots directives that apply to this
// page under its Policy: X-Robots-Tag headers and, for HTML, robots <meta>
// tags. It is computed once.
func (p *Page) Directives() Directives {
	p.dirOnce.Do(func() {
		pol := p.Policy
		agents := pol.agents()
		var d Directives
		if !pol.IgnoreHeader {
			d = d.merge(parseXRobotsTag(p.Header.Values("X-Robots-Tag"), agents))
		}
		if !pol.IgnoreMeta && p.IsHTML() {
			d = d.merge(p.outline().directives)
		}
		p.directives = d
	})
	return p.directives
}

// Title returns the text of the page's first <title> element, whitespace
// collapsed, or "" if it has none or is not HTML. It is read once, from
// the markup's tokens, so it needs no parse tree and no nesting depth
// defeats it.
func (p *Page) Title() string { return p.outline().title }

// BaseURL returns the URL relative links on p resolve against: the
// page's first usable <base href>, resolved against its URL, or else the
// URL itself.
func (p *Page) BaseURL() *url.URL { return documentBase(p.URL, p.outline().baseHref) }

// outline scans an HTML page once for its title, base URL and robots
// <meta> directives.
func (p *Page) outline() *outline {
	p.outlineOnce.Do(func() {
		if p.IsHTML() {
			p.out = scanOutline(p.Body, p.Policy.agents())
		}
	})
	return &p.out
}

// RedirectRequest returns the request for the hop p redirects to: the same
// Depth and Referrer, and p's URL appended to the redirect chain. It refuses
// with ErrTooManyRedirects when the hop would make the chain longer than
// maxRedirects (zero means DefaultMaxRedirects, negative — NoRedirects —
// that no hop is followed), and with
// ErrRedirectLoop when the target is already in the chain or is p itself
// (compared after normalising scheme and host case, default ports and
// empty paths; callers that canonicalise further should check again).
func (p *Page) RedirectRequest(maxRedirects int) (Request, error) {
	if p.Redirect == nil || p.URL == nil {
		return Request{}, ErrNotRedirect
	}
	switch {
	case maxRedirects == 0:
		maxRedirects = DefaultMaxRedirects
	case maxRedirects < 0:
		maxRedirects = 0
	}
	target := p.Redirect.String()
	chain := append(slices.Clip(p.RedirectChain), p.URL.String())
	if len(chain) > maxRedirects {
		return Request{}, fmt.Errorf("%w: %d hops, last to %s", ErrTooManyRedirects, len(chain), target)
	}
	key := redirectKey(p.Redirect)
	for _, seen := range chain {
		if u, err := url.Parse(seen); err == nil && redirectKey(u) == key {
			return Request{}, fmt.Errorf("%w: %s", ErrRedirectLoop, target)
		}
	}
	return Request{
		URL:           target,
		Depth:         p.Depth,
		Referrer:      p.Referrer,
		RedirectChain: chain,
	}, nil
}

// redirectKey is a URL's identity for loop detection: equal keys mean the
// same resource to any HTTP server. The scheme and host are hostid's, the
// ones the frontier and the limiter key on, so "http://A./x" and
// "http://a:80/x" are "http://a/x"; the path is compared as written.
func redirectKey(u *url.URL) string {
	origin, err := hostid.Authority(u)
	if err != nil {
		// No canonical host, so no fetch either; any stable spelling will
		// do to stop a loop.
		origin = strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	key := origin + path
	if u.RawQuery != "" || u.ForceQuery {
		key += "?" + u.RawQuery
	}
	return key
}
