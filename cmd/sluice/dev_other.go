//go:build !unix

// dev_other.go: off Unix the `sluice dev` nodes stay in the dev process's
// process group.
package main

import "os/exec"

// setOwnProcessGroup does nothing off Unix.
func setOwnProcessGroup(cmd *exec.Cmd) {}
