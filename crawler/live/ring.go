package live

import (
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is a class of request outcome, a series of the chart.
type Outcome int

// The outcome classes charted per second.
const (
	Outcome2xx     Outcome = iota // a 2xx answer
	Outcome3xx                    // a redirect or 304
	Outcome4xx                    // a 4xx answer, 429 included
	Outcome5xx                    // a 5xx answer
	OutcomeNetwork                // no answer: refused, reset, timed out, DNS, TLS
	OutcomeRobots                 // a URL robots.txt did not let us fetch
	numOutcomes
)

// outcomeNames are the chart's series names, by Outcome.
var outcomeNames = [numOutcomes]string{"2xx", "3xx", "4xx", "5xx", "network", "robots"}

// String names o as the chart does.
func (o Outcome) String() string {
	if o < 0 || o >= numOutcomes {
		return "unknown"
	}
	return outcomeNames[o]
}

// statusOutcome classes an HTTP status (0: no answer).
func statusOutcome(status int) Outcome {
	switch {
	case status == 0:
		return OutcomeNetwork
	case status < 300:
		return Outcome2xx
	case status < 400:
		return Outcome3xx
	case status < 500:
		return Outcome4xx
	}
	return Outcome5xx
}

// window is how long the per-second outcomes are kept.
const window = time.Hour

// seconds is a ring of per-second outcome counts over the last window: a
// fixed array, so that recording a second costs no allocation however
// long the crawl runs. Its counters are atomic: every answer of the crawl
// adds to one, from whichever worker got it, without a lock; the lock is
// only taken to start a new second in a slot, once a second.
type seconds struct {
	mu     sync.Mutex                              // starting a slot's new second
	at     [int(window / time.Second)]atomic.Int64 // the Unix second a slot counts, to tell a stale slot
	counts [int(window / time.Second)][numOutcomes]atomic.Uint32
}

func (s *seconds) add(t time.Time, o Outcome) {
	sec := t.Unix()
	i := int(sec % int64(len(s.at)))
	if s.at[i].Load() != sec {
		s.mu.Lock()
		if s.at[i].Load() != sec {
			// Zeroed before the slot is marked this second's, so that no
			// add of this second, which waits for the mark, is lost.
			for c := range s.counts[i] {
				s.counts[i][c].Store(0)
			}
			s.at[i].Store(sec)
		}
		s.mu.Unlock()
	}
	s.counts[i][o].Add(1)
}

// series returns the counts of each second from `from` to `to` (Unix
// seconds, inclusive, at most the window), by outcome.
func (s *seconds) series(from, to int64) [numOutcomes][]uint32 {
	if n := int64(len(s.at)); to-from+1 > n {
		from = to - n + 1
	}
	var out [numOutcomes][]uint32
	if to < from {
		return out
	}
	for o := range out {
		out[o] = make([]uint32, to-from+1)
	}
	for sec := from; sec <= to; sec++ {
		i := int(sec % int64(len(s.at)))
		if s.at[i].Load() != sec {
			continue
		}
		for o := range out {
			out[o][sec-from] = s.counts[i][o].Load()
		}
	}
	return out
}

// sum returns the outcomes counted from `from` to `to` (Unix seconds).
func (s *seconds) sum(from, to int64) (n int64) {
	for sec := from; sec <= to; sec++ {
		i := int(sec % int64(len(s.at)))
		if s.at[i].Load() != sec {
			continue
		}
		for c := range s.counts[i][:OutcomeNetwork+1] {
			n += int64(s.counts[i][c].Load())
		}
	}
	return n
}
