package broker

// Duplicate entries in one request (issue 14): helpers the handlers use to
// merge repeated entries, or refuse them, as Kafka does per API.

import (
	"cmp"
	"iter"
	"slices"
	"strings"
)

// Entries named more than once in one request. Handlers find them by
// sorting the entries' indexes by key: 4 to 8 bytes an entry and O(n log n)
// comparisons, where a map keyed by the entries would cost several times
// the request's own size, so a request of millions of tiny entries cannot
// make its own bookkeeping larger than itself.

// sortedGroups sorts the indexes 0..n-1 of a request's entries by cmp,
// which compares the keys of two entries, and calls fn with each run of
// indexes sharing one key, in request order: group[0] is the key's first
// entry and group[len(group)-1] its last. fn may overwrite the indexes
// before the group it was given.
func sortedGroups(n int, cmp func(i, j int) int, fn func(group []int32)) {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmp(int(a), int(b)); c != 0 {
			return c
		}
		return int(a) - int(b)
	})
	for start := 0; start < n; {
		end := start + 1
		for end < n && cmp(int(idx[start]), int(idx[end])) == 0 {
			end++
		}
		fn(idx[start:end])
		start = end
	}
}

// repeatedKeys groups a request's n entries by key. It returns the index
// of each key's first entry, in request order, and next, which links each
// entry to the next one with the same key (-1 after the last). Both are nil
// when no key repeats, which is the usual case: then every entry is first.
func repeatedKeys(n int, cmp func(i, j int) int) (firsts, next []int32) {
	if n < 2 {
		return nil, nil
	}
	var idx []int32
	w := 0
	sortedGroups(n, cmp, func(group []int32) {
		if idx == nil {
			idx = group[:0:cap(group)] // the sorted array, rewritten in place
		}
		for k := 1; k < len(group); k++ {
			if next == nil {
				next = make([]int32, n)
				for i := range next {
					next[i] = -1
				}
			}
			next[group[k-1]] = group[k]
		}
		idx = append(idx[:w], group[0])
		w++
	})
	if next == nil {
		return nil, nil
	}
	slices.Sort(idx)
	return idx, next
}

// firstEntries yields the indexes of firsts, or 0..n-1 when firsts is
// nil (repeatedKeys found no repeats).
func firstEntries(n int, firsts []int32) iter.Seq[int] {
	return func(yield func(int) bool) {
		if firsts == nil {
			for i := 0; i < n; i++ {
				if !yield(i) {
					return
				}
			}
			return
		}
		for _, i := range firsts {
			if !yield(int(i)) {
				return
			}
		}
	}
}

// partitionEntries is a request's partitions flattened across its topic
// entries, with repeats of one (topic name, partition) grouped by
// repeatedKeys: entry k is parts[k], of topic entry topicOf[k].
type partitionEntries[P any] struct {
	topicOf      []int32
	parts        []*P
	firsts, next []int32 // as repeatedKeys returns them
}

// flattenPartitions builds the partitionEntries of a request whose topic
// entries are topics, named by name, each listing its partitions (parts)
// by number (partition).
func flattenPartitions[T, P any](topics []T, name func(*T) string, parts func(*T) []P, partition func(*P) int32) partitionEntries[P] {
	total := 0
	for i := range topics {
		total += len(parts(&topics[i]))
	}
	e := partitionEntries[P]{topicOf: make([]int32, 0, total), parts: make([]*P, 0, total)}
	for i := range topics {
		ps := parts(&topics[i])
		for j := range ps {
			e.topicOf = append(e.topicOf, int32(i))
			e.parts = append(e.parts, &ps[j])
		}
	}
	e.firsts, e.next = repeatedKeys(total, func(a, b int) int {
		if c := strings.Compare(name(&topics[e.topicOf[a]]), name(&topics[e.topicOf[b]])); c != 0 {
			return c
		}
		return cmp.Compare(partition(e.parts[a]), partition(e.parts[b]))
	})
	return e
}
