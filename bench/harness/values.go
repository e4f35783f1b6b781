package main

import (
	"crypto/rand"
	"sync/atomic"
)

// valuePoolBytes is the size of the random bytes record values are cut
// from.
const valuePoolBytes = 64 << 20

// valuePool hands out record values that no codec can shrink: each is the
// next of the pool's consecutive, non-overlapping -record-size slices of
// random bytes, round robin. A value repeats only after valuePoolBytes of
// records (65,536 of 1 KiB), while a batch holds at most 1 MiB
// (ProducerBatchMaxBytes) of records taken in the order they were
// produced, so a codec, which compresses one batch at a time, finds no
// repeat within one. One random value in every record, as the harness
// sent before issue 15, let snappy store 48 MiB of records in 2.8 MiB.
// The bytes-on-disk check (landed.go) measures that it stays so.
type valuePool struct {
	buf  []byte
	size int
	n    int64 // values in buf
	next atomic.Int64
}

// newValuePool fills a pool of values of size bytes.
func newValuePool(size int) *valuePool {
	n := max(valuePoolBytes/size, 1)
	p := &valuePool{buf: make([]byte, n*size), size: size, n: int64(n)}
	rand.Read(p.buf)
	return p
}

// value returns the next value. The caller must not modify it. It is safe
// for concurrent use.
func (p *valuePool) value() []byte {
	i := int((p.next.Add(1) - 1) % p.n)
	return p.buf[i*p.size : (i+1)*p.size : (i+1)*p.size]
}
