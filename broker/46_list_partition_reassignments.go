package broker

// ListPartitionReassignments (api key 46), version 0 (KIP-455).
//
// Lists the partitions being reassigned with their whole replica set and
// the replicas being added and removed: all of them for null topics, else
// the named partitions, leaving out unknown ones and those not being
// reassigned, as Kafka's controller does. Every node holds the same
// metadata image, so the answer comes from this node's image; a
// reassignment this node forwarded to the controller is in it by the time
// it answered AlterPartitionReassignments.
//
// DESCRIBE on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED,
// authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleListPartitionReassignments(_ context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !b.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	var topics map[string][]int32
	if req.Topics != nil {
		topics = make(map[string][]int32, len(req.Topics))
		for _, rt := range req.Topics {
			topics[rt.Topic] = append(topics[rt.Topic], rt.Partitions...)
		}
	}
	for _, ra := range b.metadata().Reassignments(topics) {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != ra.Topic {
			st := kmsg.NewListPartitionReassignmentsResponseTopic()
			st.Topic = ra.Topic
			resp.Topics = append(resp.Topics, st)
		}
		sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		sp.Partition = ra.Partition
		sp.Replicas = append([]int32(nil), ra.Replicas...)
		sp.AddingReplicas = append([]int32{}, ra.AddingReplicas...)
		sp.RemovingReplicas = append([]int32{}, ra.RemovingReplicas...)
		st := &resp.Topics[len(resp.Topics)-1]
		st.Partitions = append(st.Partitions, sp)
	}
	return resp, nil
}
