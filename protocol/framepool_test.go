package protocol

import "testing"

// TestFrameClasses: every size up to maxPooledFrame gets the smallest
// class that holds it, at most a quarter larger (4 KiB at least), and a
// buffer goes back only to the pool of its own class.
func TestFrameClasses(t *testing.T) {
	if got := frameClass(maxPooledFrame) + 1; got != frameClasses {
		t.Fatalf("frameClasses %d, the largest class is %d", frameClasses, got-1)
	}
	for n := 1; n <= maxPooledFrame; n += 1 + n/97 {
		c := frameClass(n)
		size := frameClassSize(c)
		if size < n || (c > 0 && frameClassSize(c-1) >= n) {
			t.Fatalf("%d bytes: class %d of %d bytes, not the smallest holding it", n, c, size)
		}
		if n > minPooledFrame && size > n+n/4+1 {
			t.Fatalf("%d bytes: class of %d bytes, more than a quarter larger", n, size)
		}
		if frameClass(size) != c {
			t.Fatalf("class %d's size %d maps to class %d", c, size, frameClass(size))
		}
	}
	if getFrameBuf(maxPooledFrame+1) != nil {
		t.Error("a buffer above the largest class came from a pool")
	}
	p := getFrameBuf(100 << 10)
	if len(p.b) != 0 || cap(p.b) != frameClassSize(frameClass(100<<10)) {
		t.Fatalf("getFrameBuf(100 KiB): len %d cap %d", len(p.b), cap(p.b))
	}
	putFrameBuf(&pooledBuf{b: make([]byte, 0, 100<<10)}) // no class's size: dropped
	putFrameBuf(nil)
}
