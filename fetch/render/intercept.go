package render

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpfetch "github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/heedcrawl/heed/fetch"
)

// paused answers one paused request, exactly once: with the page's own
// document, a response heed fetched or cached, or a failure. A request no
// page can be found for is refused: nothing leaves the browser unchecked.
func (b *browser) paused(ev *cdpfetch.EventRequestPaused) {
	p := b.pageFor(ev.FrameID)
	if p == nil || !p.begin() {
		b.fail(ev.RequestID, network.ErrorReasonBlockedByClient)
		return
	}
	defer p.handlers.Done()
	start := time.Now()
	resp, reason := p.answer(ev)
	b.r.log().Debug("render: subrequest", "page", p.docURL, "url", ev.Request.URL, "type", string(ev.ResourceType), "refused", string(reason), "took", time.Since(start))
	if resp == nil {
		b.fail(ev.RequestID, reason)
		return
	}
	b.fulfill(ev.RequestID, resp)
}

// fail fails a paused request for reason.
func (b *browser) fail(id cdpfetch.RequestID, reason network.ErrorReason) {
	_, _ = chromedp.CallBrowser(b.ctx, cdpfetch.FailRequest, cdpfetch.FailRequestParams{RequestID: id, ErrorReason: reason})
}

// fulfill answers a paused request with p.
func (b *browser) fulfill(id cdpfetch.RequestID, p *fetch.Page) {
	_, _ = chromedp.CallBrowser(b.ctx, cdpfetch.FulfillRequest, fulfillParams(id, p))
}

// fulfillParams turns a fetched page into the browser's answer: the body
// as heed holds it — decompressed, and text decoded to UTF-8 — under
// headers that say so.
func fulfillParams(id cdpfetch.RequestID, p *fetch.Page) cdpfetch.FulfillRequestParams {
	params := cdpfetch.FulfillRequestParams{RequestID: id, ResponseCode: int64(p.Status), Body: p.Body}
	for k, vs := range p.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Encoding", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive":
			continue
		case "Content-Type":
			if p.Charset != "" {
				vs = []string{withUTF8(vs[0])}
			}
		}
		for _, v := range vs {
			params.ResponseHeaders = append(params.ResponseHeaders, &cdpfetch.HeaderEntry{Name: k, Value: v})
		}
	}
	if p.Redirect != nil && p.Header.Get("Location") == "" {
		params.ResponseHeaders = append(params.ResponseHeaders, &cdpfetch.HeaderEntry{Name: "Location", Value: p.Redirect.String()})
	}
	return params
}

// withUTF8 returns the Content-Type ct with its charset set to utf-8.
func withUTF8(ct string) string {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	params["charset"] = "utf-8"
	return mime.FormatMediaType(mt, params)
}

// pageFor finds the page a request belongs to by the frame that made it:
// the page's main frame (its target id), a frame of its own, or a target
// — a worker, a service worker, an out-of-process iframe — in the page's
// browser context.
func (b *browser) pageFor(frame cdp.FrameID) *page {
	id := string(frame)
	if id == "" {
		return nil
	}
	b.mu.Lock()
	p := b.pages[id]
	b.mu.Unlock()
	if p != nil {
		return p
	}
	if info, err := chromedp.CallBrowser(b.ctx, target.GetTargetInfo, target.GetTargetInfoParams{TargetID: target.ID(id)}); err == nil && info.TargetInfo != nil {
		b.mu.Lock()
		p = b.pages["ctx:"+string(info.TargetInfo.BrowserContextID)]
		b.mu.Unlock()
	}
	if p == nil {
		p = b.pageOfFrame(id)
	}
	if p != nil {
		p.register(id)
	}
	return p
}

// pageOfFrame asks the pages rendering now for their frame trees, for a
// frame that lives in a page's own process.
func (b *browser) pageOfFrame(id string) *page {
	b.mu.Lock()
	var active []*page
	seen := make(map[*page]bool)
	for _, p := range b.pages {
		if !seen[p] {
			seen[p] = true
			active = append(active, p)
		}
	}
	b.mu.Unlock()
	for _, p := range active {
		t, err := chromedp.Call(p.tab, cdppage.GetFrameTree, cdp.Empty{})
		if err == nil && hasFrame(t.FrameTree, id) {
			return p
		}
	}
	return nil
}

func hasFrame(t *cdppage.FrameTree, id string) bool {
	if t == nil {
		return false
	}
	if t.Frame != nil && string(t.Frame.ID) == id {
		return true
	}
	for _, c := range t.ChildFrames {
		if hasFrame(c, id) {
			return true
		}
	}
	return false
}

// mediaTypes are the resource types refused unless Renderer.AllowMedia:
// they do not change the DOM.
var mediaTypes = map[network.ResourceType]bool{
	network.ResourceTypeImage: true, network.ResourceTypeMedia: true, network.ResourceTypeFont: true,
}

// neverTypes are refused always: they report to the site, or prefetch
// what the render will not use.
var neverTypes = map[network.ResourceType]bool{
	network.ResourceTypePing: true, network.ResourceTypeCSPViolationReport: true,
	network.ResourceTypeManifest: true, network.ResourceTypePrefetch: true,
}

// answer decides a paused request of p: the response to fulfill it with,
// or nil and the reason to fail it.
func (p *page) answer(ev *cdpfetch.EventRequestPaused) (*fetch.Page, network.ErrorReason) {
	raw := ev.Request.URL + ev.Request.URLFragment
	u, err := url.Parse(ev.Request.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.count(func(s *Result) { s.Refused++ })
		return nil, network.ErrorReasonBlockedByClient
	}
	main := ev.ResourceType == network.ResourceTypeDocument && string(ev.FrameID) == p.targetID
	if main {
		if p.serveDocument(raw) {
			return p.doc, ""
		}
		// The page navigating itself away: the render is of this page.
		p.count(func(s *Result) { s.Refused++ })
		return nil, network.ErrorReasonBlockedByClient
	}
	switch {
	case ev.Request.Method != http.MethodGet:
		// A crawler reads; it does not post forms or change state.
		p.count(func(s *Result) { s.Refused++ })
		return nil, network.ErrorReasonBlockedByClient
	case neverTypes[ev.ResourceType], mediaTypes[ev.ResourceType] && !p.r.AllowMedia, u.Path == "/favicon.ico":
		p.count(func(s *Result) { s.Blocked++ })
		return nil, network.ErrorReasonBlockedByClient
	}
	if !p.admit() {
		p.count(func(s *Result) { s.Refused++ })
		return nil, network.ErrorReasonBlockedByClient
	}
	defer p.settled()
	ctx, cancel := context.WithTimeout(p.ctx, p.r.requestTimeout())
	defer cancel()
	req := Request{URL: u, Header: passHeaders(ev.Request.Headers), Type: string(ev.ResourceType), Page: p.doc.URL}
	resp, how, err := p.r.cache().Fetch(ctx, req, p.pol)
	switch {
	case err == nil:
	case errors.Is(err, ErrRefused) || ctx.Err() != nil:
		p.count(func(s *Result) { s.Refused++ })
		return nil, network.ErrorReasonBlockedByClient
	default:
		p.r.log().Debug("render: subrequest failed", "page", p.doc.URL.String(), "url", raw, "err", err)
		p.count(func(s *Result) { s.Failed++ })
		return nil, network.ErrorReasonFailed
	}
	p.count(func(s *Result) {
		if how == Hit {
			s.Cached++
		} else {
			s.Requests++
			s.Bytes += int64(len(resp.Body))
		}
	})
	return resp, ""
}

// passedHeaders are the browser's request headers heed passes on; the
// fetcher sets the rest (User-Agent, Accept-Encoding) itself.
var passedHeaders = []string{"Accept", "Accept-Language", "Cookie", "X-Requested-With"}

func passHeaders(h network.Headers) http.Header {
	out := make(http.Header)
	for k, v := range h {
		for _, name := range passedHeaders {
			if strings.EqualFold(k, name) {
				out.Set(name, fmt.Sprint(v))
			}
		}
	}
	return out
}
