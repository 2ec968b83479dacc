package harness

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if ServeSpawnerIfRequested() {
		return
	}
	if len(os.Args) > 1 && os.Args[1] == fakeCrawlerArg {
		os.Exit(fakeCrawler(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// A child started by this (grown) process inherits our peak RSS as its
// ru_maxrss on Linux; started by the spawner it reports its own.
func TestSpawnerReportsTheChildsOwnPeakRSS(t *testing.T) {
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1):", err)
	}
	s, err := StartSpawner()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	ballast := make([]byte, 128<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	direct := runChild(spawnRequest{Procs: []procSpec{{Path: trueBin}}})
	spawned, err := s.run(context.Background(), spawnRequest{Procs: []procSpec{{Path: trueBin}}})
	runtime.KeepAlive(ballast)
	if err != nil || spawned.Err != "" {
		t.Fatalf("run: %v, %s", err, spawned.Err)
	}
	t.Logf("peak RSS of true(1): %d MB started directly, %d MB through the spawner", direct.MaxRSS>>20, spawned.MaxRSS>>20)
	if spawned.MaxRSS <= 0 || spawned.MaxRSS >= 64<<20 {
		t.Errorf("through the spawner true(1) peaked at %d MB; the spawner leaks its parent's size", spawned.MaxRSS>>20)
	}
}

func TestSpawnerStopsWithContext(t *testing.T) {
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1):", err)
	}
	s, err := StartSpawner()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.run(ctx, spawnRequest{Procs: []procSpec{{Path: sleepBin, Args: []string{"60"}}}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 30*time.Second {
		t.Errorf("run = %v after %v; want DeadlineExceeded at once", err, time.Since(start))
	}
	if _, err := s.run(context.Background(), spawnRequest{Procs: []procSpec{{Path: sleepBin, Args: []string{"0"}}}}); !errors.Is(err, errSpawnerGone) {
		t.Errorf("run after kill = %v, want errSpawnerGone", err)
	}
	// A child that outlives its timeout is interrupted.
	res := runChild(spawnRequest{Procs: []procSpec{{Path: sleepBin, Args: []string{"60"}}}, Timeout: 100 * time.Millisecond})
	if res.Err == "" || res.Wall > 30*time.Second {
		t.Errorf("timed-out child: err %q after %v", res.Err, res.Wall)
	}
}

// The processes of a run start together: three one-second sleeps take about
// a second, not three; a failing one is named.
func TestSpawnerRunsProcessesTogether(t *testing.T) {
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1):", err)
	}
	s, err := StartSpawner()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	one := procSpec{Path: sleepBin, Args: []string{"1"}}
	res, err := s.run(context.Background(), spawnRequest{Procs: []procSpec{one, one, one}})
	if err != nil || res.Err != "" {
		t.Fatalf("run: %v, %s", err, res.Err)
	}
	if res.Wall < time.Second || res.Wall >= 2500*time.Millisecond {
		t.Errorf("three sleeps of 1 s together took %v; want from 1 s to well under 3 s", res.Wall)
	}
	if len(res.Exits) != 3 || res.Exits[0] < time.Second || res.Exits[2] > res.Wall || !slices.IsSorted(res.Exits) {
		t.Errorf("exits %v of a run of %v: want three, in order, each after 1 s", res.Exits, res.Wall)
	}
	bad := procSpec{Path: sleepBin, Args: []string{"not-a-number"}}
	res, err = s.run(context.Background(), spawnRequest{Procs: []procSpec{{Path: sleepBin, Args: []string{"0"}}, bad}})
	if err != nil || !strings.HasPrefix(res.Err, "process 2: ") || !strings.Contains(res.Stderr, "process 2: ") {
		t.Errorf("run with a failing second process: %v, err %q, stderr %q", err, res.Err, res.Stderr)
	}
}
