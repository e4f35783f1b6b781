//go:build !unix

package logstore

import (
	"io"
	"os"
)

// lockFile on platforms without flock only creates the file; sluice's
// supported platforms are unix, this keeps the package compiling elsewhere.
func lockFile(name string) (io.Closer, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}
