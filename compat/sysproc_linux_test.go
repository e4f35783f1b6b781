package compat

import (
	"os/exec"
	"syscall"
)

// bindToParent makes the kernel kill the broker if the test process dies
// first, so an interrupted run does not leave a broker holding a port.
func bindToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
