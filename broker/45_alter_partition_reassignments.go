package broker

// AlterPartitionReassignments (api key 45), versions 0–1 (KIP-455; v1 adds
// AllowReplicationFactorChange, KIP-860).
//
// Starts, replaces or cancels (null replicas) the reassignment of each
// partition; the active controller decides (controller/reassign.go) and
// the answer comes once the new replica sets are in this node's image,
// not once the replicas have moved: kafka-reassign-partitions.sh --verify
// and ListPartitionReassignments follow the move. Per partition errors are
// the controller's: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT,
// INVALID_REPLICATION_FACTOR, NO_REASSIGNMENT_IN_PROGRESS, NOT_CONTROLLER,
// REQUEST_TIMED_OUT. Like every controller request it may be sent to any
// broker, which forwards it to the active controller.
//
// ALTER on the cluster is needed, checked on the broker the client is
// connected to before forwarding: without it the request and each
// partition are CLUSTER_AUTHORIZATION_FAILED (authorize_requests.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleAlterPartitionReassignments(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	if clientRequest(ctx) && !b.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return reassignmentsRefused(req, kerr.ClusterAuthorizationFailed.Code), nil
	}
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	var reqs []controller.ReassignPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			reqs = append(reqs, controller.ReassignPartition{Topic: rt.Topic, Partition: rp.Partition, Replicas: rp.Replicas})
		}
	}
	results := b.alterPartitionReassignments(ctx, reqs, allowRF)
	i := 0
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for range rt.Partitions {
			res := results[i]
			i++
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = res.Partition
			sp.ErrorCode = errorCode(res.Err)
			sp.ErrorMessage = errorMessage(res.Err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// alterPartitionReassignments is Controller.AlterPartitionReassignments on
// the active controller; results are in reqs' order.
func (b *Broker) alterPartitionReassignments(ctx context.Context, reqs []controller.ReassignPartition, allowRF bool) []controller.ReassignResult {
	var results []controller.ReassignResult
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			results = b.ctrl.AlterPartitionReassignments(ctx, reqs, allowRF)
		} else {
			results = b.forwardAlterPartitionReassignments(ctx, id, reqs, allowRF)
		}
		for _, r := range results {
			if isNotController(r.Err) {
				return true
			}
		}
		return false
	})
	return results
}

func (b *Broker) forwardAlterPartitionReassignments(ctx context.Context, id int32, reqs []controller.ReassignPartition, allowRF bool) []controller.ReassignResult {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	req.AllowReplicationFactorChange = allowRF
	results := make([]controller.ReassignResult, len(reqs))
	// One request topic per request partition keeps the answer in the
	// order of reqs, whatever order the partitions came in.
	for i, r := range reqs {
		results[i] = controller.ReassignResult{Topic: r.Topic, Partition: r.Partition}
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = r.Topic
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = r.Partition, r.Replicas
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		for i := range results {
			results[i].Err = transportError(err)
		}
		return results
	}
	resp := kresp.(*kmsg.AlterPartitionAssignmentsResponse)
	top := remoteError(resp.ErrorCode, resp.ErrorMessage)
	for i := range results {
		switch {
		case top != nil:
			results[i].Err = top
		case i >= len(resp.Topics) || len(resp.Topics[i].Partitions) != 1:
			results[i].Err = fmt.Errorf("%w: the controller did not answer for this partition", kerr.UnknownServerError)
		default:
			sp := resp.Topics[i].Partitions[0]
			results[i].Err = remoteError(sp.ErrorCode, sp.ErrorMessage)
		}
	}
	return results
}
