package broker

// FindCoordinator (api key 10), versions 0–6.
//
// The coordinator of a group (key type 0) is the leader of the group's
// partition of __consumer_offsets, abs(hashCode(group)) % partitions with
// Java's String.hashCode (groups.PartitionFor). The topic is created on the
// first request that needs it, with offsets.topic.num.partitions partitions,
// offsets.topic.replication.factor capped by the live brokers, compacted.
// The coordinator of a transactional id (key type 1) is the leader of its
// partition of __transaction_state, found the same way (txn.PartitionFor),
// the topic created on first use with transaction.state.log.* settings
// (txn.go). A partition without a leader is COORDINATOR_NOT_AVAILABLE. Any
// key has a coordinator, the empty one included, as in Kafka's
// KafkaApis.getCoordinator (InitProducerId, not FindCoordinator, refuses an
// empty transactional id). v4+ (KIP-699) batches keys and answers per key.
// A key the principal may not DESCRIBE (the group, or the transactional id)
// is GROUP_AUTHORIZATION_FAILED or TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as
// KafkaApis.getCoordinator answers (authorize_requests.go). The share
// coordinator of a share-partition (key type 2, v6+, KIP-932) is the
// leader of the partition of __share_group_state its key
// "group:topicId:partition" hashes to (share.PartitionFor), the topic
// created on first use (share_coordinator.go); only brokers ask
// (CLUSTER_ACTION on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise),
// and a key not of that form is INVALID_REQUEST, as Kafka's
// SharePartitionKey.validate.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/groups"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
	"github.com/sluicedev/sluice/txn"
)

func (b *Broker) handleFindCoordinator(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	// DESCRIBE on each group or transactional id before its coordinator
	// is looked for, the internal topic created only for one allowed
	// (authorize_requests.go).
	denied := make([]bool, len(keys))
	anyAllowed := false
	for i, key := range keys {
		switch req.CoordinatorType {
		case 0:
			denied[i] = !b.authorizedGroup(r, kmsg.ACLOperationDescribe, key)
		case 1:
			denied[i] = !b.authorizedTxnID(r, kmsg.ACLOperationDescribe, key)
		case 2:
			denied[i] = !b.authorizedCluster(r, kmsg.ACLOperationClusterAction)
		}
		anyAllowed = anyAllowed || !denied[i]
	}
	var createErr error
	if anyAllowed {
		switch req.CoordinatorType {
		case 0:
			createErr = b.ensureOffsetsTopic(ctx)
			if createErr != nil {
				b.logger.Warn("cannot create "+offsetsTopicName, "err", createErr)
			}
		case 1:
			createErr = b.ensureTxnStateTopic(ctx)
			if createErr != nil {
				b.logger.Warn("cannot create "+txnStateTopicName, "err", createErr)
			}
		case 2:
			createErr = b.ensureShareStateTopic(ctx)
			if createErr != nil {
				b.logger.Warn("cannot create "+shareStateTopicName, "err", createErr)
			}
		}
	}
	for i, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.NodeID, c.Port = -1, -1
		switch {
		case denied[i] && req.CoordinatorType == 0:
			c.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case denied[i] && req.CoordinatorType == 2:
			c.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		case denied[i]:
			c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case req.CoordinatorType < 0 || req.CoordinatorType > 2,
			req.CoordinatorType == 2 && (req.Version < 6 || !validShareCoordinatorKey(key)):
			c.ErrorCode = kerr.InvalidRequest.Code
		case createErr != nil:
			c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case req.CoordinatorType == 1:
			b.coordinatorFor(txnStateTopicName, key, txn.PartitionFor, &c)
		case req.CoordinatorType == 2:
			b.coordinatorFor(shareStateTopicName, key, share.PartitionFor, &c)
		default:
			b.coordinatorFor(offsetsTopicName, key, groups.PartitionFor, &c)
		}
		if c.ErrorCode != 0 {
			c.ErrorMessage = errorMessage(kerr.ErrorForCode(c.ErrorCode))
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 && len(resp.Coordinators) == 1 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	return resp, nil
}

// coordinatorFor fills c with the leader of key's partition of topic
// (__consumer_offsets for a group, __transaction_state for a
// transactional id), partitionFor choosing that partition from the
// topic's partition count; COORDINATOR_NOT_AVAILABLE while the topic or
// the partition's live leader is missing.
func (b *Broker) coordinatorFor(topic, key string, partitionFor func(key string, partitions int32) int32, c *kmsg.FindCoordinatorResponseCoordinator) {
	img := b.metadata()
	t := img.Topics[topic]
	if t == nil || len(t.Partitions) == 0 {
		c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	mp := t.Partitions[partitionFor(key, int32(len(t.Partitions)))]
	br := img.Brokers[mp.Leader]
	if mp.Leader < 0 || br == nil || br.Fenced {
		c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	c.NodeID, c.Host, c.Port = br.ID, br.Host, br.Port
}
