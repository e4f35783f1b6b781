package broker

// CreatePartitions (api key 37), versions 0–3.
//
// Grows a topic to Count partitions; the controller places the new
// replicas (or takes the explicit assignment) and commits them. Count not
// above the current number is INVALID_PARTITIONS, an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION, a topic named twice INVALID_REQUEST
// "Duplicate topic name." (KRaft's ControllerApis). More than 10,000 new
// partitions in one request is POLICY_VIOLATION for every topic, as
// CreateTopics answers it (Kafka bounds this API only by the 10,000 records
// of one controller operation), and a topic whose new replicas would take a
// broker past max.broker.partitions is
// POLICY_VIOLATION (controller/partition_limits.go). validateOnly checks
// without changing anything. The partitions added are charged to the
// client's controller_mutation_rate (KIP-599, mutation_quota.go): strict
// from v3, permissive before. A topic the principal may not ALTER is
// TOPIC_AUTHORIZATION_FAILED and not grown (ControllerApis.createPartitions,
// authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleCreatePartitions(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := make(map[string]int)
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	var reqs []controller.CreatePartitions
	// ALTER on each topic, checked on the broker the client is connected
	// to; a peer's request was checked on its broker.
	client := clientRequest(ctx)
	alterable := b.topicAuth(r, kmsg.ACLOperationAlter)
	denied := make(map[string]bool)
	for _, rt := range req.Topics {
		if seen[rt.Topic] > 1 {
			continue
		}
		if client && !alterable.allowed(rt.Topic) {
			denied[rt.Topic] = true
			continue
		}
		cp := controller.CreatePartitions{Topic: rt.Topic, Count: rt.Count}
		for _, a := range rt.Assignment {
			cp.Assignment = append(cp.Assignment, a.Replicas)
		}
		reqs = append(reqs, cp)
	}
	ctx, mutations := startMutationQuota(ctx, r, &req.UnknownTags, createPartitionsStrictVersion)
	results := b.createPartitions(ctx, reqs, req.ValidateOnly)
	b.waitCreatedLogs(ctx, req.TimeoutMillis, func(yield func(string) bool) {
		for _, res := range results {
			if res.Err == nil && !req.ValidateOnly && !yield(res.Topic) {
				return
			}
		}
	})
	byName := make(map[string]error, len(results))
	for _, res := range results {
		byName[res.Topic] = res.Err
	}
	duplicateCode, duplicateMessage := kerr.InvalidRequest.Code, "Duplicate topic name."
	if len(results) > 0 && isExcessivePartitions(results[0].Err) {
		duplicateCode, duplicateMessage = errorCode(results[0].Err), controller.ExcessivePartitionsMessage
	}
	done := make(map[string]bool)
	for _, rt := range req.Topics {
		if done[rt.Topic] {
			continue
		}
		done[rt.Topic] = true
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		switch {
		case seen[rt.Topic] > 1:
			st.ErrorCode = duplicateCode
			st.ErrorMessage = kmsg.StringPtr(duplicateMessage)
		case denied[rt.Topic]:
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			st.ErrorMessage = kmsg.StringPtr("The topic authorization is failed.")
		default:
			st.ErrorCode = errorCode(byName[rt.Topic])
			st.ErrorMessage = errorMessage(byName[rt.Topic])
		}
		resp.Topics = append(resp.Topics, st)
	}
	finishMutationQuota(ctx, mutations, resp)
	return resp, nil
}
