package broker

import "github.com/sluicedev/sluice/logstore"

// RecoveryPoint is the recovery point of this node's replica of
// topic/partition (logstore.Log.RecoveryPoint), for the flush-policy tests
// of package broker_test: it moves only when the log is fsynced.
func (b *Broker) RecoveryPoint(topic string, partition int32) (int64, bool) {
	p := b.partition(logstore.TopicPartition{Topic: topic, Partition: partition})
	if p == nil {
		return 0, false
	}
	return p.log.RecoveryPoint(), true
}
