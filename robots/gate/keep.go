package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heedcrawl/heed/robots"
)

// EntryKeeper keeps the gate's robots.txt entries beyond its memory and its
// process, as opaque bytes under each authority: a crawler's Store, so that
// a resumed crawl — or another process of a distributed one — reads an
// entry back instead of fetching robots.txt again while it lasts (RFC 9309
// §2.4's 24 hours included). LoadEntry returns nil, nil when it keeps none.
// Errors are logged and otherwise ignored: the gate then fetches.
type EntryKeeper interface {
	LoadEntry(ctx context.Context, authority string) ([]byte, error)
	SaveEntry(ctx context.Context, authority string, data []byte) error
}

// EntryReplacer is an EntryKeeper shared by processes that can replace an
// entry only while it is still old, in one step: the gate takes back its
// note of a request it did not make (see Pacer) with it, so that the entry
// another process kept meanwhile stays. ReplaceEntry returns nil whether
// or not it replaced. A keeper without it is read, compared and written.
type EntryReplacer interface {
	ReplaceEntry(ctx context.Context, authority string, old, data []byte) error
}

// keptEntry is an Entry as an EntryKeeper keeps it: the rules as the
// robots.txt they were parsed from.
type keptEntry struct {
	URL              string    `json:"url"`
	Outcome          Outcome   `json:"outcome"`
	Body             []byte    `json:"body,omitempty"`
	Status           int       `json:"status,omitempty"`
	Err              string    `json:"err,omitempty"`
	FetchedAt        time.Time `json:"fetched_at"`
	CheckedAt        time.Time `json:"checked_at"`
	Expires          time.Time `json:"expires"`
	Failures         int       `json:"failures,omitempty"`
	UnreachableSince time.Time `json:"unreachable_since,omitzero"`
	// Pending is when a request for robots.txt was started and its
	// answer not yet kept; zero otherwise.
	Pending time.Time `json:"pending,omitzero"`
}

// save hands e to the keeper.
func (g *Gate) save(ctx context.Context, e *Entry) {
	g.write(ctx, e.Authority, g.kept(e))
}

// kept is e as the keeper keeps it.
func (g *Gate) kept(e *Entry) keptEntry {
	k := keptEntry{
		URL: e.URL, Outcome: e.Outcome, Status: e.Status, FetchedAt: e.FetchedAt, CheckedAt: e.CheckedAt,
		Expires: e.Expires, Failures: e.Failures, UnreachableSince: e.UnreachableSince,
	}
	if e.Outcome == OutcomeOK || e.Outcome == OutcomeStale {
		k.Body = e.body
	}
	if e.Err != nil {
		k.Err = e.Err.Error()
	}
	return k
}

// write hands k to the keeper, and returns what it wrote (nil if it
// failed).
func (g *Gate) write(ctx context.Context, auth string, k keptEntry) []byte {
	data, err := json.Marshal(k)
	if err == nil {
		err = g.keeper.SaveEntry(context.WithoutCancel(ctx), auth, data)
	}
	if err != nil {
		g.log.Warn("robots: keeping robots.txt entry", "authority", auth, "err", err)
		return nil
	}
	return data
}

// savePending tells the keeper a robots.txt request for auth is about to
// start: if the process stops before the answer is kept, the next run knows
// the site may have been asked at this moment (see Config.ResumeWait).
// A copy kept before (prev) stays kept with it. It returns the note as
// written (nil if it was not), for unsavePending.
func (g *Gate) savePending(ctx context.Context, auth string, prev *Entry) []byte {
	k := keptEntry{Pending: g.clock.Now()}
	if prev != nil {
		k = g.kept(prev)
		k.Pending = g.clock.Now()
	}
	return g.write(ctx, auth, k)
}

// unsavePending takes back note, savePending's, when the Pacer refused
// the request it announced: no request was made, and a note left would
// hold the next asker back for ResumeWait. What was kept before (prev, or
// nothing) is kept again — unless the keeper holds something else by now:
// another process's answer.
func (g *Gate) unsavePending(ctx context.Context, auth string, note []byte, prev *Entry) {
	var k keptEntry
	if prev != nil {
		k = g.kept(prev)
	}
	data, err := json.Marshal(k)
	ctx = context.WithoutCancel(ctx)
	if r, ok := g.keeper.(EntryReplacer); ok && err == nil {
		err = r.ReplaceEntry(ctx, auth, note, data)
	} else if err == nil {
		var cur []byte
		if cur, err = g.keeper.LoadEntry(ctx, auth); err == nil && bytes.Equal(cur, note) {
			err = g.keeper.SaveEntry(ctx, auth, data)
		}
	}
	if err != nil {
		g.log.Warn("robots: taking back the note of a robots.txt request not made", "authority", auth, "err", err)
	}
}

// waitForPending waits until the keeper's note of a robots.txt request an
// earlier run started at pending (zero: none) is ResumeWait old.
func (g *Gate) waitForPending(ctx context.Context, pending time.Time) error {
	if pending.IsZero() || g.resumeWait <= 0 {
		return nil
	}
	d := pending.Add(g.resumeWait).Sub(g.clock.Now())
	if d <= 0 {
		return nil
	}
	g.log.Info("robots: waiting before asking again for a robots.txt an earlier run asked for", "wait", d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("robots: waiting to ask again: %w", ctx.Err())
	}
}

// load returns the entry the keeper holds for auth, or nil, and when an
// earlier run started a robots.txt request whose answer it did not keep
// (zero if none).
func (g *Gate) load(ctx context.Context, auth string) (*Entry, time.Time) {
	data, err := g.keeper.LoadEntry(ctx, auth)
	if err != nil {
		g.log.Warn("robots: reading kept robots.txt entry", "authority", auth, "err", err)
		return nil, time.Time{}
	}
	if data == nil {
		return nil, time.Time{}
	}
	var k keptEntry
	if err := json.Unmarshal(data, &k); err != nil || k.Outcome > OutcomeAssumedAllow {
		g.log.Warn("robots: kept robots.txt entry unreadable", "authority", auth, "err", err)
		return nil, time.Time{}
	}
	if k.Outcome < OutcomeOK {
		return nil, k.Pending // only the note of a request
	}
	e := &Entry{
		Authority: auth, URL: k.URL, Outcome: k.Outcome, Status: k.Status, FetchedAt: k.FetchedAt,
		CheckedAt: k.CheckedAt, Expires: k.Expires, Failures: k.Failures, UnreachableSince: k.UnreachableSince,
		size: entryOverhead + int64(len(k.Body)), body: k.Body,
	}
	if k.Err != "" {
		e.Err = errors.New(k.Err)
	}
	switch k.Outcome {
	case OutcomeOK, OutcomeStale:
		g.setRobots(e, robots.Parse(k.Body))
	case OutcomeUnreachable:
		g.setRobots(e, robots.DisallowAll())
	default:
		g.setRobots(e, robots.AllowAll())
	}
	return e, k.Pending
}
