package broker

// Streams groups (KIP-1071) in the broker: the registration of their APIs
// StreamsGroupHeartbeat (88), StreamsGroupDescribe (89) and
// StreamsGroupTopologyDescriptionUpdate (93), and the gate they share (the
// finalized streams.version feature, as Kafka's KafkaApis).

// registerStreamsHandlers registers the streams-group APIs. None is served
// yet: sluice lists no streams-group key (issue 20).
func (b *Broker) registerStreamsHandlers(r quotaRouter) {}
