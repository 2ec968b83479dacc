package redisstore

// Members: what each process of a job holds, as its heartbeat says (for
// crawl status).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// holds returns what the Store holds, for its heartbeat: JSON of its
// leases, runs and hosts (at most holdsMax, sorted).
func (s *Store) holds() string {
	s.mu.Lock()
	h := Holds{Leases: len(s.held), Runs: len(s.runs)}
	seen := map[string]bool{}
	for _, k := range s.held {
		if !seen[k] {
			seen[k] = true
			h.Hosts = append(h.Hosts, k)
		}
	}
	s.mu.Unlock()
	slices.Sort(h.Hosts)
	if len(h.Hosts) > holdsMax {
		h.More = len(h.Hosts) - holdsMax
		h.Hosts = h.Hosts[:holdsMax]
	}
	b, _ := json.Marshal(h)
	return string(b)
}

// Holds is what a member of a job holds, as its last heartbeat said.
type Holds struct {
	// Leases is how many leases the member holds, Runs how many of them
	// are runs of several items (see Affinity).
	Leases int `json:"leases"`
	Runs   int `json:"runs"`
	// Hosts are the politeness keys of its leases, sorted, the first
	// 32; More counts the others.
	Hosts []string `json:"hosts,omitempty"`
	More  int      `json:"more,omitempty"`
}

// Member is a process of a job, as its heartbeats tell (Store.Members).
type Member struct {
	// ID is the member's id: a process that was presumed dead joins
	// again under another.
	ID int64
	// LastBeat is when its last heartbeat arrived, on the clock of the
	// decisions (Redis's, unless Options.CallerClock).
	LastBeat time.Time
	// Timeout is its liveness timeout: its leases are anyone's once its
	// last heartbeat is older.
	Timeout time.Duration
	// Dead reports a member declared dead whose leases are not yet all
	// taken back.
	Dead bool
	// Holds is what it held at its last heartbeat.
	Holds Holds
}

// errMemberEntry: an entry of the job's live or dead hash that does not
// parse.
var errMemberEntry = errors.New("redisstore: bad member entry")

// Members returns the members of the job: those alive, by their last
// heartbeat, and those declared dead whose leases are still to be taken
// back.
func (s *Store) Members(ctx context.Context) ([]Member, error) {
	var live, dead map[string]string
	err := s.retry(ctx, "members", func() error {
		var err error
		if live, err = s.c.HGetAll(ctx, s.prefix+"live").Result(); err != nil {
			return err
		}
		dead, err = s.c.HGetAll(ctx, s.prefix+"dead").Result()
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []Member
	for id, v := range live {
		m, err := parseMember(id, v)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	for id, at := range dead {
		n, err1 := strconv.ParseInt(id, 10, 64)
		us, err2 := strconv.ParseInt(at, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: %s %q", errMemberEntry, id, at)
		}
		out = append(out, Member{ID: n, LastBeat: timeOf(us), Dead: true})
	}
	slices.SortFunc(out, func(a, b Member) int { return a.LastBeat.Compare(b.LastBeat) })
	return out, nil
}

// parseMember parses the live hash's entry v of member id: "BEAT TIMEOUT
// HOLDS" (beat.lua).
func parseMember(id, v string) (Member, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	var beat, timeout int64
	var rest string
	if err == nil {
		_, err = fmt.Sscanf(v, "%d %d", &beat, &timeout)
	}
	if err != nil {
		return Member{}, fmt.Errorf("%w: %s %q", errMemberEntry, id, v)
	}
	if i := indexNth(v, ' ', 2); i >= 0 {
		rest = v[i+1:]
	}
	m := Member{ID: n, LastBeat: timeOf(beat), Timeout: time.Duration(timeout) * time.Microsecond}
	if rest != "" {
		if err := json.Unmarshal([]byte(rest), &m.Holds); err != nil {
			return Member{}, fmt.Errorf("%w: %s %q: %w", errMemberEntry, id, v, err)
		}
	}
	return m, nil
}

// indexNth returns the index of the nth c in v, -1 if there are fewer.
func indexNth(v string, c byte, n int) int {
	for i := 0; i < len(v); i++ {
		if v[i] == c {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}
