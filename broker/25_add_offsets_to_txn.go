package broker

// AddOffsetsToTxn (api key 25), versions 0–4.
//
// A transactional producer that will commit a group's offsets in its
// transaction (TxnOffsetCommit) first adds the group's partition of
// __consumer_offsets to the transaction, so the transaction's COMMIT or
// ABORT marker is written there too and makes the offsets visible or
// drops them. Asked of the transaction coordinator; the answer is that of
// AddPartitionsToTxn for that one partition (PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH before v2, KIP-588). __consumer_offsets is created
// here if no FindCoordinator for a group did it yet. The group id is not
// checked, as in Kafka's KafkaApis: the empty one has a partition like any
// other, and TxnOffsetCommit refuses it (INVALID_GROUP_ID). WRITE on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on the
// group (GROUP_AUTHORIZATION_FAILED) are needed (authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/groups"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/txn"
)

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !b.authorizedTxnID(r, kmsg.ACLOperationWrite, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if err := b.ensureOffsetsTopic(ctx); err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	t := b.metadata().Topics[offsetsTopicName]
	if t == nil || len(t.Partitions) == 0 {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	tp := txn.TopicPartition{Topic: offsetsTopicName, Partition: groups.PartitionFor(req.Group, int32(len(t.Partitions)))}
	// Transaction version 0, as Kafka passes it: a version 2 producer
	// has its TxnOffsetCommit v5 add the partition instead.
	code := b.txn.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}, 0)
	resp.ErrorCode = fencedForVersion(code, req.Version, 2)
	return resp, nil
}
