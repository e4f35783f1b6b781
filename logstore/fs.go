package logstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// File is the part of *os.File the log needs. Segment files are written with
// WriteAt at their committed size rather than with O_APPEND so that a failed
// or torn write can be retried or truncated without a hidden file position.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
}

// FS is the filesystem the package runs on. The OS implementation is used
// when Options.FS is nil; tests wrap it to inject I/O errors and to simulate
// crashes (see fault_test.go).
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	MkdirAll(path string, perm fs.FileMode) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	RemoveAll(path string) error
	Stat(name string) (fs.FileInfo, error)
	// Lock takes an exclusive, non-blocking lock on the named file, creating
	// it if needed. It returns ErrDirLocked if somebody else holds it.
	// Closing the returned Closer releases the lock.
	Lock(name string) (io.Closer, error)
}

// OSFS is the operating system's filesystem.
type OSFS struct{}

var _ FS = OSFS{}

// OpenFile opens a file with os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// MkdirAll calls os.MkdirAll.
func (OSFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }

// ReadDir calls os.ReadDir.
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// Rename calls os.Rename.
func (OSFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove calls os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// RemoveAll calls os.RemoveAll.
func (OSFS) RemoveAll(path string) error { return os.RemoveAll(path) }

// Stat calls os.Stat.
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// Lock takes a flock(2) on name; see fs_unix.go.
func (OSFS) Lock(name string) (io.Closer, error) { return lockFile(name) }

// readWholeFile reads a small file (checkpoints, metadata) through fsys.
func readWholeFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// writeFileAtomic replaces name with data so that a crash leaves either the
// old or the new content, never a mix: write name.tmp, fsync it, rename it
// over name, fsync the directory so the rename itself is durable. Kafka's
// checkpoint files are written the same way, which is what lets a restart
// trust them.
func writeFileAtomic(fsys FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, name); err != nil {
		return err
	}
	return syncDir(fsys, filepath.Dir(name))
}

// syncDir fsyncs a directory so that file creations, renames and removals in
// it survive a power loss. Some platforms cannot fsync directories; that is
// not an error worth failing a checkpoint over.
func syncDir(fsys FS, dir string) error {
	f, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
