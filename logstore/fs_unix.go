//go:build unix

package logstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// lockFile holds an exclusive flock(2) on name. flock locks belong to the
// open file description, so a second OpenDir of the same directory fails
// even inside the same process, which is what tests rely on.
func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrDirLocked, name)
		}
		return nil, fmt.Errorf("flock %s: %w", name, err)
	}
	return f, nil // closing the file releases the lock
}
