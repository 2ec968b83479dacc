// Package chromiumtest finds Debian's chromium for tests that drive a real
// browser. In CI (the environment variable CI is "true") a missing chromium
// fails the test, as .ci/run installs it; elsewhere the test is skipped
// with a message naming the package, as the Redis tests do.
package chromiumtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Path returns the chromium binary or ends the test: a failure in CI, a
// skip elsewhere.
func Path(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		msg := "chromium not found (install it: apt-get install -y chromium)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Proc is what /proc says of a process.
type Proc struct {
	PPID, PGID int
	Comm       string        // its command's name
	Zombie     bool          // dead, not reaped
	CPU        time.Duration // user and system time
}

// Procs reads every process's /proc/PID/stat, by pid: what tests of the
// browser's lifecycle look for (its process group, its children, what is
// left of it).
func Procs() map[int]Proc {
	out := map[int]Proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		// The fields after the command, which may hold spaces and
		// parentheses, start at its last ')'.
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if i < 0 || len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		comm := s[strings.IndexByte(s, '(')+1 : i]
		// USER_HZ is 100 on every Linux this runs on.
		out[pid] = Proc{PPID: ppid, PGID: pgid, Comm: comm, Zombie: f[0] == "Z", CPU: time.Duration(utime+stime) * 10 * time.Millisecond}
	}
	return out
}
