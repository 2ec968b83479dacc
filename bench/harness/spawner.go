package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

type spawnRequest struct {
	Path    string
	Args    []string
	Timeout time.Duration
}

type spawnResult struct {
	Wall, CPU time.Duration
	MaxRSS    int64
	Err       string
	Stderr    string
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

// runChild runs one crawler and measures it. After Timeout it is asked to
// stop (SIGINT), and killed 10 s later.
func runChild(req spawnRequest) spawnResult {
	ctx := context.Background()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, req.Path, req.Args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	dieWithParent(cmd)
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stdout = io.Discard
	cmd.Stderr = stderr
	start := time.Now()
	err := cmd.Run()
	var res spawnResult
	res.Wall = time.Since(start)
	if ctx.Err() != nil {
		err = fmt.Errorf("stopped after %v: %w", req.Timeout, ctx.Err())
	}
	if err != nil {
		res.Err = err.Error()
	}
	res.Stderr = stderr.String()
	if ps := cmd.ProcessState; ps != nil {
		res.CPU = ps.UserTime() + ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = maxRSSBytes(ru)
		}
	}
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
