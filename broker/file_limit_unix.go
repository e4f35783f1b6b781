//go:build unix

package broker

import "syscall"

// openFileLimit is this process's limit on open files (RLIMIT_NOFILE, the
// soft limit, which Go's runtime raises to the hard limit at start-up); ok
// is false if it cannot be read.
func openFileLimit() (limit uint64, ok bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return uint64(lim.Cur), true
}
