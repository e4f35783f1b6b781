package groups

import "github.com/sluicedev/sluice/internal/keyhash"

// PartitionFor is the __consumer_offsets partition that holds group:
// abs(hashCode(group)) % partitions with Java's String.hashCode over UTF-16
// code units and Kafka's Utils.abs (which maps math.MinInt32 to 0), so a
// group lands on the same partition number as in Kafka.
func PartitionFor(group string, partitions int32) int32 {
	return keyhash.Partition(group, partitions)
}
