package harness

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the child if its parent dies, so no
// crawler or spawner outlives an interrupted driver.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
