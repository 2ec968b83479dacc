package live

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/ratelimit"
	"github.com/heedcrawl/heed/robots"
	"github.com/heedcrawl/heed/robots/gate"
)

// JournalEvent is one entry of a host's politeness journal: a robots.txt
// version and what changed in it, a 429 or 503 and its Retry-After, our
// delay backing off or recovering, the host given up — on one timeline.
type JournalEvent struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"` // robots, throttled, server-error, delay, given-up
	Text string    `json:"text"`
}

// appendEvent appends ev to j, dropping the oldest past journalSize.
func appendEvent(j []JournalEvent, ev JournalEvent) []JournalEvent {
	if len(j) == journalSize {
		j = slices.Delete(j, 0, 1)
	}
	return append(j, ev)
}

// journalAnswer records in h's journal what the answer req says about
// politeness: a 429 or 503 (and its Retry-After), a 5xx, and a change of
// the delay the host is paced at. It also keeps the recent 429s and 5xx.
func (r *Recorder) journalAnswer(h *hostRec, req *crawler.Request) {
	what := "page"
	if req.Robots {
		what = "robots.txt"
	}
	switch {
	case req.Failure == ratelimit.FailureThrottled:
		h.throttled = append(recent(h.throttled, req.Answered), req.Answered)
		text := fmt.Sprintf("%s answered %d %s", what, req.Status, http.StatusText(req.Status))
		if req.RetryAfter != "" {
			text += ", Retry-After: " + req.RetryAfter
		}
		h.journal = appendEvent(h.journal, JournalEvent{At: req.Answered, Kind: "throttled", Text: text})
	case req.Status >= 500:
		h.serverErrs = append(recent(h.serverErrs, req.Answered), req.Answered)
		h.journal = appendEvent(h.journal, JournalEvent{At: req.Answered, Kind: "server-error",
			Text: fmt.Sprintf("%s answered %d %s", what, req.Status, http.StatusText(req.Status))})
	}
	if text := paceChange(h.pace, req.Pace, h.requests > 1 || req.Robots); text != "" {
		h.journal = appendEvent(h.journal, JournalEvent{At: req.Answered, Kind: "delay", Text: text})
	}
}

// recent drops the times of ts older than recentWindow before now.
func recent(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > recentWindow {
		i++
	}
	return ts[i:]
}

// paceChange says how the host's pacing moved from was to now, or "" if
// it did not in a way worth a journal line. known says was is a real
// earlier state, not the zero one before the first answer.
func paceChange(was, now ratelimit.HostStatus, known bool) string {
	var parts []string
	if known && (was.Delay != now.Delay || was.Reason != now.Reason) {
		verb := "delay"
		switch {
		case now.Delay > was.Delay && now.Reason == ratelimit.ReasonBackoff:
			verb = "backing off"
		case now.Delay < was.Delay && was.Reason == ratelimit.ReasonBackoff:
			verb = "recovering"
		}
		parts = append(parts, fmt.Sprintf("%s: delay %v → %v (%s)", verb, was.Delay, now.Delay, now.Reason))
	}
	if !now.PausedUntil.IsZero() && !now.PausedUntil.Equal(was.PausedUntil) {
		parts = append(parts, fmt.Sprintf("paused by Retry-After until %s", now.PausedUntil.UTC().Format(time.TimeOnly)))
	}
	return strings.Join(parts, "; ")
}

// robotsEvent is the journal line of robots.txt fetched as e, after the
// version prev (nil for the first): its outcome, and what changed.
func robotsEvent(prev, e *gate.Entry) JournalEvent {
	text := fmt.Sprintf("robots.txt %s", e.Outcome)
	if e.Status != 0 {
		text += fmt.Sprintf(" (%d)", e.Status)
	}
	if e.Err != nil {
		text += ": " + e.Err.Error()
	}
	if e.HasCrawlDelay {
		text += fmt.Sprintf(", Crawl-delay %v", e.CrawlDelay)
	}
	if prev != nil {
		if changes := robotsChanges(prev, e); len(changes) > 0 {
			text += "; changed: " + strings.Join(changes, "; ")
		} else {
			text += "; unchanged"
		}
	}
	return JournalEvent{At: e.CheckedAt, Kind: "robots", Text: text}
}

// robotsChanges lists what differs between two versions of a robots.txt
// as it applies to us: outcome, Crawl-delay, rules added and removed,
// sitemaps.
func robotsChanges(a, b *gate.Entry) []string {
	var out []string
	if a.Outcome != b.Outcome {
		out = append(out, fmt.Sprintf("outcome %s → %s", a.Outcome, b.Outcome))
	}
	if a.HasCrawlDelay != b.HasCrawlDelay || a.CrawlDelay != b.CrawlDelay {
		out = append(out, fmt.Sprintf("Crawl-delay %s → %s", delayText(a), delayText(b)))
	}
	ra, rb := ruleLines(a.Group), ruleLines(b.Group)
	for _, l := range rb {
		if !slices.Contains(ra, l) {
			out = append(out, "+ "+l)
		}
	}
	for _, l := range ra {
		if !slices.Contains(rb, l) {
			out = append(out, "− "+l)
		}
	}
	if !slices.Equal(a.Sitemaps, b.Sitemaps) {
		out = append(out, fmt.Sprintf("sitemaps %d → %d", len(a.Sitemaps), len(b.Sitemaps)))
	}
	return out
}

func delayText(e *gate.Entry) string {
	if !e.HasCrawlDelay {
		return "none"
	}
	return e.CrawlDelay.String()
}

// ruleLines spells g's rules as robots.txt lines, sorted.
func ruleLines(g *robots.Group) []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, r := range g.Rules() {
		verb := "Disallow"
		if r.Allow {
			verb = "Allow"
		}
		out = append(out, verb+": "+r.Pattern)
	}
	slices.Sort(out)
	return out
}
