package redisstore

import (
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// namesHook counts a client's commands by name, those of pipelines
// included.
type namesHook struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *namesHook) count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[name]
}

func (h *namesHook) add(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	for _, c := range cmds {
		h.n[c.Name()]++
	}
}

func (h *namesHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *namesHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}

func (h *namesHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.add(cmds...)
		return next(ctx, cmds)
	}
}

// batchOfClaims runs two Claims of s in one batch (batch.lua), after a
// Done held until they wait, and returns their leases.
func batchOfClaims(t *testing.T, c *redis.Client, s *Store, path string) []*frontier.Lease {
	t.Helper()
	mustAdd(t, s, item("a", path), item("b", path), item("c", path))
	l := claimAt(t, s, time.Now(), opt).Lease
	gate, _, wait, doneErr := heldDone(t, c, s, l)
	claims := queueClaims(t, s, 2, wait)
	close(gate.gate)
	if err := <-doneErr; err != nil {
		t.Fatalf("Done: %v", err)
	}
	var ls []*frontier.Lease
	for range 2 {
		cl := <-claims
		if cl.Lease == nil {
			t.Fatalf("a Claim of the batch = %+v, want a lease", cl)
		}
		ls = append(ls, cl.Lease)
	}
	return ls
}

// TestFunctionLoaded: a batch runs as a function; a server that lost its
// functions (FUNCTION FLUSH, as a new node has none) is given the library
// again by the first batch that misses it.
func TestFunctionLoaded(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	s, err := New(c, newJob(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := new(namesHook)
	c.AddHook(names)
	batchOfClaims(t, c, s, "/1")
	if n := names.count("fcall"); n == 0 {
		t.Error("the batch ran no FCALL")
	}
	if err := c.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// The Claims below find no function, load the library and run again.
	s2, err := New(c, newJob(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	batchOfClaims(t, c, s2, "/1")
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) != 1 || libs[0].Name != batchScript.name {
		t.Errorf("libraries after the batch: %+v, want %s", libs, batchScript.name)
	}
	if s.noFunctions.Load() || s2.noFunctions.Load() {
		t.Error("a Store fell back to EVALSHA on a server with functions")
	}
}

// TestFunctionFallback: a server without FCALL (Redis 6; here renamed
// away) runs the batch by EVALSHA, and is not asked FCALL again.
func TestFunctionFallback(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Options{Args: []string{"--rename-command", "FCALL", ""}})
	c := srv.Client()
	s, err := New(c, newJob(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := new(namesHook)
	c.AddHook(names)
	ls := batchOfClaims(t, c, s, "/1")
	if !s.noFunctions.Load() {
		t.Fatal("the Store did not learn that the server has no FCALL")
	}
	fcalls, evals := names.count("fcall"), names.count("evalsha")+names.count("eval")
	for _, l := range ls {
		if err := s.Done(ctx, l, time.Now(), frontier.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	batchOfClaims(t, c, s, "/2")
	if n := names.count("fcall"); n != fcalls || n > 1 {
		t.Errorf("FCALLs: %d for the first batch, %d in all; want at most 1, then none", fcalls, n)
	}
	if n := names.count("evalsha") + names.count("eval"); n <= evals {
		t.Errorf("the second batch ran no script by EVALSHA (%d, then %d)", evals, n)
	}
}

// TestFunctionCluster: on a cluster whose primaries lost their functions
// mid-crawl, the first batch that misses the library loads it into every
// primary, and no item is lost or handed out twice.
func TestFunctionCluster(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Primaries: 3})
	c := cl.Client()
	s, err := New(c, newJob(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	const keys, per = 40, 3
	var items []frontier.Item
	for k := range keys {
		for p := range per {
			items = append(items, item("k"+string(rune('a'+k%26))+strings.Repeat("x", k/26), "/"+string(rune('0'+p))))
		}
	}
	mustAdd(t, s, items...)
	var handed atomic.Int64
	seen := sync.Map{}
	crawl := func(workers int, stop int64) {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for handed.Load() < stop {
					cl, err := s.Claim(ctx, time.Now(), opt)
					if err != nil {
						t.Errorf("Claim: %v", err)
						return
					}
					if cl.Lease == nil {
						if cl.Idle {
							return
						}
						continue
					}
					if _, dup := seen.LoadOrStore(cl.Lease.URL, true); dup {
						t.Errorf("%s handed out twice", cl.Lease.URL)
					}
					handed.Add(1)
					if err := s.Done(ctx, cl.Lease, time.Now(), frontier.Outcome{}); err != nil {
						t.Errorf("Done: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	crawl(8, keys*per/2)
	for _, p := range cl.Primaries() {
		if err := p.Client().FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	crawl(8, keys*per)
	if n := handed.Load(); n != keys*per {
		t.Fatalf("handed out %d items, want %d", n, keys*per)
	}
	var fcalls int
	for _, p := range cl.Primaries() {
		libs, err := p.Client().FunctionList(ctx, redis.FunctionListQuery{}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(libs) != 1 || libs[0].Name != batchScript.name {
			t.Errorf("primary %s: libraries %+v after the flush, want %s", p.Addr, libs, batchScript.name)
		}
		info, err := p.Client().Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "cmdstat_fcall:") {
			fcalls++
		}
	}
	if fcalls == 0 {
		t.Error("no primary ran a batch as a function")
	}
}

// TestBeginResets: every value of the prelude that a call sets, begin
// sets again (or, runID, keeps on purpose): a function's upvalues outlive
// its call, and a value left from the call before would be a bug seen
// only on a server with functions.
func TestBeginResets(t *testing.T) {
	src, err := os.ReadFile("lua/prelude.lua")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	at := strings.Index(text, "local function begin()")
	if at < 0 {
		t.Fatal("prelude.lua has no begin")
	}
	body := text[at:]
	body = body[:strings.Index(body, "\nend\n")]
	decl := regexp.MustCompile(`(?m)^local ([A-Za-z_][A-Za-z0-9_, ]*?)(?: =|$)`)
	for _, m := range decl.FindAllStringSubmatch(text[:at], -1) {
		for _, name := range strings.Split(m[1], ",") {
			name = strings.TrimSpace(name)
			if name == "function" || strings.HasPrefix(name, "function ") || name == strings.ToUpper(name) ||
				name == "settle" || name == "runID" {
				continue // a function, a constant, or kept on purpose
			}
			assigned := regexp.MustCompile(`(?m)^\s+(?:[A-Za-z_, ]*[ ,])?` + name + `(?:,[A-Za-z_, ]*)? =[^=]`)
			if !assigned.MatchString(body) {
				t.Errorf("begin does not set %s, which a call may change", name)
			}
		}
	}
}
