package crawler

import (
	"context"
	"sync"
)

// Pause stops the crawl from starting requests until Resume: workers take
// no new lease, and one taken as the pause began goes back to its queue
// unstarted, so the crawl holds no lease of its own while paused.
// Requests already under way finish. A Store that leases several items of
// a host at once and hands them out itself (frontier/redisstore's runs,
// ClaimOptions.Affinity) keeps that lease until the next claim, which a
// paused crawl does not make: a pause longer than WithLease lets it
// expire, and those items (at most 16 a host) are served again, to this
// process or another, as after a crash. A pause outlasts Run: a Crawler paused before
// or between runs starts its next run paused. Stopping a paused crawl
// (cancelling Run's context) ends it as usual.
func (c *Crawler) Pause() { c.pause.set(true) }

// Resume lets a paused crawl start requests again.
func (c *Crawler) Resume() { c.pause.set(false) }

// Paused reports whether the crawl is paused.
func (c *Crawler) Paused() bool { return c.pause.paused() }

// pauser is the pause switch of a Crawler; its zero value is not paused.
type pauser struct {
	mu      sync.Mutex
	on      bool
	resumed chan struct{} // closed by Resume; made by Pause
}

func (p *pauser) set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && !p.on:
		p.resumed = make(chan struct{})
	case !on && p.on:
		close(p.resumed)
	}
	p.on = on
}

func (p *pauser) paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.on
}

// wait returns once the crawl is not paused, or with ctx's error when ctx
// ends first.
func (p *pauser) wait(ctx context.Context) error {
	p.mu.Lock()
	on, resumed := p.on, p.resumed
	p.mu.Unlock()
	if !on {
		return nil
	}
	select {
	case <-resumed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Running reports whether Run is under way.
func (c *Crawler) Running() bool { return c.running.Load() }
