package render

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/heedcrawl/heed/fetch"
)

// page is one render in progress: its tab, its budget, the requests it has
// made and those still being answered.
type page struct {
	r        *Renderer
	b        *browser
	tab      context.Context // the tab's chromedp context
	ctx      context.Context // the handlers': ends when the render is over
	pol      Policy
	doc      *fetch.Page
	docURL   string
	targetID string

	handlers sync.WaitGroup // paused requests being answered
	activity chan struct{}  // a request admitted or answered: the network is not quiet
	mu       sync.Mutex     // guards what follows
	ended    bool           // the render is over: refuse what comes
	served   bool           // the document has been handed to the browser
	pending  int            // admitted requests not answered yet
	admitted int            // requests admitted, for the budget
	keys     []string       // its entries in the browser's pages
	res      Result         // the counts
}

// begin registers a paused request for an answer; false once the render
// is over.
func (p *page) begin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return false
	}
	p.handlers.Add(1)
	return true
}

// end refuses whatever comes from now on and waits for the answers under way.
func (p *page) end() {
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
	p.handlers.Wait()
}

// serveDocument reports whether a main-frame navigation to raw is the
// page's own first load, which heed answers with the document it fetched.
func (p *page) serveDocument(raw string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.served || !sameDocument(raw, p.docURL) {
		return false
	}
	p.served = true
	return true
}

// sameDocument compares URLs without their fragments.
func sameDocument(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return a == b
	}
	ua.Fragment, ua.RawFragment, ub.Fragment, ub.RawFragment = "", "", "", ""
	return ua.String() == ub.String()
}

// admit takes a request out of the page's budget: false once it is spent.
func (p *page) admit() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.admitted >= p.r.maxRequests() || p.res.Bytes >= p.r.maxBytes() {
		p.res.OverBudget = true
		return false
	}
	p.admitted++
	p.pending++
	p.poke()
	return true
}

// settled marks an admitted request answered.
func (p *page) settled() {
	p.mu.Lock()
	p.pending--
	p.poke()
	p.mu.Unlock()
}

// poke signals activity to quiet; called with mu held.
func (p *page) poke() {
	select {
	case p.activity <- struct{}{}:
	default:
	}
}

// count updates the page's counts.
func (p *page) count(f func(*Result)) {
	p.mu.Lock()
	f(&p.res)
	p.mu.Unlock()
}

// register files p in its browser under key: a target, frame or browser
// context id.
func (p *page) register(key string) {
	p.b.mu.Lock()
	p.b.pages[key] = p
	p.b.mu.Unlock()
	p.mu.Lock()
	p.keys = append(p.keys, key)
	p.mu.Unlock()
}

// unregister removes p from its browser's pages.
func (p *page) unregister() {
	p.mu.Lock()
	keys := p.keys
	p.mu.Unlock()
	p.b.mu.Lock()
	for _, k := range keys {
		if p.b.pages[k] == p {
			delete(p.b.pages, k)
		}
	}
	p.b.mu.Unlock()
}

// quiet returns once no admitted request has been pending for the quiet
// window, or when ctx ends.
func (p *page) quiet(ctx context.Context) {
	window := p.r.quietWindow()
	for {
		p.mu.Lock()
		pending := p.pending
		p.mu.Unlock()
		if pending == 0 {
			t := time.NewTimer(window)
			select {
			case <-t.C:
				return
			case <-p.activity:
				t.Stop()
				continue
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		select {
		case <-p.activity:
		case <-ctx.Done():
			return
		}
	}
}
