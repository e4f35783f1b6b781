// Package keyhash places a key on a partition of one of Kafka's internal
// topics the way Kafka does: abs(key.hashCode()) % partitions, with Java's
// String.hashCode over UTF-16 code units and Kafka's Utils.abs (which maps
// math.MinInt32 to 0). The group coordinator uses it for __consumer_offsets
// and the transaction coordinator for __transaction_state, so a group or a
// transactional id lands on the same partition number as in Kafka.
package keyhash

import "unicode/utf16"

// Partition is the partition of a topic with partitions partitions that
// holds key; 0 when partitions is not positive.
func Partition(key string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	var h int32
	for _, u := range utf16.Encode([]rune(key)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
