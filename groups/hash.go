package groups

import "unicode/utf16"

// PartitionFor is the __consumer_offsets partition that holds group:
// abs(hashCode(group)) % partitions with Java's String.hashCode over UTF-16
// code units and Kafka's Utils.abs (which maps math.MinInt32 to 0), so a
// group lands on the same partition number as in Kafka.
func PartitionFor(group string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
