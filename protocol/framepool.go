package protocol

// Pooled buffers for the request path (issue 22): the frames of requests
// whose handler keeps none of their bytes (Router.ReuseFrames: Produce),
// the buffers a frame outgrows while it arrives, and encoded responses.
//
// A frame's buffer comes from a pool of size classes, four to a power of
// two (4 KiB, 5 KiB, 6 KiB, 7 KiB, 8 KiB, 10 KiB, …, 16 MiB), so a
// buffer is at most a quarter larger than the bytes the memory budget
// (budget.go) was charged for; larger frames are allocated as before. A
// buffer goes back to its pool only once nothing can refer to it: an
// outgrown one once its bytes are copied, a frame once its request has
// been answered (its response written and observed), a response once it
// has been written. The pools hold idle buffers only until the garbage
// collector empties them (sync.Pool), so an idle connection holds none.

import (
	"math/bits"
	"sync"
)

const (
	minPooledFrame = 4 << 10
	maxPooledFrame = 16 << 20
	// frameClassSteps is how many size classes each power of two has.
	frameClassSteps = 4
	// frameClasses is the number of size classes: class 0 (up to
	// minPooledFrame), then frameClassSteps for each power of two up to
	// maxPooledFrame (2^12 to 2^24).
	frameClasses = (24-12)*frameClassSteps + 1
	// maxPooledResponse is the largest encoded response kept for reuse.
	maxPooledResponse = 64 << 10
)

// pooledBuf is a pooled buffer; pools hold *pooledBuf so that putting one
// back allocates nothing.
type pooledBuf struct{ b []byte }

var (
	framePools    [frameClasses]sync.Pool
	responsePool  sync.Pool
	frameClassLog = bits.Len(minPooledFrame) - 1
)

// frameClass is the index of the smallest size class holding n bytes
// (minPooledFrame < n ≤ maxPooledFrame, or 0 for n ≤ minPooledFrame).
func frameClass(n int) int {
	if n <= minPooledFrame {
		return 0
	}
	k := bits.Len(uint(n-1)) - 1 // 2^k < n ≤ 2^(k+1)
	step := 1 << k / frameClassSteps
	q := (n - 1<<k + step - 1) / step // 1..frameClassSteps
	return (k-(bits.Len(minPooledFrame)-1))*frameClassSteps + q
}

// frameClassSize is the capacity of size class c's buffers.
func frameClassSize(c int) int {
	if c == 0 {
		return minPooledFrame
	}
	k := (c-1)/frameClassSteps + frameClassLog
	q := (c-1)%frameClassSteps + 1
	return 1<<k + q*(1<<k/frameClassSteps)
}

// getFrameBuf returns a buffer whose b has length 0 and a capacity of at
// least n, or nil when n is above the largest class.
func getFrameBuf(n int) *pooledBuf {
	if n > maxPooledFrame {
		return nil
	}
	c := frameClass(n)
	if p, ok := framePools[c].Get().(*pooledBuf); ok {
		return p
	}
	return &pooledBuf{b: make([]byte, 0, frameClassSize(c))}
}

// putFrameBuf gives p back to its class's pool. p's bytes must not be
// referred to afterwards. A nil p, or one whose capacity is no class's,
// is left to the garbage collector.
func putFrameBuf(p *pooledBuf) {
	if p == nil || cap(p.b) > maxPooledFrame {
		return
	}
	c := frameClass(cap(p.b))
	if frameClassSize(c) != cap(p.b) {
		return
	}
	p.b = p.b[:0]
	framePools[c].Put(p)
}

// getResponseBuf returns a buffer for encoding a response into.
func getResponseBuf() *pooledBuf {
	if p, ok := responsePool.Get().(*pooledBuf); ok {
		return p
	}
	return &pooledBuf{b: make([]byte, 0, 4<<10)}
}

// putResponseBuf gives p back once its bytes have been written; a buffer
// a large response grew past maxPooledResponse is dropped.
func putResponseBuf(p *pooledBuf) {
	if p == nil || cap(p.b) > maxPooledResponse {
		return
	}
	p.b = p.b[:0]
	responsePool.Put(p)
}
