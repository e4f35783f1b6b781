package acl

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Entry is one stored ACL: its binding and the id the controller gave it
// (Kafka's AccessControlEntryRecord id, a random UUID).
type Entry struct {
	ID [16]byte
	Binding
}

// Set is an immutable set of ACLs, indexed for Authorizer. A nil *Set is
// the empty set. Build one with NewSet or With; never modify one.
type Set struct {
	// entries are in the order they were created.
	entries []Entry
	ids     map[[16]byte]int
	keys    map[Binding]struct{}
	types   map[kmsg.ACLResourceType]*typeIndex
}

// typeIndex holds the ACLs of one resource type, by how they match names.
type typeIndex struct {
	all      []*stored
	literal  map[string][]*stored // LITERAL ACLs other than "*"
	wildcard []*stored            // LITERAL "*"
	prefixed map[string][]*stored
	// prefixLens are the distinct lengths of the PREFIXED names, ascending:
	// the prefixes of a resource name worth looking up.
	prefixLens []int
}

// stored is an ACL with what matching needs, parsed once.
type stored struct {
	Binding
	anyHost bool
	addr    netip.Addr   // the host as an address, if it is one
	cidr    netip.Prefix // the host as a CIDR range, if it is one
}

// NewSet builds a set of entries. Entries with an id seen before, or a
// binding seen before, are left out: a set holds each binding once.
func NewSet(entries []Entry) *Set {
	s := &Set{
		ids:   make(map[[16]byte]int, len(entries)),
		keys:  make(map[Binding]struct{}, len(entries)),
		types: make(map[kmsg.ACLResourceType]*typeIndex),
	}
	for _, e := range entries {
		if _, dup := s.ids[e.ID]; dup {
			continue
		}
		if _, dup := s.keys[e.Binding]; dup {
			continue
		}
		s.ids[e.ID] = len(s.entries)
		s.keys[e.Binding] = struct{}{}
		s.entries = append(s.entries, e)
		s.index(e.Binding)
	}
	for _, ti := range s.types {
		slices.Sort(ti.prefixLens)
		ti.prefixLens = slices.Compact(ti.prefixLens)
	}
	return s
}

func (s *Set) index(b Binding) {
	ti := s.types[b.ResourceType]
	if ti == nil {
		ti = &typeIndex{literal: map[string][]*stored{}, prefixed: map[string][]*stored{}}
		s.types[b.ResourceType] = ti
	}
	st := &stored{Binding: b, anyHost: b.Host == Wildcard}
	if !st.anyHost {
		if strings.Contains(b.Host, "/") {
			st.cidr, _ = parseCIDR(b.Host) // invalid: matches nothing
		} else if a, err := netip.ParseAddr(b.Host); err == nil {
			st.addr = a.Unmap()
		}
	}
	ti.all = append(ti.all, st)
	switch {
	case b.PatternType == kmsg.ACLResourcePatternTypePrefixed:
		ti.prefixed[b.ResourceName] = append(ti.prefixed[b.ResourceName], st)
		ti.prefixLens = append(ti.prefixLens, len(b.ResourceName))
	case b.ResourceName == Wildcard:
		ti.wildcard = append(ti.wildcard, st)
	default:
		ti.literal[b.ResourceName] = append(ti.literal[b.ResourceName], st)
	}
}

// With returns a new set: s without the entries whose ids are in remove,
// plus add (bindings already in the set, or ids already used, are left
// out). s is unchanged. The result is nil when it is empty.
func (s *Set) With(add []Entry, remove [][16]byte) *Set {
	gone := make(map[[16]byte]bool, len(remove))
	for _, id := range remove {
		gone[id] = true
	}
	next := make([]Entry, 0, s.Len()+len(add))
	for _, e := range s.Entries() {
		if !gone[e.ID] {
			next = append(next, e)
		}
	}
	next = append(next, add...)
	if len(next) == 0 {
		return nil
	}
	return NewSet(next)
}

// Len is the number of ACLs in s.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// Entries are the ACLs of s in the order they were created. The slice is
// s's own: never modify it.
func (s *Set) Entries() []Entry {
	if s == nil {
		return nil
	}
	return s.entries
}

// Contains reports whether s holds b.
func (s *Set) Contains(b Binding) bool {
	if s == nil {
		return false
	}
	_, ok := s.keys[b]
	return ok
}

// Get returns the binding with id.
func (s *Set) Get(id [16]byte) (Binding, bool) {
	if s == nil {
		return Binding{}, false
	}
	i, ok := s.ids[id]
	if !ok {
		return Binding{}, false
	}
	return s.entries[i].Binding, true
}

// Match returns the entries f selects, in creation order.
func (s *Set) Match(f Filter) []Entry {
	var out []Entry
	for _, e := range s.Entries() {
		if f.Matches(e.Binding) {
			out = append(out, e)
		}
	}
	return out
}

// applicable calls fn with every ACL whose resource pattern applies to the
// named resource of type rt, until fn returns false.
func (s *Set) applicable(rt kmsg.ACLResourceType, name string, fn func(*stored) bool) {
	if s == nil {
		return
	}
	ti := s.types[rt]
	if ti == nil {
		return
	}
	for _, st := range ti.literal[name] {
		if !fn(st) {
			return
		}
	}
	for _, st := range ti.wildcard {
		if !fn(st) {
			return
		}
	}
	for _, n := range ti.prefixLens {
		if n > len(name) {
			break
		}
		for _, st := range ti.prefixed[name[:n]] {
			if !fn(st) {
				return
			}
		}
	}
}

// ofType returns every ACL of type rt.
func (s *Set) ofType(rt kmsg.ACLResourceType) []*stored {
	if s == nil {
		return nil
	}
	if ti := s.types[rt]; ti != nil {
		return ti.all
	}
	return nil
}
