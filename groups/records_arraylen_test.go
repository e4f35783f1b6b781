package groups

import (
	"encoding/binary"
	"runtime"
	"testing"
)

// TestCorruptArrayLengthAllocatesNothing: a group record whose compact
// array claims a billion elements in a few bytes is refused as corrupt
// without the reader sizing a slice by the claimed count (which, for
// elements of some dozens of bytes, would be tens of GiB).
func TestCorruptArrayLengthAllocatesNothing(t *testing.T) {
	b := binary.AppendUvarint(nil, 1<<30) // a count of 2^30 - 1 elements
	b = append(b, 0, 0, 0, 1)
	r := &recordReader{b: b}
	type wide struct{ a, b, c, d, e, f, g, h int64 }
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := readArray(r, func() wide { return wide{a: int64(r.int32())} })
	runtime.ReadMemStats(&after)
	if got != nil {
		t.Fatalf("read %d elements from a corrupt array", len(got))
	}
	if r.err == nil {
		t.Fatal("a count beyond the record's bytes was not refused")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("reading a corrupt array of %d bytes allocated %d bytes", len(b), n)
	}
}
