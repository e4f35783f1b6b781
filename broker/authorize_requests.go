package broker

// What each request handler authorizes (issue 19, ACLs): the checks of
// Kafka 4.x's KafkaApis, AuthHelper and ControllerApis, per API, with
// Kafka's error codes. Every check goes through Broker.authorized
// (authorize.go), which answers for the request's principal and host.
//
//	Produce                 WRITE on each topic (TOPIC_AUTHORIZATION_FAILED per partition);
//	                        a batch of transactional records WRITE on the transactional id
//	                        (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition).
//	                        Idempotent produce needs nothing more: InitProducerId checked it.
//	Fetch                   a consumer READ on each topic; a follower (replica id >= 0)
//	                        CLUSTER_ACTION on the cluster, or every partition is
//	                        TOPIC_AUTHORIZATION_FAILED.
//	ListOffsets             DESCRIBE on each topic.
//	OffsetForLeaderEpoch    CLUSTER_ACTION on the cluster (a follower), else DESCRIBE per topic.
//	Metadata                DESCRIBE per topic: left out of an all-topics answer,
//	                        TOPIC_AUTHORIZATION_FAILED for a named one whether or not it
//	                        exists (by id: with its id, no name); auto-creation needs
//	                        CREATE on the cluster or on the topic, else
//	                        TOPIC_AUTHORIZATION_FAILED.
//	FindCoordinator         DESCRIBE on the group or the transactional id.
//	JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat
//	                        READ on the group (GROUP_AUTHORIZATION_FAILED); a consumer group
//	                        heartbeat DESCRIBE on every subscribed topic too.
//	OffsetCommit            READ on the group, READ per topic.
//	TxnOffsetCommit         WRITE on the transactional id, READ on the group, READ per topic.
//	OffsetFetch             DESCRIBE on each group, DESCRIBE per topic (an all-topics answer
//	                        leaves the others out).
//	OffsetDelete            DELETE on the group, READ per topic.
//	DescribeGroups, ConsumerGroupDescribe
//	                        DESCRIBE per group; ConsumerGroupDescribe answers a group whose
//	                        members hold a topic the principal may not describe with
//	                        TOPIC_AUTHORIZATION_FAILED.
//	StreamsGroupHeartbeat   READ on the group (GROUP_AUTHORIZATION_FAILED); a joining member
//	                        DESCRIBE on every source topic of its topology
//	                        (TOPIC_AUTHORIZATION_FAILED); the internal topics the coordinator
//	                        creates CREATE on the cluster or on the topic (else not created,
//	                        and a MISSING_INTERNAL_TOPICS status says so).
//	StreamsGroupDescribe    DESCRIBE per group.
//	StreamsGroupTopologyDescriptionUpdate
//	                        READ on the group.
//	ListGroups              every group with DESCRIBE on the cluster, otherwise those the
//	                        principal may DESCRIBE.
//	DeleteGroups            DELETE per group.
//	InitProducerId          WRITE on the transactional id; without one IDEMPOTENT_WRITE on
//	                        the cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED).
//	AddPartitionsToTxn      v0–3: WRITE on the transactional id and on each (non-internal)
//	                        topic; v4+ (brokers) CLUSTER_ACTION on the cluster.
//	AddOffsetsToTxn         WRITE on the transactional id, READ on the group.
//	EndTxn                  WRITE on the transactional id.
//	WriteTxnMarkers         ALTER or CLUSTER_ACTION on the cluster.
//	DescribeTransactions    DESCRIBE per transactional id; topics not describable left out.
//	ListTransactions        only ids the principal may DESCRIBE.
//	DescribeProducers       READ per topic.
//	CreateTopics            CREATE on the cluster or on each topic; configs in the answer
//	                        need DESCRIBE_CONFIGS on the topic.
//	DeleteTopics            DELETE on the cluster or on each topic; a topic the principal
//	                        may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED before its
//	                        existence is looked at, and one given by id without DESCRIBE
//	                        is answered without its name.
//	CreatePartitions        ALTER per topic.
//	DeleteRecords           DELETE per topic.
//	DescribeConfigs         DESCRIBE_CONFIGS on the topic, the group, or the cluster for
//	                        broker and broker-logger resources.
//	AlterConfigs, IncrementalAlterConfigs
//	                        ALTER_CONFIGS on the topic, the group, or the cluster.
//	ElectLeaders, AlterPartitionReassignments, AlterReplicaLogDirs
//	                        ALTER on the cluster.
//	ListPartitionReassignments, DescribeLogDirs
//	                        DESCRIBE on the cluster.
//	DescribeClientQuotas, ListConfigResources
//	                        DESCRIBE_CONFIGS on the cluster.
//	AlterClientQuotas       ALTER_CONFIGS on the cluster.
//	DescribeTopicPartitions DESCRIBE per topic, as Metadata.
//	DescribeQuorum          DESCRIBE on the cluster.
//	UnregisterBroker, AddRaftVoter, RemoveRaftVoter, UnregisterController
//	                        ALTER on the cluster.
//
// The controller channel (control_listener.go) serves brokers only. Every
// request on it needs CLUSTER_ACTION on the cluster (peerAPI), as Kafka's
// ControllerApis asks it of AlterPartition, BrokerHeartbeat,
// AllocateProducerIds and ControlledShutdown and of the envelope that
// carries a forwarded admin request. A forwarded admin request was
// authorized on the broker the client is connected to, before it was
// forwarded, with the client's principal: the controller sees only the
// forwarding broker's. So the brokers' own principal (User:ANONYMOUS on a
// PLAINTEXT listener) must be allowed CLUSTER_ACTION, normally by being in
// super.users, as in Kafka, or replication and the controller channel stop
// working once an authorizer is configured.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
	"github.com/sluicedev/sluice/protocol"
)

// authorizedCluster reports whether r's principal may perform op on the
// cluster.
func (b *Broker) authorizedCluster(r *protocol.Request, op kmsg.ACLOperation) bool {
	return b.authorized(r, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// authorizedGroup reports whether r's principal may perform op on group.
func (b *Broker) authorizedGroup(r *protocol.Request, op kmsg.ACLOperation, group string) bool {
	return b.authorized(r, op, kmsg.ACLResourceTypeGroup, group)
}

// authorizedTxnID reports whether r's principal may perform op on the
// transactional id.
func (b *Broker) authorizedTxnID(r *protocol.Request, op kmsg.ACLOperation, id string) bool {
	return b.authorized(r, op, kmsg.ACLResourceTypeTransactionalId, id)
}

// topicAuth answers, for one request and one operation, whether the
// principal may perform it on a topic (Kafka's
// AuthHelper.filterByAuthorized): the principal, its address and the ACLs
// are read once per request (authorizerFor), and a request that names the
// same topic in a row asks once.
type topicAuth struct {
	z  requestAuthz
	op kmsg.ACLOperation

	lastName string
	lastOK   bool
	last     bool // lastName and lastOK hold an answer
}

// topicAuth returns the checker of op on topics for r.
func (b *Broker) topicAuth(r *protocol.Request, op kmsg.ACLOperation) *topicAuth {
	return &topicAuth{z: b.authorizerFor(r), op: op}
}

// allowed reports whether the principal may perform the checker's
// operation on the topic name.
func (a *topicAuth) allowed(name string) bool {
	if !a.z.enabled() {
		return true
	}
	if a.last && a.lastName == name {
		return a.lastOK
	}
	ok := a.z.allowed(a.op, kmsg.ACLResourceTypeTopic, name)
	a.lastName, a.lastOK, a.last = name, ok, true
	return ok
}

// mayWriteIdempotently is InitProducerId's check for a producer without a
// transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE on some
// topic (KIP-679: Kafka's authorizeByResourceType).
func (b *Broker) mayWriteIdempotently(r *protocol.Request) bool {
	z := b.authorizerFor(r)
	return z.allowed(kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, acl.ClusterName) ||
		z.allowedAny(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic)
}

// configResourceDenied is the error of a config resource the principal may
// not perform op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on, nil if it may: the
// topic's, the group's, or the cluster's for broker, broker-logger and
// client-metrics resources (Kafka's ConfigHelper and
// ControllerApis.authorizeAlterResource).
// A type no config resource has is left to the handler's own answer.
func (b *Broker) configResourceDenied(r *protocol.Request, op kmsg.ACLOperation, typ int8, name string) *kerr.Error {
	switch typ {
	case resourceTopic:
		if !b.authorized(r, op, kmsg.ACLResourceTypeTopic, name) {
			return kerr.TopicAuthorizationFailed
		}
	case resourceGroup:
		if !b.authorizedGroup(r, op, name) {
			return kerr.GroupAuthorizationFailed
		}
	case resourceBroker, resourceBrokerLogger, resourceClientMetrics:
		if !b.authorizedCluster(r, op) {
			return kerr.ClusterAuthorizationFailed
		}
	}
	return nil
}

// alterConfigDenied is configResourceDenied for ALTER_CONFIGS, nil for a
// peer's request (checked on the broker that forwarded it).
func (b *Broker) alterConfigDenied(ctx context.Context, r *protocol.Request, typ int8, name string) *kerr.Error {
	if !clientRequest(ctx) {
		return nil
	}
	return b.configResourceDenied(r, kmsg.ACLOperationAlterConfigs, typ, name)
}

// clientRequest reports whether the request in ctx came from a client, not
// from a peer broker over the controller channel: a peer's was authorized
// with its client's principal on the broker that forwarded it, and the
// channel itself needs CLUSTER_ACTION (peerAPI).
func clientRequest(ctx context.Context) bool { return !fromPeer(ctx) }

// clusterActionRefused is the answer to a request on the controller
// channel from a principal without CLUSTER_ACTION on the cluster: the
// request's own error response with CLUSTER_AUTHORIZATION_FAILED, as
// Kafka's getErrorResponse builds it. nil for an API the channel does not
// serve with peerAPI (the connection is then closed).
func clusterActionRefused(req kmsg.Request) kmsg.Response {
	code := kerr.ClusterAuthorizationFailed.Code
	switch req := req.(type) {
	case *kmsg.ControlledShutdownRequest:
		resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AlterPartitionRequest:
		resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.BrokerHeartbeatRequest:
		resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode = code
		resp.IsFenced = true
		return resp
	case *kmsg.AllocateProducerIDsRequest:
		resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.CreateTopicsRequest:
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for i := range req.TopicNames {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.ErrorCode = &req.TopicNames[i], code
			resp.Topics = append(resp.Topics, st)
		}
		for _, t := range req.Topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode = t.Topic, t.TopicID, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, rr := range req.Resources {
			sr := kmsg.NewAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, code
			resp.Resources = append(resp.Resources, sr)
		}
		return resp
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range req.Resources {
			sr := kmsg.NewIncrementalAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, code
			resp.Resources = append(resp.Resources, sr)
		}
		return resp
	case *kmsg.CreateACLsRequest:
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		for range req.Creations {
			cr := kmsg.NewCreateACLsResponseResult()
			cr.ErrorCode = code
			resp.Results = append(resp.Results, cr)
		}
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range req.Filters {
			dr := kmsg.NewDeleteACLsResponseResult()
			dr.ErrorCode = code
			resp.Results = append(resp.Results, dr)
		}
		return resp
	case *kmsg.ElectLeadersRequest:
		return electLeadersRefused(req, code)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return reassignmentsRefused(req, code)
	case *kmsg.AlterClientQuotasRequest:
		return clientQuotasRefused(req, code)
	case *kmsg.DescribeQuorumRequest:
		return describeQuorumError(req, kerr.ClusterAuthorizationFailed)
	case *kmsg.UnregisterBrokerRequest:
		resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AddRaftVoterRequest:
		resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.RemoveRaftVoterRequest:
		resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.UnregisterControllerRequest:
		resp := req.ResponseKind().(*kmsg.UnregisterControllerResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.UpdateFeaturesRequest:
		resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		resp.ErrorCode = code
		return resp
	}
	return nil
}

// electLeadersRefused is ElectLeaders' answer when the whole request is
// refused with code: the top-level error and each listed partition's
// (ElectLeadersRequest.getErrorResponse).
func electLeadersRefused(req *kmsg.ElectLeadersRequest, code int16) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = code
	for _, t := range req.Topics {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// reassignmentsRefused is AlterPartitionReassignments' answer when the
// whole request is refused with code.
func reassignmentsRefused(req *kmsg.AlterPartitionAssignmentsRequest, code int16) *kmsg.AlterPartitionAssignmentsResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.ErrorCode = code
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	for _, t := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// clientQuotasRefused is AlterClientQuotas' answer when the whole request
// is refused with code: every entry with the error.
func clientQuotasRefused(req *kmsg.AlterClientQuotasRequest, code int16) *kmsg.AlterClientQuotasResponse {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.Entries {
		se := kmsg.NewAlterClientQuotasResponseEntry()
		se.ErrorCode = code
		for _, c := range e.Entity {
			ec := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ec.Type, ec.Name = c.Type, c.Name
			se.Entity = append(se.Entity, ec)
		}
		resp.Entries = append(resp.Entries, se)
	}
	return resp
}
