//go:build !linux

package compat

import "os/exec"

// bindToParent is a no-op where the kernel cannot tie a child's life to its
// parent; the test's cleanup still stops the broker.
func bindToParent(*exec.Cmd) {}
