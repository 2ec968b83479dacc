package robots

import (
	"context"
	"encoding/json"
	"errors"
	"time"
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
}

// save hands e to the keeper.
func (g *Gate) save(ctx context.Context, e *Entry) {
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
	data, err := json.Marshal(k)
	if err == nil {
		err = g.keeper.SaveEntry(context.WithoutCancel(ctx), e.Authority, data)
	}
	if err != nil {
		g.log.Warn("robots: keeping robots.txt entry", "authority", e.Authority, "err", err)
	}
}

// load returns the entry the keeper holds for auth, or nil.
func (g *Gate) load(ctx context.Context, auth string) *Entry {
	data, err := g.keeper.LoadEntry(ctx, auth)
	if err != nil {
		g.log.Warn("robots: reading kept robots.txt entry", "authority", auth, "err", err)
		return nil
	}
	if data == nil {
		return nil
	}
	var k keptEntry
	if err := json.Unmarshal(data, &k); err != nil || k.Outcome < OutcomeOK || k.Outcome > OutcomeAssumedAllow {
		g.log.Warn("robots: kept robots.txt entry unreadable", "authority", auth, "err", err)
		return nil
	}
	e := &Entry{
		Authority: auth, URL: k.URL, Outcome: k.Outcome, Status: k.Status, FetchedAt: k.FetchedAt,
		CheckedAt: k.CheckedAt, Expires: k.Expires, Failures: k.Failures, UnreachableSince: k.UnreachableSince,
		size: gateEntryOverhead + int64(len(k.Body)), body: k.Body,
	}
	if k.Err != "" {
		e.Err = errors.New(k.Err)
	}
	switch k.Outcome {
	case OutcomeOK, OutcomeStale:
		g.setRobots(e, Parse(k.Body))
	case OutcomeUnreachable:
		g.setRobots(e, DisallowAll())
	default:
		g.setRobots(e, AllowAll())
	}
	return e
}
