// Package chromiumtest finds Debian's chromium for tests that drive a real
// browser. In CI (the environment variable CI is "true") a missing chromium
// fails the test, as .ci/run installs it; elsewhere the test is skipped
// with a message naming the package, as the Redis tests do.
package chromiumtest

import (
	"os"
	"os/exec"
	"testing"
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
