//go:build unix

package logstore

import (
	"io/fs"
	"syscall"
)

// openFileLimit is the soft RLIMIT_NOFILE, or 1024 if it cannot be read.
func openFileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return 1024
	}
	if r.Cur > 1<<30 {
		return 1 << 30
	}
	return int(r.Cur)
}

// fileID is a file's identity (device and inode), to tell whether a path
// still names the file first opened there.
type fileID struct {
	dev, ino uint64
	known    bool
}

func fileIDOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), known: true}
}

// same reports whether a and b are the same file; unknown identities
// (a filesystem without inodes) are taken as the same.
func (a fileID) same(b fileID) bool {
	return !a.known || !b.known || a.dev == b.dev && a.ino == b.ino
}
