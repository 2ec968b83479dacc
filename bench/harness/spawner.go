package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Why a spawner: on Linux a child's ru_maxrss starts at the peak RSS of the
// process that forked it, because Go forks with CLONE_VM and exec records
// the old (the parent's) memory's high-water mark. A driver holding a
// 2,000-host web would report every crawler as at least its own size. So
// crawlers are started by a small helper process, started before the driver
// grows: their peak RSS is then their own (or the helper's few MB).

// spawnerEnv marks a process started as the spawner.
const spawnerEnv = "HEEDBENCH_SPAWNER"

// ServeSpawnerIfRequested serves as the spawner and returns true if this
// process was started by StartSpawner; the caller must then exit. Call it
// first thing in main (and in TestMain), before allocating much.
func ServeSpawnerIfRequested() bool {
	if os.Getenv(spawnerEnv) != "1" {
		return false
	}
	serveSpawner(os.Stdin, os.Stdout)
	return true
}

// spawnRequest is one run: its processes are started together.
type spawnRequest struct {
	Procs   []procSpec
	Timeout time.Duration
}

// procSpec is one process of a run.
type procSpec struct {
	Path string
	Args []string
}

// spawnResult measures a run: Wall from the first start to the last exit,
// CPU summed over the processes, MaxRSS the largest process's peak.
type spawnResult struct {
	Wall, CPU time.Duration
	MaxRSS    int64
	Err       string // the first failure, naming its process when there are several
	Stderr    string
	// Exits is when each process exited, from the first start, in order.
	Exits []time.Duration
}

func serveSpawner(in io.Reader, out io.Writer) {
	dec, enc := json.NewDecoder(in), json.NewEncoder(out)
	for {
		var req spawnRequest
		if err := dec.Decode(&req); err != nil {
			return // the driver closed the pipe or died
		}
		if err := enc.Encode(runChild(req)); err != nil {
			return
		}
	}
}

// runChild runs the processes of one run together and measures them. After
// Timeout they are asked to stop (SIGINT), and killed 10 s later.
func runChild(req spawnRequest) spawnResult {
	ctx := context.Background()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	type proc struct {
		cmd    *exec.Cmd
		stderr *tailBuffer
		err    error
		exit   time.Duration
	}
	// A crawler that is a Go program calling ServeSpawnerIfRequested
	// (as the tests' fake crawler does) must not become a spawner.
	childEnv := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, spawnerEnv+"=") })
	procs := make([]*proc, len(req.Procs))
	start := time.Now()
	var wg sync.WaitGroup
	for i, spec := range req.Procs {
		cmd := exec.CommandContext(ctx, spec.Path, spec.Args...)
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 10 * time.Second
		cmd.Env = childEnv
		dieWithParent(cmd)
		p := &proc{cmd: cmd, stderr: &tailBuffer{max: 4 << 10}}
		cmd.Stdout = io.Discard
		cmd.Stderr = p.stderr
		procs[i] = p
		if p.err = cmd.Start(); p.err != nil {
			continue
		}
		wg.Go(func() {
			p.err = cmd.Wait()
			p.exit = time.Since(start)
		})
	}
	wg.Wait()
	var res spawnResult
	res.Wall = time.Since(start)
	var tails []string
	for i, p := range procs {
		err := p.err
		if ctx.Err() != nil {
			err = fmt.Errorf("stopped after %v: %w", req.Timeout, ctx.Err())
		}
		name := ""
		if len(procs) > 1 {
			name = fmt.Sprintf("process %d: ", i+1)
		}
		if err != nil && res.Err == "" {
			res.Err = name + err.Error()
		}
		if tail := p.stderr.String(); tail != "" {
			tails = append(tails, name+tail)
		}
		if ps := p.cmd.ProcessState; ps != nil {
			res.Exits = append(res.Exits, p.exit)
			res.CPU += ps.UserTime() + ps.SystemTime()
			if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
				res.MaxRSS = max(res.MaxRSS, maxRSSBytes(ru))
			}
		}
	}
	res.Stderr = strings.Join(tails, "\n")
	slices.Sort(res.Exits)
	return res
}

// Spawner is a handle on the spawner process. Its methods may be called
// from one goroutine at a time.
type Spawner struct {
	mu    sync.Mutex
	cmd   *exec.Cmd
	stdin io.WriteCloser
	enc   *json.Encoder
	dec   *json.Decoder
}

// StartSpawner starts this program again as the spawner; the program must
// call ServeSpawnerIfRequested at the top of main (or TestMain).
func StartSpawner() (*Spawner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("harness: starting spawner: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), spawnerEnv+"=1")
	cmd.Stderr = os.Stderr
	dieWithParent(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("harness: starting spawner: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("harness: starting spawner: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("harness: starting spawner: %w", err)
	}
	return &Spawner{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin), dec: json.NewDecoder(stdout)}, nil
}

// errSpawnerGone is returned after the spawner was killed or died.
var errSpawnerGone = errors.New("harness: spawner is gone")

// run has the spawner run one child. If ctx ends first the spawner is
// killed (and with it the child) and ctx's error returned.
func (s *Spawner) run(ctx context.Context, req spawnRequest) (spawnResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enc == nil {
		return spawnResult{}, errSpawnerGone
	}
	if err := s.enc.Encode(req); err != nil {
		return spawnResult{}, fmt.Errorf("%w: %w", errSpawnerGone, err)
	}
	type reply struct {
		res spawnResult
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		var r reply
		r.err = s.dec.Decode(&r.res)
		ch <- r
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return spawnResult{}, fmt.Errorf("%w: %w", errSpawnerGone, r.err)
		}
		return r.res, nil
	case <-ctx.Done():
		s.cmd.Process.Kill() //nolint:errcheck // it may have exited already
		<-ch
		s.enc = nil
		return spawnResult{}, ctx.Err()
	}
}

// Close ends the spawner and waits for it.
func (s *Spawner) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stdin.Close()
	s.enc = nil
	err := s.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && !exit.Exited() {
		return nil // killed on purpose by run
	}
	return err
}
