//go:build unix && !linux

// dev_unix.go puts each `sluice dev` node in a process group of its own,
// so a Ctrl-C in the terminal reaches only the dev process, which forwards
// it once to every node (a second SIGINT straight to a node would cut its
// clean shutdown short). Off Linux there is no parent-death signal: a
// kill -9 of the dev process leaves its nodes running.
package main

import (
	"os/exec"
	"syscall"
)

// setOwnProcessGroup makes cmd's process the leader of a new process group.
func setOwnProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
