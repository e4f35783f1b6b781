package broker

import "slices"

// registerHandlers registers every Kafka API this broker serves on its
// client listener with the router; ApiVersions is built from these
// registrations. The version ranges follow Kafka 4: record format v2 only
// (Produce v3+, Fetch v4+), none of the versions KIP-896 removed in Kafka
// 4.0 (OffsetCommit v0–1, OffsetFetch v0, WriteTxnMarkers v0 among them: a
// request at one has its connection closed), up to the newest version
// Kafka 4.4 lists. The compat row kafka-api-versions-4.4 compares the list
// with a Kafka 4.4 broker's (compat/api_versions_known_diff.txt).
//
// The inter-broker controller APIs, ControlledShutdown (7), AlterPartition
// (56), BrokerHeartbeat (63) and AllocateProducerIds (67), are not here:
// as in Kafka they are served only on the controller listener, to brokers
// (control_listener.go). A client that sends one here has its connection
// closed, as protocol.Router does for every key not registered, and
// ApiVersions does not list them. No request here is a peer broker's:
// admin requests are forwarded to the active controller when needed.
// The handlers that name brokers answer with the endpoints of the
// listener the request arrived on (forListener, listener_view.go).
func (b *Broker) registerHandlers() {
	r := quotaRouter{b: b, r: b.router} // request_percentage (request_quota.go)
	r.RegisterAdvertisedFrom(0, 0, 3, 13, b.forListener(b.handleProduce))
	b.router.ReuseFrames(0) // the log's append copies the records (00_produce.go)
	r.Register(1, 4, 18, b.handleFetch)
	r.Register(2, 1, 11, b.handleListOffsets)
	r.Register(3, 0, 13, b.forListener(b.handleMetadata))
	r.Register(8, 2, 10, b.handleOffsetCommit)
	r.Register(9, 1, 10, b.handleOffsetFetch)
	r.Register(10, 0, 6, b.forListener(b.handleFindCoordinator))
	r.Register(11, 0, 9, b.handleJoinGroup)
	r.Register(12, 0, 4, b.handleHeartbeat)
	r.Register(13, 0, 5, b.handleLeaveGroup)
	r.Register(14, 0, 5, b.handleSyncGroup)
	r.Register(15, 0, 6, b.handleDescribeGroups)
	r.Register(16, 0, 5, b.handleListGroups)
	r.Register(17, 0, 1, b.handleSaslHandshake)
	r.Register(19, 2, 7, b.handleCreateTopics)
	r.Register(20, 1, 6, b.handleDeleteTopics)
	r.Register(21, 0, 2, b.handleDeleteRecords)
	b.registerInitProducerID(r)
	r.Register(23, 2, 4, b.handleOffsetForLeaderEpoch)
	r.Register(24, 0, 5, b.handleAddPartitionsToTxn)
	r.Register(25, 0, 4, b.handleAddOffsetsToTxn)
	r.Register(26, 0, 5, b.handleEndTxn)
	r.Register(27, 1, 2, b.handleWriteTxnMarkers)
	r.Register(28, 0, 6, b.handleTxnOffsetCommit)
	r.Register(29, 1, 3, b.handleDescribeACLs)
	r.Register(30, 1, 3, b.handleCreateACLs)
	r.Register(31, 1, 3, b.handleDeleteACLs)
	r.Register(32, 1, 4, b.handleDescribeConfigs)
	r.Register(33, 0, 2, b.handleAlterConfigs)
	r.Register(35, 1, 5, b.handleDescribeLogDirs)
	r.Register(36, 0, 2, b.handleSaslAuthenticate)
	r.Register(37, 0, 3, b.handleCreatePartitions)
	r.Register(42, 0, 3, b.handleDeleteGroups)
	r.Register(44, 0, 1, b.handleIncrementalAlterConfigs)
	r.Register(47, 0, 0, b.handleOffsetDelete)
	r.Register(48, 0, 1, b.handleDescribeClientQuotas)
	r.Register(49, 0, 1, b.handleAlterClientQuotas)
	r.Register(50, 0, 0, b.handleDescribeUserScramCredentials)
	r.Register(51, 0, 0, b.handleAlterUserScramCredentials)
	r.Register(60, 0, 2, b.forListener(b.handleDescribeCluster))
	r.Register(61, 0, 0, b.handleDescribeProducers)
	r.Register(65, 0, 0, b.handleDescribeTransactions)
	r.Register(66, 0, 2, b.handleListTransactions)
	r.Register(74, 0, 1, b.handleListConfigResources)
	r.Register(75, 0, 0, b.forListener(b.handleDescribeTopicPartitions))
	r.Register(43, 0, 2, b.handleElectLeaders)
	r.Register(45, 0, 1, b.handleAlterPartitionReassignments)
	r.Register(46, 0, 0, b.handleListPartitionReassignments)
	if slices.Contains(b.cfg.GroupRebalanceProtocols, "consumer") {
		r.Register(68, 0, 1, b.handleConsumerGroupHeartbeat)
		r.Register(69, 0, 1, b.handleConsumerGroupDescribe)
	}
	// Kafka 4.4's APIs (issue 20), each family registered by its own file.
	b.registerFeatureHandlers(r)   // features.go
	b.registerQuorumHandlers(r)    // quorum.go
	b.registerTelemetryHandlers(r) // telemetry.go
	b.registerShareHandlers(r)     // share.go
	b.registerStreamsHandlers(r)   // streams.go
	b.registerLogDirHandlers(r)    // log_dirs.go
}
