package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/heedcrawl/heed/fetch"
)

// noServiceWorkers runs in every frame before the page's scripts: a page
// that cannot register a service worker leaves nothing running after its
// render. (Interception covers a service worker's requests anyway.)
const noServiceWorkers = `delete Navigator.prototype.serviceWorker;`

// snapshotReserve is the part of a render's wall time kept for reading
// the DOM once the page has settled.
const snapshotReserve = 2 * time.Second

// renderIn renders doc in a fresh tab and browser context of b.
func (r *Renderer) renderIn(ctx context.Context, b *browser, doc *fetch.Page, pol Policy) (*Result, error) {
	start := time.Now()
	wall := or(r.Timeout, DefaultTimeout)
	t := b.takeTab()
	tab := t.ctx
	// Closing the tab and disposing of its browser context waits for the
	// browser: the page's result need not. The browser's close waits for it.
	defer b.track(t.close)
	if t.err != nil {
		return nil, fmt.Errorf("%w: opening a tab: %w", ErrBrowser, t.err)
	}
	c := chromedp.FromContext(tab)
	handlers, endHandlers := context.WithCancel(context.WithoutCancel(ctx))
	stopOnCancel := context.AfterFunc(ctx, endHandlers)
	defer stopOnCancel()
	p := &page{r: r, b: b, tab: tab, ctx: handlers, pol: pol, doc: doc, docURL: doc.URL.String(),
		targetID: string(c.Target.TargetID), activity: make(chan struct{}, 1)}
	p.register(p.targetID)
	p.register("ctx:" + string(c.BrowserContextID))
	defer p.unregister()
	defer p.end() // after endHandlers: the answers under way end at once
	defer endHandlers()

	reserve := min(snapshotReserve, wall/4)
	settle, cancelSettle := context.WithDeadline(tab, start.Add(wall-reserve))
	defer cancelSettle()
	stop := context.AfterFunc(ctx, cancelSettle)
	defer stop()
	timedOut, err := r.settle(settle, p)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	snap, cancelSnap := context.WithDeadline(tab, start.Add(wall))
	defer cancelSnap()
	html, err := chromedp.Run(snap, chromedp.Evaluate[string](snapshotJS(p.docURL)))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the DOM of %s: %w", ErrBrowser, doc.URL, err)
	}
	endHandlers()
	p.end()
	p.mu.Lock()
	res := p.res
	p.mu.Unlock()
	if html == "" {
		// Cut before the document was parsed: what the site sent is
		// all there is.
		html = string(doc.Body)
	}
	res.Page = renderedPage(doc, []byte(html))
	res.Duration = time.Since(start)
	res.TimedOut = timedOut
	return &res, nil
}

// settle loads the page and waits for its load event and a quiet network,
// then scrolls it as configured. It reports whether the wall time ran
// out; an error is the browser's.
func (r *Renderer) settle(ctx context.Context, p *page) (timedOut bool, err error) {
	if _, err := chromedp.Call(p.tab, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: noServiceWorkers}); err != nil {
		return false, fmt.Errorf("%w: preparing the tab: %w", ErrBrowser, err)
	}
	if _, err := chromedp.Call(p.tab, cdppage.SetLifecycleEventsEnabled, cdppage.SetLifecycleEventsEnabledParams{Enabled: true}); err != nil {
		return false, fmt.Errorf("%w: preparing the tab: %w", ErrBrowser, err)
	}
	// The loads of the main frame, by loader: the tab's own about:blank
	// may report its load after the navigation has begun.
	loads := make(chan cdp.LoaderID, 8)
	events, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	go func() {
		for ev, err := range chromedp.Events(events, cdppage.LifecycleEvent) {
			if err != nil {
				return
			}
			if ev.Name == "load" && string(ev.FrameID) == p.targetID {
				select {
				case loads <- ev.LoaderID:
				case <-events.Done():
					return
				}
			}
		}
	}()
	nav, err := chromedp.Call(ctx, cdppage.Navigate, cdppage.NavigateParams{URL: p.docURL})
	if err != nil {
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
			return true, nil
		}
		return false, fmt.Errorf("%w: navigating to %s: %w", ErrBrowser, p.docURL, err)
	}
	if nav.ErrorText != "" {
		return false, fmt.Errorf("%w: navigating to %s: %s", ErrBrowser, p.docURL, nav.ErrorText)
	}
	for loaded := false; !loaded; {
		select {
		case id := <-loads:
			loaded = id == nav.LoaderID
		case <-ctx.Done():
			return true, nil
		}
	}
	p.quiet(ctx)
	r.scroll(ctx, p)
	return ctx.Err() != nil, nil
}

// scroll scrolls p to its bottom up to Scroll times, waiting for a quiet
// network after each step, and stops when a step — given a second quiet
// window, as a scroll handler may start its request late — brought no
// request.
func (r *Renderer) scroll(ctx context.Context, p *page) {
	requests := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.admitted + p.res.Refused
	}
	for i := 0; i < r.Scroll && ctx.Err() == nil; i++ {
		before := requests()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.scrollTo(0, document.scrollingElement.scrollHeight); true`)); err != nil {
			return
		}
		p.quiet(ctx)
		if requests() == before {
			p.quiet(ctx)
		}
		if requests() == before {
			return
		}
	}
}

// snapshotJS serialises the DOM; when the page has moved (pushState) and
// has no <base>, a <base> naming where it moved keeps its relative links
// resolving as they do in the browser.
func snapshotJS(docURL string) string {
	u, _ := json.Marshal(docURL)
	return `(() => {
	const d = document;
	if (!d.documentElement) return '';
	if (d.baseURI !== ` + string(u) + ` && !d.querySelector('base[href]') && d.head) {
		const b = d.createElement('base'); b.href = d.baseURI; d.head.prepend(b);
	}
	const dt = d.doctype ? '<!DOCTYPE ' + d.doctype.name + '>' : '';
	return dt + d.documentElement.outerHTML;
})()`
}

// renderedPage is doc with the rendered DOM as its body.
func renderedPage(doc *fetch.Page, html []byte) *fetch.Page {
	return &fetch.Page{
		URL: doc.URL, Status: doc.Status, Proto: doc.Proto, Header: doc.Header,
		ContentType: "text/html", Body: html, Charset: "utf-8", TransferSize: doc.TransferSize,
		RedirectChain: doc.RedirectChain, Depth: doc.Depth, Referrer: doc.Referrer,
		Timings: doc.Timings, Policy: doc.Policy,
	}
}
