package broker

import "github.com/sluicedev/sluice/logstore"

// SetBeforeLogOpen makes this node's log opener call hook before it opens
// each replica's log (reconcile_open.go), so a test can hold opens back.
func (b *Broker) SetBeforeLogOpen(hook func(topic string, partition int32)) {
	b.opener.mu.Lock()
	defer b.opener.mu.Unlock()
	if hook == nil {
		b.opener.beforeOpen = nil
		return
	}
	b.opener.beforeOpen = func(tp logstore.TopicPartition) { hook(tp.Topic, tp.Partition) }
}
