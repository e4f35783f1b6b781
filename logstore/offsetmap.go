package logstore

import (
	"encoding/binary"
	"hash/maphash"
	mathbits "math/bits"
)

// offsetMap is the cleaner's key → latest offset map, Kafka's
// SkimpyOffsetMap: an open-addressing table in one buffer allocated once
// from the cleaner's memory budget (log.cleaner.dedupe.buffer.size divided
// by log.cleaner.threads). A slot holds a 16-byte hash of the key and the
// offset; keys themselves are never stored, so two keys whose 128-bit
// hashes collide count as one (as in Kafka, where the hash is MD5). The
// map is full once its entries reach loadFactor of its slots
// (log.cleaner.io.buffer.load.factor, 0.9 by default): the cleaner then
// stops mapping and cleans what it mapped, leaving the rest for a later
// pass.
//
// internal/keyhash does not fit here: it is Java's 32-bit
// String.hashCode, for placing a key on a partition, and would collide
// far too often to stand for the key.
//
// A slot's offset field holds offset+1, so a zeroed slot is free: the
// buffer needs no pass to be made empty when allocated (its pages are not
// touched until keys land there), and clear empties only the slots put
// since the last clear, found through two bitmaps: used, one bit per slot
// (1/192 of the buffer on top of the budget), and usedWords, one bit per
// word of used. A cleaning pass that maps few keys, or none (a pass that
// only drops expired tombstones), no longer pays for a sweep of every
// slot of a 128 MiB map.
type offsetMap struct {
	buf          []byte   // slots * offsetMapSlotSize; a slot whose offset field is 0 is free
	used         []uint64 // bit i%64 of used[i/64]: slot i was filled since the last clear
	usedWords    []uint64 // bit w%64 of usedWords[w/64]: used[w] is not 0
	slots        int
	maxEntries   int
	entries      int
	latestOffset int64 // the largest offset put, -1 if none
	seed1, seed2 maphash.Seed
	lookups      int64
	probes       int64
}

const (
	offsetMapHashSize = 16
	offsetMapSlotSize = offsetMapHashSize + 8
	// DefaultDedupeBufferSize is log.cleaner.dedupe.buffer.size's default.
	DefaultDedupeBufferSize = 128 << 20
	// DefaultDedupeLoadFactor is log.cleaner.io.buffer.load.factor's default.
	DefaultDedupeLoadFactor = 0.9
)

// newOffsetMap allocates a map of at most memory bytes. It returns nil when
// the budget cannot hold even one entry at the load factor.
func newOffsetMap(memory int64, loadFactor float64) *offsetMap {
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = DefaultDedupeLoadFactor
	}
	slots := int(memory / offsetMapSlotSize)
	// One slot always stays free, so a probe for a new key ends.
	maxEntries := min(int(float64(slots)*loadFactor), slots-1)
	if maxEntries < 1 {
		return nil
	}
	words := (slots + 63) / 64
	return &offsetMap{buf: make([]byte, slots*offsetMapSlotSize), used: make([]uint64, words),
		usedWords: make([]uint64, (words+63)/64), slots: slots, maxEntries: maxEntries, latestOffset: -1,
		seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
}

// clear empties the map for the next log, keeping its buffer: it frees
// the slots filled since the last clear, O(entries) plus a skim of
// usedWords (slots/4096 words) that stops at the last of them.
func (m *offsetMap) clear() {
	for sw, left := 0, m.entries; left > 0; sw++ {
		for words := m.usedWords[sw]; words != 0; words &= words - 1 {
			w := sw*64 + mathbits.TrailingZeros64(words)
			for bits := m.used[w]; bits != 0; bits &= bits - 1 {
				i := w*64 + mathbits.TrailingZeros64(bits)
				binary.BigEndian.PutUint64(m.buf[i*offsetMapSlotSize+offsetMapHashSize:], 0)
				left--
			}
			m.used[w] = 0
		}
		m.usedWords[sw] = 0
	}
	m.entries, m.latestOffset, m.lookups, m.probes = 0, -1, 0, 0
}

// full reports whether another new key would exceed the load factor.
func (m *offsetMap) full() bool { return m.entries >= m.maxEntries }

func (m *offsetMap) hash(key []byte) (h [offsetMapHashSize]byte) {
	binary.BigEndian.PutUint64(h[:8], maphash.Bytes(m.seed1, key))
	binary.BigEndian.PutUint64(h[8:], maphash.Bytes(m.seed2, key))
	return h
}

// slot finds the slot of hash h: the one holding it, or the free slot where
// it would go. Linear probing from the first 8 bytes of the hash.
func (m *offsetMap) slot(h *[offsetMapHashSize]byte) (int, bool) {
	i := int(binary.BigEndian.Uint64(h[:8]) % uint64(m.slots))
	m.lookups++
	for {
		m.probes++
		s := m.buf[i*offsetMapSlotSize : (i+1)*offsetMapSlotSize]
		if binary.BigEndian.Uint64(s[offsetMapHashSize:]) == 0 {
			return i, false
		}
		if string(s[:offsetMapHashSize]) == string(h[:]) {
			return i, true
		}
		if i++; i == m.slots {
			i = 0
		}
	}
}

// put records offset (a record's, so >= 0) as the latest for key. It
// returns false, changing nothing, when key is new and the map is full.
func (m *offsetMap) put(key []byte, offset int64) bool {
	h := m.hash(key)
	i, found := m.slot(&h)
	if !found {
		if m.full() {
			return false
		}
		m.entries++
		m.used[i/64] |= 1 << (i % 64)
		m.usedWords[i/4096] |= 1 << (i / 64 % 64)
		copy(m.buf[i*offsetMapSlotSize:], h[:])
	}
	binary.BigEndian.PutUint64(m.buf[i*offsetMapSlotSize+offsetMapHashSize:], uint64(offset)+1)
	m.latestOffset = max(m.latestOffset, offset)
	return true
}

// get returns the latest offset put for key, -1 if none.
func (m *offsetMap) get(key []byte) int64 {
	h := m.hash(key)
	i, found := m.slot(&h)
	if !found {
		return -1
	}
	return int64(binary.BigEndian.Uint64(m.buf[i*offsetMapSlotSize+offsetMapHashSize:])) - 1
}
