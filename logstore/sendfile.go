package logstore

import "io"

// Slice is a Read resolved to bytes of a segment file and not copied:
// Size bytes of whole batches at Pos in File, which the broker hands to the
// connection to send with sendfile(2). FirstOffset is the base offset of
// the first batch and NextOffset the offset after the last one; both are
// the requested offset when Size is 0.
//
// The bytes stay as they are until the segment is truncated (a replica
// that diverged from its leader) or deleted (retention, compaction); a
// reader that comes later finds the file shorter or closed and fails
// rather than reading other data, which is why File is the segment's own
// file and not a copy. File is the segment's cachedFile (filecache.go):
// its descriptor may be evicted and reopened between ReadSlice and the
// send (the same file: a reopen checks device and inode), and sendfile
// holds it through SyscallConn's Control for the whole transfer.
type Slice struct {
	File        io.ReaderAt
	Pos, Size   int64
	FirstOffset int64
	NextOffset  int64
}

// ReadSlice is Read without the copy: the same batches, the same limits
// and errors, as a range of a segment file.
func (l *Log) ReadSlice(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (Slice, error) {
	r, err := l.readRange(offset, maxBytes, maxOffset, minOneBatch)
	l.noteReadError(err)
	if err != nil || r.size == 0 {
		return Slice{FirstOffset: offset, NextOffset: offset}, err
	}
	return Slice{File: r.file, Pos: r.pos, Size: r.size, FirstOffset: r.firstOffset, NextOffset: r.nextOffset}, nil
}

// Bytes reads the slice into memory (nil when it is empty). A segment
// deleted since ReadSlice is ErrOffsetOutOfRange, any other failure
// ErrKafkaStorage, as for Read.
func (s Slice) Bytes() ([]byte, error) {
	if s.Size == 0 {
		return nil, nil
	}
	data := make([]byte, s.Size)
	if _, err := s.File.ReadAt(data, s.Pos); err != nil {
		return nil, readError(err)
	}
	return data, nil
}
