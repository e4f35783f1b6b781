// dev_linux.go puts each `sluice dev` node in a process group of its own,
// so a Ctrl-C in the terminal reaches only the dev process, which forwards
// it once to every node (a second SIGINT straight to a node would cut its
// clean shutdown short), and asks the kernel to send the node SIGTERM if
// the dev process dies without stopping it (kill -9 of the dev process
// leaves no orphan holding the cluster's ports).
package main

import (
	"os/exec"
	"syscall"
)

// setOwnProcessGroup makes cmd's process the leader of a new process
// group, terminated when its parent dies.
func setOwnProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
