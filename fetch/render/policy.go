package render

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/heedcrawl/heed/fetch"
)

// Errors of the package. Test with errors.Is.
var (
	// ErrRefused: the Policy, the page's budget or the Renderer's rules
	// refused a request; the browser sees it fail as blocked by client.
	ErrRefused = errors.New("render: request refused")
	// ErrClosed: the Renderer was closed.
	ErrClosed = errors.New("render: renderer closed")
	// ErrBrowser: the browser could not be started or failed during a
	// render (twice, for a page retried after a crash).
	ErrBrowser = errors.New("render: browser failed")
	// ErrNotHTML: the page handed to Render is not a 2xx HTML page.
	ErrNotHTML = errors.New("render: not a 2xx HTML page")
)

// Request is one request the browser wants to make for a page, as the
// Policy sees it.
type Request struct {
	// URL is the absolute http(s) URL requested.
	URL *url.URL
	// Header holds the headers heed passes on from the browser's request
	// (Accept, Cookie and the like); the Policy's fetcher adds its own
	// User-Agent.
	Header http.Header
	// Type is the resource type Chromium gave the request: "Script",
	// "Stylesheet", "XHR", "Fetch", "Document" (an iframe's), "Other"
	// (a worker's script) and so on.
	Type string
	// Page is the URL of the page being rendered.
	Page *url.URL
}

// Policy makes the requests of rendered pages, or refuses them. Fetch
// returns the response (a redirect comes back as a fetch.Page with Redirect
// set, which the browser then follows with a new request) or an error;
// an error wrapping ErrRefused is counted as refused, any other as failed.
// Both fail the browser's request. Fetch is called concurrently, and must
// return when ctx ends.
type Policy interface {
	Fetch(ctx context.Context, req Request) (*fetch.Page, error)
}

// PolicyFunc is a function that is a Policy.
type PolicyFunc func(ctx context.Context, req Request) (*fetch.Page, error)

// Fetch calls f.
func (f PolicyFunc) Fetch(ctx context.Context, req Request) (*fetch.Page, error) { return f(ctx, req) }
