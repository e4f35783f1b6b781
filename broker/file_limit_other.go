//go:build !unix

package broker

// openFileLimit reports no limit where RLIMIT_NOFILE does not exist.
func openFileLimit() (limit uint64, ok bool) { return 0, false }
