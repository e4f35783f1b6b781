package protocol

import (
	"errors"
	"fmt"
	"io"
	"syscall"
)

// maxSendfileChunk bounds one sendfile(2) call; Linux transfers at most
// 0x7ffff000 bytes per call anyway.
const maxSendfileChunk = 1 << 30

// sendFile sends n bytes of file at off to w with sendfile(2) and an
// explicit offset, so concurrent sends from one descriptor never share a
// file position. It reports handled=false, having sent nothing, when w is
// not a socket or file not an operating-system file; the caller copies then.
//
// The file's descriptor is held (RawConn.Control) for the whole transfer, so
// a Close racing with it (retention deleting the segment) cannot hand the
// descriptor number to another file mid-send; the bytes are then still
// those of the original file, or the transfer stops short and fails.
func sendFile(w io.Writer, file io.ReaderAt, off, n int64) (handled bool, err error) {
	src, ok := file.(syscall.Conn)
	if !ok {
		return false, nil
	}
	dst, ok := w.(syscall.Conn)
	if !ok {
		return false, nil
	}
	srcRaw, err := src.SyscallConn()
	if err != nil {
		return false, nil
	}
	dstRaw, err := dst.SyscallConn()
	if err != nil {
		return false, nil
	}
	var sendErr error
	ctlErr := srcRaw.Control(func(infd uintptr) {
		wErr := dstRaw.Write(func(outfd uintptr) bool {
			for n > 0 {
				w, err := syscall.Sendfile(int(outfd), int(infd), &off, int(min(n, maxSendfileChunk)))
				if w > 0 {
					n -= int64(w)
					sendfileBytes.Add(int64(w))
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until the socket can take more
				case errors.Is(err, syscall.EINTR):
				case err != nil:
					sendErr = fmt.Errorf("protocol: sendfile: %w", err)
					return true
				case w == 0:
					sendErr = fmt.Errorf("protocol: sendfile: file ended %d bytes short at %d: %w", n, off, io.ErrUnexpectedEOF)
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = wErr
		}
	})
	if ctlErr != nil {
		return true, fmt.Errorf("protocol: sendfile source: %w", ctlErr)
	}
	return true, sendErr
}
